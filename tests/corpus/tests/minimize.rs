//! Schedule minimization: a failure is reported with a schedule that has as few preemptions
//! as the bug needs (then as few steps), the search's own schedule kept beside it.

use pulse::{Builder, FailureKind, Isolation, Strategy};
use pulse_corpus_tests::sct;

fn builder() -> Builder {
    Builder::new().isolation(Isolation::Off)
}

/// Finds the bug with the default strategy at several seeds, checks that the reported
/// schedule has exactly `expected` preemptions and replays to the same failure, and that
/// `dfs` bounded one below finds nothing (so `expected` is the minimum).
fn minimizes_to(name: &str, f: fn(usize), n: usize, expected: usize, seeds: &[u64]) {
    for &seed in seeds {
        let report = builder().seed(seed).run(move || f(n));
        let failure = report
            .failure
            .unwrap_or_else(|| panic!("{name}: not found at seed {seed}"));
        assert!(failure.reproduced, "{name}: {failure}");
        let m = failure.minimized.as_ref().unwrap_or_else(|| {
            panic!("{name}: seed {seed}: the search's schedule was kept as found\n{failure}")
        });
        assert_eq!(m.preemptions, expected, "{name}: seed {seed}\n{failure}");
        assert!(m.preemptions <= m.original_preemptions, "{name}: {m:?}");
        let original = failure.original_schedule.as_ref().expect("kept");
        let text = failure.to_string();
        assert!(
            text.contains(&format!("minimized: {expected} preemption(s)")),
            "{text}"
        );
        assert!(
            text.contains(&original.to_string()) || text.contains('…'),
            "{text}"
        );
        let record = failure.record("t");
        assert_eq!(record.original_schedule, Some(original.to_string()));
        assert_eq!(record.preemptions, Some(expected as u64));
        // The printed schedule fails the same way on its own.
        let replay = builder()
            .replay(&failure.schedule.to_string())
            .unwrap()
            .run(move || f(n));
        let again = replay.failure.expect("the minimized schedule fails");
        assert_eq!(
            (again.kind, &again.location),
            (failure.kind, &failure.location)
        );
    }
    // No schedule with fewer preemptions fails (where dfs can tell).
    if n > 5 {
        return;
    }
    let report = builder()
        .strategy(Strategy::Dfs {
            bound: expected - 1,
        })
        .schedules(1_000_000)
        .seed(0)
        .run(move || f(n));
    assert!(report.failure.is_none(), "{name}: {:?}", report.failure);
    assert!(report.exhaustive.is_some(), "{name}: dfs did not finish");
}

#[test]
fn twostage_minimizes_to_one_preemption() {
    minimizes_to("twostage_2", sct::twostage::buggy, 2, 1, &[1, 2, 3]);
    minimizes_to("twostage_20", sct::twostage::buggy, 20, 1, &[1, 2, 3]);
    // Its main thread spawns 100 threads in a row, past `FAIR_RUN`: the switch the
    // fairness rule forces there is no preemption, and undoing it is no deviation.
    minimizes_to("twostage_100", sct::twostage::buggy, 100, 1, &[1, 2, 3]);
}

#[test]
fn an_abba_deadlock_after_a_warm_up_minimizes_to_two_preemptions() {
    minimizes_to("abba_warmup", sct::abba_warmup::buggy, 0, 2, &[1, 2, 3]);
    let report = builder().seed(1).run(|| sct::abba_warmup::buggy(0));
    assert_eq!(report.failure.unwrap().kind, FailureKind::Deadlock);
    let report = builder().seed(1).run(|| sct::abba_warmup::fixed(0));
    assert!(report.failure.is_none());
}

#[test]
fn minimization_can_be_turned_off() {
    let report = builder()
        .seed(1)
        .minimize(std::time::Duration::ZERO)
        .run(|| sct::twostage::buggy(2));
    let failure = report.failure.expect("found");
    assert!(failure.minimized.is_none() && failure.original_schedule.is_none());
}

/// A corpus program: name, buggy body, size, preemptions its bug needs.
type Program = (&'static str, fn(usize), usize, usize);

/// Every corpus bug the default finds at the corpus test's seed is reported with the
/// preemption count `tests/sct/README.md` gives as the bug's need, and for the small ones
/// `dfs` one bound lower finds nothing (so that count is the minimum).
#[test]
fn every_corpus_failure_minimizes_to_the_preemptions_its_bug_needs() {
    let programs: [Program; 21] = [
        ("account", sct::account::buggy, 0, 1),
        ("deadlock01", sct::deadlock01::buggy, 0, 1),
        ("lazy01", sct::lazy01::buggy, 0, 0),
        ("reorder_3", sct::reorder::buggy, 3, 1),
        ("reorder_5", sct::reorder::buggy, 5, 1),
        ("reorder_10", sct::reorder::buggy, 10, 1),
        ("reorder_20", sct::reorder::buggy, 20, 1),
        ("twostage_2", sct::twostage::buggy, 2, 1),
        ("twostage_20", sct::twostage::buggy, 20, 1),
        ("twostage_100", sct::twostage::buggy, 100, 1),
        ("wronglock_3", sct::wronglock::buggy, 3, 1),
        ("wronglock_10", sct::wronglock::buggy, 10, 1),
        ("circular_buffer", sct::circular_buffer::buggy, 0, 1),
        ("queue", sct::queue::buggy, 0, 1),
        ("stack", sct::stack::buggy, 0, 1),
        ("token_ring", sct::token_ring::buggy, 0, 0),
        ("dining_philosophers", sct::dining_philosophers::buggy, 0, 1),
        ("carter", sct::carter::buggy, 0, 0),
        ("bluetooth_driver", sct::bluetooth_driver::buggy, 0, 1),
        ("lost_wakeup", sct::lost_wakeup::buggy, 0, 1),
        ("spinlock", sct::spinlock::buggy, 0, 2),
    ];
    let mut wrong = Vec::new();
    for (name, f, n, needed) in programs {
        let started = std::time::Instant::now();
        let report = builder().seed(20261123).run(move || f(n));
        let failure = report
            .failure
            .unwrap_or_else(|| panic!("{name}: not found"));
        let (before, after, tries) = match &failure.minimized {
            Some(m) => (m.original_preemptions, m.preemptions, m.tries),
            // Nothing cheaper: the search's schedule is reported as found, with its count.
            None => {
                let p = failure.preemptions.unwrap_or(usize::MAX);
                (p, p, 0)
            }
        };
        println!(
            "{name:20} preemptions {before:>4} -> {after} ({tries} tries, {:?} with the search)",
            started.elapsed()
        );
        if after != needed && !(after == usize::MAX && needed == 0) {
            wrong.push((name, after, needed));
        }
        if n <= 5 && needed > 0 {
            let report = builder()
                .strategy(Strategy::Dfs { bound: needed - 1 })
                .schedules(1_000_000)
                .seed(0)
                .run(move || f(n));
            assert!(
                report.failure.is_none() && report.exhaustive.is_some(),
                "{name}: dfs:{} found it",
                needed - 1
            );
        }
    }
    assert!(wrong.is_empty(), "(program, reported, needed): {wrong:?}");
}
