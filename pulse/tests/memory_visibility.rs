//! Under the relaxed memory model a store becomes visible to every thread once it is
//! `VISIBLE_AFTER_NS` (1 ms of virtual time) old: threadpool 1.8.1's `test_debug` sleeps a
//! second after a worker took its job, then reads the queue length `Relaxed`, and must not
//! see the job still queued.

use pulse::std::sync::atomic::{AtomicUsize, Ordering};
use pulse::std::sync::Arc;
use pulse::std::thread;
use pulse::std::time::Duration;
use pulse::{Builder, Memory};

fn sleep_then_read(pause: Duration) {
    let queued = Arc::new(AtomicUsize::new(1));
    let q = queued.clone();
    let worker = thread::spawn(move || {
        q.fetch_sub(1, Ordering::SeqCst);
        thread::sleep(Duration::from_secs(5));
    });
    thread::sleep(pause);
    // With a pause of a second, the worker's first step ran long before it was up.
    assert_eq!(queued.load(Ordering::Relaxed), 0, "the job still queued");
    worker.join().unwrap();
}

fn run(pause: Duration) -> pulse::Report {
    Builder::new()
        .memory(Memory::Relaxed)
        .time(pulse::TimeMode::INFINITELY_FAST)
        .schedules(500)
        .seed(3)
        .run(move || sleep_then_read(pause))
}

#[test]
fn a_store_a_second_old_is_seen_after_a_sleep() {
    if let Some(failure) = run(Duration::from_secs(1)).failure {
        panic!("false alarm\n{failure}");
    }
}

/// The window is not everything: a read right after the store may still be stale (so the
/// test above can fail).
#[test]
fn a_fresh_store_can_still_be_missed() {
    let report = run(Duration::from_nanos(1));
    assert!(report.failure.is_some(), "no stale read without the sleep");
}
