//! Check-then-act on `Arc::strong_count`: each of two threads drops its handle, and the one
//! that sees itself as the last (`strong_count == 1`) publishes the shared log. Both can read
//! 2 before either drops, and then nobody publishes. With std's `Arc` alone the check and the
//! drop are one step (no scheduling point between them) and the bug is never seen; pulse
//! makes `strong_count` a visible operation. The fixed twin asks `Arc::into_inner`, which
//! hands the value to exactly one thread.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

fn run(fixed: bool) {
    let published = Arc::new(AtomicUsize::new(0));
    let log = Arc::new(vec![1, 2, 3]);
    // The two handles are made before the original goes, so the threads hold the last two.
    let handles_of_log = [log.clone(), log];
    let mut handles = Vec::new();
    for log in handles_of_log {
        let published = published.clone();
        handles.push(thread::spawn(move || {
            if fixed {
                if let Some(v) = Arc::into_inner(log) {
                    published.fetch_add(v.len(), Ordering::SeqCst);
                }
            } else {
                let last = Arc::strong_count(&log) == 1;
                if last {
                    published.fetch_add(log.len(), Ordering::SeqCst);
                }
                drop(log);
            }
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(
        published.load(Ordering::SeqCst),
        3,
        "the last holder must publish the log exactly once"
    );
}

pub fn buggy(_n: usize) {
    run(false)
}

pub fn fixed(_n: usize) {
    run(true)
}
