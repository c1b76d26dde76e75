//! Address reuse under the relaxed memory model: a new atomic at a freed one's address starts
//! a new store history. Pulse sees neither `new` (a `const fn`) nor the free, but a shim
//! atomic's `Drop` ends its address's history, and so does `get_mut` (exclusive access:
//! everything done to the atomic happens-before it).

use std::sync::Arc;

use pulse::std::sync::atomic::{AtomicUsize, Ordering};
use pulse::std::thread;
use pulse::{Builder, Memory};

/// Runs `test` under the relaxed model and fails on any failure it reports; a second run
/// of the same seed must make the same choices (addresses differ between runs, and which
/// stores a load may read must not).
fn no_false_alarm(seed: u64, test: fn()) {
    let run = || {
        Builder::new()
            .memory(Memory::Relaxed)
            .schedules(2_000)
            .seed(seed)
            .run(test)
    };
    let report = run();
    if let Some(failure) = report.failure {
        panic!("false alarm\n{failure}");
    }
    let again = run();
    assert_eq!(
        (report.decisions, report.choices),
        (again.decisions, again.choices),
        "the same seed made other choices"
    );
}

/// Runs `work` on a spawned thread and the main thread at once.
fn on_two_threads(work: fn()) {
    let t = thread::spawn(work);
    work();
    t.join().unwrap();
}

/// Each thread allocates a fresh atomic holding `fresh`, stores 7 and then `last` to it and
/// frees it, in a loop: the allocator hands the other thread the freed address. A fresh
/// atomic's first load by its creating thread must read `fresh`.
fn churn(fresh: usize, last: usize) {
    for _ in 0..3 {
        let a = Box::new(AtomicUsize::new(fresh));
        assert_eq!(
            a.load(Ordering::Relaxed),
            fresh,
            "a fresh atomic read a dead one's store"
        );
        a.store(7, Ordering::Relaxed);
        a.store(last, Ordering::Relaxed);
        drop(a);
    }
}

/// The new atomic holds the value the dead one last held: only `Drop` tells them apart.
#[test]
fn a_new_atomic_at_a_freed_address_reads_only_its_own_stores() {
    no_false_alarm(11, || on_two_threads(|| churn(0, 0)));
}

/// The new atomic holds another value than the dead one's last.
#[test]
fn a_new_atomic_with_another_value_reads_only_its_own_stores() {
    no_false_alarm(12, || on_two_threads(|| churn(1, 0)));
}

/// A `Vec` of atomics freed and reallocated: each element's `Drop` runs.
#[test]
fn a_reallocated_vec_of_atomics_reads_only_its_own_stores() {
    no_false_alarm(13, || {
        on_two_threads(|| {
            for _ in 0..3 {
                let v: Vec<AtomicUsize> = (0..4).map(|_| AtomicUsize::new(0)).collect();
                for a in &v {
                    assert_eq!(a.load(Ordering::Relaxed), 0, "a dead atomic's store");
                    a.store(7, Ordering::Relaxed);
                    a.store(0, Ordering::Relaxed);
                }
                drop(v);
            }
        })
    });
}

/// `Arc::get_mut` succeeds once the other thread dropped its clone (std's `Arc` counts, which
/// the model does not see, order that drop before it). The value read through `get_mut` is
/// then the only one a load may read.
#[test]
fn a_load_after_get_mut_reads_what_get_mut_saw() {
    no_false_alarm(14, || {
        let mut shared = Arc::new(AtomicUsize::new(0));
        let theirs = Arc::clone(&shared);
        let t = thread::spawn(move || {
            theirs.store(5, Ordering::Relaxed);
            drop(theirs);
        });
        let seen = loop {
            if let Some(a) = Arc::get_mut(&mut shared) {
                break *a.get_mut();
            }
            thread::yield_now();
        };
        assert_eq!(seen, 5);
        assert_eq!(shared.load(Ordering::Relaxed), seen, "read past get_mut");
        t.join().unwrap();
    });
}
