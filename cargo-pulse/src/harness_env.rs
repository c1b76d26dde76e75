//! The `PULSE_*` environment a test process reads (the harness contract in ARCHITECTURE.md),
//! set in one place for both runners: pulse's own per-test processes and cargo-nextest.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::seeds::SeedRange;

/// The search settings every test process of a run shares.
pub struct HarnessEnv<'a> {
    pub seeds: &'a SeedRange,
    pub max_steps: Option<u64>,
    pub strategy: Option<&'a str>,
    pub time: Option<&'a str>,
    pub replay: Option<&'a str>,
    pub blocking_timeout: Duration,
    pub failure_dir: &'a Path,
    pub replay_command: &'a str,
}

impl HarnessEnv<'_> {
    pub fn apply(&self, cmd: &mut Command) {
        cmd.env("PULSE_SCHEDULES", self.seeds.len().to_string())
            .env("PULSE_SEED", self.seeds.from.to_string())
            .env("PULSE_FAILURE_DIR", self.failure_dir)
            .env("PULSE_REPLAY_COMMAND", self.replay_command)
            .env(
                "PULSE_BLOCKING_TIMEOUT_MS",
                self.blocking_timeout.as_millis().to_string(),
            );
        let optional = [
            ("PULSE_MAX_STEPS", self.max_steps.map(|n| n.to_string())),
            ("PULSE_STRATEGY", self.strategy.map(str::to_string)),
            ("PULSE_TIME", self.time.map(str::to_string)),
            ("PULSE_REPLAY", self.replay.map(str::to_string)),
        ];
        for (name, value) in optional {
            if let Some(v) = value {
                cmd.env(name, v);
            }
        }
    }
}
