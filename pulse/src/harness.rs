//! Runs one `#[test]` body under the scheduler, configured by `PULSE_*` environment
//! variables (so libtest's and nextest's own flags keep working), and reports a failure
//! the way cargo-pulse reads it: a JSON record in `PULSE_FAILURE_DIR` and a panic carrying
//! the human report.

use ::std::any::Any;
use ::std::cell::RefCell;
use ::std::fs;
use ::std::panic::{self, AssertUnwindSafe};
use ::std::path::PathBuf;

use pulse_protocol::{env, json, FailureKind, FailureRecord, FORMAT_VERSION};
use pulse_runtime::Builder;

/// What the instrumenter knows about a test fn.
#[derive(Clone, Copy, Debug)]
pub struct TestMeta {
    pub module_path: &'static str,
    pub name: &'static str,
    pub should_panic: bool,
}

impl TestMeta {
    /// The test's name as libtest prints it: module path without the crate, then the fn.
    pub fn test_name(&self) -> String {
        match self.module_path.split_once("::") {
            Some((_, rest)) => format!("{rest}::{}", self.name),
            None => self.name.to_string(),
        }
    }
}

/// The return types libtest accepts from a test that pulse can run many times.
pub trait TestOutcome {
    /// The value a passing test returns.
    fn passed() -> Self;
    /// Why this run failed, if it did (an `Err` returned by the test).
    fn failure(self) -> Option<String>;
}

impl TestOutcome for () {
    fn passed() -> Self {}
    fn failure(self) -> Option<String> {
        None
    }
}

impl<E: ::std::fmt::Debug> TestOutcome for Result<(), E> {
    fn passed() -> Self {
        Ok(())
    }
    fn failure(self) -> Option<String> {
        self.err()
            .map(|e| format!("the test returned an error: {e:?}"))
    }
}

/// What a `pulse::statem` property says when it finds itself inside the execution
/// `run_test` started: it runs executions of its own, one per test case and seed, so
/// `run_test` stops and runs the test body once outside the scheduler.
pub(crate) const OWN_SEARCH: &str =
    "pulse: this test runs its own search (pulse::statem); running it outside the scheduler";

::std::thread_local! {
    static IN_RUN_TEST: ::std::cell::Cell<bool> = const { ::std::cell::Cell::new(false) };
    /// While `run_own_search` runs a test: `Some`, and the trace file of the failure the
    /// test's own search found, once it hands one over (`hand_over_trace`).
    static OWN_SEARCH_TRACE: ::std::cell::RefCell<Option<Option<pulse_protocol::trace::Trace>>> =
        const { ::std::cell::RefCell::new(None) };
}

/// A test running its own search (`pulse::statem`) hands its failure's trace file to the
/// harness, which writes it beside the failure record (and into `--trace-out`'s dir). Outside
/// `cargo pulse test` nothing is kept.
#[cfg_attr(not(feature = "statem"), allow(dead_code))]
pub(crate) fn hand_over_trace(trace: &pulse_protocol::trace::Trace) {
    OWN_SEARCH_TRACE.with(|slot| {
        if let Some(kept) = slot.borrow_mut().as_mut() {
            *kept = Some(trace.clone());
        }
    });
}

/// Whether the current OS thread is inside `run_test`'s search (the statem check).
#[cfg_attr(not(feature = "statem"), allow(dead_code))]
pub(crate) fn inside_run_test() -> bool {
    IN_RUN_TEST.with(|c| c.get())
}

const DID_NOT_PANIC: &str =
    "pulse: the test is #[should_panic] but this schedule completed without panicking";

/// Runs the test body under many schedules; panics with the report if one fails.
#[track_caller]
pub fn run_test<R: TestOutcome>(meta: TestMeta, body: impl Fn() -> R) -> R {
    run_test_keeping(meta, body, |_| true)
}

