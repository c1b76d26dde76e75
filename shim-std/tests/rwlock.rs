//! `RwLock`: std's behaviour outside an execution, reader/writer exclusion and poisoning
//! on every schedule inside one, and the bugs pulse must find (a lost update through a
//! read-then-write upgrade, an AB/BA deadlock).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

use pulse_runtime::{Builder, FailureKind};
use pulse_shim_std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};
use pulse_shim_std::thread;

const SCHEDULES: u64 = 1000;

fn builder(seed: u64) -> Builder {
    Builder::new().schedules(SCHEDULES).seed(seed)
}

#[test]
fn outside_an_execution_it_behaves_like_std() {
    let lock = RwLock::new(5);
    {
        let r1 = lock.read().unwrap();
        let r2 = lock.try_read().unwrap();
        assert_eq!(*r1 + *r2, 10);
        assert!(matches!(lock.try_write(), Err(TryLockError::WouldBlock)));
        assert_eq!(
            format!("{lock:?}"),
            "RwLock { data: 5, poisoned: false, .. }"
        );
    }
    {
        let mut w = lock.write().unwrap();
        *w += 1;
        assert!(matches!(lock.try_read(), Err(TryLockError::WouldBlock)));
        assert!(matches!(lock.try_write(), Err(TryLockError::WouldBlock)));
        assert_eq!(
            format!("{lock:?}"),
            "RwLock { data: <locked>, poisoned: false, .. }"
        );
        let r = RwLockWriteGuard::downgrade(w);
        assert_eq!(*r, 6);
        assert!(lock.try_read().is_ok());
        assert!(matches!(lock.try_write(), Err(TryLockError::WouldBlock)));
    }
    assert_eq!(lock.into_inner().unwrap(), 6);
    assert_eq!(*RwLock::<u8>::default().get_mut().unwrap(), 0);
    assert_eq!(RwLock::from("x").into_inner().unwrap(), "x");
}

#[test]
fn outside_an_execution_only_a_panicking_writer_poisons() {
    let lock = Arc::new(RwLock::new(0));
    let l = lock.clone();
    assert!(std::thread::spawn(move || {
        let _r = l.read().unwrap();
        panic!("reader panics");
    })
    .join()
    .is_err());
    assert!(!lock.is_poisoned());

    let l = lock.clone();
    assert!(std::thread::spawn(move || {
        let mut w = l.write().unwrap();
        *w = 7;
        panic!("writer panics");
    })
    .join()
    .is_err());
    assert!(lock.is_poisoned());
    assert_eq!(**lock.read().unwrap_err().get_ref(), 7);
    assert!(matches!(lock.try_write(), Err(TryLockError::Poisoned(_))));
    lock.clear_poison();
    assert!(!lock.is_poisoned());
    assert_eq!(*lock.read().unwrap(), 7);
}

/// Two readers and a writer, each yielding inside its critical section: on no schedule
/// may the writer overlap anyone, and on some schedule the readers must overlap.
#[test]
fn readers_share_and_writers_exclude_on_every_schedule() {
    static READERS_OVERLAPPED: AtomicBool = AtomicBool::new(false);
    let report = builder(1).run(|| {
        let lock = Arc::new(RwLock::new(0u32));
        let readers = Arc::new(AtomicUsize::new(0));
        let writing = Arc::new(AtomicBool::new(false));
        let mut handles = Vec::new();
        for _ in 0..2 {
            let (lock, readers, writing) = (lock.clone(), readers.clone(), writing.clone());
            handles.push(thread::spawn(move || {
                let r = lock.read().unwrap();
                if readers.fetch_add(1, SeqCst) == 1 {
                    READERS_OVERLAPPED.store(true, SeqCst);
                }
                thread::yield_now();
                assert!(!writing.load(SeqCst), "a reader overlaps the writer");
                readers.fetch_sub(1, SeqCst);
                *r
            }));
        }
        {
            let mut w = lock.write().unwrap();
            writing.store(true, SeqCst);
            thread::yield_now();
            assert_eq!(readers.load(SeqCst), 0, "the writer overlaps a reader");
            *w += 1;
            writing.store(false, SeqCst);
        }
        for h in handles {
            assert!(h.join().unwrap() <= 1);
        }
    });
    assert!(report.failure.is_none(), "{:?}", report.failure);
    assert_eq!(report.executions, SCHEDULES);
    assert!(
        READERS_OVERLAPPED.load(SeqCst),
        "readers never held the lock together"
    );
}

