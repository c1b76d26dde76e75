//! What went wrong in an execution, and the report people read: what failed and where,
//! the seed and schedule, the last steps of the trace, and one line to replay it.

use serde::Serialize;
use std::fmt;

use crate::report::trace::{format_table, TraceEvent};
use pulse_protocol::Schedule;

pub use pulse_protocol::FailureKind;
use pulse_protocol::{FailureRecord, FORMAT_VERSION};

/// Schedules longer than this (characters) are abbreviated on screen.
pub(crate) const LONG_SCHEDULE: usize = 300;

/// A schedule's text when it is at most `LONG_SCHEDULE` characters long, else (`Err`) the
/// first half of that, for a report's one line.
fn on_screen(schedule: &Schedule) -> Result<String, String> {
    schedule
        .text_within(LONG_SCHEDULE)
        .map_err(|start| start.chars().take(LONG_SCHEDULE / 2).collect())
}

/// Replays one minimization may try: twostage_20, the corpus's longest, needs 1,985. (Here,
/// below `minimize`, so the report can tell this limit from the time budget.)
pub(crate) const MINIMIZATION_TRIES: u64 = 5_000;

/// A failing execution, with everything needed to understand and replay it.
#[derive(Clone, Debug, Serialize)]
pub struct Failure {
    pub kind: FailureKind,
    /// The headline: the panic message, or a one-line summary.
    pub message: String,
    /// The user's source location of the panic or blocking operation, `file:line:col`.
    pub location: Option<String>,
    /// The virtual thread that failed (or "-" for whole-execution failures).
    pub thread: String,
    /// More lines: each blocked thread of a deadlock, the spinning threads of a livelock.
    pub details: Vec<String>,
    /// The seed of the failing execution (`None` when it was a replay).
    pub seed: Option<u64>,
    /// The strategy that replays the failing execution from `seed` alone (`pct:5:137`, a
    /// portfolio's arm); `None` for `dfs`/`dpor` or a replay.
    #[serde(serialize_with = "serialize_display_opt")]
    pub strategy: Option<crate::scheduler::Strategy>,
    /// The systematic strategy (`dfs:2`, `dpor:2`) whose search found it: its schedule, not
    /// a seed, replays it. `None` for a seed's execution or a replay.
    #[serde(serialize_with = "serialize_display_opt")]
    pub search: Option<crate::scheduler::Strategy>,
    /// The line that replays it from its seed (`None` without a seed and strategy).
    pub seed_command: Option<String>,
    /// The schedule reported: the minimized one when minimization found a cheaper one.
    #[serde(serialize_with = "serialize_display")]
    pub schedule: Schedule,
    /// The schedule the search found, when `schedule` is its minimization.
    #[serde(serialize_with = "serialize_display_opt")]
    pub original_schedule: Option<Schedule>,
    /// What minimization did (`None`: it was off, not possible, or found nothing cheaper).
    pub minimized: Option<Minimized>,
    /// The preemptions in `schedule`, when minimization ran and so counted them (whether or
    /// not it found a cheaper schedule).
    pub preemptions: Option<usize>,
    /// Index of the failing execution in its run, and how many ran.
    pub execution: u64,
    pub executions: u64,
    /// The steps of the failing execution (its last 10,000 at most; the report prints the
    /// tail).
    pub trace: Vec<TraceEvent>,
    /// Whether replaying the schedule reproduced the same failure.
    pub reproduced: bool,
    pub backtrace: Option<String>,
    pub warnings: Vec<String>,
    /// The line that replays this failure.
    pub replay_command: String,
    /// How many trailing trace steps the human report prints.
    #[serde(skip)]
    pub trace_tail: usize,
    /// The traced replay in the trace file's format (`pulse_protocol::trace`), when the
    /// failure was replayed with tracing.
    #[serde(skip)]
    pub full_trace: Option<pulse_protocol::trace::Trace>,
    /// The racing pair in words, when the trace shows one (`Trace::race_summary`).
    pub race: Option<String>,
    /// The first and last step of the events `race` names: the report shows the trace's
    /// rows there too when its tail does not reach them.
    #[serde(skip)]
    pub race_steps: Option<(u64, u64)>,
    /// What the reader needs to know to judge the failure (`Explanation::notes`).
    pub notes: Vec<String>,
}

fn serialize_display<S: serde::Serializer, T: fmt::Display>(
    v: &T,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

fn serialize_display_opt<S: serde::Serializer, T: fmt::Display>(
    v: &Option<T>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => s.collect_str(v),
        None => s.serialize_none(),
    }
}

