//! The throughput programs, written ONCE against std's API shape and instantiated three times
//! by swapping only the module root (`pulse::std`, `loom`, `shuttle`), the way a crate that
//! supports loom swaps its imports under `cfg(loom)`.
//!
//! Every body is deterministic (no data randomness) and asserts its result, so a tool that
//! mis-schedules would fail loudly rather than report a fast wrong answer.

macro_rules! throughput_programs {
    ($($root:ident)::+) => {
        #[allow(unused_imports)]
        use $($root)::+::sync::{mpsc, Arc, Condvar, Mutex, RwLock};
        use $($root)::+::sync::atomic::{AtomicUsize, Ordering};
        use $($root)::+::thread;

        /// 2 threads x 10 increments of a `Mutex<u64>` counter.
        pub fn mutex_counter() {
            let m = Arc::new(Mutex::new(0u64));
            let hs: Vec<_> = (0..2)
                .map(|_| {
                    let m = m.clone();
                    thread::spawn(move || {
                        for _ in 0..10 {
                            *m.lock().unwrap() += 1;
                        }
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
            assert_eq!(*m.lock().unwrap(), 20);
        }

        /// 4-thread pipeline source -> +1 -> *2 -> sink over three `mpsc::channel`s, 5 items.
        /// Each stage receives exactly N items (loom's channel does not model disconnection).
        pub fn mpsc_pipeline() {
            const N: u64 = 5;
            let (tx1, rx1) = mpsc::channel::<u64>();
            let (tx2, rx2) = mpsc::channel::<u64>();
            let (tx3, rx3) = mpsc::channel::<u64>();
            let source = thread::spawn(move || {
                for i in 0..N {
                    tx1.send(i).unwrap();
                }
            });
            let inc = thread::spawn(move || {
                for _ in 0..N {
                    let v = rx1.recv().unwrap();
                    tx2.send(v + 1).unwrap();
                }
            });
            let dbl = thread::spawn(move || {
                for _ in 0..N {
                    let v = rx2.recv().unwrap();
                    tx3.send(v * 2).unwrap();
                }
            });
            let sink = thread::spawn(move || {
                let mut sum = 0;
                for _ in 0..N {
                    sum += rx3.recv().unwrap();
                }
                sum
            });
            source.join().unwrap();
            inc.join().unwrap();
            dbl.join().unwrap();
            assert_eq!(sink.join().unwrap(), 2 * (1 + 2 + 3 + 4 + 5));
        }

        /// Two threads hand a turn counter back and forth 5 times each through a Mutex + Condvar.
        pub fn condvar_pingpong() {
            const ROUNDS: u32 = 5;
            let pair = Arc::new((Mutex::new(0u32), Condvar::new()));
            let p2 = pair.clone();
            let pong = thread::spawn(move || {
                let (m, cv) = &*p2;
                for r in 0..ROUNDS {
                    let mut g = m.lock().unwrap();
                    while *g != 2 * r + 1 {
                        g = cv.wait(g).unwrap();
                    }
                    *g += 1;
                    cv.notify_one();
                }
            });
            let (m, cv) = &*pair;
            for r in 0..ROUNDS {
                let mut g = m.lock().unwrap();
                while *g != 2 * r {
                    g = cv.wait(g).unwrap();
                }
                *g += 1;
                cv.notify_one();
            }
            pong.join().unwrap();
            assert_eq!(*m.lock().unwrap(), 2 * ROUNDS);
        }

        /// 2 threads x 5 increments of an `AtomicUsize` by a load + compare_exchange retry loop.
        pub fn cas_loop() {
            let a = Arc::new(AtomicUsize::new(0));
            let hs: Vec<_> = (0..2)
                .map(|_| {
                    let a = a.clone();
                    thread::spawn(move || {
                        for _ in 0..5 {
                            let mut cur = a.load(Ordering::SeqCst);
                            while let Err(actual) =
                                a.compare_exchange(cur, cur + 1, Ordering::SeqCst, Ordering::SeqCst)
                            {
                                cur = actual;
                            }
                        }
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
            assert_eq!(a.load(Ordering::SeqCst), 10);
        }

        /// 2 reader threads x 3 reads and 1 writer thread x 3 writes of an `RwLock<u64>`.
        pub fn rwlock_readers_writer() {
            let l = Arc::new(RwLock::new(0u64));
            let w = {
                let l = l.clone();
                thread::spawn(move || {
                    for _ in 0..3 {
                        *l.write().unwrap() += 1;
                    }
                })
            };
            let rs: Vec<_> = (0..2)
                .map(|_| {
                    let l = l.clone();
                    thread::spawn(move || {
                        let mut last = 0;
                        for _ in 0..3 {
                            let v = *l.read().unwrap();
                            assert!(v >= last && v <= 3);
                            last = v;
                        }
                    })
                })
                .collect();
            w.join().unwrap();
            for r in rs {
                r.join().unwrap();
            }
            assert_eq!(*l.read().unwrap(), 3);
        }

        /// The main thread spawns 100 threads, each bumping an atomic once, and joins them all.
        pub fn spawn_join_100() {
            let c = Arc::new(AtomicUsize::new(0));
            let hs: Vec<_> = (0..100)
                .map(|_| {
                    let c = c.clone();
                    thread::spawn(move || {
                        c.fetch_add(1, Ordering::SeqCst);
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
            assert_eq!(c.load(Ordering::SeqCst), 100);
        }
    };
}

#[cfg(feature = "pulse")]
pub mod pulse_v {
    throughput_programs!(pulse::std);
}

/// Time: only pulse has a clock to sleep on (loom has no `sleep`, shuttle's is a yield).
#[cfg(feature = "pulse")]
pub mod pulse_time {
    use pulse::std::thread;
    use pulse::std::time::{Duration, Instant};

    /// 4 threads each sleep 1 s of virtual time; the clock must have moved by it.
    pub fn sleepers_4x1s() {
        let start = Instant::now();
        let hs: Vec<_> = (0..4)
            .map(|_| thread::spawn(|| thread::sleep(Duration::from_secs(1))))
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert!(start.elapsed() >= Duration::from_secs(1));
    }
}

pub mod loom_v {
    #![allow(dead_code)] // spawn_join_100: n/a for loom (see `all`)
    throughput_programs!(loom);
}

pub mod shuttle_v {
    throughput_programs!(shuttle);
}

/// One program in its three instantiations. `None` = the tool cannot run it (reason given).
pub struct Program {
    pub name: &'static str,
    pub what: &'static str,
    /// executions per timed repetition at full size (`--quick` divides by 10)
    pub executions: u64,
    #[cfg(feature = "pulse")]
    pub pulse: fn(),
    pub loom: Result<fn(), &'static str>,
    pub shuttle: Result<fn(), &'static str>,
}

pub fn all() -> Vec<Program> {
    macro_rules! p {
        ($name:literal, $what:literal, $execs:expr, $f:ident, loom: $loom:expr) => {
            Program {
                name: $name,
                what: $what,
                executions: $execs,
                #[cfg(feature = "pulse")]
                pulse: pulse_v::$f,
                loom: $loom,
                shuttle: Ok(shuttle_v::$f),
            }
        };
        ($name:literal, $what:literal, $execs:expr, $f:ident) => {
            p!($name, $what, $execs, $f, loom: Ok(loom_v::$f))
        };
    }
    vec![
        p!(
            "mutex-counter",
            "2 threads x 10 Mutex increments",
            10_000,
            mutex_counter
        ),
        p!(
            "mpsc-pipeline",
            "4-thread pipeline over 3 mpsc channels, 5 items",
            10_000,
            mpsc_pipeline
        ),
        p!(
            "condvar-pingpong",
            "2 threads alternate 5 rounds each via Mutex+Condvar",
            10_000,
            condvar_pingpong
        ),
        p!(
            "cas-loop",
            "2 threads x 5 compare_exchange retry-loop increments",
            10_000,
            cas_loop
        ),
        p!(
            "rwlock",
            "2 readers x 3 reads + 1 writer x 3 writes",
            10_000,
            rwlock_readers_writer
        ),
        p!(
            "spawn-join-100",
            "main spawns and joins 100 threads",
            1_000,
            spawn_join_100,
            // The body compiles against loom (loom_v::spawn_join_100 exists) but loom panics at
            // run time: its model holds at most loom::MAX_THREADS = 5 threads including main.
            loom: Err("loom models at most 5 threads (MAX_THREADS, incl. main)")
        ),
        Program {
            name: "sleepers-4x1s",
            what: "4 threads each sleep 1 s (virtual time, default time portfolio)",
            executions: 10_000,
            #[cfg(feature = "pulse")]
            pulse: pulse_time::sleepers_4x1s,
            loom: Err("loom does not model time (no `thread::sleep`)"),
            shuttle: Err("shuttle does not model time (no clock to sleep on)"),
        },
    ]
}
