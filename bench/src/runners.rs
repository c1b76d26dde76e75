//! Running one program under one tool and strategy, counting executions the same way for all.
//!
//! Executions: pulse reports them (`Report::executions`); for loom and shuttle a static counter is
//! bumped at the start of every model body. Decisions: pulse reports them (`Report::decisions`);
//! shuttle exposes its own count (`shuttle::current::context_switches()`, read at the end of the
//! body, i.e. every scheduling point up to the end of the main thread, including the ones where it
//! chose to keep the current task); loom exposes none.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub static EXECS: AtomicU64 = AtomicU64::new(0);
pub static SWITCHES: AtomicU64 = AtomicU64::new(0);

/// The instant the last run called its tool's entry point (`Builder::run_for`, `Runner::run`,
/// `Builder::check`): `Run::elapsed` counts from it, and so does the bug table's time to the
/// first panic (bugs.rs, the child's panic hook).
static STARTED: Mutex<Option<Instant>> = Mutex::new(None);

fn start_clock() -> Instant {
    let now = Instant::now();
    *STARTED.lock().unwrap_or_else(|e| e.into_inner()) = Some(now);
    now
}

/// Time since the current run called its tool's entry point (None before any run).
pub fn since_start() -> Option<Duration> {
    STARTED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .map(|s| s.elapsed())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    /// pulse, seeded random scheduler
    PulseRandom,
    /// pulse, PCT with the given depth
    PulsePct(usize),
    /// pulse, seeded random scheduler, and timed waits may expire at any scheduling point
    /// (`time-random`; the default portfolio is `infinitely-fast` or `quite-slow-random=50ms`)
    PulseRandomTime,
    /// pulse, partial order sampling
    PulsePos,
    /// pulse, PCT over roles (threads spawned at one call site share a priority) with the
    /// given depth, the role count estimated (`roles:D`)
    PulseRoles(usize),
    /// pulse, exhaustive DFS under the given preemption bound
    PulseDfs(usize),
    /// pulse, DPOR under the given preemption bound
    PulseDpor(usize),
    /// pulse's default: the portfolio
    PulsePortfolio,
    /// loom's DFS+DPOR; `None` = no preemption bound (loom's default)
    Loom(Option<usize>),
    /// shuttle's RandomScheduler (what `check_random` runs), seeded
    ShuttleRandom,
    /// shuttle's PctScheduler (what `check_pct` runs), seeded, with the given depth
    ShuttlePct(usize),
}

impl Tool {
    pub fn label(self) -> String {
        match self {
            Tool::PulseRandom => "pulse random".into(),
            Tool::PulsePct(d) => format!("pulse pct:{d}"),
            Tool::PulseRandomTime => "pulse random, time random".into(),
            Tool::PulsePos => "pulse pos".into(),
            Tool::PulseRoles(d) => format!("pulse roles:{d}"),
            Tool::PulseDfs(b) => format!("pulse dfs:{b}"),
            Tool::PulseDpor(b) => format!("pulse dpor:{b}"),
            Tool::PulsePortfolio => "pulse portfolio (default)".into(),
            Tool::Loom(None) => "loom DFS (no bound)".into(),
            Tool::Loom(Some(b)) => format!("loom DFS, preemption bound {b}"),
            Tool::ShuttleRandom => "shuttle check_random".into(),
            Tool::ShuttlePct(d) => format!("shuttle check_pct({d})"),
        }
    }
    pub fn key(self) -> String {
        match self {
            Tool::PulseRandom => "pulse-random".into(),
            Tool::PulsePct(d) => format!("pulse-pct{d}"),
            Tool::PulseRandomTime => "pulse-random-time".into(),
            Tool::PulsePos => "pulse-pos".into(),
            Tool::PulseRoles(d) => format!("pulse-roles{d}"),
            Tool::PulseDfs(b) => format!("pulse-dfs{b}"),
            Tool::PulseDpor(b) => format!("pulse-dpor{b}"),
            Tool::PulsePortfolio => "pulse-portfolio".into(),
            Tool::Loom(None) => "loom-dfs".into(),
            Tool::Loom(Some(b)) => format!("loom-pb{b}"),
            Tool::ShuttleRandom => "shuttle-random".into(),
            Tool::ShuttlePct(d) => format!("shuttle-pct{d}"),
        }
    }
    pub fn parse_key(s: &str) -> Option<Tool> {
        Some(match s {
            "pulse-random" => Tool::PulseRandom,
            "pulse-random-time" => Tool::PulseRandomTime,
            "pulse-pos" => Tool::PulsePos,
            "pulse-portfolio" => Tool::PulsePortfolio,
            "loom-dfs" => Tool::Loom(None),
            "shuttle-random" => Tool::ShuttleRandom,
            _ => {
                if let Some(d) = s.strip_prefix("pulse-pct") {
                    Tool::PulsePct(d.parse().ok()?)
                } else if let Some(d) = s.strip_prefix("pulse-roles") {
                    Tool::PulseRoles(d.parse().ok()?)
                } else if let Some(b) = s.strip_prefix("pulse-dfs") {
                    Tool::PulseDfs(b.parse().ok()?)
                } else if let Some(b) = s.strip_prefix("pulse-dpor") {
                    Tool::PulseDpor(b.parse().ok()?)
                } else if let Some(b) = s.strip_prefix("loom-pb") {
                    Tool::Loom(Some(b.parse().ok()?))
                } else if let Some(d) = s.strip_prefix("shuttle-pct") {
                    Tool::ShuttlePct(d.parse().ok()?)
                } else {
                    return None;
                }
            }
        })
    }
    pub fn family(self) -> &'static str {
        match self {
            Tool::PulseRandom
            | Tool::PulsePct(_)
            | Tool::PulseRandomTime
            | Tool::PulsePos
            | Tool::PulseRoles(_)
            | Tool::PulseDfs(_)
            | Tool::PulseDpor(_)
            | Tool::PulsePortfolio => "pulse",
            Tool::Loom(_) => "loom",
            Tool::ShuttleRandom | Tool::ShuttlePct(_) => "shuttle",
        }
    }
    pub fn is_deterministic_search(self) -> bool {
        matches!(self, Tool::Loom(_) | Tool::PulseDfs(_) | Tool::PulseDpor(_))
    }
}