impl Failure {
    /// The rows around the race's steps (`race_steps`), when the table's last rows (from
    /// `shown`) start after them: a few rows before its first event and after its last,
    /// and all between, or the first and the last few when they are many (two parts).
    fn race_rows(&self, shown: usize) -> Option<Vec<&[TraceEvent]>> {
        const AROUND: u64 = 3;
        const PART: usize = 8;
        let (first, last) = self.race_steps?;
        if last + AROUND >= self.trace.get(shown)?.step {
            return None;
        }
        let from = self.trace.partition_point(|e| e.step + AROUND < first);
        let to = self.trace.partition_point(|e| e.step <= last + AROUND);
        let near = self.trace.get(from..to).filter(|n| !n.is_empty())?;
        Some(match near.len() > 2 * PART {
            true => vec![&near[..PART], &near[near.len() - PART..]],
            false => vec![near],
        })
    }

    /// The record cargo-pulse reads, for the test named `test`.
    pub fn record(&self, test: &str) -> FailureRecord {
        FailureRecord {
            version: FORMAT_VERSION,
            test: test.to_string(),
            kind: self.kind,
            message: self.message.clone(),
            location: self.location.clone(),
            thread: self.thread.clone(),
            details: self.details.clone(),
            seed: self.seed,
            strategy: self.strategy.map(|s| s.to_string()),
            seed_command: self.seed_command.clone(),
            schedule: self.schedule.to_string(),
            original_schedule: self.original_schedule.as_ref().map(|s| s.to_string()),
            preemptions: self.preemptions.map(|p| p as u64),
            execution: self.execution,
            executions: self.executions,
            reproduced: self.reproduced,
            trace: self.trace.clone(),
            warnings: self.warnings.clone(),
            replay_command: self.replay_command.clone(),
            report: self.to_string(),
            trace_file: None,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            FailureKind::ToolError => writeln!(
                f,
                "pulse could not finish the run (schedule {})",
                self.executions
            )?,
            kind => writeln!(
                f,
                "pulse found a {} after {} schedule(s)",
                kind.title(),
                self.executions
            )?,
        }
        let place = self
            .location
            .as_deref()
            .map(|l| format!(" at {l}"))
            .unwrap_or_default();
        if self.thread != "-" {
            writeln!(f, "  thread '{}'{place}:", self.thread)?;
        }
        for line in self.message.lines() {
            writeln!(f, "    {line}")?;
        }
        for d in &self.details {
            writeln!(f, "  {d}")?;
        }
        if let Some(race) = &self.race {
            writeln!(f, "  race: {race}")?;
        }
        for note in &self.notes {
            writeln!(f, "  note: {note}")?;
        }
        match self.seed {
            Some(seed) => match &self.strategy {
                Some(s) => writeln!(
                    f,
                    "  seed:     {seed} (execution {}, strategy {s})",
                    self.execution
                )?,
                None => writeln!(f, "  seed:     {seed} (execution {})", self.execution)?,
            },
            None => match &self.search {
                Some(s) => writeln!(
                    f,
                    "  found by: {s}, execution {} (its schedule replays it)",
                    self.execution
                )?,
                None => writeln!(f, "  replayed schedule")?,
            },
        }
        if self.schedule.is_empty() && self.kind == FailureKind::Crash && self.seed.is_some() {
            writeln!(
                f,
                "  schedule: - (it died with the process; the seed replays it)"
            )?;
        } else {
            match on_screen(&self.schedule) {
                Ok(text) => writeln!(f, "  schedule: {text}")?,
                Err(start) => writeln!(
                    f,
                    "  schedule: {start}… ({} choices; in full in `Failure::schedule` and the JSON record)",
                    self.schedule.len()
                )?,
            }
        }
        if let (Some(m), Some(original)) = (&self.minimized, &self.original_schedule) {
            let found = on_screen(original).unwrap_or_else(|start| format!("{start}…"));
            writeln!(
                f,
                "  minimized: {} preemption(s) and {} steps, from the search's {} and {} ({} \
                 tries{}); the search's schedule: {found}",
                m.preemptions,
                m.steps,
                m.original_preemptions,
                m.original_steps,
                m.tries,
                match (m.complete, m.tries >= MINIMIZATION_TRIES) {
                    (true, _) => "",
                    (false, true) => ", stopped at its limit of tries",
                    (false, false) => ", stopped by its time budget",
                },
            )?;
        }
        if let (None, Some(p)) = (&self.minimized, self.preemptions) {
            writeln!(
                f,
                "  minimal: {p} preemption(s); minimization found no cheaper schedule that \
                 fails the same way"
            )?;
        }
        if !self.reproduced && self.kind == FailureKind::Crash {
            // Memory corruption strikes where the heap's layout lets it, and tracing changes
            // the layout (cht's rehash double free, session 28's trial).
            writeln!(
                f,
                "  warning: replaying this schedule with tracing did not crash the same way: a \
                 crash from memory corruption (a double free, a use after free) also depends on \
                 the heap's layout, which tracing changes; the replay lines run it untraced in a \
                 fresh process, as the search did"
            )?;
        } else if !self.reproduced {
            writeln!(
                f,
                "  warning: replaying this schedule did not reproduce the failure: the test has \
                 nondeterminism outside pulse's control (uninstrumented threads or locks, \
                 randomness, real time, state kept in statics)"
            )?;
        }
        if !self.trace.is_empty() {
            let tail = self.trace_tail.max(1);
            let skip = self.trace.len().saturating_sub(tail);
            // Steps are numbered from 0 (a step may have several rows: an operation and its
            // block, a thread's last operation and its exit); a long trace keeps only its end.
            let steps = self.trace.last().map_or(0, |e| e.step + 1);
            if skip > 0 || self.trace[0].step > 0 {
                writeln!(
                    f,
                    "  trace (last {} of {steps} steps):",
                    self.trace.len().min(tail)
                )?;
            } else {
                writeln!(f, "  trace ({steps} steps):")?;
            }
            f.write_str(&format_table(&self.trace[skip..]))?;
            if let Some(parts) = self.race_rows(skip) {
                writeln!(f, "  trace around the race above:")?;
                for (i, rows) in parts.iter().enumerate() {
                    if i > 0 {
                        writeln!(f, "      …")?;
                    }
                    f.write_str(&format_table(rows))?;
                }
            }
        }
        if let Some(bt) = &self.backtrace {
            writeln!(f, "  backtrace:")?;
            for line in bt.lines() {
                writeln!(f, "    {line}")?;
            }
        }
        for w in pulse_protocol::warnings::merge_shared_in_dependencies(self.warnings.clone()) {
            writeln!(f, "  warning: {w}")?;
        }
        if let Some(line) = &self.seed_command {
            writeln!(f, "replay by seed: {line}")?;
        }
        write!(f, "replay: {}", self.replay_command)
    }
}