/// `run_test`, reporting only the search's warnings `keep` accepts (a harness that knows a
/// warning says nothing about its test drops it).
#[track_caller]
pub(crate) fn run_test_keeping<R: TestOutcome>(
    meta: TestMeta,
    body: impl Fn() -> R,
    keep: fn(&str) -> bool,
) -> R {
    let test = meta.test_name();
    // One test per process under cargo-pulse: any other OS thread is the test's.
    let home_crate = meta.module_path.split("::").next().map(str::to_string);
    let mut builder = Builder::try_from_env()
        .unwrap_or_else(|e| panic!("pulse: {e}"))
        .watch_os_threads(true)
        .keep_warning(keep);
    builder.config.home_crate = home_crate;
    if let Some(template) = &builder.config.replay_command {
        builder.config.replay_command = Some(template.replace("{test}", &test));
    }
    let trace_out = env_path(env::TRACE_OUT);
    builder.config.trace_passing = trace_out.is_some();
    if let Some(path) = env_path(env::PROGRESS) {
        builder = builder.progress(move |done, total| {
            // Progress is best effort: a failed write must not fail the test.
            let _ = fs::write(&path, format!("{done} {total}\n"));
        });
    }
    if builder.config.blocking_timeout.is_some() {
        let test = test.clone();
        builder = builder.on_blocked(move |report| {
            let first_line = report.lines().nth(1).unwrap_or(report).trim().to_string();
            write_record(&FailureRecord {
                version: FORMAT_VERSION,
                test: test.clone(),
                kind: FailureKind::BlockedThread,
                message: first_line,
                report: report.to_string(),
                ..FailureRecord::default()
            });
        });
    }
    // A failure's record is written as soon as it is found and again with its trace: if the
    // traced replay crashes the process, the first one still names seed and schedule.
    builder = builder.on_found({
        let test = test.clone();
        move |failure| {
            if failure.message != OWN_SEARCH {
                write_record(&failure.record(&test))
            }
        }
    });
    // For #[should_panic]: the first schedule's panic, re-raised at the end so libtest
    // checks `expected = ".."` against the real message.
    let expected_panic: RefCell<Option<Box<dyn Any + Send>>> = RefCell::new(None);
    IN_RUN_TEST.with(|c| c.set(true));
    let report = builder.run(|| {
        if meta.should_panic {
            match panic::catch_unwind(AssertUnwindSafe(&body)) {
                Ok(_) => panic!("{DID_NOT_PANIC}"),
                Err(payload) => {
                    expected_panic.borrow_mut().get_or_insert(payload);
                }
            }
        } else if let Some(why) = body().failure() {
            panic!("{why}");
        }
    });
    IN_RUN_TEST.with(|c| c.set(false));
    if report
        .failure
        .as_ref()
        .is_some_and(|f| f.message == OWN_SEARCH)
    {
        return run_own_search(&test, body);
    }
    if let Some(path) = env_path(env::WARNINGS) {
        // An exhaustive search's verdict travels with the warnings (the runner prints it as
        // a note, not a warning).
        let mut lines = report.warnings.clone();
        lines.extend(report.exhaustive.map(|e| e.to_string()));
        if !lines.is_empty() {
            // Best effort, like progress: the test's outcome does not depend on it.
            let _ = fs::write(&path, lines.join("\n") + "\n");
        }
    }
    if let Some(mut failure) = report.failure {
        if failure.message == DID_NOT_PANIC {
            failure.kind = FailureKind::ShouldPanicNotPanicked;
        }
        let mut record = failure.record(&test);
        if let Some(trace) = &failure.full_trace {
            if let Some(dir) = &trace_out {
                write_trace(dir, &test, trace);
            }
            record.trace_file =
                env_path(env::FAILURE_DIR).and_then(|d| write_trace(&d, &test, trace));
        }
        write_record(&record);
        panic!("{failure}");
    }
    if let (Some(dir), Some(trace)) = (&trace_out, &report.trace) {
        write_trace(dir, &test, trace);
    }
    if report.not_scheduled() {
        let message = report.not_scheduled_message();
        write_record(&FailureRecord {
            version: FORMAT_VERSION,
            test: test.clone(),
            kind: FailureKind::NotScheduled,
            message: message.clone(),
            warnings: report.warnings.clone(),
            report: format!("pulse: {message}\n"),
            ..FailureRecord::default()
        });
        panic!("pulse: {message}");
    }
    if let Some(payload) = expected_panic.into_inner() {
        panic::resume_unwind(payload);
    }
    R::passed()
}

