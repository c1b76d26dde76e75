//! Runs each selected test in its own process under the harness configuration
//! (`pulse_protocol::env`), a few at a time, and judges each process's end into an
//! [`Outcome`], emitting the run's [`TestEvent`]s as it goes.
//!
//! One process per test isolates crashes and hangs (a test that blocks outside pulse's control
//! is killed alone), gives per-test timing and progress, and lets the failure record be found
//! without guessing which test wrote it. How a process ended is judged by [`judge`], shared
//! with `--runner nextest`, so both runners say the same of the same end. A process that died
//! without a final record is a finding, not a shrug: what it left (a record written before the
//! traced replay, the last progress count) is used, and the test is run again from there one
//! fresh process per schedule (`Isolation::Always`), where the runtime catches the crash and
//! records it with its seed.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use pulse_protocol::{
    Cleanup, Detached, FailureKind, FailureRecord, Isolation, Memory, SeedReplay, Strategy,
    TimeMode, WeakCas,
};

use crate::events::{Reporter, TestEvent, TestId};
use crate::harness_env::HarnessEnv;
use crate::list::TestCase;
use crate::outcome::{self, Failure, Outcome, TestResult};
use crate::path_map::PathMap;
use crate::process::{libtest_counts, read_progress, TestProcess};
use crate::seeds::SeedRange;

/// Schedules longer than this (characters) are replayed from the failure file.
const LONG_SCHEDULE: usize = 300;

/// How every test is run.
#[derive(Debug, Clone)]
pub struct RunPlan {
    pub seeds: SeedRange,
    /// `--seeds FROM..TO` was given: replay lines repeat the range, not a first seed.
    pub shard: bool,
    pub replay: Option<String>,
    /// With `replay` from a failure file: its strategy and seed, which the harness runs when
    /// the schedule no longer fits the program.
    pub replay_fallback: Option<SeedReplay>,
    /// The failure file `replay` came from, to say whether a fallback reproduced it.
    pub replay_recorded: Option<FailureRecord>,
    pub max_steps: Option<u64>,
    pub strategy: Option<Strategy>,
    pub time: Option<TimeMode>,
    pub isolation: Option<Isolation>,
    pub cleanup: Option<Cleanup>,
    pub detached: Option<Detached>,
    pub weak_cas: Option<WeakCas>,
    pub memory: Option<Memory>,
    pub blocking_timeout: Duration,
    /// `--test-time`: how long one test's search may take.
    pub test_time: Option<Duration>,
    /// `--test-steps`: how many steps one test's search may take.
    pub test_steps: Option<u64>,
    pub timeout: Option<Duration>,
    pub nocapture: bool,
    pub jobs: usize,
    /// Extra arguments for each test binary.
    pub test_args: Vec<String>,
    /// `cargo pulse test` flags to repeat in replay lines (manifest path, features, ...).
    pub replay_flags: Vec<String>,
    pub failures_dir: PathBuf,
    pub run_dir: PathBuf,
    /// The target dir the mirror was built in: a test that runs cargo (trybuild's UI tests)
    /// finds it as `cargo test` would let it find its own.
    pub target_dir: PathBuf,
    pub paths: PathMap,
    /// Packages pulse never instruments (proc-macro crates run in the compiler): their tests
    /// run as under `cargo test`, with a warning, not as NOT SCHEDULED.
    pub uninstrumented: Vec<String>,
    /// `--trace-out DIR` (absolute).
    pub trace_out: Option<PathBuf>,
    /// Synchronising dependencies left uninstrumented because a file does not parse
    /// (`env::NOT_INSTRUMENTED`).
    pub not_instrumented: Vec<String>,
    /// Dependencies instrumented or replaced (`env::INSTRUMENTED`).
    pub instrumented: Vec<String>,
    /// The workspace's own files left as they are because they do not parse: (package,
    /// `file:line:col: message`). A test that then never reaches the harness is said to be
    /// in one, not blamed on its attribute.
    pub unparsed: Vec<(String, String)>,
}

impl RunPlan {
    pub fn planned(&self) -> u64 {
        if self.replay.is_some() {
            1
        } else {
            self.seeds.len()
        }
    }

    /// Whether this run replays a failure rather than searches: a schedule, or one seed (the
    /// `replay by seed:` line's `--seed S --schedules 1`). Its record is written beside the
    /// search's, never over it.
    pub fn replays(&self) -> bool {
        self.planned() == 1
    }

    /// `cargo pulse test <test> --exact -p <package> <target> <flags>`: the start of every
    /// line that runs `case` again.
    fn base_line(&self, case: &TestCase) -> String {
        self.base_line_without(case, &[])
    }

    /// `base_line` without the flags named in `skip` (and their values).
    fn base_line_without(&self, case: &TestCase, skip: &[&str]) -> String {
        let mut line = format!(
            "cargo pulse test {} --exact {}",
            shell_word(&case.name),
            case.binary.selector()
        );
        let mut flags = self.replay_flags.iter();
        while let Some(f) = flags.next() {
            if skip.contains(&f.as_str()) {
                flags.next();
                continue;
            }
            line.push(' ');
            line.push_str(&shell_word(f));
        }
        line
    }

    /// The replay line for `case`, with `{schedule}` left for the harness.
    pub fn replay_template(&self, case: &TestCase) -> String {
        format!("{} --replay '{{schedule}}'", self.base_line(case))
    }

    /// The seed replay line for `case`, with the harness's `{seed}`, `{strategy}`, `{time}`
    /// and `{memory}` left in: the failing execution's own strategy, time mode and memory
    /// model, stated (they replace this run's `--time` and `--memory`).
    pub fn seed_template(&self, case: &TestCase) -> String {
        let mut line = self.base_line_without(case, &["--time", "--memory"]);
        line.push_str(
            " --seed {seed} --schedules 1 --strategy {strategy} --time {time} --memory {memory}",
        );
        line
    }

    /// Runs one seed again; a crash's line runs it in a fresh process, where it is caught.
    fn seed_line(&self, case: &TestCase, seed: u64, crash: bool) -> String {
        let mut line = format!("{} --seed {seed} --schedules 1", self.base_line(case));
        if let Some(s) = self.strategy {
            line.push_str(&format!(" --strategy {s}"));
        }
        if crash {
            line.push_str(CRASH_ISOLATION);
        }
        line
    }

    /// Runs what this run ran for `case` again: its schedule, or its seeds.
    fn rerun_line(&self, case: &TestCase) -> String {
        let mut line = self.base_line(case);
        match &self.replay {
            Some(schedule) => line.push_str(&format!(" --replay {}", shell_word(schedule))),
            None if self.shard => line.push_str(&format!(" --seeds {}", self.seeds)),
            None => line.push_str(&format!(
                " --seed {} --schedules {}",
                self.seeds.from,
                self.seeds.len()
            )),
        }
        if let Some(s) = self.strategy {
            line.push_str(&format!(" --strategy {s}"));
        }
        if let Some(i) = self.isolation {
            line.push_str(&format!(" --isolation {i}"));
        }
        line
    }
}

