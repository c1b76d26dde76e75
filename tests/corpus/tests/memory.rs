//! The relaxed-memory examples: each buggy twin passes under the default `sc` model (every
//! ordering behaves as `SeqCst`), its bug is found within 1,000 schedules under
//! `--memory relaxed`, and its fixed twin passes 10,000 there.

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
/// still found.
#[test]
fn the_other_examples_agree_under_relaxed() {
    /// An example's name, its buggy scenario and its fixed one.
    type Case = (&'static str, fn(), fn());
    let cases: &[Case] = &[
        (
            "lost_update_counter",
            corpus::lost_update_counter::scenario_buggy,
            corpus::lost_update_counter::scenario_fixed,
        ),
        (
            "lock_order_deadlock",
            corpus::lock_order_deadlock::scenario_buggy,
            corpus::lock_order_deadlock::scenario_fixed,
        ),
        (
            "lost_wakeup",
            corpus::lost_wakeup::scenario_buggy,
            corpus::lost_wakeup::scenario_fixed,
        ),
        (
            "mpsc_pipeline",
            corpus::mpsc_pipeline::scenario_buggy,
            corpus::mpsc_pipeline::scenario_fixed,
        ),
        (
            "bank_account",
            corpus::bank_account::scenario_buggy,
            corpus::bank_account::scenario_fixed,
        ),
        (
            "proc_reg",
            corpus::proc_reg::scenario_buggy,
            corpus::proc_reg::scenario_fixed,
        ),
        (
            "atomic_check_then_act",
            corpus::atomic_check_then_act::scenario_buggy,
            corpus::atomic_check_then_act::scenario_fixed,
        ),
        (
            "spinlock_broken",
            corpus::spinlock_broken::scenario_buggy,
            corpus::spinlock_broken::scenario_fixed,
        ),
        (
            "rwlock_upgrade",
            corpus::rwlock_upgrade::scenario_buggy,
            corpus::rwlock_upgrade::scenario_fixed,
        ),
        (
            "barrier_phase",
            corpus::barrier_phase::scenario_buggy,
            corpus::barrier_phase::scenario_fixed,
        ),
        (
            "once_init_race",
            corpus::once_init_race::scenario_buggy,
            corpus::once_init_race::scenario_fixed,
        ),
        (
            "sleep_ordering",
            corpus::sleep_ordering::scenario_buggy,
            corpus::sleep_ordering::scenario_fixed,
        ),
        (
            "auto_update",
            corpus::auto_update::scenario_buggy,
            corpus::auto_update::scenario_fixed,
        ),
        (
            "late_reply",
            corpus::late_reply::scenario_buggy,
            corpus::late_reply::scenario_fixed,
        ),
        (
            "fischer_mutex",
            corpus::fischer_mutex::scenario_buggy,
            corpus::fischer_mutex::scenario_fixed,
        ),
        (
            "boot_race",
            corpus::boot_race::scenario_buggy,
            corpus::boot_race::scenario_fixed,
        ),
        (
            "condvar_notify_one",
            corpus::condvar_notify_one::scenario_buggy,
            corpus::condvar_notify_one::scenario_fixed,
        ),
    ];
    let only = std::env::var("MEMORY_CASE").ok();
    for &(name, buggy, fixed) in cases {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        eprintln!("{name}");
        let report = search(Memory::Relaxed, 1_000, buggy);
        assert!(
            report.failure.is_some(),
            "{name}: bug not found under relaxed"
        );
        let report = search(Memory::Relaxed, 2_000, fixed);
        if let Some(failure) = report.failure {
            panic!("{name}: false alarm under relaxed\n{failure}");
        }
    }
}