/// What schedule minimization (`minimize.rs`) did, for the report.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Minimized {
    /// Preemptions and steps of the schedule the search found.
    pub original_preemptions: usize,
    pub original_steps: u64,
    /// Preemptions and steps of the reported schedule.
    pub preemptions: usize,
    pub steps: u64,
    /// Executions minimization ran.
    pub tries: u64,
    /// False when the time budget or the tries ran out before no candidate improved.
    pub complete: bool,
}

/// The outcome of a run of many executions.
#[derive(Clone, Debug)]
pub struct Report {
    /// Executions run (the failing one included).
    pub executions: u64,
    /// Scheduling points passed over all executions.
    pub decisions: u64,
    /// Scheduling points that had more than one option (the schedule's length, summed).
    pub choices: u64,
    /// Wall-clock time of the whole run, the failure's explanation included.
    pub elapsed: std::time::Duration,
    /// Wall-clock time from the search's start until it found its failure: the failing
    /// execution's first panic (when the panic hook saw it, as a peer's time to first panic
    /// is taken), or when the scheduler found it stuck (deadlock, livelock); from a fresh
    /// process, when that process answered. Without a failure: until the search stopped.
    pub search_time: std::time::Duration,
    /// The instant the failure was detected (the end of `search_time`): with it a caller
    /// times detection from its own clock, without the search's teardown after the report.
    pub detected_at: Option<std::time::Instant>,
    pub failure: Option<Failure>,
    /// Distinct warnings raised during the run (e.g. state shared between executions).
    pub warnings: Vec<String>,
    /// Names (each once) of OS threads the test started that pulse does not schedule (code
    /// that was not instrumented spawned them); only with `Builder::watch_os_threads`.
    pub os_threads: Vec<String>,
    /// Set when an exhaustive strategy (`dfs`) explored its whole space without a failure:
    /// a verification result within its bound, not a sample.
    pub exhaustive: Option<Exhaustive>,
    /// With `Config::trace_passing`, a run that passed: its last execution, replayed with
    /// tracing (`outcome` `passed`).
    pub trace: Option<pulse_protocol::trace::Trace>,
}