/// The strategy and seed a failure record replays from, when it has both and the strategy
/// replays by seed (records before this field have none: their replay has no fallback).
pub fn seed_replay_of(record: &FailureRecord) -> Option<SeedReplay> {
    let strategy: Strategy = record.strategy.as_deref()?.parse().ok()?;
    let seed = record.seed?;
    strategy
        .replays_by_seed()
        .then_some(SeedReplay { strategy, seed })
}

/// Whether a replay's failure is the recorded one: the same kind and message (the location's
/// line moves with an edit above it).
fn same_failure(recorded: &FailureRecord, now: &FailureRecord) -> bool {
    recorded.kind == now.kind && recorded.message == now.message
}

/// Suffix of a replay's failure file stem, so it never overwrites the search's.
pub const REPLAY_SUFFIX: &str = ".replay";

/// `<package>.<kind>-<target>.<test>.json`, or `...<test>.replay.json` for a replay.
pub fn failure_file_name(slug: &str, test: &str, replay: bool) -> String {
    let suffix = if replay { REPLAY_SUFFIX } else { "" };
    format!("{slug}.{test}{suffix}.json")
}

/// Quotes a word for a POSIX shell when it needs it.
pub fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.,/:=+@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Where one test process keeps what it leaves behind.
#[derive(Debug, Clone)]
pub struct TestDir(pub PathBuf);

impl TestDir {
    pub fn create(path: PathBuf) -> Result<TestDir> {
        let dir = TestDir(path);
        let _ = std::fs::remove_dir_all(&dir.0);
        std::fs::create_dir_all(dir.failures())
            .with_context(|| format!("creating {}", dir.failures().display()))?;
        Ok(dir)
    }
    pub fn failures(&self) -> PathBuf {
        self.0.join("failures")
    }
    /// The test process's `TMPDIR`, its own: under `cargo test` every test of a binary
    /// shares one process, so temporary names drawn from a per-process counter (ignore's
    /// test `TempDir`) are distinct, while pulse runs tests in parallel processes whose
    /// counters all start at 0. Short (a Unix socket's path has 108 bytes), under the
    /// system's temporary directory, removed when the test is judged (`remove_tmp`).
    pub fn tmp(&self) -> PathBuf {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.0.hash(&mut hasher);
        std::env::temp_dir().join(format!("pulse-{:016x}", hasher.finish()))
    }
    pub fn remove_tmp(&self) {
        let _ = std::fs::remove_dir_all(self.tmp());
    }
    pub fn progress(&self) -> PathBuf {
        self.0.join("progress")
    }
    pub fn warnings(&self) -> PathBuf {
        self.0.join("warnings")
    }
    pub fn stdout(&self) -> PathBuf {
        self.0.join("stdout")
    }
    pub fn stderr(&self) -> PathBuf {
        self.0.join("stderr")
    }
}

/// The harness environment and working directory of `case`'s process, running `seeds` with
/// `isolation` (a crash's follow-up changes both).
pub fn configure(
    cmd: &mut Command,
    case: &TestCase,
    plan: &RunPlan,
    dir: &TestDir,
    seeds: &SeedRange,
    isolation: Option<Isolation>,
) {
    let replay_command = plan.replay_template(case);
    let seed_command = plan.seed_template(case);
    let replay_fallback = plan.replay_fallback.map(|r| r.to_string());
    // (Created here, for each test directory's process: the test's own, a crash's follow-up
    // in its `isolated` directory; each is removed once that process is judged.)
    let tmp = dir.tmp();
    if std::fs::create_dir_all(&tmp).is_ok() {
        cmd.env("TMPDIR", &tmp);
    }
    cmd.current_dir(&case.binary.mirror_dir)
        .env("CARGO_MANIFEST_DIR", &case.binary.mirror_dir)
        .env("CARGO_PKG_NAME", &case.binary.package)
        .env("CARGO_TARGET_DIR", &plan.target_dir);
    HarnessEnv {
        seeds,
        max_steps: plan.max_steps,
        strategy: plan.strategy,
        time: plan.time,
        isolation,
        cleanup: plan.cleanup,
        detached: plan.detached,
        weak_cas: plan.weak_cas,
        memory: plan.memory,
        replay: plan.replay.as_deref(),
        blocking_timeout: plan.blocking_timeout,
        test_time: plan.test_time,
        test_steps: plan.test_steps,
        failure_dir: &dir.failures(),
        progress: &dir.progress(),
        warnings: &dir.warnings(),
        replay_command: &replay_command,
        seed_command: &seed_command,
        replay_fallback: replay_fallback.as_deref(),
        trace_out: plan.trace_out.as_deref(),
        not_instrumented: &plan.not_instrumented,
        instrumented: &plan.instrumented,
    }
    .apply(cmd);
}

/// libtest running exactly `case`, configured for `dir`.
fn test_command(
    case: &TestCase,
    plan: &RunPlan,
    dir: &TestDir,
    seeds: &SeedRange,
    isolation: Option<Isolation>,
) -> Command {
    let mut cmd = case.binary.command();
    cmd.arg(&case.name).args(["--exact", "--test-threads", "1"]);
    if case.ignored {
        cmd.arg("--include-ignored");
    }
    if plan.nocapture {
        cmd.arg("--nocapture");
    }
    cmd.args(&plan.test_args);
    configure(&mut cmd, case, plan, dir, seeds, isolation);
    cmd
}

/// How a test process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl Exit {
    pub fn of(status: std::process::ExitStatus) -> Exit {
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            if let Some(sig) = status.signal() {
                return Exit::Signal(sig);
            }
        }
        Exit::Code(status.code().unwrap_or(-1))
    }

    /// `code 101` / `signal 11`, as the nextest wrapper writes it.
    pub fn to_text(self) -> String {
        match self {
            Exit::Code(c) => format!("code {c}"),
            Exit::Signal(s) => format!("signal {s}"),
        }
    }

    pub fn from_text(text: &str) -> Option<Exit> {
        let (what, n) = text.trim().split_once(' ')?;
        let n = n.trim().parse().ok()?;
        match what {
            "code" => Some(Exit::Code(n)),
            "signal" => Some(Exit::Signal(n)),
            _ => None,
        }
    }

    /// For people: `killed by signal 11 (SIGSEGV, an invalid memory access)`.
    fn describe(self) -> String {
        match self {
            Exit::Signal(s) => format!("killed by signal {s} ({})", signal_name(s)),
            Exit::Code(c) => format!("exit status {c}"),
        }
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        6 => "SIGABRT, an abort",
        11 => "SIGSEGV, an invalid memory access",
        7 => "SIGBUS, an invalid memory access",
        4 => "SIGILL, an illegal instruction",
        8 => "SIGFPE, an arithmetic fault",
        9 => "SIGKILL",
        15 => "SIGTERM",
        _ => "a signal",
    }
}

