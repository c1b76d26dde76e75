//! `--message-format json`: one JSON object per line on stdout, for CI and other tools, from the
//! run's [`TestEvent`]s:
//! - `{"type":"run","event":"started","seed":S,"seeds":"S..T","schedules":N,"replay":..,"tests":N,"doctests_not_run":[P..],"no_tests":<why, when none runs>}`
//! - one `{"type":"test","event":E,"status":..,"name":..,..}` per finished test, `E` one of `ok`,
//!   `failed`, `crashed`, `not_scheduled`, `tool_error`, `ignored`; `status` as the summary
//!   table shows it (`NOT SCHEDULED: <reason>`); a test that did not pass carries `reason`,
//!   `seed`, `replay`, `report` and the harness's `record` when it wrote one
//! - `{"type":"build","event":"failed","message":<the compiler's messages>}`
//! - `{"type":"run","event":"finished","passed":..,"failed":..,"crashed":..,"not_scheduled":..,
//!   "tool_errors":..,"ignored":..,"time":..,"exit_code":..}`
//!
//! Test starts and progress are console-only. Outside a run, `{"type":"error","message":..}`.

use std::io::Write;

use serde_json::{json, Value};

use crate::events::{Reporter, TestEvent};
use crate::outcome::Outcome;

#[derive(Debug, Clone, Copy)]
pub struct JsonOutput {
    pub enabled: bool,
}

impl JsonOutput {
    fn emit(&self, v: Value) {
        if self.enabled {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{v}");
            let _ = out.flush();
        }
    }

    /// An error that ended cargo-pulse before or outside a run.
    pub fn tool_error(&self, message: &str) {
        self.emit(json!({ "type": "error", "message": message }));
    }

    fn test(&self, o: &Outcome) {
        let mut v = serde_json::to_value(o).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            m.insert("type".into(), "test".into());
            m.insert("event".into(), o.result.event().into());
            m.insert("status".into(), o.status_line().into());
        }
        self.emit(v);
    }
}

/// Writes the run's events as JSON lines (when enabled).
pub struct JsonReporter(pub JsonOutput);

impl Reporter for JsonReporter {
    fn report(&mut self, event: &TestEvent<'_>) {
        let out = &self.0;
        if !out.enabled {
            return;
        }
        match event {
            TestEvent::RunStarted(info) => out.emit(json!({
                "type": "run", "event": "started",
                "seed": info.seeds.from, "seeds": info.seeds.to_string(),
                "schedules": info.seeds.len(),
                "replay": info.replay, "tests": info.tests,
                "doctests_not_run": info.doctests_not_run,
                "no_tests": info.no_tests.as_ref().map(|(why, _)| why),
            })),
            TestEvent::TestStarted(_) | TestEvent::TestProgress { .. } => {}
            TestEvent::TestFinished { outcome, .. } => out.test(outcome),
            TestEvent::BuildFailed { message } => out.emit(json!({
                "type": "build", "event": "failed", "message": message,
            })),
            TestEvent::RunFinished {
                counts,
                secs,
                exit_code,
                ..
            } => out.emit(json!({
                "type": "run", "event": "finished",
                "passed": counts.passed, "failed": counts.failed,
                "crashed": counts.crashed, "not_scheduled": counts.not_scheduled,
                "tool_errors": counts.tool_errors, "ignored": counts.ignored,
                "stopped": counts.stopped,
                "time": secs, "exit_code": exit_code,
            })),
        }
    }
}
