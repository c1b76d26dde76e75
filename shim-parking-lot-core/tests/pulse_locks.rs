//! A lock built on `park`/`unpark_one` (tests/common) under pulse: its bugs are found, as
//! deadlocks or failed assertions, and its correct uses pass many schedules.

mod common;

use common::ParkLock;
use pulse_runtime::{Builder, FailureKind, Report};
use pulse_shim_std::sync::atomic::{AtomicUsize, Ordering::*};
use pulse_shim_std::sync::Arc;
use pulse_shim_std::thread;

/// Two threads take two locks, in opposite orders (`ab_ba`) or the same order.
fn two_locks(ab_ba: bool) -> Report {
    Builder::new().schedules(2_000).seed(7).run(move || {
        let locks = Arc::new((ParkLock::new(), ParkLock::new()));
        let l = locks.clone();
        let t = thread::spawn(move || {
            l.0.lock();
            l.1.lock();
            l.1.unlock();
            l.0.unlock();
        });
        let (first, second) = if ab_ba {
            (&locks.1, &locks.0)
        } else {
            (&locks.0, &locks.1)
        };
        first.lock();
        second.lock();
        second.unlock();
        first.unlock();
        t.join().unwrap();
    })
}

#[test]
fn ab_ba_deadlock_is_found_and_names_the_parking_lot_keys() {
    let report = two_locks(true);
    let f = report.failure.expect("the AB/BA deadlock is found");
    assert_eq!(f.kind, FailureKind::Deadlock, "{f}");
    assert_eq!(f.details.len(), 2, "{f}");
    assert!(
        f.details
            .iter()
            .all(|d| d.contains("blocked in parking_lot_core::park on ParkingLot#")),
        "{f}"
    );
    assert!(
        f.details.iter().all(|d| d.contains("tests/common/mod.rs:")),
        "{f}"
    );
    // acquire_resource/release_resource feed the report's "holding".
    assert!(
        f.details
            .iter()
            .all(|d| d.contains(", holding ParkingLot#")),
        "{f}"
    );
}

#[test]
fn same_order_twin_passes_2000_schedules() {
    let report = two_locks(false);
    assert!(report.failure.is_none(), "{}", report.failure.unwrap());
    assert_eq!(report.executions, 2_000);
}

/// Two threads add one each; `split` reads and writes in two critical sections.
fn increments(split: bool) -> Report {
    Builder::new().schedules(2_000).seed(3).run(move || {
        let shared = Arc::new((ParkLock::new(), AtomicUsize::new(0)));
        let add = move |s: &(ParkLock, AtomicUsize)| {
            if split {
                s.0.lock();
                let v = s.1.load(Relaxed);
                s.0.unlock();
                s.0.lock();
                s.1.store(v + 1, Relaxed);
                s.0.unlock();
            } else {
                s.0.lock();
                let v = s.1.load(Relaxed);
                s.1.store(v + 1, Relaxed);
                s.0.unlock();
            }
        };
        let s = shared.clone();
        let t = thread::spawn(move || add(&s));
        add(&shared);
        t.join().unwrap();
        assert_eq!(shared.1.load(Relaxed), 2, "lost update");
    })
}

#[test]
fn lost_update_across_two_critical_sections_is_found() {
    let f = increments(true).failure.expect("the lost update is found");
    assert_eq!(f.kind, FailureKind::Panic, "{f}");
    assert!(f.message.contains("lost update"), "{f}");
}

#[test]
fn one_critical_section_twin_passes_2000_schedules() {
    let report = increments(false);
    assert!(report.failure.is_none(), "{}", report.failure.unwrap());
}

/// Three threads contend (the spin, park, unpark-with-more-waiters paths all run).
#[test]
fn three_way_contention_keeps_mutual_exclusion() {
    let report = Builder::new().schedules(2_000).seed(11).run(|| {
        let shared = Arc::new((ParkLock::new(), AtomicUsize::new(0), AtomicUsize::new(0)));
        let body = |s: &(ParkLock, AtomicUsize, AtomicUsize)| {
            for _ in 0..2 {
                s.0.lock();
                assert_eq!(s.2.fetch_add(1, SeqCst), 0, "two threads inside");
                s.1.store(s.1.load(Relaxed) + 1, Relaxed);
                s.2.fetch_sub(1, SeqCst);
                s.0.unlock();
            }
        };
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let s = shared.clone();
                thread::spawn(move || body(&s))
            })
            .collect();
        body(&shared);
        ts.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(shared.1.load(Relaxed), 6);
    });
    assert!(report.failure.is_none(), "{}", report.failure.unwrap());
}

/// `validate` is what closes the window between "the lock is held" and "I am queued": a
/// lock that parks without re-checking loses the unlocker's wakeup, and pulse finds the
/// waiter parked forever. The holder works long enough for the other thread to spin out
/// and park.
fn long_holder(lock: ParkLock) -> Report {
    Builder::new().schedules(2_000).seed(5).run(move || {
        let lock = Arc::new(ParkLock::clone_kind(&lock));
        let l = lock.clone();
        let t = thread::spawn(move || {
            l.lock();
            l.unlock();
        });
        lock.lock();
        for _ in 0..30 {
            thread::yield_now();
        }
        lock.unlock();
        t.join().unwrap();
    })
}

#[test]
fn parking_without_revalidating_loses_the_wakeup() {
    let report = long_holder(ParkLock::without_recheck());
    let f = report.failure.expect("the lost wakeup is found");
    assert!(
        matches!(f.kind, FailureKind::Deadlock | FailureKind::LeakedThread),
        "{f}"
    );
    assert!(
        f.details
            .iter()
            .any(|d| d.contains("parking_lot_core::park")),
        "{f}"
    );
}

#[test]
fn revalidating_twin_passes_2000_schedules() {
    let report = long_holder(ParkLock::new());
    assert!(report.failure.is_none(), "{}", report.failure.unwrap());
}
