//! The environment variables a test process reads (set by cargo-pulse, or by a user running
//! `cargo test` on a test that calls `pulse::check`). ARCHITECTURE.md's table describes each;
//! a test keeps the two in step.

/// What every name here starts with (to clear them all from a child's environment).
pub const PREFIX: &str = "PULSE_";

/// Executions per test (default 1000).
pub const SCHEDULES: &str = "PULSE_SCHEDULES";
/// The first seed; execution i uses seed + i (default: random).
pub const SEED: &str = "PULSE_SEED";
/// Scheduling points one execution may pass before it counts as a livelock.
pub const MAX_STEPS: &str = "PULSE_MAX_STEPS";
/// Stack bytes for virtual threads that do not ask for a size.
pub const STACK_SIZE: &str = "PULSE_STACK_SIZE";
/// The search strategy (`Strategy`).
pub const STRATEGY: &str = "PULSE_STRATEGY";
/// Run exactly this schedule (`Schedule` text) once.
pub const REPLAY: &str = "PULSE_REPLAY";
/// Milliseconds spent at most minimizing a failing schedule (default 10000; 0: off).
pub const MINIMIZE_MS: &str = "PULSE_MINIMIZE_MS";
/// Milliseconds a test's search may take: no schedule starts after it (unset or 0: no
/// limit; cargo-pulse's `--test-time`, default 60 s).
pub const TEST_TIME_MS: &str = "PULSE_TEST_TIME_MS";
/// Steps (scheduling points, over all its executions) a test's search may take: no schedule
/// starts after it (unset or 0: no limit; cargo-pulse's `--test-steps`, default
/// 100,000,000).
pub const TEST_STEPS: &str = "PULSE_TEST_STEPS";
/// When timed waits expire (`TimeMode`).
pub const TIME: &str = "PULSE_TIME";
/// Executions in process or in fresh processes (`Isolation`).
pub const ISOLATION: &str = "PULSE_ISOLATION";
/// What happens to threads a failing execution leaves behind (`Cleanup`).
pub const CLEANUP: &str = "PULSE_CLEANUP";
/// What threads the test did not wait for may do (`Detached`).
pub const DETACHED: &str = "PULSE_DETACHED";
/// How atomics behave (`Memory`: `sc`, `relaxed` or `portfolio`).
pub const MEMORY: &str = "PULSE_MEMORY";
/// Whether `compare_exchange_weak` may fail spuriously (`WeakCas`: `spurious` or `strong`).
pub const WEAK_CAS: &str = "PULSE_WEAK_CAS";
/// The watchdog: a thread running this long (ms) without a pulse operation is reported.
pub const BLOCKING_TIMEOUT_MS: &str = "PULSE_BLOCKING_TIMEOUT_MS";
/// The replay line's template: `{test}`, `{schedule}` and `{seed}` are substituted.
pub const REPLAY_COMMAND: &str = "PULSE_REPLAY_COMMAND";
/// The seed replay line's template: `{test}`, `{seed}`, `{strategy}` (the failing
/// execution's own, which replays from its seed alone), `{time}` and `{memory}` (the time
/// mode and memory model it ran under) are substituted.
pub const SEED_COMMAND: &str = "PULSE_SEED_COMMAND";
/// With `REPLAY`: the recorded execution as `STRATEGY@SEED` (`SeedReplay`), run instead when
/// the schedule no longer fits the program (the code changed since it was recorded).
pub const REPLAY_FALLBACK: &str = "PULSE_REPLAY_FALLBACK";
/// Where the harness writes `<test>.json` (`FailureRecord`) for a failing test.
pub const FAILURE_DIR: &str = "PULSE_FAILURE_DIR";
/// A file rewritten about ten times a second with `done total`, and again (unchanged) at
/// each probe window of an execution running on past its step bound: a newer file is a sign
/// of life.
pub const PROGRESS: &str = "PULSE_PROGRESS";
/// A file the harness writes the run's warnings to, one per line; a line starting with
/// `exhaustive:` is not a warning but an exhaustive search's verdict (`dfs`); one starting
/// with `TIME_LIMIT_REACHED` or `STEP_BUDGET_REACHED` says the search ended at its time limit
/// (`TEST_TIME_MS`) or step budget (`TEST_STEPS`), so a passing test's progress short of its
/// total is complete, not a process that died.
pub const WARNINGS: &str = "PULSE_WARNINGS";
/// Where the harness writes `<test>.trace.json` (`trace::Trace`) for every test: the
/// failing execution, or for a passing test its last execution, replayed with tracing.
pub const TRACE_OUT: &str = "PULSE_TRACE_OUT";
/// Crates of the test's dependency graph that synchronise but could not be instrumented (a
/// file does not parse), comma-separated: the blocked-thread report says so of a thread that
/// stalls in one, instead of advising to instrument it.
pub const NOT_INSTRUMENTED: &str = "PULSE_NOT_INSTRUMENTED";
/// Crates of the test's dependency graph that pulse instrumented or replaced (its
/// `parking_lot_core`), the user's own packages among them, comma-separated as in symbols:
/// a thread that stalls in one is blocked in a call pulse does not schedule, not advised to
/// instrument the crate again.
pub const INSTRUMENTED: &str = "PULSE_INSTRUMENTED";
/// Internal: set by the runtime on a re-run of the test binary that serves one isolated
/// execution.
pub const ISOLATED_WORKER: &str = "PULSE_ISOLATED_WORKER";

