//! `--runner nextest`: hands the built mirror to `cargo nextest run`, so nextest's process
//! management, partitioning (`--partition`), retries and configuration apply, while the run's
//! events, statuses, replay lines and JSON are exactly those of pulse's own runner.
//!
//! nextest starts each test process itself, through a target runner
//! (`CARGO_TARGET_<triple>_RUNNER`) that is cargo-pulse again ([`wrap`]): it looks the test up
//! in the plan written before the run, gives its process the same harness environment and
//! files pulse's runner would (its own failure dir, progress and warnings files), runs it and
//! writes how it ended. This process watches those files, emits the same events, and judges
//! each end with [`run::judge`], the one judge of both runners.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::cli::TestArgs;
use crate::compile;
use crate::console::Console;
use crate::events::{Reporter, TestEvent};
use crate::exit_code;
use crate::list::TestCase;
use crate::mirror::Mirror;
use crate::outcome::Outcome;
use crate::process::read_progress;
use crate::run::{self, Ended, Exit, RunPlan, TestDir};

/// The first argument that makes cargo-pulse the wrapper of one test process.
pub const WRAP_ARG: &str = "__pulse-nextest-wrap";
/// Where the wrapper finds the plan (cargo-pulse's own variable, not the harness's).
const PLAN_VAR: &str = "CARGO_PULSE_NEXTEST_PLAN";

/// What the wrapper needs to start a test as pulse's runner would.
#[derive(Debug, Serialize, Deserialize)]
struct WrapPlan {
    /// Let the test write to the terminal (`--nocapture`).
    inherit: bool,
    cases: Vec<WrapCase>,
}

#[derive(Debug, Serialize, Deserialize)]
struct WrapCase {
    executable: PathBuf,
    name: String,
    dir: PathBuf,
    cwd: Option<PathBuf>,
    /// Variables to set (`Some`) or remove (`None`).
    env: Vec<(String, Option<String>)>,
}

/// The files the wrapper leaves in a test's dir.
const STARTED: &str = "started";
const EXIT: &str = "exit";
const TIME: &str = "time";

