//! The one stream of events a run produces, in nextest's `TestEvent` shape: run started, test
//! started, progress, test finished with its outcome, run finished (and a failed build, which
//! ends a run before it starts). Every runner path (pulse's own per-test processes and
//! `--runner nextest`) emits these and nothing else reaches people or tools: the console
//! ([`crate::console::ConsoleReporter`]) and `--message-format json`
//! ([`crate::output::JsonReporter`]) are both driven from it, so neither can miss an event the
//! other shows.

use crate::cli::NoTests;
use crate::outcome::{Counts, Outcome};
use crate::seeds::SeedRange;

/// Which test an event is about: its position in the run (stable across runners) and names.
#[derive(Debug, Clone)]
pub struct TestId {
    pub index: usize,
    pub name: String,
    pub binary_display: String,
    /// Schedules the run plans for it.
    pub planned: u64,
}

/// What the run explores, as the closing line repeats it.
#[derive(Debug, Clone)]
pub struct RunInfo {
    pub seeds: SeedRange,
    /// `--seeds FROM..TO` was given (a shard), rather than a first seed.
    pub shard: bool,
    /// The schedule replayed, when the run is a replay.
    pub replay: Option<String>,
    /// Tests that will run (ignored ones are reported, not run).
    pub tests: usize,
    /// Packages whose doctests `cargo test` would run and pulse does not (`doctests::any`).
    pub doctests_not_run: Vec<String>,
    /// Why no test runs, when none does, and what `--no-tests` makes of it.
    pub no_tests: Option<(String, NoTests)>,
}

#[derive(Debug)]
pub enum TestEvent<'a> {
    RunStarted(&'a RunInfo),
    TestStarted(&'a TestId),
    TestProgress {
        test: &'a TestId,
        done: u64,
        total: u64,
    },
    TestFinished {
        test: &'a TestId,
        outcome: &'a Outcome,
    },
    /// The instrumented build failed; `message` is the compiler's output (mapped to the
    /// user's files).
    BuildFailed {
        message: &'a str,
    },
    RunFinished {
        info: &'a RunInfo,
        outcomes: &'a [Outcome],
        counts: Counts,
        secs: f64,
        exit_code: i32,
    },
}

/// Something that shows events.
pub trait Reporter {
    fn report(&mut self, event: &TestEvent<'_>);
}

/// Every reporter of a run; events go to each in turn.
#[derive(Default)]
pub struct Reporters(Vec<Box<dyn Reporter>>);

impl Reporters {
    pub fn new(reporters: Vec<Box<dyn Reporter>>) -> Reporters {
        Reporters(reporters)
    }
}

impl Reporter for Reporters {
    fn report(&mut self, event: &TestEvent<'_>) {
        for r in &mut self.0 {
            r.report(event);
        }
    }
}
