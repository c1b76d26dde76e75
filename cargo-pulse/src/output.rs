//! `--message-format json`: one JSON object per line on stdout, for CI and other tools. Events:
//! `{"type":"run","event":"started",..}`, one `{"type":"test",..}` per finished test (with the
//! failure record when it failed), `{"type":"build","event":"failed"}` and
//! `{"type":"run","event":"finished",..}`.

use std::io::Write;

use serde_json::{json, Value};

use crate::outcome::Outcome;
use crate::seeds::SeedRange;

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

    pub fn run_started(&self, seeds: SeedRange, replay: Option<&str>, tests: usize) {
        self.emit(json!({
            "type": "run", "event": "started",
            "seed": seeds.from, "seeds": seeds.to_string(), "schedules": seeds.len(),
            "replay": replay, "tests": tests,
        }));
    }

    pub fn test(&self, o: &Outcome) {
        let mut v = serde_json::to_value(o).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            m.insert("type".into(), "test".into());
            m.insert(
                "event".into(),
                Value::from(match o.result {
                    crate::outcome::TestResult::Passed => "ok",
                    crate::outcome::TestResult::Failed(_) => "failed",
                    crate::outcome::TestResult::Ignored => "ignored",
                }),
            );
        }
        self.emit(v);
    }

    pub fn build_failed(&self) {
        self.emit(json!({ "type": "build", "event": "failed" }));
    }

    pub fn tool_error(&self, message: &str) {
        self.emit(json!({ "type": "error", "message": message }));
    }

    pub fn run_finished(
        &self,
        passed: usize,
        failed: usize,
        ignored: usize,
        secs: f64,
        exit_code: i32,
    ) {
        self.emit(json!({
            "type": "run", "event": "finished",
            "passed": passed, "failed": failed, "ignored": ignored,
            "time": secs, "exit_code": exit_code,
        }));
    }
}