#[derive(Clone, Debug)]
pub struct Limits {
    /// executions (schedules) at most
    pub schedules: u64,
    /// wall-clock bound, where the tool has one (loom `max_duration`, shuttle `Config::max_time`)
    pub max_time: Option<Duration>,
    pub seed: u64,
    /// loom `max_branches` (None = loom's default 1,000 or LOOM_MAX_BRANCHES)
    pub loom_max_branches: Option<usize>,
}

#[derive(Clone, Debug)]
pub struct Run {
    pub executions: u64,
    /// the tool's own count of scheduling decisions over all executions, where it has one
    pub decisions: Option<u64>,
    pub elapsed: Duration,
    /// pulse: wall time from the entry point to the failure's detection (its first panic, or
    /// the moment the execution was found stuck), without the failure report
    /// (`Report::detected_at` less the entry point's instant)
    pub search: Option<Duration>,
    /// first failure: its message (pulse: kind + message)
    pub failure: Option<String>,
    /// the search ran out of schedules before the budget (loom DFS finished the state space)
    pub complete: bool,
}

/// Message of a caught panic payload.
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".into()
    }
}

pub fn run(tool: Tool, f: fn(), lim: &Limits) -> Run {
    match tool {
        #[cfg(feature = "pulse")]
        Tool::PulseRandom => run_pulse(f, pulse::Strategy::Random, pulse::TimeMode::Portfolio, lim),
        #[cfg(feature = "pulse")]
        Tool::PulsePct(depth) => run_pulse(
            f,
            pulse::Strategy::Pct { depth, k: None },
            pulse::TimeMode::Portfolio,
            lim,
        ),
        #[cfg(feature = "pulse")]
        Tool::PulseRandomTime => run_pulse(
            f,
            pulse::Strategy::Random,
            pulse::TimeMode::TIME_RANDOM,
            lim,
        ),
        #[cfg(feature = "pulse")]
        Tool::PulsePos => run_pulse(f, pulse::Strategy::Pos, pulse::TimeMode::Portfolio, lim),
        #[cfg(feature = "pulse")]
        Tool::PulseRoles(depth) => run_pulse(
            f,
            pulse::Strategy::Roles { depth, roles: None },
            pulse::TimeMode::Portfolio,
            lim,
        ),
        #[cfg(feature = "pulse")]
        Tool::PulseDfs(bound) => run_pulse(
            f,
            pulse::Strategy::Dfs { bound },
            pulse::TimeMode::Portfolio,
            lim,
        ),
        #[cfg(feature = "pulse")]
        Tool::PulseDpor(bound) => run_pulse(
            f,
            pulse::Strategy::Dpor { bound },
            pulse::TimeMode::Portfolio,
            lim,
        ),
        #[cfg(feature = "pulse")]
        Tool::PulsePortfolio => run_pulse(
            f,
            pulse::Strategy::Portfolio,
            pulse::TimeMode::Portfolio,
            lim,
        ),
        #[cfg(not(feature = "pulse"))]
        Tool::PulseRandom
        | Tool::PulsePct(_)
        | Tool::PulseRandomTime
        | Tool::PulsePos
        | Tool::PulseRoles(_)
        | Tool::PulseDfs(_)
        | Tool::PulseDpor(_)
        | Tool::PulsePortfolio => {
            panic!("pulse-bench was built without the `pulse` feature")
        }
        Tool::Loom(bound) => run_loom(f, bound, lim),
        Tool::ShuttleRandom | Tool::ShuttlePct(_) => run_shuttle(f, tool, lim),
    }
}