/// Runs a test that searches on its own (`pulse::statem`) once, outside any execution, and
/// reports its failure the way cargo-pulse reads one: a record whose report is the
/// property's own, and whose replay line is the one it printed.
fn run_own_search<R: TestOutcome>(test: &str, body: impl Fn() -> R) -> R {
    OWN_SEARCH_TRACE.with(|slot| *slot.borrow_mut() = Some(None));
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| body().failure()));
    let trace = OWN_SEARCH_TRACE.with(|slot| slot.borrow_mut().take().flatten());
    let message = match &outcome {
        Ok(None) => {
            if let Some(path) = env_path(env::PROGRESS) {
                if !path.exists() {
                    let _ = fs::write(&path, "1 1\n");
                }
            }
            return R::passed();
        }
        Ok(Some(why)) => why.clone(),
        Err(payload) => pulse_runtime::payload_message(&**payload).to_string(),
    };
    let replay_command = message
        .lines()
        .find_map(|l| {
            let l = l.trim();
            l.strip_prefix("replay this case: ")
                .or_else(|| l.strip_prefix("replay: "))
        })
        .unwrap_or_default()
        .to_string();
    let mut trace_file = None;
    if let Some(mut trace) = trace {
        trace.test = test.to_string();
        if let Some(dir) = env_path(env::TRACE_OUT) {
            write_trace(&dir, test, &trace);
        }
        trace_file = env_path(env::FAILURE_DIR).and_then(|d| write_trace(&d, test, &trace));
    }
    write_record(&FailureRecord {
        version: FORMAT_VERSION,
        test: test.to_string(),
        kind: FailureKind::Panic,
        message: message.lines().next().unwrap_or_default().to_string(),
        report: format!("{message}\n"),
        replay_command,
        trace_file,
        ..FailureRecord::default()
    });
    match outcome {
        Err(payload) => panic::resume_unwind(payload),
        Ok(_) => panic!("{message}"),
    }
}

fn env_path(name: &str) -> Option<PathBuf> {
    ::std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Writes `<failure dir>/<test>.json` for cargo-pulse (`pulse_protocol::FailureRecord`).
fn write_record(record: &FailureRecord) {
    let Some(dir) = env_path(env::FAILURE_DIR) else {
        return;
    };
    let file = dir.join(format!("{}.json", record.test.replace("::", "__")));
    let written = fs::create_dir_all(&dir).and_then(|_| fs::write(&file, json::to_string(record)));
    if let Err(e) = written {
        eprintln!(
            "pulse: could not write the failure record {}: {e}",
            file.display()
        );
    }
}

/// Writes `<dir>/<test>.trace.json` (`pulse_protocol::trace::Trace`); its path, or `None`
/// when the write failed (said on stderr).
fn write_trace(
    dir: &::std::path::Path,
    test: &str,
    trace: &pulse_protocol::trace::Trace,
) -> Option<String> {
    let file = dir.join(format!("{}.trace.json", test.replace("::", "__")));
    match fs::create_dir_all(dir).and_then(|_| fs::write(&file, json::to_string(trace))) {
        Ok(()) => Some(file.display().to_string()),
        Err(e) => {
            eprintln!(
                "pulse: could not write the trace file {}: {e}",
                file.display()
            );
            None
        }
    }
}
