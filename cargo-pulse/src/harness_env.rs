//! The `PULSE_*` environment a test process reads (the harness contract, `pulse_protocol::env`),
//! set in one place for both runners: pulse's own per-test processes and cargo-nextest (whose
//! test processes get theirs through `nextest`'s wrapper).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use pulse_protocol::{env, Cleanup, Detached, Isolation, Memory, Strategy, TimeMode, WeakCas};

use crate::seeds::SeedRange;

/// The settings of one test process.
pub struct HarnessEnv<'a> {
    pub seeds: &'a SeedRange,
    pub max_steps: Option<u64>,
    pub strategy: Option<Strategy>,
    pub time: Option<TimeMode>,
    pub isolation: Option<Isolation>,
    pub cleanup: Option<Cleanup>,
    pub detached: Option<Detached>,
    pub memory: Option<Memory>,
    pub weak_cas: Option<WeakCas>,
    pub replay: Option<&'a str>,
    pub blocking_timeout: Duration,
    /// How long the test's search may take (`env::TEST_TIME_MS`).
    pub test_time: Option<Duration>,
    /// How many steps the test's search may take (`env::TEST_STEPS`).
    pub test_steps: Option<u64>,
    /// Where the harness writes the test's `FailureRecord`.
    pub failure_dir: &'a Path,
    /// Rewritten with `done total` as the search goes; its absence after a passing test means
    /// the test never reached the harness.
    pub progress: &'a Path,
    pub warnings: &'a Path,
    pub replay_command: &'a str,
    /// The seed replay line's template (`env::SEED_COMMAND`).
    pub seed_command: &'a str,
    /// `STRATEGY@SEED` to replay when the schedule no longer fits (`env::REPLAY_FALLBACK`).
    pub replay_fallback: Option<&'a str>,
    /// `--trace-out DIR`.
    pub trace_out: Option<&'a Path>,
    /// Crates that could not be instrumented (`env::NOT_INSTRUMENTED`).
    pub not_instrumented: &'a [String],
    /// Crates instrumented or replaced (`env::INSTRUMENTED`).
    pub instrumented: &'a [String],
}

impl HarnessEnv<'_> {
    /// `value` as the environment can carry it: a long schedule (a step-limit failure's can
    /// pass Linux's 128 KiB per string) goes through a file in the failure dir, which stays
    /// with the run's other records.
    fn passable(&self, value: &str) -> String {
        env::spill(value, self.failure_dir).map_or_else(|_| value.to_string(), |(v, _)| v)
    }

    pub fn apply(&self, cmd: &mut Command) {
        cmd.env(env::SCHEDULES, self.seeds.len().to_string())
            .env(env::SEED, self.seeds.from.to_string())
            .env(env::FAILURE_DIR, self.failure_dir)
            .env(env::PROGRESS, self.progress)
            .env(env::WARNINGS, self.warnings)
            .env(env::REPLAY_COMMAND, self.replay_command)
            .env(env::SEED_COMMAND, self.seed_command)
            .env(
                env::BLOCKING_TIMEOUT_MS,
                self.blocking_timeout.as_millis().to_string(),
            );
        let optional = [
            (env::MAX_STEPS, self.max_steps.map(|n| n.to_string())),
            (
                env::TEST_TIME_MS,
                self.test_time.map(|t| t.as_millis().max(1).to_string()),
            ),
            (env::TEST_STEPS, self.test_steps.map(|n| n.to_string())),
            (env::STRATEGY, self.strategy.map(|s| s.to_string())),
            (env::TIME, self.time.map(|t| t.to_string())),
            (env::ISOLATION, self.isolation.map(|i| i.to_string())),
            (env::CLEANUP, self.cleanup.map(|c| c.to_string())),
            (env::DETACHED, self.detached.map(|d| d.to_string())),
            (env::MEMORY, self.memory.map(|m| m.to_string())),
            (env::WEAK_CAS, self.weak_cas.map(|w| w.to_string())),
            (env::REPLAY, self.replay.map(|r| self.passable(r))),
            (
                env::REPLAY_FALLBACK,
                self.replay_fallback.map(str::to_string),
            ),
            (
                env::TRACE_OUT,
                self.trace_out.map(|d| d.display().to_string()),
            ),
            (
                env::NOT_INSTRUMENTED,
                (!self.not_instrumented.is_empty()).then(|| self.not_instrumented.join(",")),
            ),
            (
                env::INSTRUMENTED,
                (!self.instrumented.is_empty()).then(|| self.instrumented.join(",")),
            ),
        ];
        for (name, value) in optional {
            match value {
                Some(v) => cmd.env(name, v),
                // Never inherited from the user's shell: the run is what the flags say.
                None => cmd.env_remove(name),
            };
        }
        cmd.env_remove(env::ISOLATED_WORKER);
    }
}