#[cfg(feature = "pulse")]
fn run_pulse(f: fn(), strategy: pulse::Strategy, time: pulse::TimeMode, lim: &Limits) -> Run {
    let mut b = pulse::Builder::new()
        .time(time)
        .schedules(lim.schedules)
        .seed(lim.seed)
        .strategy(strategy);
    // `PULSE_MEMORY=sc|relaxed` measures either memory model (README, "Memory model").
    if let Some(m) = std::env::var("PULSE_MEMORY")
        .ok()
        .and_then(|m| m.parse().ok())
    {
        b = b.memory(m);
    }
    let start = start_clock();
    let report = match lim.max_time {
        Some(t) => b.run_for(t, f),
        None => b.run(f),
    };
    let elapsed = start.elapsed();
    Run {
        executions: report.executions,
        decisions: Some(report.decisions),
        elapsed,
        // From the same instant as `elapsed` and the peers' time to first panic: run_for's
        // setup before the search counts, the search's teardown after its report does not.
        search: report
            .detected_at
            .map(|at| at.saturating_duration_since(start)),
        failure: report
            .failure
            .map(|fl| format!("{:?}: {}", fl.kind, fl.message)),
        complete: report.exhaustive.is_some(),
    }
}

fn run_loom(f: fn(), bound: Option<usize>, lim: &Limits) -> Run {
    let mut b = loom::model::Builder::new();
    // loom checks `i >= max_permutations` before running iteration i (i counts from 1), so
    // Some(n + 1) runs n executions. It checks both bounds only every `checkpoint_interval`
    // iterations (default 20,000): 1 makes the bounds exact.
    b.max_permutations = Some(lim.schedules as usize + 1);
    b.checkpoint_interval = 1;
    b.max_duration = lim.max_time;
    b.preemption_bound = bound;
    if let Some(mb) = lim.loom_max_branches {
        b.max_branches = mb;
    }
    EXECS.store(0, Ordering::SeqCst);
    let start = start_clock();
    let r = catch_unwind(AssertUnwindSafe(|| {
        b.check(move || {
            EXECS.fetch_add(1, Ordering::Relaxed);
            f()
        })
    }));
    let elapsed = start.elapsed();
    let executions = EXECS.load(Ordering::SeqCst);
    let timed_out = lim.max_time.is_some_and(|t| elapsed >= t);
    Run {
        executions,
        decisions: None,
        elapsed,
        search: None,
        complete: r.is_ok() && executions < lim.schedules && !timed_out,
        failure: r.err().map(|p| panic_message(&*p)),
    }
}

fn run_shuttle(f: fn(), tool: Tool, lim: &Limits) -> Run {
    use shuttle::scheduler::{PctScheduler, RandomScheduler};
    let mut cfg = shuttle::Config::new();
    cfg.silence_warnings = true;
    cfg.failure_persistence = shuttle::FailurePersistence::None;
    cfg.max_time = lim.max_time;
    EXECS.store(0, Ordering::SeqCst);
    SWITCHES.store(0, Ordering::SeqCst);
    let body = move || {
        EXECS.fetch_add(1, Ordering::Relaxed);
        f();
        SWITCHES.fetch_add(
            shuttle::current::context_switches() as u64,
            Ordering::Relaxed,
        );
    };
    let n = lim.schedules as usize;
    let start = start_clock();
    let r = catch_unwind(AssertUnwindSafe(|| match tool {
        Tool::ShuttleRandom => {
            shuttle::Runner::new(RandomScheduler::new_from_seed(lim.seed, n), cfg).run(body);
        }
        Tool::ShuttlePct(depth) => {
            shuttle::Runner::new(PctScheduler::new_from_seed(lim.seed, depth, n), cfg).run(body);
        }
        _ => unreachable!(),
    }));
    let elapsed = start.elapsed();
    Run {
        executions: EXECS.load(Ordering::SeqCst),
        decisions: Some(SWITCHES.load(Ordering::SeqCst)),
        elapsed,
        search: None,
        failure: r.err().map(|p| panic_message(&*p)),
        complete: false,
    }
}
