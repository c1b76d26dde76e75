//! What happened to one test: passed, failed (with the failure record the harness wrote), or
//! ignored; and the failure record's shape, as `pulse::__private::run_test` writes it.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One step of a failing execution's trace.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TraceStep {
    pub step: u64,
    pub thread: String,
    pub op: String,
    pub object: Option<String>,
    pub location: Option<String>,
}

/// The JSON the harness writes to `PULSE_FAILURE_DIR` for a failing test. Read leniently:
/// fields we do not know are kept in `extra`, missing ones take defaults.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct FailureRecord {
    pub test: String,
    pub kind: String,
    pub message: String,
    pub location: Option<String>,
    pub thread: String,
    pub seed: Option<u64>,
    pub schedule: String,
    pub execution: u64,
    pub executions: u64,
    pub trace: Vec<TraceStep>,
    pub report: String,
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// Everything shown about a failed test.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    /// The harness's record, when it wrote one (not when the process crashed or hung).
    pub record: Option<FailureRecord>,
    /// The human report: the record's, or one we composed.
    pub report: String,
    pub failure_file: Option<PathBuf>,
    pub replay: Option<String>,
    /// The test process's output, when there is no record to explain the failure (or -v).
    pub output: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum TestResult {
    Passed,
    Failed(Box<Failure>),
    Ignored,
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
    pub fn failed(&self) -> bool {
        matches!(self.result, TestResult::Failed(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_harness_record_leniently() {
        let json = r#"{"test":"tests::t","kind":"deadlock","message":"all threads blocked","location":null,
            "thread":"main","seed":42,"schedule":"p1:0*3.1","execution":7,"executions":8,
            "trace":[{"step":1,"thread":"t1","op":"lock","object":"Mutex#1","location":"src/lib.rs:3:5"}],
            "report":"pulse found a deadlock\nreplay: x","reproduced":true}"#;
        let r: FailureRecord = serde_json::from_str(json).unwrap();
        assert_eq!(r.kind, "deadlock");
        assert_eq!(r.seed, Some(42));
        assert_eq!(r.trace[0].object.as_deref(), Some("Mutex#1"));
        assert_eq!(r.extra["reproduced"], serde_json::Value::Bool(true));
        let minimal: FailureRecord = serde_json::from_str(r#"{"test":"t"}"#).unwrap();
        assert_eq!(minimal.executions, 0);
    }
}