#[test]
fn try_lock_outcomes_depend_on_the_schedule() {
    static OUTCOMES: [AtomicU32; 2] = [AtomicU32::new(0), AtomicU32::new(0)];
    builder(2).check(|| {
        let lock = Arc::new(RwLock::new(()));
        let l = lock.clone();
        let reader = thread::spawn(move || drop(l.read().unwrap()));
        match lock.try_write() {
            Ok(_) => OUTCOMES[0].fetch_add(1, SeqCst),
            Err(TryLockError::WouldBlock) => OUTCOMES[1].fetch_add(1, SeqCst),
            Err(TryLockError::Poisoned(_)) => panic!("not poisoned"),
        };
        reader.join().unwrap();
    });
    assert!(OUTCOMES.iter().all(|n| n.load(SeqCst) > 0), "{OUTCOMES:?}");
}

#[test]
fn a_panicking_writer_poisons_inside_an_execution_and_a_reader_does_not() {
    builder(3).schedules(200).check(|| {
        let lock = Arc::new(RwLock::new(0));
        let l = lock.clone();
        let reader = thread::spawn(move || {
            let _r = l.read().unwrap();
            panic!("reader panics");
        });
        assert!(reader.join().is_err());
        assert!(!lock.is_poisoned());
        let l = lock.clone();
        let writer = thread::spawn(move || {
            *l.write().unwrap() = 1;
            let _w = l.write().unwrap();
            panic!("writer panics");
        });
        assert!(writer.join().is_err());
        assert!(lock.is_poisoned());
        assert_eq!(**lock.read().unwrap_err().get_ref(), 1);
        lock.clear_poison();
        assert!(lock.write().is_ok());
    });
}

/// std's downgrade example: no writer gets in between the write and the downgraded read.
#[test]
fn downgrade_is_atomic_on_every_schedule() {
    builder(4).check(|| {
        let lock = Arc::new(RwLock::new(1));
        let mut w = lock.write().unwrap();
        let l = lock.clone();
        let evil = thread::spawn(move || {
            let mut w = l.write().unwrap();
            assert_eq!(*w, 2);
            *w = 3;
        });
        *w = 2;
        let r = RwLockWriteGuard::downgrade(w);
        thread::yield_now();
        assert_eq!(*r, 2, "downgrade was not atomic");
        drop(r);
        evil.join().unwrap();
        assert_eq!(*lock.read().unwrap(), 3);
    });
}

