//! Runs each selected test in its own process under the `PULSE_*` harness configuration, a few
//! at a time, and turns each process's end into an [`Outcome`].
//!
//! One process per test isolates crashes and hangs (a test that blocks outside pulse's control
//! is killed alone), gives per-test timing and progress, and lets the failure JSON be found
//! without guessing which test wrote it.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::console::Console;
use crate::exit_code;
use crate::harness_env::HarnessEnv;
use crate::list::TestCase;
use crate::outcome::{Failure, FailureRecord, Outcome, TestResult};
use crate::path_map::PathMap;
use crate::process::{libtest_counts, read_progress, TestProcess};
use crate::seeds::SeedRange;

/// Schedules longer than this (characters) are replayed from the failure file.
const LONG_SCHEDULE: usize = 300;

/// How every test is run.
#[derive(Debug, Clone)]
pub struct RunPlan {
    pub seeds: SeedRange,
    pub replay: Option<String>,
    pub max_steps: Option<u64>,
    pub strategy: Option<String>,
    pub time: Option<String>,
    pub blocking_timeout: Duration,
    pub timeout: Option<Duration>,
    pub nocapture: bool,
    pub jobs: usize,
    /// Extra arguments for each test binary.
    pub test_args: Vec<String>,
    /// `cargo pulse test` flags to repeat in replay lines (manifest path, features, ...).
    pub replay_flags: Vec<String>,
    pub failures_dir: PathBuf,
    pub run_dir: PathBuf,
    pub paths: PathMap,
}

impl RunPlan {
    fn planned(&self) -> u64 {
        if self.replay.is_some() {
            1
        } else {
            self.seeds.len()
        }
    }

    /// The replay line for `case`, with `{schedule}` and `{seed}` left for the harness.
    pub fn replay_template(&self, case: &TestCase) -> String {
        let mut line = format!(
            "cargo pulse test {} --exact {}",
            shell_word(&case.name),
            case.binary.selector()
        );
        for f in &self.replay_flags {
            line.push(' ');
            line.push_str(&shell_word(f));
        }
        line.push_str(" --replay '{schedule}'");
        line
    }
}

/// Suffix of a replay's failure file stem, so it never overwrites the search's.
pub const REPLAY_SUFFIX: &str = ".replay";

/// `<package>.<kind>-<target>.<test>.json`, or `...<test>.replay.json` for a replay.
pub fn failure_file_name(slug: &str, test: &str, replay: bool) -> String {
    let suffix = if replay { REPLAY_SUFFIX } else { "" };
    format!("{slug}.{test}{suffix}.json")
}

