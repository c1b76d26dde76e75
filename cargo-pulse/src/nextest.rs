//! `--runner nextest`: hands the built mirror to `cargo nextest run`. nextest already runs each
//! test in its own process; the `PULSE_*` variables reach `run_test` inside each one, so nextest's
//! partitioning, retries and reports work unchanged, and `--seeds FROM..TO` spreads one long
//! search over many CI machines (one seed range per machine).

use anyhow::{Context, Result};
use std::time::Duration;

use crate::cli::TestArgs;
use crate::compile;
use crate::console::Console;
use crate::exit_code;
use crate::harness_env::HarnessEnv;
use crate::mirror::Mirror;
use crate::seeds::SeedRange;

pub fn run(mirror: &Mirror, args: &TestArgs, seeds: SeedRange, console: &Console) -> Result<i32> {
    // Build first ourselves: compiler errors are then shown against the user's files.
    if compile::build(mirror, &args.cargo, &args.targets, console)?.is_none() {
        return Ok(exit_code::TOOL_ERROR);
    }
    std::fs::create_dir_all(&mirror.failures_dir)
        .with_context(|| format!("creating {}", mirror.failures_dir.display()))?;
    let mut cmd = compile::cargo_command(mirror);
    cmd.args(["nextest", "run", "--manifest-path"])
        .arg(&mirror.manifest);
    cmd.args(compile::cargo_selection_args(&args.cargo, &args.targets));
    if args.cargo.offline {
        cmd.arg("--offline");
    }
    if let Some(n) = args.test_threads {
        cmd.args(["--test-threads", &n.to_string()]);
    }
    if args.ignored {
        cmd.args(["--run-ignored", "ignored-only"]);
    } else if args.include_ignored {
        cmd.args(["--run-ignored", "all"]);
    }
    if args.nocapture {
        cmd.arg("--no-capture");
    }
    cmd.args(&args.filters);
    if args.exact || !args.skip.is_empty() {
        cmd.arg("--");
        if args.exact {
            cmd.arg("--exact");
        }
        for s in &args.skip {
            cmd.args(["--skip", s]);
        }
    }
    cmd.args(&args.passthrough);
    HarnessEnv {
        seeds: &seeds,
        max_steps: args.max_steps,
        strategy: args.strategy.as_deref(),
        time: args.time.as_deref(),
        replay: args.replay.as_deref(),
        blocking_timeout: Duration::from_secs_f64(args.blocking_timeout),
        failure_dir: &mirror.failures_dir,
        replay_command: "cargo pulse test {test} --exact --replay '{schedule}'",
    }
    .apply(&mut cmd);
    console.status(
        "Running",
        &format!("cargo nextest run on the instrumented mirror (seeds {seeds})"),
    );
    let status = cmd
        .status()
        .context("running `cargo nextest run` (is cargo-nextest installed?)")?;
    Ok(match status.code() {
        Some(0) => exit_code::SUCCESS,
        Some(exit_code::NEXTEST_TEST_FAILED) => exit_code::FAILURE,
        _ => exit_code::TOOL_ERROR,
    })
}
