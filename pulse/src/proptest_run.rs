//! Runs a test written in `proptest! { .. }` under the scheduler (`cargo pulse` puts
//! `#[scheduled_proptest]` on it, see pulse-macros).
//!
//! Each schedule runs proptest's loop for one case (`PROPTEST_CASES=1` unless the user set
//! it): `--schedules N` tries N inputs, each under its own interleaving. The case's input
//! comes from proptest's RNG seeded with a word the execution draws as a scheduling choice
//! (`Ctx::choose_data`), so a failing schedule replays with its input, and minimizing it
//! keeps the input. proptest's failure persistence is off: a regression file written by
//! one execution would change what the next ones (the replays among them) run.

use std::env;

use crate::harness::{run_test_keeping, TestMeta, TestOutcome};

const CASES: &str = "PROPTEST_CASES";
const RNG_SEED: &str = "PROPTEST_RNG_SEED";
const NO_PERSISTENCE: &str = "PROPTEST_DISABLE_FAILURE_PERSISTENCE";

/// `run_test` for a fn `proptest!` generated: every execution runs `body` (proptest's case
/// loop) with the input seed it drew.
#[track_caller]
pub fn run_proptest<R: TestOutcome>(meta: TestMeta, body: impl Fn() -> R) -> R {
    // A seed the user fixed is kept: every schedule then runs that input.
    let seed_fixed = env::var_os(RNG_SEED).is_some();
    // Set before the search starts. Under `cargo pulse` a test has its process to itself, and
    // the other threads in it (libtest's, pulse's watchdog) do not read the environment;
    // proptest reads it when each execution builds its config.
    if env::var_os(CASES).is_none() {
        env::set_var(CASES, "1");
    }
    env::set_var(NO_PERSISTENCE, "1");
    run_test_keeping(
        meta,
        || {
            if let Some(ctx) = pulse_runtime::current() {
                let seed = ctx.choose_data();
                if !seed_fixed {
                    env::set_var(RNG_SEED, seed.to_string());
                }
            }
            body()
        },
        not_proptest_config,
    )
}

/// Drops the warning that proptest's default config (a `static` `LazyLock`, built from the
/// environment by the first execution) is shared between executions: every case builds its
/// own config from the environment again (`contextualize_config`), so nothing carries over.
fn not_proptest_config(warning: &str) -> bool {
    !(warning.contains("is shared between executions")
        && warning.contains("/proptest-")
        && warning.contains("test_runner/config.rs"))
}
