//! Every example's bug is found within 1,000 schedules, and every fixed twin passes
//! 10,000 — the examples' own code, instrumented, under the library API.

use pulse::{Builder, FailureKind, Report, TimeMode};
use pulse_corpus_tests as corpus;

const FIND_WITHIN: u64 = 1_000;
const FIXED_PASSES: u64 = 10_000;

fn search(schedules: u64, f: fn()) -> Report {
    Builder::new().schedules(schedules).seed(20261122).run(f)
}

/// With timed waits expiring as scheduler choices (pulse_time's `time_random`).
fn search_time_random(schedules: u64, f: fn()) -> Report {
    Builder::new()
        .schedules(schedules)
        .seed(20261122)
        .time(TimeMode::Random)
        .run(f)
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
// A sleep used as synchronisation only fails when the sleeper wakes before the worker is
// done: found when timeouts are a scheduler choice; the default (an infinitely fast
// machine) hides it, as it should hide generous timeouts.
mod sleep_ordering {
    use super::*;
    #[test]
    fn buggy_is_found_when_time_is_random() {
        let report = search_time_random(FIND_WITHIN, corpus::sleep_ordering::scenario_buggy);
        assert!(
            report.failure.is_some(),
            "sleep_ordering: bug not found with TimeMode::Random"
        );
        assert!(search(FIND_WITHIN, corpus::sleep_ordering::scenario_buggy).passed());
    }
    #[test]
    fn fixed_passes_when_time_is_random() {
        let report = search_time_random(FIXED_PASSES, corpus::sleep_ordering::scenario_fixed);
        assert!(report.passed(), "{}", report.failure.unwrap());
    }
}
corpus_case!(condvar_notify_one, None);
