//! What a test process leaves for cargo-pulse when a test fails: `<test>.json` in
//! `env::FAILURE_DIR`, a `FailureRecord`.

use serde::{Deserialize, Serialize};

/// The record format's version; a reader refuses a record of another version instead of
/// misreading it.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
/// What kind of failure an execution had.
pub enum FailureKind {
    /// A thread panicked (the main thread, or a spawned one nobody joined).
    #[default]
    Panic,
    /// Every live thread is blocked and no timer can wake one.
    Deadlock,
    /// The execution ran past the step bound: a livelock or a runaway loop.
    StepLimit,
    /// The execution ran past the step bound while its threads kept sleeping or waiting
    /// with timeouts: a polling loop whose condition never comes.
    Livelock,
    /// The test's main thread returned but other threads stayed blocked forever.
    LeakedThread,
    /// A thread stopped reaching pulse operations: it blocks outside pulse's control.
    BlockedThread,
    /// A `#[should_panic]` test completed a schedule without panicking.
    ShouldPanicNotPanicked,
    /// A replayed schedule no longer matches the program.
    ReplayDiverged,
    /// The execution took its process down: a signal (invalid memory access, abort), a
    /// non-unwinding panic, `process::exit`.
    Crash,
    /// pulse could not finish the run (an isolated execution that never answered): not a
    /// verdict on the test.
    ToolError,
    /// The test reached no pulse operation while OS threads pulse does not schedule ran:
    /// it never ran under the scheduler, so its passing would say nothing.
    NotScheduled,
}

impl FailureKind {
    pub fn title(self) -> &'static str {
        match self {
            FailureKind::Panic => "panic",
            FailureKind::Deadlock => "deadlock",
            FailureKind::StepLimit => {
                "step limit exceeded (a livelock, a runaway loop, or a test too long for the bound)"
            }
            FailureKind::Livelock => "livelock (threads keep sleeping and polling)",
            FailureKind::LeakedThread => "thread left blocked at the end of the test",
            FailureKind::BlockedThread => "thread blocked outside pulse's control",
            FailureKind::ShouldPanicNotPanicked => "test did not panic as expected",
            FailureKind::ReplayDiverged => "replay diverged from the program",
            FailureKind::Crash => "crash",
            FailureKind::ToolError => "tool error",
            FailureKind::NotScheduled => "test that did not run under the scheduler",
        }
    }
}

/// The words of the runtime's warning when a replayed schedule no longer fit the program
/// and the recorded seed ran instead (`env::REPLAY_FALLBACK`); cargo-pulse looks for them to
/// say whether that reproduced the recorded failure.
pub const FELL_BACK_TO_SEED: &str = "replayed from its recorded seed";

/// One step of a trace, resolved for people and JSON.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TraceEvent {
    pub step: u64,
    pub thread: String,
    pub op: String,
    pub object: Option<String>,
    pub location: Option<String>,
    /// The virtual clock when the step was taken (ns since the execution started).
    pub clock_ns: u64,
}

/// A failing test's record. Written by pulse's harness, read by cargo-pulse; fields a
/// record lacks (a watchdog's record has no schedule) take their defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FailureRecord {
    pub version: u32,
    /// The test's name as libtest prints it.
    pub test: String,
    pub kind: FailureKind,
    /// The headline: the panic message, or a one-line summary.
    pub message: String,
    /// The user's source location, `file:line:col`.
    pub location: Option<String>,
    /// The virtual thread that failed (`-` for whole-execution failures).
    pub thread: String,
    /// More lines: each blocked thread of a deadlock, the spinning threads of a livelock.
    pub details: Vec<String>,
    /// The failing execution's seed (`None` when the run was a replay).
    pub seed: Option<u64>,
    /// The strategy the failing execution ran under, spelled so that it replays from `seed`
    /// alone (`pct:5:137`, `pos`, `random`; a portfolio's arm, adaptive PCT's `k` of that
    /// execution). `None` for a strategy whose executions depend on earlier ones (`dfs`).
    pub strategy: Option<String>,
    /// The failing schedule (`Schedule` text; empty when the process crashed).
    pub schedule: String,
    /// The schedule the search found, when `schedule` is its minimization (fewer
    /// preemptions, then fewer steps).
    pub original_schedule: Option<String>,
    /// Preemptions in `schedule`, when minimization ran (and so counted them).
    pub preemptions: Option<u64>,
    /// Index of the failing execution in its run, and how many ran.
    pub execution: u64,
    pub executions: u64,
    /// Whether replaying the schedule reproduced the same failure.
    pub reproduced: bool,
    pub trace: Vec<TraceEvent>,
    pub warnings: Vec<String>,
    /// The line that replays this failure.
    pub replay_command: String,
    /// The line that replays it from its seed (strategy, seed, time mode and memory model).
    pub seed_command: Option<String>,
    /// The human report, as the test process printed it.
    pub report: String,
    /// The failing execution's trace file (`pulse_protocol::trace::Trace`, JSON), when one
    /// was written: `<test>.trace.json` next to the record.
    pub trace_file: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_survives_json_and_kinds_are_snake_case() {
        let record = FailureRecord {
            version: FORMAT_VERSION,
            test: "tests::t".into(),
            kind: FailureKind::StepLimit,
            schedule: "p1:0.1".into(),
            trace: vec![TraceEvent {
                step: 1,
                thread: "main".into(),
                op: "Mutex::lock".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let json = serde_json::to_string(&record).unwrap();
        assert!(json.contains(r#""kind":"step_limit""#), "{json}");
        assert_eq!(
            serde_json::from_str::<FailureRecord>(&json).unwrap(),
            record
        );
        let partial: FailureRecord =
            serde_json::from_str(r#"{"test":"t","kind":"blocked_thread"}"#).unwrap();
        assert_eq!(partial.kind, FailureKind::BlockedThread);
    }
}
