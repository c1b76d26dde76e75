//! Engine guarantees seen through the shims: determinism, replay, cleanup between
//! executions, and that failures never take the process down.

use pulse_runtime::{Builder, Cleanup, FailureKind, Isolation, Report};
use pulse_shim_std::sync::atomic::{AtomicUsize, Ordering};
use pulse_shim_std::sync::{Arc, Condvar, Mutex, OnceLock};
use pulse_shim_std::thread;

fn lost_update() {
    let n = Arc::new(Mutex::new(0));
    let hs: Vec<_> = (0..2)
        .map(|_| {
            let n = n.clone();
            thread::spawn(move || {
                let v = *n.lock().unwrap();
                *n.lock().unwrap() = v + 1;
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(*n.lock().unwrap(), 2);
}

#[test]
fn same_seed_gives_byte_identical_reports() {
    // Backtraces (shown under RUST_BACKTRACE) name the caller's line, which differs here.
    let run = || {
        Builder::new()
            .schedules(1000)
            .seed(77)
            .run(lost_update)
            .failure
            .map(|f| pulse_runtime::Failure {
                backtrace: None,
                ..f
            })
    };
    let (a, b) = (run().expect("found"), run().expect("found"));
    assert_eq!(a.to_string(), b.to_string());
    assert_eq!(serde_json_like(&a), serde_json_like(&b));
    assert!(a.reproduced);
}

fn serde_json_like(f: &pulse_runtime::Failure) -> String {
    format!("{:?}", f.trace)
}

#[test]
fn replaying_the_printed_schedule_reproduces_100_times() {
    let found = Builder::new()
        .schedules(1000)
        .seed(5)
        .run(lost_update)
        .failure
        .expect("found");
    let schedule = found.schedule.to_string();
    for _ in 0..100 {
        let again = Builder::new()
            .replay(&schedule)
            .unwrap()
            .run(lost_update)
            .failure
            .expect("replay fails too");
        assert_eq!(again.message, found.message);
        assert_eq!(again.trace, found.trace);
    }
}

#[test]
fn replaying_the_seed_alone_reproduces() {
    let found = Builder::new()
        .schedules(1000)
        .seed(9)
        .run(lost_update)
        .failure
        .expect("found");
    let seed = found.seed.unwrap();
    let again = Builder::new()
        .schedules(1)
        .seed(seed)
        .run(lost_update)
        .failure
        .expect("same seed fails");
    assert_eq!(again.schedule, found.schedule);
}

#[test]
fn replay_of_a_schedule_that_does_not_fit_says_so() {
    let report = Builder::new().replay("p1:1*40").unwrap().run(lost_update);
    assert_eq!(
        report.failure.expect("diverges").kind,
        FailureKind::ReplayDiverged
    );
}

#[test]
fn a_deadlocked_execution_is_cleaned_up_and_later_ones_run() {
    // A static lock held by a thread of a deadlocked execution must be free in the next.
    static A: Mutex<u32> = Mutex::new(0);
    static B: Mutex<u32> = Mutex::new(0);
    let mut deadlocks = 0;
    for seed in 0..50 {
        let r = Builder::new()
            .schedules(1)
            .seed(seed)
            .cleanup(if seed % 2 == 0 {
                Cleanup::Leak
            } else {
                Cleanup::Unwind
            })
            .run(|| {
                let t = thread::spawn(|| {
                    let _a = A.lock().unwrap();
                    let _b = B.lock().unwrap();
                });
                {
                    let _b = B.lock().unwrap();
                    let _a = A.lock().unwrap();
                }
                t.join().unwrap();
            });
        if let Some(f) = r.failure {
            assert_eq!(f.kind, FailureKind::Deadlock, "{f}");
            deadlocks += 1;
        }
    }
    assert!(deadlocks > 0);
    // Outside pulse the statics are usable: nothing was left locked.
    assert!(A.try_lock().is_ok() && B.try_lock().is_ok());
}

#[test]
fn leaked_threads_drop_their_resources() {
    struct Counted(Arc<std::sync::atomic::AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
    let drops = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let report = Builder::new()
        .schedules(20)
        .seed(3)
        .cleanup(Cleanup::Unwind)
        // Counts one drop per execution: no minimization replays on top.
        .minimize(std::time::Duration::ZERO)
        .run(|| {
            let pair = Arc::new((Mutex::new(()), Condvar::new()));
            let p2 = pair.clone();
            let c = Counted(drops.clone());
            thread::spawn(move || {
                let _c = c;
                let g = p2.0.lock().unwrap();
                let _g = p2.1.wait(g).unwrap(); // never notified
                loop {
                    thread::yield_now();
                }
            });
            panic!("main fails while the thread waits");
        });
    assert_eq!(report.failure.expect("found").kind, FailureKind::Panic);
    assert_eq!(
        drops.load(std::sync::atomic::Ordering::SeqCst),
        report.executions as usize + 1
    );
}

#[test]
fn warns_about_state_shared_across_executions() {
    let shared = Arc::new(Mutex::new(0));
    let report = Builder::new().schedules(5).seed(1).run(|| {
        // A second thread, so that there are schedules to run (a test without a choice
        // runs once).
        thread::spawn(|| {}).join().unwrap();
        *shared.lock().unwrap() += 1
    });
    assert!(report.passed());
    let shared_warnings: Vec<&String> = report
        .warnings
        .iter()
        .filter(|w| w.contains("shared between executions"))
        .collect();
    assert_eq!(
        shared_warnings.len(),
        1,
        "once, however many schedules: {:?}",
        report.warnings
    );
    assert!(
        shared_warnings[0].contains("the Mutex used at shim-std/tests/engine.rs:"),
        "names the user's use: {shared_warnings:?}"
    );
}

#[test]
fn nested_check_is_refused_not_corrupting() {
    let r = std::panic::catch_unwind(|| {
        Builder::new()
            .schedules(1)
            .check(|| Builder::new().schedules(1).check(|| {}))
    });
    assert!(r.is_err());
    // The engine still works afterwards.
    Builder::new()
        .schedules(10)
        .check(|| drop(thread::spawn(|| 1).join()));
}

/// Runs `f` in a thread of its own while main waits for it: a thread that is not alone,
/// whose long loop the probe judges by the bound's cap (one alone has a later cap).
fn alone_no_more(f: impl FnOnce() + Send + 'static) {
    thread::spawn(f).join().unwrap();
}

/// A thread alone (no other thread alive) waits on nobody: its long loop is a long
/// single-threaded test (heapless' `try_overflow`, 140 million steps), not a livelock, up to
/// a cap ten times the usual one, where a runaway loop still ends, named as alone.
#[test]
fn a_thread_alone_runs_past_the_cap_and_a_runaway_one_still_ends() {
    use pulse_shim_std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    use pulse_shim_std::sync::Mutex;
    let bounded = Builder::new().schedules(1).seed(1).max_steps(2_000);
    // Cycling through the same values for 500,000 steps, past the usual cap of 200,000: a
    // counter wrapping round, a lock only this thread takes, a flag read over and over.
    let report = bounded.run(|| {
        let (count, lock, flag) = (AtomicUsize::new(0), Mutex::new(0), AtomicBool::new(true));
        for i in 0..100_000 {
            count.store(i % 7, SeqCst);
            *lock.lock().unwrap() += 1;
            assert!(flag.load(SeqCst));
        }
    });
    assert!(report.passed(), "{}", report.failure.unwrap());
    let report = bounded.run(|| {
        let count = AtomicUsize::new(0);
        while count.fetch_add(1, SeqCst) != usize::MAX {}
    });
    let f = report.failure.expect("a runaway loop");
    assert_eq!(f.kind, FailureKind::StepLimit, "{f}");
    assert!(
        f.message
            .contains("its one live thread ran on alone for 2000000 steps more"),
        "{f}"
    );
    // Cut by the test's time limit first (as the 60 s default cuts a debug build's 1e9 steps):
    // no verdict, as for an execution cut short of its bound; chashmap's single-threaded
    // `lots_of_insertions` (10 million lookups) was a step-limit failure.
    let f = bounded
        .max_steps(20_000)
        .run_for(std::time::Duration::from_millis(300), || {
            let count = AtomicUsize::new(0);
            while count.fetch_add(1, SeqCst) != usize::MAX {}
        })
        .failure
        .expect("no verdict");
    assert_eq!(f.kind, FailureKind::ToolError, "{f}");
    assert!(
        f.message
            .contains("its one live thread ran alone past 20000 scheduling points"),
        "{f}"
    );
    assert!(
        !f.to_string().contains("did not reproduce"),
        "not replayed: {f}"
    );
}

/// Two threads spin until a flag nobody sets is set: a livelock, stopped by the step bound.
fn spin_on_a_flag_nobody_sets() {
    let flag = Arc::new(Mutex::new(false));
    let f2 = flag.clone();
    let _t = thread::spawn(move || while !*f2.lock().unwrap() {});
    while !*flag.lock().unwrap() {}
}

/// A step limit with twenty spinning threads lists the eight busiest and sums up the rest
/// by where they were, rather than a line per thread.
#[test]
fn a_step_limit_lists_the_busiest_threads_and_sums_up_the_rest() {
    let report = Builder::new()
        .schedules(1)
        .seed(1)
        .max_steps(30_000)
        .minimize(std::time::Duration::ZERO)
        .run(|| {
            let flag = Arc::new(Mutex::new(false));
            for _ in 0..19 {
                let f = flag.clone();
                thread::spawn(move || while !*f.lock().unwrap() {});
            }
            while !*flag.lock().unwrap() {}
        });
    let f = report.failure.expect("livelock");
    assert_eq!(f.kind, FailureKind::StepLimit);
    let listed = f
        .details
        .iter()
        .filter(|d| d.starts_with("thread '"))
        .count();
    assert_eq!(listed, 8, "{:#?}", f.details);
    let rest = f
        .details
        .iter()
        .find(|d| d.starts_with("12 more threads took "))
        .unwrap_or_else(|| panic!("{:#?}", f.details));
    // Each place with its count of threads: all twelve are accounted for.
    let counted: usize = rest
        .split(" (")
        .skip(1)
        .filter_map(|c| c.split(')').next()?.parse::<usize>().ok())
        .sum();
    assert!(rest.contains("tests/engine.rs:") && counted == 12, "{rest}");
}

#[test]
fn a_long_failing_execution_keeps_the_end_of_its_trace() {
    let report = Builder::new()
        .schedules(1)
        .seed(1)
        .max_steps(30_000)
        .run(spin_on_a_flag_nobody_sets);
    let f = report.failure.expect("livelock");
    assert_eq!(f.kind, FailureKind::StepLimit);
    assert_eq!(f.trace.len(), 10_000, "the last 10,000 steps");
    assert!(
        f.trace.last().unwrap().step >= 29_000,
        "{:?}",
        f.trace.last()
    );
    let text = f.to_string();
    assert!(
        text.contains("trace (last 30 of 3"),
        "{}",
        text.lines().find(|l| l.contains("trace (")).unwrap_or("")
    );
}

/// The step bound scales with the threads: 1,000 threads that each take ~1,100 scheduling
/// points (1.1 million in all, past the 1,000,000 default) are not a livelock, while two
/// threads spinning forever still are, at the bound they asked for.
#[test]
fn the_step_bound_scales_with_the_threads() {
    use pulse_shim_std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    // Random: PCT and POS scan the runnable threads at each decision (1,000 here), which
    // is slow in a debug build; the bound is the same for every strategy.
    let random = Builder::new()
        .schedules(1)
        .seed(3)
        .strategy(pulse_runtime::Strategy::Random);
    let report = random.run(|| {
        let counters: Arc<Vec<AtomicUsize>> =
            Arc::new((0..1000).map(|_| AtomicUsize::new(0)).collect());
        let hs: Vec<_> = (0..1000)
            .map(|i| {
                let c = counters.clone();
                thread::spawn(move || {
                    for _ in 0..1100 {
                        c[i].fetch_add(1, SeqCst);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    });
    assert!(report.passed(), "{}", report.failure.unwrap());
    assert!(report.decisions > 1_000_000, "{}", report.decisions);

    let report = random.run(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let f = flag.clone();
        let spinner = thread::spawn(move || while !f.load(SeqCst) {});
        while !flag.load(SeqCst) {}
        spinner.join().unwrap();
    });
    let failure = report.failure.expect("a livelock");
    assert_eq!(failure.kind, FailureKind::StepLimit, "{failure}");
    assert!(
        failure.message.contains("1000000 scheduling points"),
        "{failure}"
    );
}

/// A producer hands out one token at a time and waits until each of three consumers has
/// taken one. PCT and roles take busy threads in turns (64 choice points each): in a fixed
/// order, the consumer right after the producer takes every token, the others never get one,
/// and a correct test ran to the step cap (crossbeam-deque's `no_starvation`, 100 million
/// steps). Past the step bound they pick at random (`Scheduler::past_bound`), as no OS
/// scheduler keeps an order for ever, and the test ends.
#[test]
fn a_test_waiting_for_every_thread_ends_under_pct_and_roles() {
    use pulse_shim_std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    for strategy in ["pct:3", "roles:4", "portfolio"] {
        let report = Builder::new()
            .schedules(10)
            .seed(1)
            .max_steps(20_000)
            .strategy(strategy.parse().unwrap())
            .run(|| {
                let tokens = Arc::new(AtomicUsize::new(0));
                let done = Arc::new(AtomicBool::new(false));
                let hits: Arc<Vec<AtomicBool>> =
                    Arc::new((0..3).map(|_| AtomicBool::new(false)).collect());
                let consumers: Vec<_> = (0..3)
                    .map(|i| {
                        let (tokens, done, hits) = (tokens.clone(), done.clone(), hits.clone());
                        thread::spawn(move || {
                            while !done.load(SeqCst) {
                                let t = tokens.load(SeqCst);
                                if t > 0
                                    && tokens.compare_exchange(t, t - 1, SeqCst, SeqCst).is_ok()
                                {
                                    hits[i].store(true, SeqCst);
                                }
                            }
                        })
                    })
                    .collect();
                while !hits.iter().all(|h| h.load(SeqCst)) {
                    if tokens.load(SeqCst) == 0 {
                        tokens.fetch_add(1, SeqCst);
                    }
                }
                done.store(true, SeqCst);
                for c in consumers {
                    c.join().unwrap();
                }
            });
        assert!(report.passed(), "{strategy}: {}", report.failure.unwrap());
    }
}

/// A poller loops through four choice points (take a spin lock, two loads, release it)
/// while the thread that would end it yields whenever it finds the lock taken. A strategy
/// that made every run give way after exactly 64 choice points cut the poller at the same
/// point of its loop each time, holding the lock, and the other thread never got it: a
/// false livelock under POS (crossbeam-channel 0.3.9's `zero::stress_iter`). Each run's
/// length is drawn, so the cut moves.
#[test]
fn a_poller_whose_loop_divides_the_fair_run_does_not_starve_the_locker() {
    use pulse_shim_std::sync::atomic::{AtomicBool, Ordering::*};
    fn lock(l: &AtomicBool) {
        while l.swap(true, Acquire) {
            thread::yield_now();
        }
    }
    for strategy in ["pos", "pct:3", "roles:4", "portfolio"] {
        let report = Builder::new()
            .schedules(50)
            .seed(1)
            .max_steps(100_000)
            .strategy(strategy.parse().unwrap())
            .run(|| {
                let shared = Arc::new((AtomicBool::new(false), AtomicBool::new(false)));
                let s = shared.clone();
                let poller = thread::spawn(move || loop {
                    lock(&s.0);
                    let done = s.1.load(Relaxed);
                    let _again = s.1.load(Relaxed);
                    s.0.store(false, Release);
                    if done {
                        break;
                    }
                });
                lock(&shared.0);
                shared.1.store(true, Relaxed);
                shared.0.store(false, Release);
                poller.join().unwrap();
            });
        assert!(report.passed(), "{strategy}: {}", report.failure.unwrap());
    }
}

/// Two threads each adding one to a shared atomic `each` times; the count at the end.
fn count_in_two_threads(each: usize) -> usize {
    use pulse_shim_std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let t = thread::spawn(move || {
        for _ in 0..each {
            c.fetch_add(1, SeqCst);
        }
    });
    for _ in 0..each {
        count.fetch_add(1, SeqCst);
    }
    t.join().unwrap();
    count.load(SeqCst)
}

/// Past the step bound an execution goes on while it changes state: a stress test three
/// times longer than its bound passes, and so do two whose state only cycles (a value handed
/// round through a few values, data a lock guards taken in turns: scoped_threadpool's and
/// rtrb's stress tests were stopped as livelocks). A spin lock two threads keep taking in turns
/// without ever seeing the flag they wait for cycles too: it is stopped at the cap, as
/// cycling; loads spread over a table of atomics read it, and run on; one flag nobody writes
/// is stopped ten quiet probe windows past the bound; a counter that counts for ever is stopped at
/// the cap, said to be still progressing.
#[test]
fn a_long_execution_that_changes_state_is_not_a_livelock() {
    use pulse_shim_std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    let bounded = Builder::new().schedules(3).seed(1).max_steps(20_000);
    let report = bounded.run(|| assert_eq!(count_in_two_threads(15_000), 30_000));
    assert!(report.passed(), "{}", report.failure.unwrap());

    // Two threads hand a value round 1..=4, 30,000 turns each: 60,000+ steps.
    let report = bounded.run(|| {
        let value = Arc::new(AtomicUsize::new(1));
        let v = value.clone();
        let turn = move |v: &AtomicUsize| {
            for _ in 0..30_000 {
                let _ = v.fetch_update(SeqCst, SeqCst, |x| Some(x % 4 + 1));
            }
        };
        let t = thread::spawn(move || turn(&v));
        turn(&value);
        t.join().unwrap();
    });
    assert!(report.passed(), "{}", report.failure.unwrap());

    // Data a lock guards, taken in turns: 10,000 items through a one-slot buffer.
    let report = bounded.run(|| {
        let slot = Arc::new(Mutex::new(None::<u32>));
        let s = slot.clone();
        let producer = thread::spawn(move || {
            for i in 0..10_000 {
                loop {
                    let mut slot = s.lock().unwrap();
                    if slot.is_none() {
                        *slot = Some(i);
                        break;
                    }
                }
            }
        });
        for i in 0..10_000 {
            let got = loop {
                if let Some(v) = slot.lock().unwrap().take() {
                    break v;
                }
            };
            assert_eq!(got, i);
        }
        producer.join().unwrap();
    });
    assert!(report.passed(), "{}", report.failure.unwrap());

    let report = Builder::new()
        .schedules(1)
        .seed(1)
        .max_steps(2_000)
        .run(|| {
            let lock = Arc::new(AtomicBool::new(false));
            let done = Arc::new(AtomicBool::new(false));
            let (l, d) = (lock.clone(), done.clone());
            let spin = move |lock: &AtomicBool, done: &AtomicBool| loop {
                while lock.compare_exchange(false, true, SeqCst, SeqCst).is_err() {}
                let finished = done.load(SeqCst);
                lock.store(false, SeqCst);
                if finished {
                    break;
                }
            };
            let t = thread::spawn(move || spin(&l, &d));
            spin(&lock, &done);
            t.join().unwrap();
        });
    let f = report.failure.expect("a livelock in turns");
    assert_eq!(f.kind, FailureKind::StepLimit, "{f}");
    assert!(f.message.contains("passed 20000 scheduling points"), "{f}");
    assert!(
        f.message.contains("through values it had written before"),
        "{f}"
    );
    assert!(f.message.contains("stopped it 200000 steps later"), "{f}");

    // A read-only phase past the bound: lookups over a table of 1,000 atomics, the sum kept
    // in plain memory (flurry's `everything`, reported as a livelock).
    let report = bounded.run(|| {
        let table: Vec<AtomicUsize> = (0..1_000).map(AtomicUsize::new).collect();
        for i in 0..25_000 {
            table[i % 1_000].store(i, SeqCst);
        }
        let sum = (0..60_000).fold(0usize, |s, i| s.wrapping_add(table[i % 1_000].load(SeqCst)));
        assert!(sum > 0);
    });
    assert!(report.passed(), "{}", report.failure.unwrap());

    // (In a thread of its own, main waiting: a thread alone runs on to a later cap.)
    let report = bounded.run(|| {
        alone_no_more(|| {
            let flag = AtomicBool::new(false);
            while !flag.load(SeqCst) {
                flag.store(false, SeqCst);
            }
        })
    });
    let f = report.failure.expect("a livelock");
    assert_eq!(f.kind, FailureKind::StepLimit, "{f}");
    assert!(
        f.message
            .contains("changed nothing pulse can see in its last 20000"),
        "{f}"
    );

    let report = Builder::new()
        .schedules(1)
        .seed(1)
        .max_steps(2_000)
        .run(|| {
            alone_no_more(|| {
                let count = AtomicUsize::new(0);
                while count.fetch_add(1, SeqCst) != usize::MAX {}
            })
        });
    let f = report.failure.expect("a runaway loop");
    assert_eq!(f.kind, FailureKind::StepLimit, "{f}");
    assert!(f.message.contains("still making progress"), "{f}");
    assert!(f.message.contains("stopped it 200000 steps later"), "{f}");
}

/// A worker that sleeps a millisecond between steady steps while main polls it is a long
/// test, not a livelock: at 1 µs of virtual time per step it needs 50,000 steps, past the
/// 20,000 asked for. It was reported as `a polling loop whose condition never comes`
/// (evmap's `busybusybusy_slow`).
#[test]
fn a_long_test_whose_threads_sleep_and_progress_is_not_a_polling_livelock() {
    use pulse_shim_std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    let report = Builder::new()
        .schedules(5)
        .seed(1)
        .max_steps(20_000)
        .run(|| {
            let count = Arc::new(AtomicUsize::new(0));
            let c = count.clone();
            let worker = thread::spawn(move || {
                for _ in 0..50 {
                    thread::sleep(std::time::Duration::from_millis(1));
                    c.fetch_add(1, SeqCst);
                }
            });
            while count.load(SeqCst) < 50 {
                thread::yield_now();
            }
            worker.join().unwrap();
        });
    assert!(report.passed(), "{}", report.failure.unwrap());
}

/// A poller stopped at the bound while another thread still sleeps: the report names the
/// sleeper and how far off its timer was (crossbeam-channel's `select::loop_try` was
/// called "a polling loop that never sees its condition" with its sleeper still due).
#[test]
fn a_step_limit_with_a_sleeper_still_due_says_so() {
    use pulse_shim_std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    let report = Builder::new()
        .schedules(1)
        .seed(1)
        .max_steps(20_000)
        .run(|| {
            let done = Arc::new(AtomicBool::new(false));
            let d = done.clone();
            let sleeper = thread::Builder::new()
                .name("sleeper".into())
                .spawn(move || {
                    thread::sleep(std::time::Duration::from_secs(10));
                    d.store(true, SeqCst);
                })
                .unwrap();
            while !done.load(SeqCst) {
                thread::yield_now();
            }
            sleeper.join().unwrap();
        });
    let f = report.failure.expect("stopped at the bound");
    assert_eq!(f.kind, FailureKind::StepLimit, "{f}");
    assert!(
        f.message
            .contains("thread 'sleeper' was still waiting for its timer, due in 10.0s"),
        "{f}"
    );
}

/// A failing execution longer than the trace file keeps is replayed with tracing on for its
/// end only (tracing it all cost more than the execution): the replay still reproduces it,
/// and the report still has the trace's last steps and a trace file of its last 200,000; of
/// one stopped past its step bound, its last 20,000 (the loop it was in).
#[test]
fn a_long_failing_execution_is_traced_only_at_its_end() {
    use pulse_shim_std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    let traced = |f: &pulse_runtime::Failure| {
        assert!(f.reproduced, "{f}");
        let last = f.trace.last().expect("a trace").step;
        let full = f.full_trace.as_ref().expect("a trace file");
        (full.events.first().expect("events").step, last)
    };
    let report = Builder::new().schedules(1).seed(1).run(|| {
        let count = AtomicUsize::new(0);
        while count.fetch_add(1, SeqCst) < 600_000 {}
        panic!("counted");
    });
    let (first, last) = traced(&report.failure.expect("the panic"));
    assert!(last >= 600_000, "{last}");
    assert!(
        (last - 200_000..=last - 190_000).contains(&first),
        "traced from step {first}, last {last}"
    );
    let report = Builder::new()
        .schedules(1)
        .seed(1)
        .max_steps(50_000)
        .run(|| {
            alone_no_more(|| {
                let count = AtomicUsize::new(0);
                while count.fetch_add(1, SeqCst) != usize::MAX {}
            })
        });
    let (first, last) = traced(&report.failure.expect("a runaway loop"));
    assert!(last >= 549_000, "{last}");
    assert!(
        (last - 20_000..=last - 19_000).contains(&first),
        "traced from step {first}, last {last}"
    );
}

#[test]
fn search_time_ends_at_the_failing_panic_not_after_unwinding() {
    // The panic is the detection (as a peer's time to first panic is taken); the 200 ms a
    // destructor spends while unwinding belong to the failing execution, not to the search.
    struct SlowDrop;
    impl Drop for SlowDrop {
        fn drop(&mut self) {
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }
    let report = Builder::new()
        .schedules(1)
        .seed(1)
        .isolation(pulse_runtime::Isolation::Off)
        .minimize(std::time::Duration::ZERO)
        .run(|| {
            let _slow = SlowDrop;
            panic!("found");
        });
    assert_eq!(report.failure.expect("a failure").message, "found");
    assert!(report.elapsed >= std::time::Duration::from_millis(200));
    assert!(
        report.search_time < std::time::Duration::from_millis(150),
        "{:?}",
        report.search_time
    );
}

/// A test that never has two threads able to run, nor any other choice, runs once: every
/// seed would run the same execution (a slow single-threaded test used to repeat itself
/// for the whole budget). One choice anywhere, and the search goes on.
#[test]
fn a_test_without_a_choice_runs_once() {
    let m = Mutex::new(0);
    let report = Builder::new().schedules(100).seed(1).run(|| {
        *m.lock().unwrap() += 1;
        thread::yield_now();
    });
    assert!(report.passed());
    assert_eq!(report.executions, 1);
    let verdict = report.exhaustive.expect("a verdict").to_string();
    assert!(verdict.contains("made no scheduling choice"), "{verdict}");
    // A spawned thread that could run beside main is a choice.
    let report = Builder::new().schedules(100).seed(1).run(|| {
        thread::spawn(|| {}).join().unwrap();
    });
    assert_eq!((report.executions, report.exhaustive), (100, None));
    // So is a weak compare-exchange, which may fail spuriously.
    let report = Builder::new().schedules(100).seed(1).run(|| {
        let a = pulse_shim_std::sync::atomic::AtomicUsize::new(0);
        while a
            .compare_exchange_weak(
                0,
                1,
                std::sync::atomic::Ordering::SeqCst,
                std::sync::atomic::Ordering::SeqCst,
            )
            .is_err()
        {}
    });
    assert_eq!(report.executions, 100);
}

/// A search stops starting schedules at its time limit (`--test-time`), passes with what it
/// ran, and says how many of the planned it ran.
#[test]
fn a_search_stops_at_its_time_limit_and_says_so() {
    let report = Builder::new().schedules(1000).seed(1).run_for(
        std::time::Duration::from_millis(300),
        || {
            // 20 ms of real time per schedule, and a choice (two threads), so the search
            // would go on.
            std::thread::sleep(std::time::Duration::from_millis(20));
            thread::spawn(|| {}).join().unwrap();
        },
    );
    assert!(report.passed());
    assert!(
        (2..100).contains(&report.executions),
        "{}",
        report.executions
    );
    let said = format!(
        "ran out after {} of its 1000 schedules, all passing",
        report.executions
    );
    assert!(
        report.warnings.iter().any(|w| w.contains(&said)),
        "{:?}",
        report.warnings
    );
    // A search that ends first says nothing.
    let report =
        Builder::new()
            .schedules(10)
            .seed(1)
            .run_for(std::time::Duration::from_secs(60), || {
                thread::spawn(|| {}).join().unwrap();
            });
    assert_eq!(report.executions, 10);
    assert!(report.warnings.iter().all(|w| !w.contains("time limit:")));
}

/// The time limit cuts an execution that outlasts it, not only the search between
/// executions (bus's `aggressive_iteration` ran one schedule for 159 s against 5 s). Short of
/// its step bound a cut execution is no verdict: a first one leaves the test without one (a
/// tool error), a later one ends the search as the limit would have between schedules. Past
/// its bound it is a step-limit finding, as it would have been at the probe's cap.
#[test]
fn the_time_limit_cuts_a_long_execution() {
    use std::time::{Duration, Instant};
    // Two threads counting long past any of the limits below (not for ever: without the
    // cut this test would take minutes, not hang).
    let count_long = || {
        count_in_two_threads(20_000_000);
    };
    let started = Instant::now();
    let report = Builder::new()
        .schedules(10)
        .seed(1)
        .max_steps(u64::MAX / 1000)
        .run_for(Duration::from_millis(300), count_long);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let f = report.failure.expect("no verdict");
    assert_eq!(f.kind, FailureKind::ToolError, "{f}");
    assert!(
        f.message.contains(
            "a schedule did not end within the test's time limit (300ms): pulse cut it after"
        ) && f
            .message
            .contains("short of its step bound, so the test has no verdict"),
        "{f}"
    );

    // The fourth schedule counts long.
    let later = |max_steps: u64| {
        let runs = std::sync::atomic::AtomicU32::new(0);
        Builder::new()
            .schedules(10)
            .seed(1)
            .max_steps(max_steps)
            .run_for(Duration::from_millis(1500), || {
                if runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 3 {
                    count_long();
                }
                thread::spawn(|| {}).join().unwrap();
            })
    };
    let report = later(u64::MAX / 1000);
    assert!(report.passed(), "{}", report.failure.unwrap());
    assert_eq!(report.executions, 3);
    assert!(
        report.warnings.iter().any(|w| {
            w.starts_with(
            "time limit: the test's time limit ran out during schedule 4 of 10, which was cut after"
        ) && w.contains("the 3 before it all passed")
        }),
        "{:?}",
        report.warnings
    );
    let started = Instant::now();
    let f = later(20_000).failure.expect("a step limit");
    assert_eq!(f.kind, FailureKind::StepLimit, "{f}");
    assert_eq!(f.execution, 3, "{f}");
    assert!(
        f.message.contains(
            "execution passed 20000 scheduling points and went on changing state without ending \
             until the test's time limit (1.5s) cut it"
        ),
        "{f}"
    );
    // Not replayed: that would take as long again.
    assert!(f.reproduced, "{f}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

/// An execution cut past its step bound after no more steps than schedules of the same test
/// took to pass is only long: the search ends there as at the limit, and the test passes
/// (session 28 trial: two threads of 1,500,000 increments each, 28 schedules passed, the
/// 29th was reported as a step limit).
///
/// Where the limit falls is made certain, not left to the clock: the first schedule passes
/// quickly; the second runs past its bound (20,000 steps for two threads) at the same speed,
/// then slows to 100 µs of real time per increment, so the limit runs out there, well short
/// of the first schedule's length. (Cut wherever the clock said, one run in a few fell before
/// the bound and was not this case at all.)
#[test]
fn a_cut_no_longer_than_a_passing_schedule_is_not_a_step_limit() {
    use std::sync::atomic::AtomicUsize as RealCounter;
    use std::time::Duration;
    const EACH: usize = 100_000;
    const SLOW_FROM: usize = 30_000;
    static SCHEDULE: RealCounter = RealCounter::new(0);
    let report = Builder::new()
        .schedules(1000)
        .seed(1)
        .max_steps(2_000)
        .run_for(Duration::from_secs(3), || {
            let schedule = SCHEDULE.fetch_add(1, Ordering::SeqCst) + 1;
            let count = Arc::new(AtomicUsize::new(0));
            let add = move |count: &AtomicUsize| {
                if count.fetch_add(1, Ordering::SeqCst) >= SLOW_FROM && schedule >= 2 {
                    std::thread::sleep(Duration::from_micros(100));
                }
            };
            let c = count.clone();
            let t = thread::spawn(move || (0..EACH).for_each(|_| add(&c)));
            (0..EACH).for_each(|_| add(&count));
            t.join().unwrap();
        });
    assert!(report.passed(), "{}", report.failure.unwrap());
    assert_eq!(report.executions, 1, "{:?}", report.warnings);
    assert!(
        report.warnings.iter().any(|w| {
            w.starts_with("time limit: the test's time limit ran out during schedule 2 of 1000")
                && w.contains("an earlier schedule took to pass")
        }),
        "{:?}",
        report.warnings
    );
}

/// A step budget ends a search after the same schedules on any machine, fewer when the
/// executions are longer, and says so; a search within it runs every schedule.
#[test]
fn a_search_stops_at_its_step_budget_and_says_so() {
    let steps_of = |rounds: usize| {
        let report = Builder::new()
            .schedules(1000)
            .seed(1)
            .step_budget(20_000)
            .run(move || {
                let a = Arc::new(AtomicUsize::new(0));
                let b = a.clone();
                let h = thread::spawn(move || {
                    (0..rounds).for_each(|_| {
                        b.fetch_add(1, Ordering::SeqCst);
                    })
                });
                (0..rounds).for_each(|_| {
                    a.fetch_add(1, Ordering::SeqCst);
                });
                h.join().unwrap();
            });
        assert!(report.passed());
        assert!(report.decisions >= 20_000, "{}", report.decisions);
        let said = format!(
            "step budget: the test's 20000 steps ran out after {} of its 1000 schedules",
            report.executions
        );
        assert!(
            report.warnings.iter().any(|w| w.starts_with(&said)),
            "{:?}",
            report.warnings
        );
        report.executions
    };
    let short = steps_of(10);
    let long = steps_of(100);
    // ~25 and ~205 steps per execution: about ten times fewer long ones.
    assert!((600..1000).contains(&short), "{short}");
    assert!((60..120).contains(&long), "{long}");
    assert_eq!(steps_of(100), long, "the same schedules on every run");
    let report = Builder::new()
        .schedules(10)
        .seed(1)
        .step_budget(1_000_000)
        .run(|| thread::spawn(|| {}).join().unwrap());
    assert_eq!(report.executions, 10);
    assert!(report.warnings.iter().all(|w| !w.contains("step budget:")));
}

/// A failing execution of more than 100,000 steps (a stress test past its step bound) is
/// reported as found: minimizing it replays that many steps per candidate and used to take
/// the whole budget for nothing.
#[test]
fn a_long_failing_execution_is_not_minimized() {
    let started = std::time::Instant::now();
    let report = Builder::new()
        .schedules(1)
        .seed(1)
        .max_steps(110_000)
        .minimize(std::time::Duration::from_secs(600))
        .run(spin_on_a_flag_nobody_sets);
    let f = report.failure.expect("a step limit");
    assert_eq!(f.kind, FailureKind::StepLimit);
    assert!(f.minimized.is_none(), "{f}");
    // Minimizing would spend its whole budget; the search, the livelock's ten quiet windows
    // and the traced replay take 10-20 s in a loaded debug build.
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(120), "took {took:?}");
}

/// A failure under `dpor` (or `dfs`) that comes from what an earlier schedule left in a
/// `static` (conquer-once's `once_cell_try_init_and_try_get`): with every schedule in this
/// process the report says so.
#[test]
fn a_systematic_failure_after_state_carried_over_says_so() {
    static CELL: OnceLock<usize> = OnceLock::new();
    let f = first_winner_under_dpor(&CELL, Isolation::Off)
        .failure
        .expect("the second schedule sees the cell set");
    assert!(
        f.warnings
            .iter()
            .any(|w| w.contains("its schedules ran in this one process")),
        "{f}"
    );
}

/// The same where schedules can run in fresh processes: the search starts over one process
/// per schedule, and the test, correct from a clean start, passes with a verdict.
#[test]
fn a_systematic_search_over_state_carried_over_starts_over_isolated() {
    static CELL: OnceLock<usize> = OnceLock::new();
    let report = first_winner_under_dpor(&CELL, Isolation::Auto);
    assert!(report.passed(), "{}", report.failure.unwrap());
    assert!(report.exhaustive.is_some());
    assert!(
        report.warnings.iter().any(|w| w.contains("started over")),
        "{:?}",
        report.warnings
    );
}

/// Two threads race to set `cell`, which must be empty at the start, under `dpor:2`.
fn first_winner_under_dpor(cell: &'static OnceLock<usize>, isolation: Isolation) -> Report {
    Builder::new()
        .strategy(pulse_runtime::Strategy::Dpor { bound: 2 })
        .schedules(100)
        .isolation(isolation)
        .run(|| {
            assert_eq!(cell.get(), None);
            let hs: Vec<_> = (0..2)
                .map(|i| thread::spawn(move || *cell.get_or_init(|| i)))
                .collect();
            let winners: Vec<usize> = hs.into_iter().map(|h| h.join().unwrap()).collect();
            assert_eq!(winners[0], winners[1]);
        })
}

/// A long execution tells `Builder::progress` it is alive every million steps or so, within
/// its step bound too: a driver that stops a test making no progress for a minute
/// (cargo-pulse) stopped seize's 100,000,000-step traced replay as stalled.
#[test]
fn a_long_execution_tells_it_is_alive() {
    use pulse_shim_std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::atomic::AtomicU64;
    let told = |steps: usize| {
        let told = Arc::new(AtomicU64::new(0));
        let t = told.clone();
        let report = Builder::new()
            .schedules(1)
            .max_steps(10_000_000)
            .progress(move |_, _| {
                t.fetch_add(1, SeqCst);
            })
            .run(|| {
                let n = AtomicUsize::new(0);
                for _ in 0..steps {
                    n.fetch_add(1, SeqCst);
                }
            });
        assert!(report.passed(), "{}", report.failure.unwrap());
        told.load(SeqCst)
    };
    // Past 2^20 and 2^21 steps: twice more than a short execution.
    assert_eq!(told(2_200_000), told(10) + 2);
}

/// A step-limit finding the time limit cut past the step bound records the schedule up to
/// the cut: its replay runs those choices and reaches the same finding where they end, not
/// "the schedule no longer fits the program" (session 28's trial).
#[test]
fn the_replay_of_a_time_cut_step_limit_reaches_the_same_finding() {
    use std::time::Duration;
    let long = || {
        count_in_two_threads(usize::MAX / 4);
    };
    // Cut between the step bound (20,000 steps) and the probe's cap (220,000): ~100,000
    // steps in 100 ms in a debug build here; other limits for a much slower or faster one.
    let found = [100, 30, 300, 1000]
        .into_iter()
        .filter_map(|ms| {
            Builder::new()
                .schedules(10)
                .seed(1)
                .max_steps(2_000)
                .run_for(Duration::from_millis(ms), long)
                .failure
        })
        .find(|f| f.message.contains("until the test's time limit"))
        .expect("a step limit the time limit cut");
    assert_eq!(found.kind, FailureKind::StepLimit, "{found}");
    let schedule = found.schedule.to_string();
    for _ in 0..2 {
        let again = Builder::new()
            .max_steps(2_000)
            .replay(&schedule)
            .unwrap()
            .run(long);
        assert!(
            again.warnings.iter().all(|w| !w.contains("no longer fits")),
            "{:?}",
            again.warnings
        );
        let f = again.failure.expect("the replay fails too");
        assert_eq!(f.kind, FailureKind::StepLimit, "{f}");
        let cut_at = |m: &str| m.split(" cut it ").nth(1).map(str::to_string);
        assert!(
            f.message.contains("until the search's time limit cut it")
                && cut_at(&f.message) == cut_at(&found.message),
            "{f}"
        );
        assert_eq!(f.schedule.to_string(), schedule);
    }
}
