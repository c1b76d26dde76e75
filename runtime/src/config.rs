//! How a run is configured: number of schedules, seed, strategy, bounds. `Builder` is the
//! public face; `Builder::from_env` reads the `PULSE_*` variables so a plain `pulse::check`
//! in a test can be replayed or widened from the command line.

use std::sync::Arc;
use std::time::Duration;

use crate::failure::Report;
use crate::schedule::Schedule;
use crate::scheduler::{ChoiceOdds, Strategy};

/// When timed waits (sleep, `wait_timeout`, `recv_timeout`, `park_timeout`) expire, after
/// pulse_time (`pulse-time-stress-testing-time.txt`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimeMode {
    /// An infinitely fast machine: the clock jumps to the earliest deadline only when no
    /// thread can run. Deterministic and free of false alarms on generous timeouts.
    #[default]
    Idle,
    /// A timed wait may expire at any scheduling point (a scheduler choice), even while
    /// other threads could run: finds code that uses sleeps or timeouts to order events.
    Random,
}

impl std::str::FromStr for TimeMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "idle" => Ok(TimeMode::Idle),
            "random" => Ok(TimeMode::Random),
            other => Err(format!("unknown time mode `{other}` (expected `idle` or `random`)")),
        }
    }
}

/// Whether executions run in the test's process or each in a fresh one (a re-run of the test
/// binary that executes just that schedule).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Isolation {
    /// In process (fast); if a failure appears after the first schedule but not when its
    /// schedule is replayed in a fresh child, the test keeps state in statics: warn, and
    /// run the rest of the search one child process per schedule.
    #[default]
    Auto,
    /// Always in process.
    Off,
    /// Every schedule in its own process (~6 ms each; for tests known to keep state).
    Always,
}

/// What happens to threads still alive when a (failing) execution ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Cleanup {
    /// They are never resumed again: their stacks and what they hold are leaked. Only
    /// failing executions leave threads behind (at most two per run: the search's and its
    /// replay's), so the leak is small, and it can never abort the process, which unwinding
    /// through library code that asserts invariants in `Drop` can (crossbeam-channel does).
    #[default]
    Leak,
    /// They are unwound (newest first) so their destructors run and resources are freed.
    Unwind,
}

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
    /// Virtual time that passes at every scheduling point.
    pub step_nanos: u64,
    pub time: TimeMode,
    pub trace_tail: usize,
    /// Template of the replay line: `{schedule}`, `{seed}` and `{test}` are substituted.
    pub replay_command: Option<String>,
    pub available_parallelism: usize,
    /// Fail when a spawned thread panics and nobody joins it.
    pub fail_on_unjoined_panic: bool,
    pub cleanup: Cleanup,
    pub isolation: Isolation,
    pub progress: Option<ProgressFn>,
    /// Stop starting new executions after this much time (a time budget, for benchmarks
    /// and long searches).
    pub time_budget: Option<Duration>,
    /// How long a virtual thread may run without reaching a pulse operation before the
    /// watchdog reports it as blocked outside pulse's control and ends the process.
    pub blocking_timeout: Option<Duration>,
    pub on_blocked: Option<crate::watchdog::BlockedFn>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            schedules: 1000,
            seed: None,
            // A 1,000-thread stress test needs a few hundred thousand; a livelock costs
            // ~50 ms to hit this (shuttle's default is the same).
            max_steps: 1_000_000,
            strategy: Strategy::Random,
            odds: ChoiceOdds::default(),
            // std's default for spawned threads; stacks are pooled, and untouched pages
            // cost nothing, so generous is cheap.
            stack_size: 2 << 20,
            replay: None,
            step_nanos: 1_000,
            time: TimeMode::Idle,
            trace_tail: 30,
            replay_command: None,
            available_parallelism: 4,
            fail_on_unjoined_panic: true,
            cleanup: Cleanup::Leak,
            isolation: Isolation::Auto,
            progress: None,
            time_budget: None,
            blocking_timeout: None,
            on_blocked: None,
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

/// Configures and runs a pulse search.
///
/// ```ignore
/// let report = pulse::Builder::new().schedules(10_000).seed(42).run(|| { /* test */ });
/// ```
#[derive(Clone, Debug, Default)]
pub struct Builder {
    pub config: Config,
}

/// An environment variable pulse understands had a value it cannot use.
#[derive(Debug, Clone)]
pub struct EnvError(pub String);

impl std::fmt::Display for EnvError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EnvError {}

impl Builder {
    pub fn new() -> Self {
        Builder::default()
    }

