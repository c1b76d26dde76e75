//! What happened to one test, as every reporter shows it: passed, failed, crashed, not
//! scheduled, a tool error, or ignored; and reading the `FailureRecord` the harness left
//! (`pulse_protocol`, the one definition of the record's shape).

use std::path::{Path, PathBuf};
use std::time::Duration;

use pulse_protocol::{FailureKind, FailureRecord, FORMAT_VERSION};
use serde::Serialize;

/// Everything shown about a test that did not pass.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    /// One line: the status's reason (`NOT SCHEDULED: <reason>`, a crash's kind).
    pub reason: String,
    /// The harness's record, when it wrote one (not when the process died before it could).
    pub record: Option<FailureRecord>,
    /// The human report: the record's, or one we composed.
    pub report: String,
    /// The seed of the failing schedule, when one is known.
    pub seed: Option<u64>,
    pub failure_file: Option<PathBuf>,
    /// The command line that runs it again; every non-passing test has one.
    pub replay: Option<String>,
    /// The test process's output, when there is no record to explain the failure (or -v).
    pub output: Option<String>,
}

/// A test's verdict. `Failed` is a bug found under a schedule (panic, deadlock, livelock,
/// blocked thread, ...); `Crashed` took the test process down (signal, abort, `process::exit`);
/// `NotScheduled` never ran under pulse's scheduler, so its passing would say nothing;
/// `ToolError` is pulse failing to finish the run, not a verdict on the test.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum TestResult {
    Passed,
    Failed(Box<Failure>),
    Crashed(Box<Failure>),
    NotScheduled(Box<Failure>),
    ToolError(Box<Failure>),
    Ignored,
    /// The run ended before this test did (`--time-budget`, SIGINT/SIGTERM): every schedule it
    /// ran passed; `reason` says what stopped it and when, `stop` only what.
    Stopped {
        reason: String,
        stop: String,
    },
}

impl TestResult {
    /// The result a failure record stands for.
    pub fn from_kind(kind: FailureKind, failure: Failure) -> TestResult {
        let failure = Box::new(failure);
        match kind {
            FailureKind::Crash => TestResult::Crashed(failure),
            FailureKind::NotScheduled => TestResult::NotScheduled(failure),
            FailureKind::ToolError => TestResult::ToolError(failure),
            _ => TestResult::Failed(failure),
        }
    }

    pub fn failure(&self) -> Option<&Failure> {
        match self {
            TestResult::Failed(f)
            | TestResult::Crashed(f)
            | TestResult::NotScheduled(f)
            | TestResult::ToolError(f) => Some(f),
            TestResult::Passed | TestResult::Ignored | TestResult::Stopped { .. } => None,
        }
    }

    /// The word in the JSON's `event` field.
    pub fn event(&self) -> &'static str {
        match self {
            TestResult::Passed => "ok",
            TestResult::Failed(_) => "failed",
            TestResult::Crashed(_) => "crashed",
            TestResult::NotScheduled(_) => "not_scheduled",
            TestResult::ToolError(_) => "tool_error",
            TestResult::Ignored => "ignored",
            TestResult::Stopped { .. } => "stopped",
        }
    }

    /// The word in the summary table.
    pub fn status(&self) -> &'static str {
        match self {
            TestResult::Passed => "ok",
            TestResult::Failed(_) => "FAILED",
            TestResult::Crashed(_) => "CRASHED",
            TestResult::NotScheduled(_) => "NOT SCHEDULED",
            TestResult::ToolError(_) => "TOOL ERROR",
            TestResult::Ignored => "ignored",
            TestResult::Stopped { .. } => "STOPPED",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// The libtest name (`tests::transfer`).
    pub name: String,
    pub package: String,
    /// `bank-account`, `bank-account::test/it`.
    pub binary_display: String,
    #[serde(flatten)]
    pub result: TestResult,
    pub schedules_run: u64,
    pub schedules_planned: u64,
    #[serde(serialize_with = "secs")]
    pub time: Duration,
    /// What the harness warned about (`PULSE_WARNINGS`), e.g. state kept in statics that
    /// makes schedules depend on each other.
    pub warnings: Vec<String>,
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

impl Outcome {
    pub fn full_name(&self) -> String {
        format!("{} {}", self.binary_display, self.name)
    }
    /// The status with what people need at a glance: `CRASHED: <how> (seed S)`,
    /// `NOT SCHEDULED: <reason>`, `TOOL ERROR: <reason>`; `FAILED`, `ok`, `ignored` alone.
    pub fn status_line(&self) -> String {
        let word = self.result.status();
        match &self.result {
            TestResult::Crashed(f) => match f.seed {
                Some(seed) => format!("{word}: {} (seed {seed})", f.reason),
                None => format!("{word}: {}", f.reason),
            },
            TestResult::NotScheduled(f) | TestResult::ToolError(f) => {
                format!("{word}: {}", f.reason)
            }
            TestResult::Stopped { reason, .. } => format!("{word}: {reason}"),
            _ => word.to_string(),
        }
    }
    /// What ended the test's search short of its planned schedules: its time limit
    /// (`--test-time`) or its step budget (`--test-steps`).
    pub fn cut_short(&self) -> Option<&'static str> {
        pulse_protocol::env::cut_short(&self.warnings)
    }

    /// Whether the test did not pass (anything but passed or ignored).
    pub fn failed(&self) -> bool {
        self.result.failure().is_some()
    }
}