/// What an exhaustive search covered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exhaustive {
    /// Executions run: every schedule within the bound, each once.
    pub schedules: u64,
    /// The preemption bound.
    pub bound: usize,
    /// Whether some schedules needed more preemptions than the bound (false: the bound cut
    /// nothing, every schedule of the program ran).
    pub pruned: bool,
    /// Without a bound: whether some schedules needed more spurious wakeups or weak-CAS
    /// failures than `scheduler::UNBOUNDED_SPURIOUS` (false: none was cut).
    pub spurious_limited: bool,
    /// The test offered no choice at all (a random search stops after one execution then):
    /// every schedule is the one that ran.
    pub no_choice: bool,
}

impl std::fmt::Display for Exhaustive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.no_choice {
            return f.write_str(
                "exhaustive: the test made no scheduling choice (never two threads that could \
                 run, nor any other choice), so every schedule is the one that ran, and it passed",
            );
        }
        if self.bound == usize::MAX {
            let which = if self.spurious_limited {
                "with at most one spurious wakeup or weak compare-exchange failure"
            } else {
                "of the program"
            };
            return write!(
                f,
                "exhaustive: all {} schedules explored without a preemption bound, no failure \
                 (every schedule {which}, up to reordering independent operations)",
                self.schedules
            );
        }
        write!(
            f,
            "exhaustive: all {} schedules within preemption bound {} explored, no failure",
            self.schedules, self.bound
        )?;
        if !self.pruned {
            f.write_str(" (the bound cut none: these are all the schedules)")?;
        }
        Ok(())
    }
}

impl Report {
    pub fn passed(&self) -> bool {
        self.failure.is_none()
    }

    /// Whether the test ran outside the scheduler: no execution reached a pulse operation
    /// (each one's only scheduling point was its end) while OS threads pulse does not
    /// control ran. Its passing says nothing.
    pub fn not_scheduled(&self) -> bool {
        self.decisions <= self.executions && !self.os_threads.is_empty()
    }

    /// Why a run that `not_scheduled` says nothing.
    pub fn not_scheduled_message(&self) -> String {
        format!(
            "NOT SCHEDULED: the test reached no pulse operation while OS threads pulse does not \
             schedule ran ({}); its outcome says nothing about other interleavings",
            self.os_threads.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(choices: Vec<u32>) -> Failure {
        Failure {
            kind: FailureKind::Deadlock,
            message: "deadlock".into(),
            location: None,
            thread: "-".into(),
            details: Vec::new(),
            seed: Some(7),
            strategy: None,
            search: None,
            seed_command: None,
            schedule: Schedule::new(choices),
            original_schedule: None,
            minimized: None,
            preemptions: None,
            execution: 0,
            executions: 1,
            trace: Vec::new(),
            reproduced: true,
            backtrace: None,
            warnings: Vec::new(),
            replay_command: "replay it".into(),
            trace_tail: 30,
            full_trace: None,
            race: None,
            race_steps: None,
            notes: Vec::new(),
        }
    }

    #[test]
    fn an_unfinished_minimization_names_what_stopped_it() {
        let minimized = |tries, complete| {
            let mut f = failure(vec![0, 1]);
            f.original_schedule = Some(Schedule::new(vec![1, 0, 1]));
            f.minimized = Some(Minimized {
                original_preemptions: 2,
                original_steps: 9,
                preemptions: 1,
                steps: 8,
                tries,
                complete,
            });
            f.to_string()
        };
        assert!(minimized(12, true).contains("(12 tries);"));
        assert!(minimized(40, false).contains("(40 tries, stopped by its time budget)"));
        let capped = minimized(MINIMIZATION_TRIES, false);
        assert!(
            capped.contains("tries, stopped at its limit of tries)"),
            "{capped}"
        );
    }

    #[test]
    fn a_long_schedule_is_abbreviated_on_screen_but_kept_whole() {
        let choices: Vec<u32> = (0..2000).map(|i| i % 97).collect();
        let f = failure(choices.clone());
        let text = f.to_string();
        assert!(text.contains("… (2000 choices"), "{text}");
        assert!(text.len() < 2_000, "the report stays readable");
        assert_eq!(f.schedule.choices, choices);
        let short = failure(vec![0, 1, 1]).to_string();
        assert!(short.contains("schedule: p1:0.1*2\n"), "{short}");
    }

    #[test]
    fn a_crash_its_traced_replay_missed_is_blamed_on_the_heap_not_on_nondeterminism() {
        let mut f = failure(vec![0, 1]);
        f.reproduced = false;
        assert!(f
            .to_string()
            .contains("nondeterminism outside pulse's control"));
        f.kind = FailureKind::Crash;
        let text = f.to_string();
        assert!(
            text.contains("did not crash the same way") && text.contains("heap's layout"),
            "{text}"
        );
        assert!(!text.contains("nondeterminism outside"), "{text}");
    }
}