/// How a warning saying the search ended at its time limit begins (see `WARNINGS`).
pub const TIME_LIMIT_REACHED: &str = "time limit:";
/// How a warning saying the search ended at its step budget begins (see `WARNINGS`).
pub const STEP_BUDGET_REACHED: &str = "step budget:";

/// What ended a test's search short of its planned schedules, as its warnings say: `time
/// limit` or `step budget`.
pub fn cut_short(warnings: &[String]) -> Option<&'static str> {
    [TIME_LIMIT_REACHED, STEP_BUDGET_REACHED]
        .into_iter()
        .find(|prefix| warnings.iter().any(|w| w.starts_with(prefix)))
        .map(|prefix| prefix.trim_end_matches(':'))
}

/// Every variable, for documentation checks.
pub const ALL: &[&str] = &[
    SCHEDULES,
    SEED,
    MAX_STEPS,
    STACK_SIZE,
    STRATEGY,
    REPLAY,
    TIME,
    MINIMIZE_MS,
    TEST_TIME_MS,
    TEST_STEPS,
    ISOLATION,
    CLEANUP,
    DETACHED,
    MEMORY,
    WEAK_CAS,
    BLOCKING_TIMEOUT_MS,
    NOT_INSTRUMENTED,
    INSTRUMENTED,
    REPLAY_COMMAND,
    SEED_COMMAND,
    REPLAY_FALLBACK,
    FAILURE_DIR,
    PROGRESS,
    WARNINGS,
    TRACE_OUT,
    ISOLATED_WORKER,
];

/// The longest value passed in the environment itself. Linux refuses to start a process
/// with any one environment string over 128 KiB (`E2BIG`, "Argument list too long"), and
/// a long execution's schedule is longer: such a value goes through a file.
pub const INLINE_MAX: usize = 64 * 1024;

/// How a value that went through a file is written: this, then the file's path.
pub const FROM_FILE: &str = "@file:";

/// What to put in the environment for `value`: the value itself, or, past `INLINE_MAX`,
/// `@file:PATH` of a new file in `dir` that holds it (returned too: the sender removes it
/// once the child is done).
pub fn spill(
    value: &str,
    dir: &std::path::Path,
) -> std::io::Result<(String, Option<std::path::PathBuf>)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    if value.len() <= INLINE_MAX {
        return Ok((value.to_string(), None));
    }
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!("pulse-env-{}-{n}", std::process::id()));
    std::fs::write(&path, value)?;
    Ok((format!("{FROM_FILE}{}", path.display()), Some(path)))
}

/// The value an environment variable stands for: itself, or the contents of the file a
/// `spill` named.
pub fn unspill(raw: &str) -> std::io::Result<String> {
    match raw.strip_prefix(FROM_FILE) {
        Some(path) => std::fs::read_to_string(path),
        None => Ok(raw.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_value_goes_through_a_file_and_comes_back() {
        let dir = std::env::temp_dir();
        let short = "p1:0*3.1";
        assert_eq!(spill(short, &dir).unwrap(), (short.to_string(), None));
        assert_eq!(unspill(short).unwrap(), short);
        let long = "p1:".to_string() + &"0.1.".repeat(INLINE_MAX / 2);
        let (raw, file) = spill(&long, &dir).unwrap();
        let file = file.unwrap();
        assert!(raw.starts_with(FROM_FILE) && raw.len() < 1024, "{raw}");
        assert_eq!(unspill(&raw).unwrap(), long);
        std::fs::remove_file(&file).unwrap();
        assert!(
            unspill(&raw).is_err(),
            "a missing file is an error, not a value"
        );
    }
}