/// How many tests ended each way, and the exit code that follows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub passed: usize,
    pub failed: usize,
    pub crashed: usize,
    pub not_scheduled: usize,
    pub tool_errors: usize,
    pub ignored: usize,
    /// Tests the run ended before (`--time-budget`, a signal): not a verdict either way.
    pub stopped: usize,
}

impl Counts {
    pub fn of(outcomes: &[Outcome]) -> Counts {
        let mut c = Counts::default();
        for o in outcomes {
            match o.result {
                TestResult::Passed => c.passed += 1,
                TestResult::Failed(_) => c.failed += 1,
                TestResult::Crashed(_) => c.crashed += 1,
                TestResult::NotScheduled(_) => c.not_scheduled += 1,
                TestResult::ToolError(_) => c.tool_errors += 1,
                TestResult::Ignored => c.ignored += 1,
                TestResult::Stopped { .. } => c.stopped += 1,
            }
        }
        c
    }

    /// Tests that are findings: failed, crashed, or never scheduled (a test pulse could not
    /// test must not pass silently).
    pub fn findings(&self) -> usize {
        self.failed + self.crashed + self.not_scheduled
    }

    /// 101 when anything was found (even if pulse also failed elsewhere), else 2 when pulse
    /// could not finish some test, else 0.
    pub fn exit_code(&self) -> i32 {
        if self.findings() > 0 {
            crate::exit_code::FAILURE
        } else if self.tool_errors > 0 {
            crate::exit_code::TOOL_ERROR
        } else {
            crate::exit_code::SUCCESS
        }
    }
}

/// Reads a failure record. Fields it lacks take their defaults (serde's, as the protocol
/// says); a record of another format version, or one that is not a record, is an error
/// message for the report, never a crash of cargo-pulse.
pub fn parse_record(bytes: &[u8]) -> Result<FailureRecord, String> {
    #[derive(serde::Deserialize)]
    struct Version {
        #[serde(default)]
        version: u32,
    }
    let v: Version =
        serde_json::from_slice(bytes).map_err(|e| format!("not a pulse failure record: {e}"))?;
    if v.version != FORMAT_VERSION {
        return Err(format!(
            "a failure record of format version {} (this cargo-pulse reads version {FORMAT_VERSION}): \
             the test was built with another pulse; rebuild with this one",
            v.version
        ));
    }
    serde_json::from_slice(bytes).map_err(|e| format!("a malformed pulse failure record: {e}"))
}

/// Reads the failure record at `path`.
pub fn read_record_file(path: &Path) -> Result<FailureRecord, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    parse_record(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_harness_record_with_defaults_for_what_it_lacks() {
        let json = r#"{"version":1,"test":"tests::t","kind":"deadlock","message":"all threads blocked","location":null,
            "thread":"main","seed":42,"schedule":"p1:0*3.1","execution":7,"executions":8,
            "trace":[{"step":1,"thread":"t1","op":"lock","object":"Mutex#1","location":"src/lib.rs:3:5"}],
            "report":"pulse found a deadlock\nreplay: x","reproduced":true}"#;
        let r = parse_record(json.as_bytes()).unwrap();
        assert_eq!(r.kind, FailureKind::Deadlock);
        assert_eq!(r.seed, Some(42));
        assert!(r.reproduced);
        assert_eq!(r.trace[0].object.as_deref(), Some("Mutex#1"));
        let minimal = parse_record(br#"{"version":1,"test":"t"}"#).unwrap();
        assert_eq!(minimal.executions, 0);
        assert_eq!(minimal.kind, FailureKind::Panic);
    }

    #[test]
    fn another_version_is_a_message_not_a_crash() {
        let e = parse_record(br#"{"version":2,"test":"t","kind":"some_new_kind"}"#).unwrap_err();
        assert!(e.contains("version 2"), "{e}");
        assert!(parse_record(b"[1,2]").is_err());
        assert!(parse_record(br#"{"version":1,"kind":"no_such_kind"}"#).is_err());
    }

    #[test]
    fn tool_errors_exit_2_unless_something_was_found() {
        let mut c = Counts {
            tool_errors: 1,
            passed: 3,
            ..Counts::default()
        };
        assert_eq!(c.exit_code(), 2);
        c.crashed = 1;
        assert_eq!(c.exit_code(), 101);
        assert_eq!(Counts::default().exit_code(), 0);
        let ns = Counts {
            not_scheduled: 1,
            ..Counts::default()
        };
        assert_eq!(ns.exit_code(), 101);
    }
}