#[test]
fn finds_the_lost_update_of_a_read_then_write_upgrade() {
    let report = builder(5).run(|| {
        let lock = Arc::new(RwLock::new(0));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let l = lock.clone();
                thread::spawn(move || {
                    let v = *l.read().unwrap();
                    *l.write().unwrap() = v + 1;
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(*lock.read().unwrap(), 2);
    });
    let failure = report.failure.expect("the lost update is found");
    assert_eq!(failure.kind, FailureKind::Panic);
    assert!(
        failure.message.contains("assertion `left == right` failed"),
        "{}",
        failure.message
    );
    assert!(failure.reproduced);
}

#[test]
fn finds_an_ab_ba_deadlock() {
    let report = builder(6).run(|| {
        let a = Arc::new(RwLock::new(()));
        let b = Arc::new(RwLock::new(()));
        let (a2, b2) = (a.clone(), b.clone());
        let t = thread::spawn(move || {
            let _b = b2.write().unwrap();
            let _a = a2.read().unwrap();
        });
        {
            let _a = a.write().unwrap();
            let _b = b.read().unwrap();
        }
        t.join().unwrap();
    });
    let failure = report.failure.expect("the deadlock is found");
    assert_eq!(failure.kind, FailureKind::Deadlock);
    assert!(
        failure.details.iter().any(|d| d.contains("RwLock")),
        "{:?}",
        failure.details
    );
}

#[test]
fn a_static_lock_works_across_executions() {
    static L: RwLock<u32> = RwLock::new(0);
    let report = builder(7).schedules(100).run(|| {
        let t = thread::spawn(|| *L.write().unwrap() += 1);
        *L.write().unwrap() += 1;
        t.join().unwrap();
        assert!(L.read().unwrap().is_multiple_of(2));
    });
    assert!(report.failure.is_none(), "{:?}", report.failure);
    // The value persists (a static), the lock's holders and waiters do not.
    assert_eq!(*L.read().unwrap(), 200);
    assert!(
        report.warnings.iter().any(|w| w.contains("RwLock")),
        "{:?}",
        report.warnings
    );
}

/// Compile-time checks that the types are as usable as std's.
#[test]
fn trait_impls_and_variance_match_std() {
    fn send_sync<T: Send + Sync>() {}
    fn sync<T: Sync>() {}
    fn unwind_safe<T: std::panic::UnwindSafe + std::panic::RefUnwindSafe>() {}
    send_sync::<RwLock<u32>>();
    sync::<RwLockReadGuard<'static, u32>>();
    sync::<RwLockWriteGuard<'static, u32>>();
    unwind_safe::<RwLock<std::cell::Cell<u32>>>();
    unwind_safe::<RwLockReadGuard<'static, u32>>();
    unwind_safe::<RwLockWriteGuard<'static, u32>>();
    // A read guard is covariant in its data, as std's is.
    fn shorten<'a>(guard: RwLockReadGuard<'a, &'static str>) -> RwLockReadGuard<'a, &'a str> {
        guard
    }
    let lock = RwLock::new("s");
    assert_eq!(*shorten(lock.read().unwrap()), "s");
    let unsized_lock: &RwLock<[u8]> = &RwLock::new([1, 2, 3]);
    assert_eq!(unsized_lock.read().unwrap().len(), 3);
}

/// std's futex RwLock makes a new reader wait behind a queued writer, so a thread that
/// takes `read` twice while a writer queues deadlocks; pulse explores that policy.
#[test]
fn recursive_read_while_a_writer_waits_is_a_deadlock_pulse_finds() {
    let report = pulse_runtime::Builder::new()
        .schedules(1000)
        .seed(3)
        .run(|| {
            let l = std::sync::Arc::new(RwLock::new(0));
            let l2 = l.clone();
            let w = thread::spawn(move || *l2.write().unwrap() += 1);
            let r1 = l.read().unwrap();
            thread::yield_now();
            let r2 = l.read().unwrap();
            drop((r1, r2));
            w.join().unwrap();
        });
    let f = report
        .failure
        .expect("the writer-preference deadlock is found");
    assert_eq!(f.kind, pulse_runtime::FailureKind::Deadlock, "{f}");
}

#[test]
fn try_read_sees_a_queued_writer_on_some_schedules() {
    let outcomes = std::sync::Mutex::new((0, 0));
    pulse_runtime::Builder::new()
        .schedules(500)
        .seed(8)
        .check(|| {
            let l = std::sync::Arc::new(RwLock::new(0));
            let r = l.read().unwrap();
            let l2 = l.clone();
            let w = thread::spawn(move || *l2.write().unwrap() += 1);
            thread::yield_now();
            let got = l.try_read().is_ok();
            let mut o = outcomes.lock().unwrap();
            if got {
                o.0 += 1
            } else {
                o.1 += 1
            }
            drop(o);
            drop(r);
            w.join().unwrap();
        });
    let (ok, refused) = *outcomes.lock().unwrap();
    assert!(
        ok > 0 && refused > 0,
        "try_read with a writer waiting: {ok} ok, {refused} refused"
    );
}