pub fn run(
    mirror: &Mirror,
    args: &TestArgs,
    cases: &[TestCase],
    plan: &RunPlan,
    console: &Console,
    reporter: &mut dyn Reporter,
) -> Result<Vec<Outcome>> {
    run::prepare_dirs(plan)?;
    let ids = run::test_ids(cases, plan);
    let mut wrap = WrapPlan {
        inherit: plan.nocapture,
        cases: Vec::new(),
    };
    let mut outcomes: Vec<(usize, Outcome)> = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        if !case.run {
            let o = run::ignored(case);
            reporter.report(&TestEvent::TestFinished {
                test: &ids[i],
                outcome: &o,
            });
            outcomes.push((i, o));
            continue;
        }
        let dir = TestDir::create(run::test_dir(plan, i))?;
        if case.binary.own_main {
            // Not a libtest test nextest could run through the wrapper.
            let o = run::own_main(case, plan, &dir, args.verbose);
            reporter.report(&TestEvent::TestFinished {
                test: &ids[i],
                outcome: &o,
            });
            outcomes.push((i, o));
            continue;
        }
        let mut cmd = Command::new(&case.binary.executable);
        run::configure(&mut cmd, case, plan, &dir, &plan.seeds, plan.isolation);
        let env = cmd
            .get_envs()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.map(|v| v.to_string_lossy().into_owned()),
                )
            })
            .collect();
        wrap.cases.push(WrapCase {
            executable: canonical(&case.binary.executable),
            name: case.name.clone(),
            dir: dir.0.clone(),
            cwd: cmd.get_current_dir().map(Path::to_path_buf),
            env,
        });
    }
    if wrap.cases.is_empty() {
        // Nothing for nextest to run (its own `--no-tests` would decide the exit code).
        return Ok(outcomes.into_iter().map(|(_, o)| o).collect());
    }
    let plan_file = plan.run_dir.join("nextest-plan.json");
    std::fs::write(&plan_file, serde_json::to_vec(&wrap)?)
        .with_context(|| format!("writing {}", plan_file.display()))?;

    let mut cmd = nextest_command(mirror, args)?;
    cmd.env(PLAN_VAR, &plan_file);
    let log_path = plan.run_dir.join("nextest.log");
    let log =
        File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
    cmd.stdout(log.try_clone()?)
        .stderr(log)
        .stdin(Stdio::null());
    if console.verbose() {
        console.status("Running", &format!("{cmd:?}"));
    }
    let mut child = cmd
        .spawn()
        .context("running `cargo nextest run` (is cargo-nextest installed?)")?;

    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Waiting,
        Running(u64),
        Done,
    }
    let mut state: HashMap<usize, State> = cases
        .iter()
        .enumerate()
        .filter(|(_, c)| c.run && !c.binary.own_main)
        .map(|(i, _)| (i, State::Waiting))
        .collect();
    let mut order: Vec<usize> = state.keys().copied().collect();
    order.sort();
    let mut asked_to_stop = false;
    let status = loop {
        if !asked_to_stop && crate::stop::requested().is_some() {
            // nextest stops its tests on SIGTERM and exits.
            // SAFETY: kill(2) on our own child's pid, which it keeps until we wait for it.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            asked_to_stop = true;
        }
        let exited = child.try_wait().context("waiting for cargo nextest")?;
        for &i in &order {
            let dir = TestDir(run::test_dir(plan, i));
            let s = state[&i];
            if s == State::Waiting && dir.0.join(STARTED).is_file() {
                reporter.report(&TestEvent::TestStarted(&ids[i]));
                state.insert(i, State::Running(u64::MAX));
            }
            if let State::Running(seen) = state[&i] {
                if let Some((done, total)) = read_progress(&dir.progress()) {
                    if done != seen {
                        reporter.report(&TestEvent::TestProgress {
                            test: &ids[i],
                            done,
                            total,
                        });
                        state.insert(i, State::Running(done));
                    }
                }
                let ended = ended_in(&dir).or_else(|| {
                    // nextest is done and this test never said how it ended: nextest stopped
                    // it (its slow-timeout, or a cancelled run).
                    exited.map(|_| Ended {
                        exit: Exit::Signal(9),
                        time: Duration::ZERO,
                        killed: Some(
                            "cargo-nextest stopped the test process (its slow-timeout, or the run was cancelled)"
                                .into(),
                        ),
                        stopped: crate::stop::requested(),
                    })
                });
                if let Some(ended) = ended {
                    let mut progress = |done, total| {
                        reporter.report(&TestEvent::TestProgress {
                            test: &ids[i],
                            done,
                            total,
                        })
                    };
                    let o = run::judge(&cases[i], plan, &dir, ended, args.verbose, &mut progress);
                    dir.remove_tmp();
                    let o = o?;
                    reporter.report(&TestEvent::TestFinished {
                        test: &ids[i],
                        outcome: &o,
                    });
                    outcomes.push((i, o));
                    state.insert(i, State::Done);
                }
            }
        }
        if let Some(status) = exited {
            break status;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // The tests nextest never ran or finished have their temporary directories too.
    for &i in &order {
        TestDir(run::test_dir(plan, i)).remove_tmp();
    }
    let started_any = state.values().any(|s| *s != State::Waiting);
    if let Some(stop) = crate::stop::requested() {
        for &i in order.iter().filter(|i| state[*i] == State::Waiting) {
            let o = run::stopped(&cases[i], plan, 0, Duration::ZERO, stop, false);
            reporter.report(&TestEvent::TestFinished {
                test: &ids[i],
                outcome: &o,
            });
            outcomes.push((i, o));
        }
    }
    let any_failed = outcomes.iter().any(|(_, o)| o.result.failure().is_some());
    match status.code() {
        Some(exit_code::NEXTEST_TEST_FAILED) if !any_failed && !asked_to_stop => {
            // nextest saw a test fail that no wrapper reported: its tests ran without
            // pulse, and what passed says nothing either.
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            bail!(
                "`cargo nextest run` reports a failing test, but no test it ran reported \
                 through pulse's wrapper (was the target runner overridden?):\n{}",
                log.trim_end()
            );
        }
        Some(0) | Some(exit_code::NEXTEST_TEST_FAILED) => {}
        _ if asked_to_stop => {}
        _ if !started_any && !order.is_empty() => {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            bail!(
                "`cargo nextest run` failed ({status}) before running any test:\n{}",
                log.trim_end()
            );
        }
        _ => console.warning(&format!(
            "`cargo nextest run` ended with {status}; its output is in {}",
            log_path.display()
        )),
    }
    if console.verbose() {
        console.eprint(&std::fs::read_to_string(&log_path).unwrap_or_default());
    }
    // Tests nextest did not run (a `--partition`, its own filters) have no outcome.
    outcomes.sort_by_key(|(i, _)| *i);
    Ok(outcomes.into_iter().map(|(_, o)| o).collect())
}

/// `cargo nextest run` on the mirror with the user's selection, through the wrapper.
fn nextest_command(mirror: &Mirror, args: &TestArgs) -> Result<Command> {
    let mut cmd = compile::cargo_command(mirror);
    cmd.args(["nextest", "run"])
        .args(compile::optimized_runtime_args())
        .args(["--no-fail-fast", "--manifest-path"])
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
    let me = std::env::current_exe().context("finding cargo-pulse's own executable")?;
    if me.to_string_lossy().contains(char::is_whitespace) {
        bail!(
            "--runner nextest needs cargo-pulse installed at a path without spaces (it is {})",
            me.display()
        );
    }
    cmd.env(
        runner_var(&host_triple(&mirror.root)?),
        format!("{} {WRAP_ARG}", me.display()),
    );
    Ok(cmd)
}

/// `CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER` for `x86_64-unknown-linux-gnu`.
fn runner_var(triple: &str) -> String {
    format!(
        "CARGO_TARGET_{}_RUNNER",
        triple.to_uppercase().replace(['-', '.'], "_")
    )
}

/// The host triple of the rustc cargo uses in `dir`.
fn host_triple(dir: &Path) -> Result<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc)
        .arg("-vV")
        .current_dir(dir)
        .output()
        .context("running `rustc -vV`")?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .context("`rustc -vV` named no host")
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// How the wrapper says the test process in `dir` ended, once it has.
fn ended_in(dir: &TestDir) -> Option<Ended> {
    let exit = Exit::from_text(&std::fs::read_to_string(dir.0.join(EXIT)).ok()?)?;
    let secs: f64 = std::fs::read_to_string(dir.0.join(TIME))
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0.0);
    Some(Ended {
        exit,
        time: Duration::from_secs_f64(secs),
        killed: None,
        stopped: None,
    })
}