    /// Defaults overridden by `PULSE_SCHEDULES`, `PULSE_SEED`, `PULSE_MAX_STEPS`,
    /// `PULSE_STRATEGY`, `PULSE_REPLAY`, `PULSE_REPLAY_COMMAND`, `PULSE_STACK_SIZE`.
    pub fn try_from_env() -> Result<Self, EnvError> {
        fn var(name: &str) -> Option<String> {
            std::env::var(name).ok().filter(|v| !v.trim().is_empty())
        }
        fn num(name: &str) -> Result<Option<u64>, EnvError> {
            var(name)
                .map(|v| v.trim().parse::<u64>().map_err(|_| EnvError(format!("{name}={v} is not a whole number"))))
                .transpose()
        }
        let mut b = Builder::new();
        if let Some(n) = num("PULSE_SCHEDULES")? {
            b = b.schedules(n);
        }
        if let Some(s) = num("PULSE_SEED")? {
            b = b.seed(s);
        }
        if let Some(n) = num("PULSE_MAX_STEPS")? {
            b = b.max_steps(n);
        }
        if let Some(n) = num("PULSE_STACK_SIZE")? {
            b = b.stack_size(n as usize);
        }
        if let Some(s) = var("PULSE_STRATEGY") {
            b = b.strategy(s.parse().map_err(|e| EnvError(format!("PULSE_STRATEGY: {e}")))?);
        }
        if let Some(s) = var("PULSE_REPLAY") {
            b = b.replay(&s).map_err(|e| EnvError(format!("PULSE_REPLAY: {e}")))?;
        }
        if let Some(c) = var("PULSE_CLEANUP") {
            b = b.cleanup(match c.trim() {
                "leak" => Cleanup::Leak,
                "unwind" => Cleanup::Unwind,
                other => return Err(EnvError(format!("PULSE_CLEANUP={other}: expected `leak` or `unwind`"))),
            });
        }
        if let Some(i) = var("PULSE_ISOLATION") {
            b = b.isolation(match i.trim() {
                "auto" => Isolation::Auto,
                "off" => Isolation::Off,
                "always" => Isolation::Always,
                other => return Err(EnvError(format!("PULSE_ISOLATION={other}: expected `auto`, `off` or `always`"))),
            });
        }
        if let Some(t) = var("PULSE_TIME") {
            b = b.time(t.parse().map_err(|e| EnvError(format!("PULSE_TIME: {e}")))?);
        }
        if let Some(ms) = num("PULSE_BLOCKING_TIMEOUT_MS")? {
            b = b.blocking_timeout(Duration::from_millis(ms));
        }
        if let Some(t) = var("PULSE_REPLAY_COMMAND") {
            b.config.replay_command = Some(t);
        }
        Ok(b)
    }

    /// As `try_from_env`, panicking with the reason on a bad value.
    pub fn from_env() -> Self {
        Self::try_from_env().unwrap_or_else(|e| panic!("pulse: {e}"))
    }

    /// How many executions (schedules) to try.
    pub fn schedules(mut self, n: u64) -> Self {
        self.config.schedules = n;
        self
    }

    /// The first execution's seed; execution i uses `seed + i`. Random by default.
    pub fn seed(mut self, seed: u64) -> Self {
        self.config.seed = Some(seed);
        self
    }

    /// Scheduling points one execution may pass before it is reported as a livelock.
    pub fn max_steps(mut self, n: u64) -> Self {
        self.config.max_steps = n;
        self
    }

    pub fn strategy(mut self, strategy: Strategy) -> Self {
        self.config.strategy = strategy;
        self
    }

    /// Stack size of virtual threads that don't ask for one (bytes).
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.config.stack_size = bytes;
        self
    }

    /// How often (1 in N) a wait may wake spuriously and a weak CAS fail; 0 disables.
    pub fn spurious_odds(mut self, wakeup_one_in: u32, weak_cas_one_in: u32) -> Self {
        self.config.odds = ChoiceOdds { spurious_wakeup: wakeup_one_in, weak_cas_failure: weak_cas_one_in, ..self.config.odds };
        self
    }

    /// Replays exactly this schedule (the `p1:...` text a failure prints).
    pub fn replay(mut self, schedule: &str) -> Result<Self, crate::schedule::ParseScheduleError> {
        self.config.replay = Some(schedule.parse()?);
        Ok(self)
    }

    /// Virtual time that passes at each scheduling point.
    pub fn step_time(mut self, d: Duration) -> Self {
        self.config.step_nanos = crate::ctx::duration_nanos(d);
        self
    }

    /// When timed waits expire (see `TimeMode`).
    pub fn time(mut self, mode: TimeMode) -> Self {
        self.config.time = mode;
        self
    }

    pub fn replay_command(mut self, template: impl Into<String>) -> Self {
        self.config.replay_command = Some(template.into());
        self
    }

    /// Whether executions run in process or in fresh processes (see `Isolation`).
    pub fn isolation(mut self, isolation: Isolation) -> Self {
        self.config.isolation = isolation;
        self
    }

    /// What happens to threads a failing execution leaves behind (see `Cleanup`).
    pub fn cleanup(mut self, cleanup: Cleanup) -> Self {
        self.config.cleanup = cleanup;
        self
    }

    pub fn fail_on_unjoined_panic(mut self, yes: bool) -> Self {
        self.config.fail_on_unjoined_panic = yes;
        self
    }

    pub fn progress(mut self, f: impl Fn(u64, u64) + Send + Sync + 'static) -> Self {
        self.config.progress = Some(Arc::new(f));
        self
    }

    /// Enables the watchdog: a thread that runs this long without reaching a pulse
    /// operation is reported (which thread, its last pulse operation) and the process
    /// exits with status 3 instead of hanging.
    pub fn blocking_timeout(mut self, timeout: Duration) -> Self {
        self.config.blocking_timeout = Some(timeout);
        self
    }

    /// Called with the watchdog's report before it ends the process.
    pub fn on_blocked(mut self, f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.config.on_blocked = Some(Arc::new(f));
        self
    }

    pub fn trace_tail(mut self, steps: usize) -> Self {
        self.config.trace_tail = steps;
        self
    }

    /// Runs the search and returns what it found.
    pub fn run<F: Fn()>(&self, f: F) -> Report {
        crate::runner::run(&self.config, &f)
    }

    /// Runs the search for at most `budget` of wall-clock time (and at most `schedules`
    /// executions).
    pub fn run_for<F: Fn()>(&self, budget: Duration, f: F) -> Report {
        let mut config = self.config.clone();
        config.time_budget = Some(budget);
        crate::runner::run(&config, &f)
    }

    /// Runs the search and panics with the failure report if a schedule fails.
    #[track_caller]
    pub fn check<F: Fn()>(&self, f: F) {
        let report = self.run(f);
        if let Some(failure) = report.failure {
            panic!("{failure}");
        }
    }
}
