//! The real parking_lot 0.12.5 and lock_api 0.4.14 (atomics instrumented), parking through
//! pulse's parking_lot_core shim. Run by `run.sh` beside it, in a scratch project it builds
//! (registry sources are fetched, not committed).

use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, Once, ReentrantMutex, RwLock};
use pulse::std::sync::Arc;
use pulse::std::thread;
use pulse::{Builder, FailureKind, Report};

fn run(schedules: u64, f: impl Fn()) -> Report {
    Builder::new().schedules(schedules).seed(1).run(f)
}

fn passes(report: Report) {
    assert!(report.failure.is_none(), "{}", report.failure.unwrap());
}

fn transfers(ab_ba: bool) -> Report {
    run(2_000, move || {
        let accounts = Arc::new((Mutex::new(10), Mutex::new(10)));
        let a = accounts.clone();
        let t = thread::spawn(move || {
            let mut x = a.0.lock();
            let mut y = a.1.lock();
            *x -= 1;
            *y += 1;
        });
        {
            let (mut first, mut second) = if ab_ba {
                let y = accounts.1.lock();
                (y, accounts.0.lock())
            } else {
                let x = accounts.0.lock();
                (x, accounts.1.lock())
            };
            *first -= 1;
            *second += 1;
        }
        t.join().unwrap();
        assert_eq!(*accounts.0.lock() + *accounts.1.lock(), 20);
    })
}

#[test]
fn parking_lot_ab_ba_deadlock_is_found() {
    let f = transfers(true).failure.expect("deadlock found");
    assert_eq!(f.kind, FailureKind::Deadlock, "{f}");
    assert_eq!(f.details.len(), 2, "{f}");
    assert!(
        f.details
            .iter()
            .all(|d| d.contains("parking_lot_core::park") && d.contains("holding ParkingLot#")),
        "{f}"
    );
}

#[test]
fn parking_lot_same_order_twin_passes() {
    passes(transfers(false));
}

fn increments(split: bool) -> Report {
    run(2_000, move || {
        let n = Arc::new(Mutex::new(0));
        let add = move |n: &Mutex<i32>| {
            if split {
                let v = *n.lock();
                *n.lock() = v + 1;
            } else {
                *n.lock() += 1;
            }
        };
        let m = n.clone();
        let t = thread::spawn(move || add(&m));
        add(&n);
        t.join().unwrap();
        assert_eq!(*n.lock(), 2, "lost update");
    })
}

#[test]
fn parking_lot_lost_update_is_found() {
    let f = increments(true).failure.expect("lost update found");
    assert_eq!(f.kind, FailureKind::Panic, "{f}");
    assert!(f.message.contains("lost update"), "{f}");
}

#[test]
fn parking_lot_one_critical_section_twin_passes() {
    passes(increments(false));
}

/// Three threads, two rounds each: the spin, park, unpark and fair-handoff paths of the
/// real RawMutex all run.
#[test]
fn parking_lot_mutex_counts_exactly_under_contention() {
    passes(run(2_000, || {
        let n = Arc::new(Mutex::new(0));
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let n = n.clone();
                thread::spawn(move || (0..2).for_each(|_| *n.lock() += 1))
            })
            .collect();
        (0..2).for_each(|_| *n.lock() += 1);
        ts.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(*n.lock(), 6);
    }));
}

/// Condvar: wait parks on the condvar's key; notify_one requeues onto the mutex
/// (`unpark_requeue`); notify_all too.
#[test]
fn parking_lot_condvar_handshake_passes() {
    passes(run(2_000, || {
        let pair = Arc::new((Mutex::new(0), Condvar::new()));
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let p = pair.clone();
                thread::spawn(move || {
                    let mut g = p.0.lock();
                    while *g == 0 {
                        p.1.wait(&mut g);
                    }
                    *g += 1;
                })
            })
            .collect();
        *pair.0.lock() = 1;
        pair.1.notify_all();
        ts.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(*pair.0.lock(), 3);
    }));
}

/// A notify sent before the waiter waits is lost: the classic missed-signal bug is found
/// (the waiter checks no condition).
#[test]
fn parking_lot_condvar_missed_notify_is_found() {
    let report = run(2_000, || {
        let pair = Arc::new((Mutex::new(()), Condvar::new()));
        let p = pair.clone();
        let t = thread::spawn(move || {
            let mut g = p.0.lock();
            p.1.wait(&mut g);
        });
        pair.1.notify_one();
        t.join().unwrap();
    });
    let f = report.failure.expect("missed notify found");
    assert_eq!(f.kind, FailureKind::Deadlock, "{f}");
}