/// A finished test process.
#[derive(Debug, Clone)]
pub struct Ended {
    pub exit: Exit,
    pub time: Duration,
    /// Why we (or the runner) stopped it, if we did.
    pub killed: Option<String>,
    /// The run ended while it ran (`--time-budget`, a signal).
    pub stopped: Option<crate::stop::Stop>,
}

/// How long `supervise` waits between two looks at a test process that has run `elapsed`:
/// a few milliseconds at first, 50 ms from a fifth of a second on. A fixed 50 ms made every
/// test take at least that (flurry's 144 tests: 7 s of waiting in all).
fn poll_interval(elapsed: Duration) -> Duration {
    (elapsed / 4).clamp(Duration::from_millis(2), Duration::from_millis(50))
}

/// Runs `cmd` (a test process writing into `dir`) to its end, reporting progress, and stops it
/// past `--timeout` or when it makes no progress for long (a backstop for a process whose own
/// watchdog cannot fire).
fn supervise(
    cmd: Command,
    dir: &TestDir,
    plan: &RunPlan,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Ended> {
    let started = Instant::now();
    let mut proc = TestProcess::spawn(cmd, &dir.0, plan.nocapture)?;
    let stall_limit = (plan.blocking_timeout * 3).max(Duration::from_secs(60));
    let mut last_progress = (u64::MAX, Instant::now());
    // The harness rewrites the progress file while a long execution runs on past its step
    // bound (still progressing): a newer file is a sign of life too.
    let mut last_written = None;
    let mut killed: Option<String> = None;
    let mut stopped = None;
    let status = loop {
        if let Some(status) = proc.try_wait()? {
            break status;
        }
        std::thread::sleep(poll_interval(started.elapsed()));
        if let Some((done, total)) = read_progress(&dir.progress()) {
            if done != last_progress.0 {
                progress(done, total);
                last_progress = (done, Instant::now());
            }
        }
        let written = std::fs::metadata(dir.progress())
            .and_then(|m| m.modified())
            .ok();
        if written.is_some() && written != last_written {
            last_written = written;
            last_progress.1 = Instant::now();
        }
        if let Some(stop) = crate::stop::requested() {
            killed = Some(stop.describe());
            stopped = Some(stop);
            break proc.kill()?;
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
                "the test made no progress for {}s and was stopped: no schedule finished in that time. \
                 Either a thread is blocked outside pulse's control (a lock, channel or syscall that \
                 was not instrumented: mark such code #[pulse::atomic], or instrument the crate it \
                 comes from with --instrument-dep <crate>), or one execution is very long (a stress \
                 test of 100,000s of operations: --max-steps lower than the default 1,000,000 ends it \
                 sooner, as a step limit).",
                stall_limit.as_secs()
            ));
            break proc.kill()?;
        }
    };
    Ok(Ended {
        exit: Exit::of(status),
        time: started.elapsed(),
        killed,
        stopped,
    })
}