/// The wrapper: `cargo-pulse __pulse-nextest-wrap <test binary> <args>`, as nextest starts
/// it. Returns the exit code to leave with.
pub fn wrap(argv: &[String]) -> i32 {
    let Some((binary, rest)) = argv.split_first() else {
        eprintln!("cargo-pulse {WRAP_ARG}: no test binary given");
        return exit_code::TOOL_ERROR;
    };
    let plan: Option<WrapPlan> = std::env::var_os(PLAN_VAR)
        .and_then(|p| std::fs::read(p).ok())
        .and_then(|b| serde_json::from_slice(&b).ok());
    let listing = rest.iter().any(|a| a == "--list");
    let exe = canonical(Path::new(binary));
    let name = rest.iter().find(|a| !a.starts_with('-'));
    let case = plan.as_ref().filter(|_| !listing).and_then(|p| {
        p.cases
            .iter()
            .find(|c| Some(&c.name) == name && c.executable == exe)
    });
    let mut cmd = Command::new(binary);
    cmd.args(rest);
    let Some(case) = case else {
        // Listing, or a test the plan does not know: run it as nextest asked.
        return match cmd.status() {
            Ok(s) => exit_number(Exit::of(s)),
            Err(e) => {
                eprintln!("cargo-pulse: could not start {binary}: {e}");
                exit_code::TOOL_ERROR
            }
        };
    };
    let inherit = plan.as_ref().is_some_and(|p| p.inherit);
    for (k, v) in &case.env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    if let Some(cwd) = &case.cwd {
        cmd.current_dir(cwd);
    }
    let dir = TestDir(case.dir.clone());
    let _ = std::fs::write(dir.0.join(STARTED), "");
    let started = Instant::now();
    let status =
        match crate::process::TestProcess::spawn(cmd, &dir.0, inherit).and_then(|mut p| p.wait()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("cargo-pulse: could not run {binary}: {e:#}");
                return exit_code::TOOL_ERROR;
            }
        };
    let exit = Exit::of(status);
    let _ = std::fs::write(
        dir.0.join(TIME),
        started.elapsed().as_secs_f64().to_string(),
    );
    let _ = std::fs::write(dir.0.join(EXIT), exit.to_text());
    if !inherit {
        // What the test printed, for nextest's own report of it.
        use std::io::Write;
        let _ = std::io::stdout().write_all(&std::fs::read(dir.stdout()).unwrap_or_default());
        let _ = std::io::stderr().write_all(&std::fs::read(dir.stderr()).unwrap_or_default());
    }
    exit_number(exit)
}

fn exit_number(exit: Exit) -> i32 {
    match exit {
        Exit::Code(c) => c,
        Exit::Signal(s) => 128 + s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_runner_variable_as_cargo_does() {
        assert_eq!(
            runner_var("x86_64-unknown-linux-gnu"),
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER"
        );
        assert_eq!(
            runner_var("thumbv7em-none-eabihf"),
            "CARGO_TARGET_THUMBV7EM_NONE_EABIHF_RUNNER"
        );
    }
}
