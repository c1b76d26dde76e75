//! The public face of a run's configuration. `Builder::from_env` reads the `PULSE_*`
//! variables so a plain `pulse::check` in a test can be replayed or widened from the
//! command line.

use std::sync::Arc;
use std::time::Duration;

use std::str::FromStr;

use pulse_protocol::{env, SeedReplay};

use crate::config::{
    duration_nanos, Cleanup, Config, Detached, Isolation, Memory, TimeMode, WeakCas,
};
use crate::report::failure::{Failure, Report};
use crate::scheduler::{ChoiceOdds, Strategy};

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

    /// Defaults overridden by the `PULSE_*` variables a test process reads
    /// (`pulse_protocol::env`); an empty one counts as unset.
    pub fn try_from_env() -> Result<Self, EnvError> {
        fn var(name: &str) -> Option<String> {
            std::env::var(name)
                .ok()
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        }
        fn parsed<T: FromStr>(name: &str) -> Result<Option<T>, EnvError>
        where
            T::Err: std::fmt::Display,
        {
            var(name)
                .map(|raw| {
                    // A long value (a schedule) may come through a file (`env::spill`).
                    let v =
                        env::unspill(&raw).map_err(|e| EnvError(format!("{name}={raw}: {e}")))?;
                    v.parse::<T>()
                        .map_err(|e| EnvError(format!("{name}={raw}: {e}")))
                })
                .transpose()
        }
        let mut b = Builder::new();
        let c = &mut b.config;
        c.schedules = parsed(env::SCHEDULES)?.unwrap_or(c.schedules);
        c.seed = parsed(env::SEED)?.or(c.seed);
        c.max_steps = parsed(env::MAX_STEPS)?.unwrap_or(c.max_steps);
        c.stack_size = parsed(env::STACK_SIZE)?.unwrap_or(c.stack_size);
        c.strategy = parsed(env::STRATEGY)?.unwrap_or(c.strategy);
        c.replay = parsed(env::REPLAY)?.or(c.replay.take());
        c.replay_fallback = parsed(env::REPLAY_FALLBACK)?.or(c.replay_fallback);
        c.cleanup = parsed(env::CLEANUP)?.unwrap_or(c.cleanup);
        c.detached = parsed(env::DETACHED)?.unwrap_or(c.detached);
        c.memory = parsed(env::MEMORY)?.unwrap_or(c.memory);
        c.isolation = parsed(env::ISOLATION)?.unwrap_or(c.isolation);
        c.time = parsed(env::TIME)?.unwrap_or(c.time);
        if let Some(w) = parsed::<WeakCas>(env::WEAK_CAS)? {
            b = b.weak_cas(w);
        }
        let c = &mut b.config;
        if let Some(ms) = parsed::<u64>(env::MINIMIZE_MS)? {
            c.minimize = (ms > 0).then(|| Duration::from_millis(ms));
        }
        if let Some(ms) = parsed::<u64>(env::TEST_TIME_MS)? {
            c.time_budget = (ms > 0).then(|| Duration::from_millis(ms));
        }
        if let Some(steps) = parsed::<u64>(env::TEST_STEPS)? {
            c.step_budget = (steps > 0).then_some(steps);
        }
        c.blocking_timeout = parsed(env::BLOCKING_TIMEOUT_MS)?
            .map(Duration::from_millis)
            .or(c.blocking_timeout);
        if let Some(list) = var(env::NOT_INSTRUMENTED) {
            c.not_instrumented = list.split(',').map(str::to_string).collect();
        }
        if let Some(list) = var(env::INSTRUMENTED) {
            c.instrumented = list.split(',').map(str::to_string).collect();
        }
        c.replay_command = var(env::REPLAY_COMMAND).or(c.replay_command.take());
        c.seed_command = var(env::SEED_COMMAND).or(c.seed_command.take());
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
        self.config.odds = ChoiceOdds {
            spurious_wakeup: wakeup_one_in,
            weak_cas_failure: weak_cas_one_in,
            ..self.config.odds
        };
        self
    }

    /// Whether `compare_exchange_weak` may fail when the value matches (`WeakCas::Spurious`,
    /// the default: a scheduler choice, as std allows) or never (`WeakCas::Strong`, as on
    /// x86-64).
    pub fn weak_cas(mut self, mode: WeakCas) -> Self {
        self.config.odds.weak_cas_failure = match mode {
            WeakCas::Spurious => ChoiceOdds::default().weak_cas_failure,
            WeakCas::Strong => 0,
        };
        self
    }

    /// Replays exactly this schedule (the `p1:...` text a failure prints).
    pub fn replay(mut self, schedule: &str) -> Result<Self, pulse_protocol::ParseScheduleError> {
        self.config.replay = Some(schedule.parse()?);
        Ok(self)
    }

    /// With `replay`: when the schedule no longer fits the program (it names a thread that
    /// cannot run at that point, or ends before the program does, after an edit), run this
    /// execution instead: its strategy from its seed (`pct:5:137@42`, as a failure's
    /// `strategy` and `seed` say).
    pub fn replay_fallback(mut self, seed_replay: SeedReplay) -> Self {
        self.config.replay_fallback = Some(seed_replay);
        self
    }

    /// Virtual time that passes at each scheduling point.
    pub fn step_time(mut self, d: Duration) -> Self {
        self.config.step_nanos = duration_nanos(d);
        self
    }

    /// How long to look for a cheaper schedule after a failure (fewest preemptions, then
    /// fewest steps); `Duration::ZERO` reports the schedule as found.
    pub fn minimize(mut self, budget: Duration) -> Self {
        self.config.minimize = (!budget.is_zero()).then_some(budget);
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

    /// The seed replay line's template (`{test}`, `{seed}`, `{strategy}`, `{time}`,
    /// `{memory}`).
    pub fn seed_command(mut self, template: impl Into<String>) -> Self {
        self.config.seed_command = Some(template.into());
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

    /// What threads the test never joined may do: panic, stay blocked or keep running after
    /// it returns. `Detached::Warn` (default) follows std, where such a test passes;
    /// `Detached::Fail` fails it.
    pub fn detached(mut self, policy: Detached) -> Self {
        self.config.detached = policy;
        self
    }

    /// How atomics behave: `Memory::Sc` runs every ordering as `SeqCst`; `Memory::Relaxed`
    /// follows Rust's orderings, so a load may read an older store; `Memory::Portfolio`
    /// (default) runs one execution in four, drawn from its seed, relaxed.
    pub fn memory(mut self, model: Memory) -> Self {
        self.config.memory = model;
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

    /// Drops the warnings `keep` returns false for (for a harness that knows a warning says
    /// nothing about its test).
    pub fn keep_warning(mut self, keep: fn(&str) -> bool) -> Self {
        self.config.keep_warning = keep;
        self
    }

    /// Called with a failure as soon as it is found, before the traced replay that builds
    /// the final report (keep what it says: if that replay crashes the process, nothing
    /// else is left).
    pub fn on_found(mut self, f: impl Fn(&Failure) + Send + Sync + 'static) -> Self {
        self.config.on_found = Some(Arc::new(f));
        self
    }

    /// Reports OS threads the test starts that pulse does not schedule
    /// (`Report::os_threads`, `Report::not_scheduled`). Use it when one test runs per
    /// process (cargo-pulse does): other tests' threads would count too.
    pub fn watch_os_threads(mut self, yes: bool) -> Self {
        self.config.watch_os_threads = yes;
        self
    }

    pub fn trace_tail(mut self, steps: usize) -> Self {
        self.config.trace_tail = steps;
        self
    }

    /// Starts no execution once the search has taken `steps` scheduling points in all (the
    /// schedules that ran are reported, with a warning): a deterministic budget, so a test
    /// whose executions are long runs fewer of them, the same ones on any machine. None by
    /// default; `cargo pulse test` sets 100,000,000 (`--test-steps`).
    pub fn step_budget(mut self, steps: u64) -> Self {
        self.config.step_budget = Some(steps);
        self
    }

    /// Runs the search and returns what it found.
    pub fn run<F: Fn()>(&self, f: F) -> Report {
        crate::search::run(&self.config, &f)
    }

    /// Runs the search for at most `budget` of wall-clock time (and at most `schedules`
    /// executions).
    pub fn run_for<F: Fn()>(&self, budget: Duration, f: F) -> Report {
        let mut config = self.config.clone();
        config.time_budget = Some(budget);
        crate::search::run(&config, &f)
    }

    /// Runs the search and panics with the failure report if a schedule fails.
    #[track_caller]
    pub fn check<F: Fn()>(&self, f: F) {
        let report = self.run(f);
        if let Some(failure) = report.failure {
            panic!("{failure}");
        }
        if report.not_scheduled() {
            panic!("pulse: {}", report.not_scheduled_message());
        }
    }
}