/// RwLock readers and a writer (`unpark_filter` wakes readers by their park tokens).
#[test]
fn parking_lot_rwlock_readers_and_writer_pass() {
    passes(run(2_000, || {
        let l = Arc::new(RwLock::new((0, 0)));
        let w = {
            let l = l.clone();
            thread::spawn(move || {
                let mut g = l.write();
                g.0 += 1;
                g.1 += 1;
            })
        };
        let r = {
            let l = l.clone();
            thread::spawn(move || {
                let g = l.read();
                assert_eq!(g.0, g.1, "torn read");
            })
        };
        let g = l.read();
        assert_eq!(g.0, g.1, "torn read");
        drop(g);
        w.join().unwrap();
        r.join().unwrap();
    }));
}

/// A read-then-write upgrade done as two separate locks loses an update: found.
#[test]
fn parking_lot_rwlock_read_then_write_lost_update_is_found() {
    let report = run(2_000, || {
        let l = Arc::new(RwLock::new(0));
        let add = |l: &RwLock<i32>| {
            let v = *l.read();
            *l.write() = v + 1;
        };
        let l2 = l.clone();
        let t = thread::spawn(move || add(&l2));
        add(&l);
        t.join().unwrap();
        assert_eq!(*l.read(), 2, "lost update");
    });
    assert_eq!(report.failure.expect("found").kind, FailureKind::Panic);
}

#[test]
fn parking_lot_once_runs_once_and_waiters_wait() {
    passes(run(2_000, || {
        let once = Arc::new((Once::new(), Mutex::new(0)));
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let o = once.clone();
                thread::spawn(move || {
                    o.0.call_once(|| *o.1.lock() += 1);
                    assert_eq!(*o.1.lock(), 1);
                })
            })
            .collect();
        once.0.call_once(|| *once.1.lock() += 1);
        assert_eq!(*once.1.lock(), 1);
        ts.into_iter().for_each(|t| t.join().unwrap());
    }));
}

/// lock_api's ReentrantMutex needs a per-virtual-thread id: parking_lot's thread_local!
/// (instrumented) gives one.
#[test]
fn parking_lot_reentrant_mutex_excludes_other_threads() {
    passes(run(2_000, || {
        let m = Arc::new(ReentrantMutex::new(std::cell::Cell::new(0)));
        let m2 = m.clone();
        let t = thread::spawn(move || {
            let g = m2.lock();
            let g2 = m2.lock();
            let v = g.get();
            g2.set(v + 1);
        });
        {
            let g = m.lock();
            let v = g.get();
            let g2 = m.lock();
            g2.set(v + 1);
        }
        t.join().unwrap();
        assert_eq!(m.lock().get(), 2);
    }));
}

/// try_lock_for while another thread holds the lock: times out on the virtual clock (an
/// hour, in no real time) or gets the lock after its release; never both, never neither.
#[test]
fn parking_lot_try_lock_for_times_out_on_the_virtual_clock() {
    let started = Instant::now();
    passes(run(500, || {
        let m = Arc::new(Mutex::new(()));
        let held = m.lock();
        let m2 = m.clone();
        let t = thread::spawn(move || m2.try_lock_for(Duration::from_secs(3600)).is_some());
        // The holder waits for the other thread: its timeout is all that can end the wait.
        let got = t.join().unwrap();
        drop(held);
        assert!(!got, "the lock was held throughout");
    }));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}

/// Outside an execution parking_lot still works on OS threads (the shim's real lot).
#[test]
fn parking_lot_outside_pulse_on_os_threads() {
    let n = std::sync::Arc::new(Mutex::new(0));
    let pair = std::sync::Arc::new((Mutex::new(false), Condvar::new()));
    let ts: Vec<_> = (0..4)
        .map(|_| {
            let (n, pair) = (n.clone(), pair.clone());
            std::thread::spawn(move || {
                for _ in 0..5_000 {
                    *n.lock() += 1;
                }
                let mut g = pair.0.lock();
                while !*g {
                    assert!(
                        !pair.1.wait_for(&mut g, Duration::from_secs(20)).timed_out(),
                        "lost wakeup"
                    );
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(20));
    *pair.0.lock() = true;
    pair.1.notify_all();
    ts.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(*n.lock(), 20_000);
    assert!(n.try_lock_for(Duration::from_millis(10)).is_some());
}
