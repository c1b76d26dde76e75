//! `Arc`/`Weak` check-then-act: calls whose answer other threads change are visible
//! operations (the instrumenter routes them to `pulse::std::sync::arc_ops`), so a decision
//! taken on a stale count is found, while values stay std's own `Arc`.

use pulse::{Builder, FailureKind, Isolation, Strategy};
use pulse_corpus_tests::sct;

fn builder() -> Builder {
    Builder::new().isolation(Isolation::Off)
}

#[test]
fn a_check_then_act_on_strong_count_is_found_and_its_fixed_twin_passes() {
    let report = builder()
        .seed(20261123)
        .run(|| sct::arc_check_then_act::buggy(0));
    let failure = report.failure.expect("the stale count is found");
    assert_eq!(failure.kind, FailureKind::Panic);
    assert!(failure.message.contains("exactly once"), "{failure}");
    assert!(failure.reproduced, "{failure}");
    // Its trace shows the count as a step of its own.
    assert!(
        failure.trace.iter().any(|e| e.op == "Arc::strong_count"),
        "{failure}"
    );
    // One preemption: between one thread's check and its drop.
    assert_eq!(failure.minimized.map(|m| m.preemptions), Some(1));
    let report = builder()
        .seed(20261123)
        .run(|| sct::arc_check_then_act::fixed(0));
    assert!(report.failure.is_none(), "{:?}", report.failure);
    // And exhaustively: every schedule with up to 2 preemptions.
    let report = builder()
        .strategy(Strategy::Dfs { bound: 2 })
        .schedules(1_000_000)
        .seed(0)
        .run(|| sct::arc_check_then_act::fixed(0));
    assert!(report.failure.is_none() && report.exhaustive.is_some());
}

/// The same program calling std's `Arc::strong_count` directly (this file is not
/// instrumented): the check and the drop are one step, and no schedule within 2 preemptions
/// shows the bug. The rewrite is what finds it.
#[test]
fn without_the_rewrite_the_check_and_the_act_are_one_step() {
    use pulse::std::sync::atomic::{AtomicUsize, Ordering};
    use pulse::std::thread;
    use std::sync::Arc;
    let report = builder()
        .strategy(Strategy::Dfs { bound: 2 })
        .schedules(1_000_000)
        .seed(0)
        .run(|| {
            let published = Arc::new(AtomicUsize::new(0));
            let log = Arc::new(vec![1, 2, 3]);
            let mut handles = Vec::new();
            for log in [log.clone(), log] {
                let published = published.clone();
                handles.push(thread::spawn(move || {
                    if Arc::strong_count(&log) == 1 {
                        published.fetch_add(log.len(), Ordering::SeqCst);
                    }
                    drop(log);
                }));
            }
            for h in handles {
                h.join().unwrap();
            }
            assert_eq!(published.load(Ordering::SeqCst), 3);
        });
    assert!(report.failure.is_none() && report.exhaustive.is_some());
}
