//! The relaxed-memory examples: each buggy twin passes under the `sc` model (every ordering
//! behaves as `SeqCst`), its bug is found within 1,000 schedules under `--memory relaxed`
//! and with the default settings (the memory portfolio), and its fixed twin passes 10,000
//! schedules under relaxed.

use pulse::{Builder, Memory, Report};
use pulse_corpus_tests as corpus;

fn search(memory: Memory, schedules: u64, f: fn()) -> Report {
    Builder::new()
        .memory(memory)
        .schedules(schedules)
        .seed(20261124)
        .run(f)
}

macro_rules! memory_case {
    ($module:ident) => {
        mod $module {
            use super::*;
            #[test]
            fn buggy_passes_under_sc() {
                let report = search(Memory::Sc, 1_000, corpus::$module::scenario_buggy);
                assert!(report.failure.is_none(), "{:?}", report.failure);
            }
            #[test]
            fn buggy_is_found_under_relaxed() {
                let report = search(Memory::Relaxed, 1_000, corpus::$module::scenario_buggy);
                let failure = report
                    .failure
                    .expect("bug not found within 1,000 schedules");
                assert!(failure.reproduced, "replay did not reproduce\n{failure}");
            }
            #[test]
            fn buggy_is_found_with_default_settings() {
                let report = Builder::new()
                    .seed(20261124)
                    .run(corpus::$module::scenario_buggy);
                let failure = report
                    .failure
                    .expect("bug not found with the default settings");
                assert!(failure.reproduced, "replay did not reproduce\n{failure}");
            }
            #[test]
            fn fixed_passes_with_default_settings() {
                let report = Builder::new()
                    .seed(20261124)
                    .run(corpus::$module::scenario_fixed);
                if let Some(failure) = report.failure {
                    panic!("the fixed twin failed\n{failure}");
                }
            }
            #[test]
            fn fixed_passes_under_relaxed() {
                let report = search(Memory::Relaxed, 10_000, corpus::$module::scenario_fixed);
                if let Some(failure) = report.failure {
                    panic!("the fixed twin failed\n{failure}");
                }
                assert_eq!(report.executions, 10_000);
            }
        }
    };
}

memory_case!(relaxed_flag_mp);
memory_case!(peterson_lock);
memory_case!(spinlock_relaxed_unlock);
memory_case!(lazy_pointer_relaxed);
memory_case!(seqlock);

/// No false alarm: every other example's fixed twin passes under the relaxed model too (its
/// locks, channels, condvars, `Once`s and joins carry happens-before), and every bug is
/// still found. One test per search: a test that falls back to a fresh process per schedule
/// re-runs only its own search.
macro_rules! other_case {
    ($module:ident) => {
        mod $module {
            use super::*;
            #[test]
            fn buggy_is_still_found_under_relaxed() {
                let report = search(Memory::Relaxed, 1_000, corpus::$module::scenario_buggy);
                assert!(report.failure.is_some(), "bug not found under relaxed");
            }
            #[test]
            fn fixed_has_no_false_alarm_under_relaxed() {
                let report = search(Memory::Relaxed, 2_000, corpus::$module::scenario_fixed);
                if let Some(failure) = report.failure {
                    panic!("false alarm under relaxed\n{failure}");
                }
            }
        }
    };
}

other_case!(lost_update_counter);
other_case!(lock_order_deadlock);
other_case!(lost_wakeup);
other_case!(mpsc_pipeline);
other_case!(bank_account);
other_case!(proc_reg);
other_case!(atomic_check_then_act);
other_case!(spinlock_broken);
other_case!(rwlock_upgrade);
other_case!(barrier_phase);
other_case!(once_init_race);
other_case!(sleep_ordering);
other_case!(auto_update);
other_case!(late_reply);
other_case!(fischer_mutex);
other_case!(boot_race);
other_case!(condvar_notify_one);

/// The portfolio: some executions run relaxed, their schedules say so, and a relaxed
/// schedule replays relaxed whatever the run's setting.
#[test]
fn portfolio_finds_the_bug_and_its_schedule_replays_relaxed() {
    let report = search(
        Memory::Portfolio,
        1_000,
        corpus::relaxed_flag_mp::scenario_buggy,
    );
    let failure = report
        .failure
        .expect("bug not found within 1,000 schedules");
    assert!(failure.reproduced, "replay did not reproduce\n{failure}");
    let text = failure.schedule.to_string();
    assert!(text.starts_with("p1@relaxed"), "{text}");
    let replayed = Builder::new()
        .memory(Memory::Sc)
        .replay(&text)
        .unwrap()
        .run(corpus::relaxed_flag_mp::scenario_buggy);
    assert!(replayed.failure.is_some(), "{text} did not fail on replay");
}
