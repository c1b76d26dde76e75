//! Mutex and Condvar: std's semantics outside and inside an execution, and the bugs pulse
//! must find in code that misuses them.

use pulse_runtime::{Builder, FailureKind};
use pulse_shim_std::sync::{Arc, Condvar, Mutex, TryLockError};
use pulse_shim_std::thread;
use std::time::Duration;

fn check(f: impl Fn()) {
    Builder::new().schedules(500).seed(11).check(f)
}

#[test]
fn static_mutex_compiles_and_works_in_both_modes() {
    static M: Mutex<Vec<u8>> = Mutex::new(Vec::new());
    M.lock().unwrap().push(1);
    check(|| {
        M.lock().unwrap().push(2);
    });
    assert!(M.lock().unwrap().len() >= 2);
}

#[test]
fn poisoning_matches_std_outside_an_execution() {
    let m = Arc::new(Mutex::new(1));
    let m2 = m.clone();
    let r = std::thread::spawn(move || {
        let _g = m2.lock().unwrap();
        panic!("poison it");
    })
    .join();
    assert!(r.is_err());
    assert!(m.is_poisoned());
    let err = m.lock().unwrap_err();
    assert_eq!(**err.get_ref(), 1);
    drop(err);
    assert!(matches!(m.try_lock(), Err(TryLockError::Poisoned(_))));
    m.clear_poison();
    assert!(!m.is_poisoned());
    assert_eq!(*m.lock().unwrap(), 1);
}

#[test]
fn poisoning_matches_std_inside_an_execution() {
    check(|| {
        let m = Arc::new(Mutex::new(5));
        let m2 = m.clone();
        let r = thread::spawn(move || {
            let _g = m2.lock().unwrap();
            panic!("poison it");
        })
        .join();
        assert!(r.is_err());
        assert!(m.is_poisoned());
        assert_eq!(*m.lock().unwrap_err().into_inner(), 5);
        let m = Arc::try_unwrap(m).unwrap();
        assert_eq!(m.into_inner().unwrap_err().into_inner(), 5);
    });
}

#[test]
fn try_lock_would_block_while_held() {
    check(|| {
        let m = Mutex::new(0);
        let g = m.lock().unwrap();
        assert!(matches!(m.try_lock(), Err(TryLockError::WouldBlock)));
        drop(g);
        assert!(m.try_lock().is_ok());
    });
    let m = Mutex::new(0);
    let _g = m.lock().unwrap();
    assert!(matches!(m.try_lock(), Err(TryLockError::WouldBlock)));
}

#[test]
fn try_lock_sees_both_outcomes_across_schedules() {
    let outcomes = std::sync::Mutex::new((0, 0));
    Builder::new().schedules(300).seed(5).check(|| {
        let m = Arc::new(Mutex::new(()));
        let m2 = m.clone();
        let t = thread::spawn(move || drop(m2.lock().unwrap()));
        let got = m.try_lock().is_ok();
        let mut o = outcomes.lock().unwrap();
        if got {
            o.0 += 1
        } else {
            o.1 += 1
        }
        drop(o);
        t.join().unwrap();
    });
    let (ok, blocked) = *outcomes.lock().unwrap();
    assert!(
        ok > 0 && blocked > 0,
        "try_lock outcomes: {ok} ok, {blocked} would-block"
    );
}

#[test]
fn get_mut_and_into_inner() {
    let mut m = Mutex::new(vec![1]);
    m.get_mut().unwrap().push(2);
    assert_eq!(m.into_inner().unwrap(), vec![1, 2]);
    assert_eq!(
        format!("{:?}", Mutex::new(3)),
        "Mutex { data: 3, poisoned: false, .. }"
    );
}

#[test]
fn lost_update_is_found_and_one_critical_section_passes() {
    let racy = |n: &Arc<Mutex<u32>>| {
        let v = *n.lock().unwrap();
        *n.lock().unwrap() = v + 1;
    };
    let fixed = |n: &Arc<Mutex<u32>>| *n.lock().unwrap() += 1;
    for (body, should_fail) in [
        (&racy as &(dyn Fn(&Arc<Mutex<u32>>) + Sync), true),
        (&fixed, false),
    ] {
        let report = Builder::new().schedules(1000).seed(3).run(|| {
            let n = Arc::new(Mutex::new(0));
            thread::scope(|s| {
                s.spawn(|| body(&n));
                s.spawn(|| body(&n));
            });
            assert_eq!(*n.lock().unwrap(), 2);
        });
        assert_eq!(
            report.failure.is_some(),
            should_fail,
            "{:?}",
            report.failure.map(|f| f.to_string())
        );
    }
}

