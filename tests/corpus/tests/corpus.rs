//! Every example's bug is found within 1,000 schedules, and every fixed twin passes
//! 10,000 — the examples' own code, instrumented, under the library API.

use pulse::{Builder, FailureKind, Report};
use pulse_corpus_tests as corpus;

const FIND_WITHIN: u64 = 1_000;
const FIXED_PASSES: u64 = 10_000;

fn search(schedules: u64, f: fn()) -> Report {
    Builder::new().schedules(schedules).seed(20261122).run(f)
}

fn assert_found(name: &str, f: fn(), kind: Option<FailureKind>) {
    let report = search(FIND_WITHIN, f);
    let failure = report
        .failure
        .unwrap_or_else(|| panic!("{name}: bug not found within {FIND_WITHIN} schedules"));
    if let Some(kind) = kind {
        assert_eq!(failure.kind, kind, "{name}: {failure}");
    }
    assert!(
        failure.reproduced,
        "{name}: replay did not reproduce\n{failure}"
    );
}

fn assert_passes(name: &str, f: fn()) {
    let report = search(FIXED_PASSES, f);
    if let Some(failure) = report.failure {
        panic!("{name}: the fixed twin failed\n{failure}");
    }
    assert_eq!(report.executions, FIXED_PASSES);
}

macro_rules! corpus_case {
    ($module:ident, $kind:expr) => {
        mod $module {
            use super::*;
            #[test]
            fn buggy_is_found() {
                assert_found(stringify!($module), corpus::$module::scenario_buggy, $kind);
            }
            #[test]
            fn fixed_passes() {
                assert_passes(stringify!($module), corpus::$module::scenario_fixed);
            }
        }
    };
}

corpus_case!(lost_update_counter, Some(FailureKind::Panic));
corpus_case!(lock_order_deadlock, Some(FailureKind::Deadlock));
corpus_case!(lost_wakeup, None);
corpus_case!(mpsc_pipeline, None);
corpus_case!(bank_account, None);
corpus_case!(proc_reg, None);
corpus_case!(atomic_check_then_act, None);
corpus_case!(spinlock_broken, None);
corpus_case!(rwlock_upgrade, None);
corpus_case!(barrier_phase, None);
corpus_case!(once_init_race, None);
// A sleep used as synchronisation: found by the default time portfolio, whose slow-machine
// half lets the 10 ms sleep end before the worker has run.
corpus_case!(sleep_ordering, Some(FailureKind::Panic));
// Time under control (pulse_time): bugs that need a slow thread or a late timer.
corpus_case!(auto_update, Some(FailureKind::Deadlock));
corpus_case!(late_reply, Some(FailureKind::Panic));
corpus_case!(fischer_mutex, Some(FailureKind::Panic));
corpus_case!(boot_race, Some(FailureKind::Panic));

/// A 10 s timeout answered at once never expires under the default.
#[test]
fn a_generous_timeout_passes_every_default_run() {
    assert_passes(
        "late_reply (generous)",
        corpus::late_reply::scenario_generous,
    );
}
corpus_case!(condvar_notify_one, None);