/// Runs `cases` (those marked to run; the others are reported ignored), reporting every event
/// to `reporter` on this thread; returns the outcomes in `cases`' order.
pub fn run_all(
    cases: &[TestCase],
    plan: &RunPlan,
    verbose: bool,
    reporter: &mut dyn Reporter,
) -> Result<Vec<Outcome>> {
    prepare_dirs(plan)?;
    let ids = test_ids(cases, plan);
    let mut outcomes = Vec::new();
    let mut queue = VecDeque::new();
    for (i, case) in cases.iter().enumerate() {
        if case.run {
            queue.push_back(i);
        } else {
            let o = ignored(case);
            reporter.report(&TestEvent::TestFinished {
                test: &ids[i],
                outcome: &o,
            });
            outcomes.push((i, o));
        }
    }
    let total = queue.len();
    let queue = Arc::new(Mutex::new(queue));
    enum Msg {
        Started(usize),
        Progress(usize, u64, u64),
        Finished(usize, Result<Outcome>),
    }
    let (tx, rx) = mpsc::channel::<Msg>();
    let workers = plan.jobs.max(1).min(total.max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            let queue = queue.clone();
            let tx = tx.clone();
            s.spawn(move || loop {
                if crate::stop::requested().is_some() {
                    break;
                }
                let Some(i) = queue.lock().unwrap().pop_front() else {
                    break;
                };
                let _ = tx.send(Msg::Started(i));
                let mut progress = |done, total| {
                    let _ = tx.send(Msg::Progress(i, done, total));
                };
                let outcome = run_one(i, &cases[i], plan, verbose, &mut progress);
                if tx.send(Msg::Finished(i, outcome)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut first_err = None;
        for msg in rx {
            match msg {
                Msg::Started(i) => reporter.report(&TestEvent::TestStarted(&ids[i])),
                Msg::Progress(i, done, total) => reporter.report(&TestEvent::TestProgress {
                    test: &ids[i],
                    done,
                    total,
                }),
                Msg::Finished(i, Ok(o)) => {
                    reporter.report(&TestEvent::TestFinished {
                        test: &ids[i],
                        outcome: &o,
                    });
                    outcomes.push((i, o));
                }
                Msg::Finished(_, Err(e)) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    })?;
    // Tests the run ended before they started.
    if let Some(stop) = crate::stop::requested() {
        for i in queue.lock().unwrap().drain(..) {
            let o = stopped(&cases[i], plan, 0, Duration::ZERO, stop, false);
            reporter.report(&TestEvent::TestFinished {
                test: &ids[i],
                outcome: &o,
            });
            outcomes.push((i, o));
        }
    }
    outcomes.sort_by_key(|(i, _)| *i);
    Ok(outcomes.into_iter().map(|(_, o)| o).collect())
}

/// The outcome of a test the run ended before (`started`: while it ran, after `run` schedules).
pub fn stopped(
    case: &TestCase,
    plan: &RunPlan,
    run: u64,
    time: Duration,
    stop: crate::stop::Stop,
    started: bool,
) -> Outcome {
    let reason = if started {
        format!(
            "{}, stopped after {run} passing schedule(s)",
            stop.describe()
        )
    } else {
        format!("{}, not started", stop.describe())
    };
    Outcome {
        name: case.name.clone(),
        package: case.binary.package.clone(),
        binary_display: case.binary.display(),
        result: TestResult::Stopped {
            reason,
            stop: stop.describe(),
        },
        schedules_run: run,
        schedules_planned: plan.planned(),
        time,
        warnings: Vec::new(),
    }
}

/// A fresh run dir and the failures dir.
pub fn prepare_dirs(plan: &RunPlan) -> Result<()> {
    std::fs::create_dir_all(&plan.failures_dir)
        .with_context(|| format!("creating {}", plan.failures_dir.display()))?;
    let _ = std::fs::remove_dir_all(&plan.run_dir);
    std::fs::create_dir_all(&plan.run_dir)
        .with_context(|| format!("creating {}", plan.run_dir.display()))
}

/// Each case's identity in the event stream.
pub fn test_ids(cases: &[TestCase], plan: &RunPlan) -> Vec<TestId> {
    cases
        .iter()
        .enumerate()
        .map(|(index, c)| TestId {
            index,
            name: c.name.clone(),
            binary_display: c.binary.display(),
            planned: if c.run { plan.planned() } else { 0 },
        })
        .collect()
}

/// The outcome of a test that is listed but not run.
pub fn ignored(case: &TestCase) -> Outcome {
    Outcome {
        name: case.name.clone(),
        package: case.binary.package.clone(),
        binary_display: case.binary.display(),
        result: TestResult::Ignored,
        schedules_run: 0,
        schedules_planned: 0,
        time: Duration::ZERO,
        warnings: Vec::new(),
    }
}

/// The directory of test `index` of the run.
pub fn test_dir(plan: &RunPlan, index: usize) -> PathBuf {
    plan.run_dir.join(index.to_string())
}

fn run_one(
    index: usize,
    case: &TestCase,
    plan: &RunPlan,
    verbose: bool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Outcome> {
    let dir = TestDir::create(test_dir(plan, index))?;
    if case.binary.own_main {
        return Ok(own_main(case, plan, &dir, verbose));
    }
    let cmd = test_command(case, plan, &dir, &plan.seeds, plan.isolation);
    let judged = supervise(cmd, &dir, plan, progress)
        .and_then(|ended| judge(case, plan, &dir, ended, verbose, progress));
    dir.remove_tmp();
    judged
}

/// A `harness = false` target's `main`, not run: pulse has no entry into it to run its tests
/// under the scheduler, and run plainly it would pass or fail on the OS's schedule.
pub fn own_main(case: &TestCase, plan: &RunPlan, dir: &TestDir, verbose: bool) -> Outcome {
    let j = Judging {
        case,
        plan,
        dir,
        verbose,
    };
    let reason = format!(
        "`{}` sets `harness = false`: it runs its own `main`, not libtest's harness, so pulse \
         has no test to run under the scheduler; `cargo test {}` runs it as it is",
        case.binary.target,
        case.binary.selector()
    );
    Outcome {
        name: case.name.clone(),
        package: case.binary.package.clone(),
        binary_display: case.binary.display(),
        result: j.not_scheduled(&reason, reason.clone()),
        schedules_run: 0,
        schedules_planned: plan.planned(),
        time: Duration::ZERO,
        warnings: Vec::new(),
    }
}

/// What is known about one test process's end.
struct Evidence {
    ended: Ended,
    progress: Option<(u64, u64)>,
    record: Option<Result<FailureRecord, String>>,
    counts: Option<(u64, u64, u64)>,
    output: String,
    warnings: Vec<String>,
}

impl Evidence {
    fn gather(dir: &TestDir, ended: Ended, paths: &PathMap) -> Evidence {
        let read = |p: PathBuf| {
            std::fs::read(p)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default()
        };
        let stdout = read(dir.stdout());
        let stderr = read(dir.stderr());
        Evidence {
            ended,
            progress: read_progress(&dir.progress()),
            record: read_record(&dir.failures()),
            counts: libtest_counts(&stdout),
            output: paths.map_text(&format!("{stdout}{stderr}")),
            warnings: read_warnings(&dir.warnings(), paths),
        }
    }
}

/// Judges how `case`'s process ended (the files in `dir`, its exit) into an outcome; runs
/// the test again one fresh process per schedule when it died without a final record.
pub fn judge(
    case: &TestCase,
    plan: &RunPlan,
    dir: &TestDir,
    ended: Ended,
    verbose: bool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Outcome> {
    let time = ended.time;
    let ev = Evidence::gather(dir, ended, &plan.paths);
    let planned = plan.planned();
    let j = Judging {
        case,
        plan,
        dir,
        verbose,
    };
    let outcome = |result: TestResult, run: u64, time: Duration| Outcome {
        name: case.name.clone(),
        package: case.binary.package.clone(),
        binary_display: case.binary.display(),
        result,
        schedules_run: run,
        schedules_planned: planned,
        time,
        warnings: ev.warnings.clone(),
    };
    let done = ev.progress.map(|p| p.0);

    if let Some(Err(e)) = &ev.record {
        return Ok(outcome(
            j.tool_error(e.clone(), &ev),
            done.unwrap_or(0),
            time,
        ));
    }
    if let Some(Ok(record)) = &ev.record {
        // The harness's word. A record written before the traced replay (its warnings say
        // so) with a process that then died: the replay crashed, the record still replays.
        let died = !matches!(
            ev.ended.exit,
            Exit::Code(101) | Exit::Code(crate::exit_code::TEST_BLOCKED)
        ) || ev.ended.killed.is_some();
        let note = (died && record.kind != FailureKind::Crash).then(|| {
            format!(
                "note: the test process then {} while replaying this schedule with tracing; \
                 the seed and schedule above replay the failure",
                match &ev.ended.killed {
                    Some(why) => format!("was stopped ({why})"),
                    None => format!("died ({})", ev.ended.exit.describe()),
                }
            )
        });
        let run = if record.executions > 0 {
            record.executions
        } else {
            done.unwrap_or(1)
        };
        let result = j.record_result(record.clone(), note, &ev)?;
        return Ok(outcome(result, run, time));
    }
    // The run ended while this test ran: stopped by us, or killed by the same Ctrl-C.
    let stop = ev
        .ended
        .stopped
        .or_else(|| crate::stop::requested().filter(|_| matches!(ev.ended.exit, Exit::Signal(_))));
    if let Some(stop) = stop {
        return Ok(stopped(case, plan, done.unwrap_or(0), time, stop, true));
    }
    if let Some(why) = &ev.ended.killed {
        let result = j.failed(
            TestResult::Failed,
            "stopped".into(),
            why.clone(),
            None,
            Some(tail(&ev.output, 60)),
        );
        return Ok(outcome(result, done.unwrap_or(0), time));
    }
    let never_reached = "never reached pulse's harness: its test attribute is not one pulse \
         wraps (an async or custom test harness), or a macro wrote it (`quickcheck! { .. }` \
         writes its own #[test]; `cargo pulse instrument` lists each), so it ran on real \
         threads, unscheduled; test what it calls from a plain #[test], or mark it #[ignore] \
         under cfg(pulse)";
    match (ev.ended.exit, ev.counts) {
        (Exit::Code(0), Some((0, 0, 1))) => Ok(outcome(TestResult::Ignored, 0, time)),
        (Exit::Code(0), Some((1, 0, _))) | (Exit::Code(0), None)
            if plan.nocapture || ev.counts.is_some() =>
        {
            match ev.progress {
                None if plan.uninstrumented.contains(&case.binary.package) => {
                    let mut o = outcome(TestResult::Passed, 1, time);
                    o.warnings.push(format!(
                        "`{}` is a proc-macro crate: pulse does not instrument it (its code runs \
                         in the compiler), so this test ran once, as under cargo test",
                        case.binary.package
                    ));
                    Ok(o)
                }
                None => {
                    let unparsed: Vec<&str> = (plan.unparsed.iter())
                        .filter(|(package, _)| *package == case.binary.package)
                        .map(|(_, file)| file.as_str())
                        .collect();
                    let why = match unparsed.as_slice() {
                        [] => format!("the test {never_reached}"),
                        files => format!(
                            "the test never reached pulse's harness: {} could not be parsed \
                             for instrumentation and {} left as written, so tests there are \
                             not wrapped and run on real threads, unscheduled (a file syn \
                             reads: edition-2015 bare trait objects such as `Box<Fn(u8)>` need \
                             `dyn`); else its test attribute is not one pulse wraps",
                            files.join("; "),
                            if files.len() == 1 { "was" } else { "were" },
                        ),
                    };
                    let result = j.not_scheduled("the test never reached pulse's harness", why);
                    Ok(outcome(result, 0, time))
                }
                Some((done, total))
                    if done < total && pulse_protocol::env::cut_short(&ev.warnings).is_none() =>
                {
                    // Exited "successfully" halfway through its schedules: process::exit.
                    j.after_crash(&ev, Some(done), progress, time)
                        .map(|(r, run, time)| outcome(r, run, time))
                }
                // `done` is below `planned` when an exhaustive search (dfs) ran out of
                // schedules to try, or the test's time limit ran out.
                Some((done, _)) => Ok(outcome(TestResult::Passed, done.min(planned), time)),
            }
        }
        (Exit::Code(0), Some(_)) => {
            let result = j.tool_error(
                format!(
                    "the test binary did not run `{}` (is it still a #[test]?)",
                    case.name
                ),
                &ev,
            );
            Ok(outcome(result, 0, time))
        }
        (Exit::Code(101), counts) if counts.is_some() || plan.nocapture => {
            // libtest saw the test fail, and no record: it failed outside the scheduler.
            let report = match ev.progress {
                None => format!(
                    "the test failed without a pulse failure record: it {never_reached}; \
                     it fails without pulse too (see its output)"
                ),
                Some(_) => "the test failed without a pulse failure record (it failed outside \
                     the scheduler: see its output)"
                    .to_string(),
            };
            let result = j.failed(
                TestResult::Failed,
                "failed outside the scheduler".into(),
                report,
                None,
                Some(tail(&ev.output, 60)),
            );
            Ok(outcome(result, done.unwrap_or(0), time))
        }
        // Killed by a signal, exited with another status, or exited before libtest could
        // say how the test went: the process died.
        _ => j
            .after_crash(&ev, done, progress, time)
            .map(|(r, run, time)| outcome(r, run, time)),
    }
}

/// The judging of one test: what builds its failures and replay lines.
struct Judging<'a> {
    case: &'a TestCase,
    plan: &'a RunPlan,
    dir: &'a TestDir,
    verbose: bool,
}

impl Judging<'_> {
    fn failed(
        &self,
        make: fn(Box<Failure>) -> TestResult,
        reason: String,
        report: String,
        seed: Option<u64>,
        output: Option<String>,
    ) -> TestResult {
        let replay = Some(match seed {
            Some(seed) => self.plan.seed_line(self.case, seed, false),
            None => self.plan.rerun_line(self.case),
        });
        make(Box::new(Failure {
            reason,
            record: None,
            report,
            seed,
            failure_file: None,
            replay,
            output,
        }))
    }

    /// A test that never ran under the scheduler: no seed or schedule changes how it goes,
    /// so its line runs the test again without one.
    fn not_scheduled(&self, reason: &str, report: String) -> TestResult {
        TestResult::NotScheduled(Box::new(Failure {
            reason: reason.to_string(),
            record: None,
            report,
            seed: None,
            failure_file: None,
            replay: Some(self.plan.base_line(self.case)),
            output: None,
        }))
    }

    fn tool_error(&self, reason: String, ev: &Evidence) -> TestResult {
        self.failed(
            TestResult::ToolError,
            reason.clone(),
            format!("pulse could not judge this test: {reason}"),
            None,
            Some(tail(&ev.output, 60)),
        )
    }

    /// The outcome a harness record stands for; writes the failure file (and timeline).
    fn record_result(
        &self,
        mut record: FailureRecord,
        note: Option<String>,
        ev: &Evidence,
    ) -> Result<TestResult> {
        let plan = self.plan;
        // Back to the user's paths, a dependency's shown from its crate directory on (the
        // record's `location` and the trace file keep the full path).
        record.report =
            pulse_protocol::trace::display_locations_in(&plan.paths.map_text(&record.report));
        record.message = plan.paths.map_text(&record.message);
        if let Some(loc) = &record.location {
            record.location = Some(plan.paths.map_text(loc));
        }
        let failure_file = plan.failures_dir.join(failure_file_name(
            &self.case.binary.slug(),
            &self.case.name,
            plan.replays(),
        ));
        // The harness's trace file (in the test's own dir) goes next to the record, with the
        // viewer page, its locations mapped back to the user's files.
        if let Some(src) = record.trace_file.take() {
            if let Ok(trace) = crate::trace_cmd::read(Path::new(&src)) {
                let file = crate::trace_cmd::write_beside(trace, &failure_file, |l| {
                    plan.paths.map_text(l)
                })?;
                record.trace_file = Some(file.display().to_string());
            }
        }
        let json = serde_json::to_vec_pretty(&record)?;
        std::fs::write(&failure_file, json)
            .with_context(|| format!("writing {}", failure_file.display()))?;
        let crash = record.kind == FailureKind::Crash;
        // A crash found by a seed replays by it, in a fresh process, as before its schedule
        // was kept; one found by dfs or dpor has only its schedule (the runtime's line for
        // it asks for a fresh process too).
        let scheduled = !record.schedule.is_empty() && record.schedule != "p1:";
        let replay = if record.kind == FailureKind::NotScheduled {
            // It never ran under the scheduler: no seed or schedule changes how it goes.
            plan.base_line(self.case)
        } else if scheduled && !(crash && record.seed.is_some()) {
            let line = if record.schedule.len() > LONG_SCHEDULE {
                // Too long for a command line people copy: replay from the failure file.
                format!(
                    "{} --replay {}",
                    plan.base_line(self.case),
                    shell_word(&failure_file.display().to_string())
                )
            } else {
                replay_line(&record.report).unwrap_or_else(|| {
                    plan.replay_template(self.case)
                        .replace("{schedule}", &record.schedule)
                })
            };
            match crash {
                true => in_fresh_process(line),
                false => line,
            }
        } else if let Some(seed) = record.seed {
            // No schedule (a crash, or the watchdog stopped the process): its seed, under the
            // execution's own strategy, time mode and memory model when the record has them
            // (the run's `--strategy` may be a portfolio, or PCT whose `k` had grown).
            match &record.seed_command {
                Some(command) if crash => in_fresh_process(command.clone()),
                Some(command) => command.clone(),
                None => plan.seed_line(self.case, seed, crash),
            }
        } else {
            plan.rerun_line(self.case)
        };
        let mut report = record.report.clone();
        let fell_back = record
            .warnings
            .iter()
            .any(|w| w.contains(pulse_protocol::FELL_BACK_TO_SEED));
        let note = match (&plan.replay_recorded, fell_back) {
            (Some(recorded), true) => {
                let verdict = if same_failure(recorded, &record) {
                    "note: replayed from its seed, the recorded failure reproduced (same kind and message)"
                        .to_string()
                } else {
                    format!(
                        "note: replayed from its seed, it failed differently from the recorded failure \
                         ({}: {})",
                        recorded.kind.title(),
                        first_line(&recorded.message)
                    )
                };
                Some(match note {
                    Some(n) => format!("{n}\n{verdict}"),
                    None => verdict,
                })
            }
            _ => note,
        };
        if let Some(note) = note {
            report = format!("{}\n{note}\n", report.trim_end());
        }
        let reason = match record.kind {
            FailureKind::Crash => crash_reason(&record.message),
            FailureKind::NotScheduled | FailureKind::ToolError => first_line(&record.message),
            kind => kind.title().to_string(),
        };
        let output = self.verbose.then(|| ev.output.clone());
        let kind = record.kind;
        let seed = record.seed;
        Ok(TestResult::from_kind(
            kind,
            Failure {
                reason,
                record: Some(record),
                report,
                seed,
                failure_file: Some(failure_file),
                replay: Some(replay),
                output,
            },
        ))
    }

    /// The process died without a final record, after `done` schedules (if it said): run the
    /// rest of its seeds one fresh process each, where the runtime catches the crash and
    /// records it with its seed. Returns the result and the schedules run.
    fn after_crash(
        &self,
        ev: &Evidence,
        done: Option<u64>,
        progress: &mut dyn FnMut(u64, u64),
        time: Duration,
    ) -> Result<(TestResult, u64, Duration)> {
        let plan = self.plan;
        let how = match ev.ended.exit {
            Exit::Code(0) => {
                "exited with status 0 before the test finished (process::exit?)".to_string()
            }
            exit => exit.describe(),
        };
        let output = Some(tail(&ev.output, 40));
        if let Some(schedule) = &plan.replay {
            // A replay runs in process (it has one schedule to run): the crash is its.
            let report = format!(
                "the test process died ({how}) replaying schedule {schedule}: the schedule \
                 reproduces a crash"
            );
            let result = self.failed(TestResult::Crashed, how, report, None, output);
            return Ok((result, 1, time));
        }
        // Random and POS seeds are independent, so the crash is in the seeds after the last
        // count the process reported (it writes the count after each batch of schedules).
        // Adaptive PCT's and roles' schedules (and the portfolio's, the default, which
        // includes both) depend on the executions before them, and dfs and dpor start their
        // search over: from the first seed.
        let from = match plan.strategy {
            Some(Strategy::Random | Strategy::Pos) => {
                done.unwrap_or(0).min(plan.seeds.len().saturating_sub(1))
            }
            _ => 0,
        };
        let seeds = SeedRange {
            from: plan.seeds.from + from,
            to: plan.seeds.to,
        };
        let dir = TestDir::create(self.dir.0.join("isolated"))?;
        let cmd = test_command(self.case, plan, &dir, &seeds, Some(Isolation::Always));
        let mut shifted = |d: u64, _t: u64| progress(from + d, plan.seeds.len());
        let again = supervise(cmd, &dir, plan, &mut shifted);
        dir.remove_tmp();
        let again = again?;
        let time = time + again.time;
        let again = Evidence::gather(&dir, again, &plan.paths);
        let rerun = match plan.strategy {
            Some(Strategy::Dfs { .. } | Strategy::Dpor { .. }) => {
                "its search was run again from the start".to_string()
            }
            _ => format!(
                "{} {} run again",
                seeds.in_words(),
                if seeds.len() == 1 { "was" } else { "were" }
            ),
        };
        let found = format!(
            "the test process died ({how}) {} without a failure record; {rerun}, each schedule \
             in a fresh process (--isolation always)",
            match done {
                Some(d) => format!("after {d} of {} schedules", plan.seeds.len()),
                None => "in its first schedules".to_string(),
            },
        );
        match &again.record {
            Some(Ok(record)) => {
                let run = from + record.executions.max(1);
                let mut record = record.clone();
                if record.kind == FailureKind::Crash && record.message.is_empty() {
                    record.message = how.clone();
                }
                let note = format!("note: {found}, which caught this");
                let result = self.record_result(record, Some(note), &again)?;
                Ok((result, run, time))
            }
            Some(Err(e)) => Ok((self.tool_error(e.clone(), &again), from, time)),
            None => {
                let second = match (again.ended.exit, again.counts) {
                    (Exit::Code(0), Some((1, 0, _))) => {
                        "none of them crashed. The crash may depend on \
                         state earlier schedules left in statics, or on something outside pulse's \
                         control"
                            .to_string()
                    }
                    (exit, _) => format!(
                        "that run died too ({}) without a record: the crash happens where a fresh \
                         process per schedule cannot catch it (outside pulse's run of the test)",
                        exit.describe()
                    ),
                };
                let report =
                    format!("{found}; {second}. The line below runs the whole search again.");
                let result = self.failed(TestResult::Crashed, how, report, None, output);
                Ok((result, done.unwrap_or(0), time))
            }
        }
    }
}

/// What a crash's replay line adds: a fresh process, where the crash is caught and
/// reported, not only the end of the test's process.
const CRASH_ISOLATION: &str = " --isolation always";

/// `line` asking for a fresh process (`CRASH_ISOLATION`), once.
fn in_fresh_process(line: String) -> String {
    match line.ends_with(CRASH_ISOLATION) {
        true => line,
        false => line + CRASH_ISOLATION,
    }
}

/// How the process died, out of the runtime's crash message: `SIGSEGV, an invalid memory
/// access`, `exit status 1 (process::exit)`.
fn crash_reason(message: &str) -> String {
    let line = first_line(message);
    let line = line.split("; its last words").next().unwrap_or(&line);
    if let Some(code) = line.split("exit status ").nth(1) {
        return format!("exit status {} (process::exit)", code.trim());
    }
    match (line.find('('), line.rfind(')')) {
        (Some(a), Some(b)) if a < b => line[a + 1..b].to_string(),
        _ => line
            .strip_prefix("the execution ")
            .unwrap_or(line)
            .to_string(),
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").trim().to_string()
}

/// Distinct warning lines the harness wrote to its warnings file, in the user's paths with a
/// dependency's shown from its crate directory on, as in failure reports.
fn read_warnings(path: &Path, paths: &PathMap) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut out: Vec<String> = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let line = paths.map_text(line);
        if !out.contains(&line) {
            out.push(line);
        }
    }
    let mut shown: Vec<String> = Vec::new();
    for w in pulse_protocol::warnings::merge_shared_in_dependencies(out) {
        let w = pulse_protocol::trace::display_locations_in(&w);
        if !shown.contains(&w) {
            shown.push(w);
        }
    }
    shown
}

/// The record the harness wrote into this test's own failure dir, or why it cannot be read.
fn read_record(dir: &Path) -> Option<Result<FailureRecord, String>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter(|p| !p.to_string_lossy().ends_with(".trace.json"))
        .collect();
    files.sort();
    let first = files.first()?;
    Some(outcome::read_record_file(first))
}

/// The `replay: ...` line a report ends with.
fn replay_line(report: &str) -> Option<String> {
    report.lines().rev().find_map(|l| {
        l.trim()
            .strip_prefix("replay:")
            .map(|s| s.trim().to_string())
            .filter(|s| s.starts_with("cargo pulse test"))
    })
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
    fn a_short_test_is_looked_at_often_and_a_long_one_every_50_ms() {
        let ms = Duration::from_millis;
        assert_eq!(poll_interval(ms(0)), ms(2));
        assert_eq!(poll_interval(ms(40)), ms(10));
        assert_eq!(poll_interval(ms(5_000)), ms(50));
    }

    #[test]
    fn a_warning_shows_a_dependency_from_its_crate_directory_as_reports_do() {
        let dir = std::env::temp_dir().join(format!("pulse-warnings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("warnings");
        let reg = "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f";
        let line = format!("the Once used at {reg}/num_cpus-1.17.0/src/linux.rs:114:10 is shared");
        std::fs::write(&file, format!("{line}\n{line}\n")).unwrap();
        let read = read_warnings(&file, &PathMap::default());
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            read,
            ["the Once used at num_cpus-1.17.0/src/linux.rs:114:10 is shared"]
        );
    }

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
        assert_eq!(replay_line("replay: PULSE_SEED=1 cargo test"), None);
    }

    #[test]
    fn exits_round_trip_as_text() {
        for e in [Exit::Code(0), Exit::Code(101), Exit::Signal(11)] {
            assert_eq!(Exit::from_text(&e.to_text()), Some(e));
        }
        assert_eq!(Exit::from_text("nonsense"), None);
    }

    /// A plan and a case over a binary that is never started: `judge` reads only the files.
    fn fixture(root: &Path) -> (RunPlan, TestCase) {
        let binary = crate::compile::TestBinary {
            package: "app".into(),
            version_if_ambiguous: None,
            target: "app".into(),
            kind: "lib".into(),
            executable: root.join("no-such-binary"),
            mirror_dir: root.to_path_buf(),
            lib_dirs: Vec::new(),
            doc_src: None,
            own_main: false,
        };
        let case = TestCase {
            binary: Arc::new(binary),
            name: "tests::t".into(),
            ignored: false,
            run: true,
        };
        let plan = RunPlan {
            seeds: SeedRange { from: 5, to: 15 },
            shard: false,
            replay: None,
            replay_fallback: None,
            replay_recorded: None,
            max_steps: None,
            strategy: None,
            time: None,
            isolation: None,
            cleanup: None,
            detached: None,
            weak_cas: None,
            memory: None,
            blocking_timeout: Duration::from_secs(1),
            test_time: None,
            test_steps: None,
            timeout: None,
            nocapture: false,
            jobs: 1,
            test_args: Vec::new(),
            replay_flags: Vec::new(),
            failures_dir: root.join("failures"),
            run_dir: root.join("run"),
            target_dir: root.join("target"),
            paths: PathMap::default(),
            uninstrumented: vec!["derive".into()],
            unparsed: Vec::new(),
            trace_out: None,
            not_instrumented: Vec::new(),
            instrumented: Vec::new(),
        };
        std::fs::create_dir_all(&plan.failures_dir).unwrap();
        (plan, case)
    }

    fn judged(root: &Path, exit: Exit, files: &[(&str, &str)]) -> Outcome {
        judged_with(root, exit, files, |_| {})
    }

    fn judged_with(
        root: &Path,
        exit: Exit,
        files: &[(&str, &str)],
        edit: impl FnOnce(&mut RunPlan),
    ) -> Outcome {
        let (mut plan, case) = fixture(root);
        edit(&mut plan);
        let dir = TestDir::create(root.join("run/0")).unwrap();
        for (name, text) in files {
            std::fs::write(dir.0.join(name), text).unwrap();
        }
        let ended = Ended {
            exit,
            time: Duration::from_millis(3),
            killed: None,
            stopped: None,
        };
        judge(&case, &plan, &dir, ended, false, &mut |_, _| {}).unwrap()
    }

    const PASSED: &str = "running 1 test\ntest tests::t ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 3 filtered out\n";

    /// A test that runs cargo itself (trybuild) must find the target dir that built it, not
    /// the user's, which holds the mirror: trybuild shortened the mirror's paths as target
    /// paths and every UI test's expected output differed (cached 4.1.0).
    #[test]
    fn a_test_process_is_told_the_target_dir_that_built_it() {
        let root = tempfile::tempdir().unwrap();
        let (plan, case) = fixture(root.path());
        let dir = TestDir::create(root.path().join("run/0")).unwrap();
        let cmd = test_command(&case, &plan, &dir, &plan.seeds, None);
        let env = |name: &str| {
            cmd.get_envs()
                .find(|(k, _)| *k == name)
                .and_then(|(_, v)| v)
                .map(|v| v.to_os_string())
        };
        assert_eq!(env("CARGO_TARGET_DIR"), Some(plan.target_dir.into()));
        // Its own temporary directory, made for it and gone once removed.
        assert_eq!(env("TMPDIR"), Some(dir.tmp().into()));
        assert!(dir.tmp().is_dir());
        dir.remove_tmp();
        assert!(!dir.tmp().exists());
    }

    #[test]
    fn a_harness_false_target_is_not_scheduled_and_never_started() {
        let tmp = tempfile::tempdir().unwrap();
        let (plan, case) = fixture(tmp.path());
        let mut binary = (*case.binary).clone();
        binary.own_main = true;
        let case = TestCase {
            binary: Arc::new(binary),
            name: crate::list::OWN_MAIN.into(),
            ..case
        };
        // The fixture's executable does not exist: starting it would be an error.
        let o = run_one(0, &case, &plan, false, &mut |_, _| {}).unwrap();
        let TestResult::NotScheduled(f) = &o.result else {
            panic!("{o:?}")
        };
        assert!(f.reason.contains("sets `harness = false`"), "{}", f.reason);
        let replay = f.replay.as_deref().unwrap();
        assert!(
            replay.starts_with("cargo pulse test main --exact -p app"),
            "{replay}"
        );
    }

    #[test]
    fn a_pass_without_a_progress_file_never_reached_the_harness() {
        let tmp = tempfile::tempdir().unwrap();
        let o = judged(tmp.path(), Exit::Code(0), &[("stdout", PASSED)]);
        assert!(matches!(o.result, TestResult::NotScheduled(_)), "{o:?}");
        assert!(
            o.status_line().starts_with("NOT SCHEDULED: "),
            "{}",
            o.status_line()
        );
        // No seed or schedule changes a test that never reached the scheduler: its line
        // names none.
        let replay = o.result.failure().unwrap().replay.clone().unwrap();
        assert!(replay.starts_with("cargo pulse test "), "{replay}");
        assert!(
            !replay.contains("--seed") && !replay.contains("--schedules"),
            "{replay}"
        );

        let tmp = tempfile::tempdir().unwrap();
        let o = judged(
            tmp.path(),
            Exit::Code(0),
            &[("stdout", PASSED), ("progress", "10 10\n")],
        );
        assert!(matches!(o.result, TestResult::Passed), "{o:?}");
    }

    /// A test in a package one of whose files did not parse was not wrapped: the report
    /// names the file, not the test's attribute.
    #[test]
    fn a_test_not_wrapped_because_its_file_did_not_parse_says_so() {
        let tmp = tempfile::tempdir().unwrap();
        let o = judged_with(tmp.path(), Exit::Code(0), &[("stdout", PASSED)], |plan| {
            plan.unparsed = vec![("app".into(), "src/lib.rs:7:21 (expected `;`)".into())];
        });
        let TestResult::NotScheduled(f) = &o.result else {
            panic!("{o:?}")
        };
        assert!(
            f.report
                .contains("src/lib.rs:7:21 (expected `;`) could not be parsed for instrumentation"),
            "{}",
            f.report
        );
    }

    #[test]
    fn a_record_written_before_a_replay_that_crashed_is_reported_with_a_note() {
        let tmp = tempfile::tempdir().unwrap();
        let record = serde_json::json!({
            "version": pulse_protocol::FORMAT_VERSION, "test": "tests::t", "kind": "deadlock",
            "message": "all 2 live threads are blocked", "seed": 7, "schedule": "p1:0.1",
            "executions": 3, "warnings": ["written before the failing schedule was replayed"],
            "report": "pulse found a deadlock after 3 schedule(s)\n",
        });
        let o = judged(
            tmp.path(),
            Exit::Signal(11),
            &[("failures/tests__t.json", &record.to_string())],
        );
        let TestResult::Failed(f) = &o.result else {
            panic!("{o:?}")
        };
        assert_eq!(f.seed, Some(7));
        assert!(f.report.contains("signal 11"), "{}", f.report);
        assert!(f.replay.as_deref().unwrap().ends_with("--replay 'p1:0.1'"));
        assert_eq!(o.schedules_run, 3);
        assert!(
            f.failure_file.as_ref().unwrap().is_file(),
            "the failure file is kept"
        );
    }

    /// The harness's record of a test that reached no pulse operation while OS threads ran:
    /// its replay line runs the test again, naming no seed that would not change it.
    #[test]
    fn a_not_scheduled_records_replay_names_no_seed() {
        let tmp = tempfile::tempdir().unwrap();
        let record = serde_json::json!({
            "version": pulse_protocol::FORMAT_VERSION, "test": "tests::t", "kind": "not_scheduled",
            "message": "NOT SCHEDULED: the test reached no pulse operation while OS threads \
                        pulse does not schedule ran (worker)",
            "report": "pulse: NOT SCHEDULED: the test reached no pulse operation\n",
        });
        let o = judged(
            tmp.path(),
            Exit::Code(101),
            &[("failures/tests__t.json", &record.to_string())],
        );
        let TestResult::NotScheduled(f) = &o.result else {
            panic!("{o:?}")
        };
        let replay = f.replay.as_deref().unwrap();
        assert!(
            replay.starts_with("cargo pulse test tests::t --exact"),
            "{replay}"
        );
        assert!(!replay.contains("--seed"), "{replay}");
    }

    #[test]
    fn a_record_of_another_version_is_a_tool_error() {
        let tmp = tempfile::tempdir().unwrap();
        let o = judged(
            tmp.path(),
            Exit::Code(101),
            &[(
                "failures/tests__t.json",
                r#"{"version":99,"kind":"something_new"}"#,
            )],
        );
        assert!(matches!(o.result, TestResult::ToolError(_)), "{o:?}");
        assert!(
            o.status_line().contains("version 99"),
            "{}",
            o.status_line()
        );
    }

    #[test]
    fn crash_reasons_are_short() {
        assert_eq!(
            crash_reason("the execution crashed its process (SIGSEGV, an invalid memory access); its last words on stderr:\nx"),
            "SIGSEGV, an invalid memory access"
        );
        assert_eq!(
            crash_reason("the execution ended its process with exit status 0"),
            "exit status 0 (process::exit)"
        );
    }

    #[test]
    fn a_run_of_one_seed_or_a_schedule_is_a_replay_and_keeps_the_search_record() {
        let root = tempfile::tempdir().unwrap();
        let (mut plan, _) = fixture(root.path());
        assert!(!plan.replays(), "ten seeds are a search");
        plan.seeds = SeedRange { from: 12, to: 13 };
        assert!(plan.replays(), "the `replay by seed:` line");
        plan.seeds = SeedRange { from: 5, to: 15 };
        plan.replay = Some("p1:0.1".into());
        assert!(plan.replays());
    }
}