#[test]
fn ab_ba_deadlock_is_reported_with_holders() {
    let report = Builder::new().schedules(1000).seed(1).run(|| {
        let a = Arc::new(Mutex::new(()));
        let b = Arc::new(Mutex::new(()));
        let (a2, b2) = (a.clone(), b.clone());
        let t = thread::spawn(move || {
            let _a = a2.lock().unwrap();
            let _b = b2.lock().unwrap();
        });
        {
            let _b = b.lock().unwrap();
            let _a = a.lock().unwrap();
        }
        t.join().unwrap();
    });
    let f = report.failure.expect("deadlock found");
    assert_eq!(f.kind, FailureKind::Deadlock);
    assert_eq!(f.details.len(), 2, "{f}");
    assert!(
        f.details.iter().all(|d| d.contains("holding Mutex#")),
        "{f}"
    );
    assert!(
        f.details.iter().all(|d| d.contains("tests/mutex.rs:")),
        "{f}"
    );
}

#[test]
fn relocking_in_the_same_thread_is_a_deadlock_not_a_hang() {
    let report = Builder::new().schedules(1).run(|| {
        let m = Mutex::new(());
        let _g = m.lock().unwrap();
        let _h = m.lock().unwrap();
    });
    assert_eq!(report.failure.expect("found").kind, FailureKind::Deadlock);
}

#[test]
fn condvar_if_instead_of_while_is_found_and_while_passes() {
    fn consumer(use_while: bool) {
        let pair = Arc::new((Mutex::new(None::<u32>), Condvar::new()));
        let p2 = pair.clone();
        let producer = thread::spawn(move || {
            let (m, c) = &*p2;
            *m.lock().unwrap() = Some(7);
            c.notify_one();
        });
        let (m, c) = &*pair;
        let mut g = m.lock().unwrap();
        if use_while {
            while g.is_none() {
                g = c.wait(g).unwrap();
            }
        } else if g.is_none() {
            g = c.wait(g).unwrap();
        }
        assert_eq!(g.take(), Some(7), "woke up without the value");
        drop(g);
        producer.join().unwrap();
    }
    let buggy = Builder::new()
        .schedules(1000)
        .seed(2)
        .run(|| consumer(false));
    assert!(
        buggy.failure.is_some(),
        "lost wakeup / spurious wakeup not found"
    );
    Builder::new()
        .schedules(10_000)
        .seed(2)
        .check(|| consumer(true));
}

#[test]
fn notify_one_wakes_exactly_one_and_which_one_varies() {
    let woken_first = std::sync::Mutex::new([0u32; 2]);
    Builder::new()
        .schedules(400)
        .seed(9)
        .spurious_odds(0, 0)
        .check(|| {
            let state = Arc::new((Mutex::new((0u32, None::<usize>)), Condvar::new()));
            let waiters: Vec<_> = (0..2)
                .map(|i| {
                    let s = state.clone();
                    thread::spawn(move || {
                        let (m, c) = &*s;
                        let mut g = m.lock().unwrap();
                        g.0 += 1;
                        while g.1.is_none() {
                            g = c.wait(g).unwrap();
                        }
                        if g.1 == Some(usize::MAX) {
                            g.1 = Some(i);
                        }
                    })
                })
                .collect();
            let (m, c) = &*state;
            let mut g = m.lock().unwrap();
            while g.0 < 2 {
                drop(g);
                thread::yield_now();
                g = m.lock().unwrap();
            }
            g.1 = Some(usize::MAX);
            c.notify_all();
            drop(g);
            for w in waiters {
                w.join().unwrap();
            }
            let first = m.lock().unwrap().1.unwrap();
            woken_first.lock().unwrap()[first] += 1;
        });
    let counts = *woken_first.lock().unwrap();
    assert!(
        counts[0] > 0 && counts[1] > 0,
        "which waiter wins is not explored: {counts:?}"
    );
}

#[test]
fn wait_timeout_times_out_on_the_virtual_clock() {
    let started = std::time::Instant::now();
    check(|| {
        let m = Mutex::new(());
        let c = Condvar::new();
        let (g, r) = c
            .wait_timeout(m.lock().unwrap(), Duration::from_secs(30))
            .unwrap();
        // Nobody notifies: it times out, or wakes spuriously (std allows both).
        let _ = r.timed_out();
        drop(g);
        let (_g, r) = c
            .wait_timeout_while(m.lock().unwrap(), Duration::from_secs(30), |_| true)
            .unwrap();
        assert!(r.timed_out());
    });
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "virtual time must not take real time"
    );
}

#[test]
fn condvar_outside_an_execution_is_std() {
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let p2 = pair.clone();
    let t = std::thread::spawn(move || {
        *p2.0.lock().unwrap() = true;
        p2.1.notify_all();
    });
    let g = pair
        .1
        .wait_while(pair.0.lock().unwrap(), |ready| !*ready)
        .unwrap();
    assert!(*g);
    drop(g);
    t.join().unwrap();
    let (_g, r) = pair
        .1
        .wait_timeout(pair.0.lock().unwrap(), Duration::from_millis(10))
        .unwrap();
    assert!(r.timed_out());
}