/// Quotes a word for a POSIX shell when it needs it.
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.,/:=+@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Runs `cases` (those marked to run; the others are reported ignored) and reports each outcome
/// to `on_done` as it finishes, on this thread.
pub fn run_all(
    cases: Vec<TestCase>,
    plan: &RunPlan,
    console: &Console,
    on_done: &mut dyn FnMut(&Outcome),
) -> Result<Vec<Outcome>> {
    std::fs::create_dir_all(&plan.failures_dir)
        .with_context(|| format!("creating {}", plan.failures_dir.display()))?;
    let _ = std::fs::remove_dir_all(&plan.run_dir);
    std::fs::create_dir_all(&plan.run_dir)
        .with_context(|| format!("creating {}", plan.run_dir.display()))?;

    let mut outcomes = Vec::new();
    let mut queue = VecDeque::new();
    for (i, case) in cases.into_iter().enumerate() {
        if case.run {
            queue.push_back((i, case));
        } else {
            let o = Outcome {
                name: case.name.clone(),
                package: case.binary.package.clone(),
                binary_display: case.binary.display(),
                result: TestResult::Ignored,
                schedules_run: 0,
                schedules_planned: 0,
                time: Duration::ZERO,
                warnings: Vec::new(),
            };
            on_done(&o);
            outcomes.push((i, o));
        }
    }
    let total = queue.len();
    let queue = Arc::new(Mutex::new(queue));
    let (tx, rx) = mpsc::channel::<(usize, Result<Outcome>)>();
    let workers = plan.jobs.max(1).min(total.max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            let queue = queue.clone();
            let tx = tx.clone();
            s.spawn(move || loop {
                let Some((i, case)) = queue.lock().unwrap().pop_front() else {
                    break;
                };
                let outcome = run_one(i, &case, plan, console);
                if tx.send((i, outcome)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut first_err = None;
        for (i, outcome) in rx {
            match outcome {
                Ok(o) => {
                    on_done(&o);
                    outcomes.push((i, o));
                }
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    })?;
    outcomes.sort_by_key(|(i, _)| *i);
    Ok(outcomes.into_iter().map(|(_, o)| o).collect())
}

fn run_one(index: usize, case: &TestCase, plan: &RunPlan, console: &Console) -> Result<Outcome> {
    let dir = plan.run_dir.join(index.to_string());
    let failure_dir = dir.join("failures");
    std::fs::create_dir_all(&failure_dir)
        .with_context(|| format!("creating {}", failure_dir.display()))?;
    let progress = dir.join("progress");
    let planned = plan.planned();
    let replay_template = plan.replay_template(case);

    let mut cmd = case.binary.command();
    cmd.arg(&case.name).args(["--exact", "--test-threads", "1"]);
    if case.ignored {
        cmd.arg("--include-ignored");
    }
    if plan.nocapture {
        cmd.arg("--nocapture");
    }
    cmd.args(&plan.test_args);
    cmd.current_dir(&case.binary.mirror_dir)
        .env("CARGO_MANIFEST_DIR", &case.binary.mirror_dir)
        .env("CARGO_PKG_NAME", &case.binary.package)
        .env("PULSE_PROGRESS", &progress)
        .env("PULSE_WARNINGS", dir.join("warnings"));
    HarnessEnv {
        seeds: &plan.seeds,
        max_steps: plan.max_steps,
        strategy: plan.strategy.as_deref(),
        time: plan.time.as_deref(),
        replay: plan.replay.as_deref(),
        blocking_timeout: plan.blocking_timeout,
        failure_dir: &failure_dir,
        replay_command: &replay_template,
    }
    .apply(&mut cmd);

    let bar = console.test_bar(&format!("{} {}", case.binary.display(), case.name), planned);
    let started = Instant::now();
    let mut proc = TestProcess::spawn(cmd, &dir, plan.nocapture)?;
    // Backstop for a process whose own watchdog cannot fire: no progress for this long.
    let stall_limit = (plan.blocking_timeout * 3).max(Duration::from_secs(60));
    let mut last_progress = (0u64, Instant::now());
    let mut killed: Option<String> = None;
    let status = loop {
        if let Some(status) = proc.try_wait()? {
            break status;
        }
        std::thread::sleep(Duration::from_millis(50));
        if let Some((done, total)) = read_progress(&progress) {
            bar.set_length(total.max(1));
            bar.set_position(done);
            if done != last_progress.0 {
                last_progress = (done, Instant::now());
            }
        }
        if let Some(limit) = plan.timeout {
            if started.elapsed() > limit {
                killed = Some(format!(
                    "the test ran longer than --timeout {}s and was stopped",
                    limit.as_secs_f64()
                ));
                break proc.kill()?;
            }
        }
        if last_progress.1.elapsed() > stall_limit {
            killed = Some(format!(
                "the test made no progress for {}s and was stopped: a thread is probably blocked outside \
                 pulse's control (a lock, channel or syscall that was not instrumented).\n\
                 Mark such code #[pulse::atomic], or instrument the crate it comes from with --instrument-dep <crate>.",
                stall_limit.as_secs()
            ));
            break proc.kill()?;
        }
    };
    let time = started.elapsed();
    console.remove_bar(&bar);
    let final_progress = read_progress(&progress);

    let stdout = proc.stdout();
    let stderr = proc.stderr();
    let counts = libtest_counts(&stdout);
    let warnings = read_warnings(&dir.join("warnings"), &plan.paths);
    let base = |result: TestResult, run: u64| Outcome {
        name: case.name.clone(),
        package: case.binary.package.clone(),
        binary_display: case.binary.display(),
        result,
        schedules_run: run,
        schedules_planned: planned,
        time,
        warnings: warnings.clone(),
    };

    if killed.is_none() && status.success() {
        return Ok(match counts {
            // With --nocapture the output went to the terminal: the exit status is all we have.
            Some((1, 0, _)) | None => base(TestResult::Passed, planned),
            Some((0, 0, 1)) => base(TestResult::Ignored, 0),
            Some(_) => {
                let report = format!(
                    "the test binary did not run `{}` (is it still a #[test]?)",
                    case.name
                );
                base(
                    failed(
                        report,
                        None,
                        None,
                        Some(replay_template),
                        Some(stdout + &stderr),
                    ),
                    0,
                )
            }
        });
    }

    // A failure: the harness's record if it wrote one, else what we know. A replay's record
    // has no seed: it goes beside the search's, never over it.
    let failure_file = plan.failures_dir.join(failure_file_name(
        &case.binary.slug(),
        &case.name,
        plan.replay.is_some(),
    ));
    let record = read_record(&failure_dir);
    let output = plan.paths.map_text(&format!("{stdout}{stderr}"));
    if let Some(record) = record {
        let mut record = record;
        record.report = plan.paths.map_text(&record.report);
        record.message = plan.paths.map_text(&record.message);
        if let Some(loc) = &record.location {
            record.location = Some(plan.paths.map_text(loc));
        }
        let json = serde_json::to_vec_pretty(&record)?;
        std::fs::write(&failure_file, json)
            .with_context(|| format!("writing {}", failure_file.display()))?;
        if !record.trace.is_empty() {
            crate::timeline::write(&record, &failure_file.with_extension("html"))?;
        }
        let run = if record.executions > 0 {
            record.executions
        } else {
            final_progress.map_or(1, |p| p.0)
        };
        let report = record.report.clone();
        let replay = if record.schedule.is_empty() {
            // No schedule to replay (the watchdog stopped the process): rerun the seed instead.
            record.seed.map(|seed| {
                replay_template.replace(
                    "--replay '{schedule}'",
                    &format!("--seed {seed} --schedules 1"),
                )
            })
        } else if record.schedule.len() > LONG_SCHEDULE {
            // Too long for a command line people copy: replay from the failure file.
            Some(replay_template.replace("'{schedule}'", &format!("'{}'", failure_file.display())))
        } else {
            replay_line(&record.report)
                .or_else(|| Some(replay_template.replace("{schedule}", &record.schedule)))
        };
        let shown_output = if console.verbose() {
            Some(output)
        } else {
            None
        };
        return Ok(base(
            failed(
                report,
                Some(record),
                Some(failure_file),
                replay,
                shown_output,
            ),
            run,
        ));
    }
    let run = final_progress.map_or(0, |p| p.0);
    let report = match (&killed, status.code()) {
        (Some(why), _) => why.clone(),
        (None, Some(code)) if code == exit_code::TEST_BLOCKED => {
            "a thread blocked outside pulse's control (the harness's watchdog stopped the test; see its output below).\n\
             Mark such code #[pulse::atomic], or instrument the crate it comes from with --instrument-dep <crate>."
                .to_string()
        }
        (None, Some(101)) => "the test failed (no pulse failure record: did it fail outside the scheduler?)".to_string(),
        (None, code) => format!("the test process ended abnormally ({}) without a failure record", describe_status(code, &status)),
    };
    Ok(base(
        failed(report, None, None, None, Some(tail(&output, 60))),
        run,
    ))
}

fn failed(
    report: String,
    record: Option<FailureRecord>,
    failure_file: Option<PathBuf>,
    replay: Option<String>,
    output: Option<String>,
) -> TestResult {
    TestResult::Failed(Box::new(Failure {
        record,
        report,
        failure_file,
        replay,
        output,
    }))
}

/// Distinct warning lines the harness wrote to `PULSE_WARNINGS`.
fn read_warnings(path: &Path, paths: &PathMap) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut out: Vec<String> = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let line = paths.map_text(line);
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

/// The record the harness wrote into this test's own failure dir.
fn read_record(dir: &Path) -> Option<FailureRecord> {
    let entries = std::fs::read_dir(dir).ok()?;
    for e in entries.flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "json") {
            if let Some(r) = std::fs::read(&p)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
            {
                return Some(r);
            }
        }
    }
    None
}

/// The `replay: ...` line a report ends with.
fn replay_line(report: &str) -> Option<String> {
    report.lines().rev().find_map(|l| {
        l.trim()
            .strip_prefix("replay:")
            .map(|s| s.trim().to_string())
    })
}

fn describe_status(code: Option<i32>, status: &std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return format!("killed by signal {sig}");
        }
    }
    match code {
        Some(c) => format!("exit code {c}"),
        None => format!("{status}"),
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    let skip = all.len().saturating_sub(lines);
    let mut out = String::new();
    if skip > 0 {
        out.push_str(&format!("... ({skip} earlier lines)\n"));
    }
    out.push_str(&all[skip..].join("\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_shell_words() {
        assert_eq!(shell_word("tests::a"), "tests::a");
        assert_eq!(shell_word("p1:0*3"), "'p1:0*3'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }

    #[test]
    fn finds_the_replay_line() {
        assert_eq!(
            replay_line("x\nreplay: cargo pulse test a --replay 'p1:0'"),
            Some("cargo pulse test a --replay 'p1:0'".into())
        );
    }
}
