//! How a run is configured: number of schedules, seed, strategy, bounds. `Builder`
//! (builder.rs) is the public face.

use std::sync::Arc;
use std::time::Duration;

use crate::scheduler::{ChoiceOdds, Strategy};
use pulse_protocol::{Schedule, SeedReplay};

pub use pulse_protocol::{Cleanup, Detached, Isolation, Memory, TimeMode, WeakCas};

/// Called with the watchdog's report before it ends the process (e.g. to write a failure
/// record).
pub type BlockedFn = Arc<dyn Fn(&str) + Send + Sync>;

/// Called with a failure as soon as the search finds it (see `Config::on_found`).
pub type FoundFn = Arc<dyn Fn(&crate::report::failure::Failure) + Send + Sync>;

/// Called with (executions done, executions planned) about ten times a second.
pub type ProgressFn = Arc<dyn Fn(u64, u64) + Send + Sync>;

#[derive(Clone)]
pub struct Config {
    pub schedules: u64,
    pub seed: Option<u64>,
    pub max_steps: u64,
    pub strategy: Strategy,
    pub odds: ChoiceOdds,
    pub stack_size: usize,
    pub replay: Option<Schedule>,
    /// With `replay`: the recorded execution's strategy and seed, run instead when the
    /// schedule no longer fits the program (`PULSE_REPLAY_FALLBACK`).
    pub replay_fallback: Option<SeedReplay>,
    /// Virtual time that passes at every scheduling point.
    pub step_nanos: u64,
    pub time: TimeMode,
    pub trace_tail: usize,
    /// After a run that passed, replay its last execution with tracing on and keep its
    /// trace (`Report::trace`): `PULSE_TRACE_OUT`.
    pub trace_passing: bool,
    /// Template of the replay line: `{schedule}`, `{seed}` and `{test}` are substituted.
    pub replay_command: Option<String>,
    /// Template of the seed replay line: `{test}`, `{seed}`, `{strategy}`, `{time}` and
    /// `{memory}` are substituted (`PULSE_SEED_COMMAND`).
    pub seed_command: Option<String>,
    pub available_parallelism: usize,
    /// Whether threads the test never joined may panic, stay blocked or keep running after
    /// it returns (a warning, as under std) or fail it.
    pub detached: Detached,
    /// How atomics behave (default `Memory::Portfolio`: one execution in four under Rust's
    /// orderings, the rest with every ordering as `SeqCst`).
    pub memory: Memory,
    pub cleanup: Cleanup,
    pub isolation: Isolation,
    pub progress: Option<ProgressFn>,
    /// Stop starting new executions after this much time (a time budget, for benchmarks
    /// and long searches).
    pub time_budget: Option<Duration>,
    /// Stop starting new executions once the search has taken this many steps (a
    /// deterministic budget: a test of long executions runs fewer of them).
    pub step_budget: Option<u64>,
    /// After a failure, look this long for a schedule failing the same way with fewer
    /// preemptions, then fewer steps (`None`: report the schedule as found).
    pub minimize: Option<Duration>,
    /// How long a virtual thread may run without reaching a pulse operation before the
    /// watchdog reports it as blocked outside pulse's control and ends the process.
    pub blocking_timeout: Option<Duration>,
    pub on_blocked: Option<BlockedFn>,
    /// Called with a failure as soon as it is found, before its traced replay (which can
    /// crash the process).
    pub on_found: Option<FoundFn>,
    /// Warnings this returns false for are not raised: a harness that knows one says nothing
    /// about its test (pulse's proptest harness and proptest's own config `static`).
    pub keep_warning: fn(&str) -> bool,
    /// The crate of the test being run (set by the harness): when a thread stalls in it,
    /// the watchdog does not advise instrumenting it, since it already is.
    pub home_crate: Option<String>,
    /// Crates that synchronise but could not be instrumented (set by cargo-pulse,
    /// `env::NOT_INSTRUMENTED`): a thread stalled in one gets no advice to instrument it.
    pub not_instrumented: Vec<String>,
    /// Crates pulse instrumented or replaced (set by cargo-pulse, `env::INSTRUMENTED`): a
    /// thread stalled in one is in a call pulse does not schedule.
    pub instrumented: Vec<String>,
    /// Look for OS threads the test starts outside pulse (`Report::os_threads`). Only
    /// meaningful when one test runs per process, as under cargo-pulse: libtest's other
    /// test threads would count too.
    pub watch_os_threads: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            schedules: 1000,
            seed: None,
            // A 1,000-thread stress test needs a few hundred thousand; a livelock costs
            // ~50 ms to hit this (shuttle's default is the same).
            max_steps: 1_000_000,
            strategy: Strategy::default(),
            odds: ChoiceOdds::default(),
            // std's default for spawned threads; stacks are pooled, and untouched pages
            // cost nothing, so generous is cheap.
            stack_size: 2 << 20,
            replay: None,
            replay_fallback: None,
            step_nanos: 1_000,
            time: TimeMode::Portfolio,
            trace_tail: 30,
            trace_passing: false,
            replay_command: None,
            seed_command: None,
            available_parallelism: 4,
            detached: Detached::Warn,
            memory: Memory::Portfolio,
            cleanup: Cleanup::Leak,
            isolation: Isolation::Auto,
            progress: None,
            time_budget: None,
            step_budget: None,
            // Most failures minimize in well under a second, within the minimizer's bound on
            // tries (which keeps the result the same on any machine); this bounds slow ones.
            minimize: Some(Duration::from_secs(10)),
            blocking_timeout: None,
            on_blocked: None,
            on_found: None,
            keep_warning: |_| true,
            home_crate: None,
            not_instrumented: Vec::new(),
            instrumented: Vec::new(),
            watch_os_threads: false,
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("schedules", &self.schedules)
            .field("seed", &self.seed)
            .field("max_steps", &self.max_steps)
            .field("strategy", &self.strategy)
            .field("replay", &self.replay.as_ref().map(|s| s.to_string()))
            .finish_non_exhaustive()
    }
}

/// A duration in nanoseconds, saturating (the virtual clock's unit).
pub(crate) fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
