//! The search: runs executions one seed after another until one fails or the budget is
//! spent, decides where each runs (this process, or a fresh one for tests that keep state
//! in statics), and turns a failing one into a report by replaying it with tracing on.

use std::sync::Arc;
use std::time::Instant;

use crate::config::{Config, Isolation, Memory};
use crate::execution::Tracing;
use crate::executor::{Cut, Executor, Outcome};
use crate::minimize;
use crate::process::{isolate, os_threads, overflow, panic_hook, watchdog};
use crate::report::backtrace::backtrace_wanted;
use crate::report::explain::{replay_command, seed_command, Explanation, KEPT_TRACE};
use crate::report::failure::{Exhaustive, Failure, FailureKind, Report};
use crate::scheduler::{for_strategy, ReplayScheduler, Scheduler, Strategy};
use pulse_protocol::{env, Schedule, SeedReplay};

/// One execution to run: a fresh one from a seed, or a replay of a schedule.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
#[serde(into = "JobMessage", from = "JobMessage")]
enum Job {
    /// A fresh execution from `seed`; `strategy` (when known) is the one that, run alone from
    /// that seed, makes its choices (`Scheduler::strategy_for`): an isolated worker runs
    /// under it, so its execution is the one this process would have run (adaptive PCT's
    /// `k` is this search's, not a fresh process's).
    Seed {
        seed: u64,
        strategy: Option<Strategy>,
    },
    Replay {
        schedule: Schedule,
        tracing: Tracing,
    },
    /// A systematic search's next execution, from its position
    /// (`Scheduler::save_position`), which goes as the order's bytes; the worker answers
    /// with the position after it.
    Position,
}

/// A `Job` as an isolated run's order carries it (the JSON pulse writes has no enums
/// with data).
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct JobMessage {
    seed: u64,
    /// The seed's strategy (`Strategy` text).
    #[serde(default)]
    strategy: Option<String>,
    /// A schedule's text (choices and time mode).
    replay: Option<String>,
    tracing: bool,
    /// The first step traced, when `tracing`.
    #[serde(default)]
    trace_from: u64,
    /// A systematic search's execution from its position (`Job::Position`).
    #[serde(default)]
    position: bool,
}

impl From<Job> for JobMessage {
    fn from(job: Job) -> Self {
        match job {
            Job::Seed { seed, strategy } => JobMessage {
                seed,
                strategy: strategy.map(|s| s.to_string()),
                replay: None,
                tracing: false,
                trace_from: 0,
                position: false,
            },
            Job::Replay { schedule, tracing } => JobMessage {
                seed: 0,
                strategy: None,
                replay: Some(schedule.to_string()),
                tracing: tracing != Tracing::Off,
                trace_from: match tracing {
                    Tracing::Off => 0,
                    Tracing::From(step) => step,
                },
                position: false,
            },
            Job::Position => JobMessage {
                seed: 0,
                strategy: None,
                replay: None,
                tracing: false,
                trace_from: 0,
                position: true,
            },
        }
    }
}

impl From<JobMessage> for Job {
    fn from(m: JobMessage) -> Self {
        if m.position {
            return Job::Position;
        }
        // The parent wrote this text from a `Schedule`: it parses.
        match m.replay.and_then(|s| s.parse().ok()) {
            None => Job::Seed {
                seed: m.seed,
                strategy: m.strategy.and_then(|s| s.parse().ok()),
            },
            Some(schedule) => Job::Replay {
                schedule,
                tracing: match m.tracing {
                    false => Tracing::Off,
                    true => Tracing::From(m.trace_from),
                },
            },
        }
    }
}

impl std::fmt::Display for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Job::Seed { seed, .. } => write!(f, "seed {seed}"),
            Job::Replay { schedule, .. } => write!(f, "the replay of {schedule}"),
            Job::Position => write!(f, "the search's next schedule"),
        }
    }
}

/// Threads left behind (and their stacks, never resumed) before the search moves to one
/// process per schedule: a few hundred 2 MiB reservations cost little, unbounded ones can
/// exhaust the address space or the kernel's mapping limit. Not higher: every mapping kept
/// makes each later process spawn slower (measured at 4,096: 15 ms per spawn, and
/// auto-update's fixed twin over 10,000 schedules took 512 s instead of 63 s).
const LEAKED_STACKS_LIMIT: usize = 256;

const LEAKING: &str =
    "executions keep leaving threads behind (threads the test never joined, or left by \
     failing schedules); to free their stacks, each schedule now runs in its own process (slower)";

const NO_ISOLATION: &str = "executions ran in this process: only a libtest test can be re-run \
     alone in a fresh one (this run is on the program's own thread)";

/// Said when a test turns out to depend on state left by earlier schedules.
const STATE_CARRIED: &str =
    "a failure appeared after the first schedule that does not reproduce in a fresh \
     process: the test keeps state across runs (a `static` counter, cache or registry), which \
     running it many times in one process would report as a bug, or draws on randomness pulse \
     does not control (a hasher seeded per process). Each schedule now runs in its own process \
     (slower); `PULSE_ISOLATION=always` starts that way, `off` never does";

/// What the warnings above add of the failure they set aside (`outcome`, the search's
/// schedule `index` from 0, its seed if it has one): it may be a real bug that needs the
/// state earlier runs left (a global epoch, a pool), so the reader can still look at it.
fn set_aside(outcome: &Outcome, seed: Option<u64>, index: u64) -> String {
    let Some(e) = &outcome.explanation else {
        return String::new();
    };
    let headline = e.message.lines().next().unwrap_or_default();
    let seed = seed.map(|s| format!(", seed {s}")).unwrap_or_default();
    format!(
        ". The failure set aside (schedule {}{seed}): a {} in thread '{}': {headline}; \
         `--isolation off` reports it as found",
        index + 1,
        e.kind.title(),
        e.thread,
    )
}

/// The least time a fresh process gets to run again, from a clean state, an execution
/// that failed in this one (its start has the isolator's own grace): a short execution run
/// on a loaded machine.
const CONFIRM_AT_LEAST: std::time::Duration = std::time::Duration::from_secs(10);

/// How much longer than the execution took here its confirmation may take.
const CONFIRM_SLOWDOWN: u32 = 4;

/// The time a fresh process gets to run again an execution that took `took` here.
fn confirm_allowance(took: std::time::Duration) -> std::time::Duration {
    (took * CONFIRM_SLOWDOWN).max(CONFIRM_AT_LEAST)
}

/// Whether a fresh process's answer says nothing of the failure it was to confirm: it was
/// cut by its time, or the worker was killed or could not answer (a tool error).
fn inconclusive(fresh: &Outcome) -> bool {
    fresh.cut.is_some()
        || fresh
            .explanation
            .as_ref()
            .is_some_and(|e| e.kind == FailureKind::ToolError)
}

/// Why a fresh process's run said nothing: its explanation's first line.
fn why_inconclusive(fresh: &Outcome) -> String {
    fresh
        .explanation
        .as_ref()
        .map(|e| e.message.lines().next().unwrap_or_default().to_string())
        .unwrap_or_else(|| "it was cut by its time".to_string())
}

/// Said when a fresh process could not confirm a failure this process found.
fn unconfirmed(fresh: &Outcome, index: u64) -> String {
    let why = why_inconclusive(fresh);
    format!(
        "the failure at schedule {} could not be checked in a fresh process ({why}); it is \
         reported as this process found it, where state earlier schedules left behind may \
         play a part",
        index + 1
    )
}

/// Said when a later execution offers no choice where the first offered some.
const PATH_CHANGED: &str =
    "a schedule after the first made no scheduling choice where the first made some: the \
     test keeps state across runs (a `static` flag, cache or registry) that sends later runs \
     down another path, so running it many times in one process would test that path alone. \
     Each schedule now runs in its own process (slower); `PULSE_ISOLATION=always` starts that \
     way, `off` never does";

/// Why a systematic search (dfs, dpor) started over in fresh processes: each proves
/// something only of runs that start from the same state, which statics break.
const RESTARTED: &str = "the search started over with each schedule in its own process \
     (slower; `PULSE_ISOLATION=always` starts that way, `off` never does)";

const RUNS_DIFFER_RESTART: &str =
    "the test's runs in this process do not start from the same state: one ended before the \
     choices the search replayed in it (a `static` flag, cache, registry or global thread pool)";

const SHARED_RESTART: &str =
    "an object the test uses is shared between its runs (above), so they do not start from \
     the same state";

const STATE_CARRIED_RESTART: &str =
    "a failure appeared after the first schedule that does not reproduce when its schedule is \
     replayed in a fresh process: the test keeps state across runs (a `static` counter, cache \
     or registry), or draws on randomness pulse does not control (a hasher seeded per process)";

/// Said where a systematic search's runs differ and cannot move to fresh processes.
const RUNS_DIFFER_SYSTEMATIC: &str =
    "not a proof: some runs ended before the choices the search replayed in them, so the \
     test's runs in this process do not start from the same state (a `static` flag, cache, \
     registry or global thread pool), and the search explored another program than the \
     test's first run; its schedules could not run in fresh processes here \
     (`PULSE_ISOLATION=off`, or a run that is not a libtest test)";

const STATE_CARRIED_SYSTEMATIC: &str =
    "this failure came after the first schedule, and the test keeps state in statics (above): \
     its schedules ran in this one process (`PULSE_ISOLATION=off`, or a run that is not a \
     libtest test), so the failure may come from what earlier schedules left there, and its \
     schedule may not replay on its own";

struct Search {
    executor: Executor,
    /// Each execution runs in a fresh process started by `isolator` (`Isolation`).
    isolated: bool,
    /// The failure was found again from a clean process: not state left by earlier
    /// executions, so it may be minimized here (the minimized schedule's traced replay,
    /// in a fresh process, must still reproduce it).
    failure_confirmed_fresh: bool,
    isolator: Option<isolate::Isolator>,
}

/// A failing execution longer than this is reported as found, not minimized: every candidate
/// schedule replays about as many steps, so a stress test's step-limit failure (1,000,000
/// steps, ~1 s a replay in a debug build) spent the whole budget (10 s) finding nothing,
/// per test (crossbeam-channel's 16 in the s12 trial).
const MINIMIZE_MAX_STEPS: u64 = 100_000;

pub(crate) fn run(config: &Config, f: &dyn Fn()) -> Report {
    panic_hook::install();
    overflow::install();
    let started = Instant::now();
    let run_id = isolate::RunId::next();
    let role = isolate::role::<Job>(&run_id);
    let replaying = config.replay.is_some();
    let scheduler: Box<dyn Scheduler> = match &config.replay {
        Some(schedule) => Box::new(ReplayScheduler::new(schedule)),
        None => for_strategy(
            &config.strategy,
            config.odds,
            config.memory.relaxed_for_systematic_search(),
        ),
    };
    let base_seed = config.seed.unwrap_or_else(random_seed);
    let planned = if replaying { 1 } else { config.schedules };
    let mut search = Search {
        executor: Executor::new(config.clone(), scheduler),
        isolated: false,
        failure_confirmed_fresh: false,
        isolator: None,
    };
    let _watchdog = config.blocking_timeout.map(|timeout| {
        let hb = Arc::new(watchdog::Heartbeat::default());
        search.executor.state().heartbeat = Some(hb.clone());
        watchdog::start(
            hb,
            timeout,
            config.on_blocked.clone(),
            config.progress.clone(),
            watchdog::KnownCrates {
                home: config.home_crate.clone(),
                instrumented: config.instrumented.clone(),
                not_instrumented: config.not_instrumented.clone(),
            },
        )
    });
    let mut report = Report {
        executions: 0,
        decisions: 0,
        choices: 0,
        elapsed: Default::default(),
        search_time: Default::default(),
        detected_at: None,
        failure: None,
        warnings: Vec::new(),
        os_threads: Vec::new(),
        exhaustive: None,
        trace: None,
    };
    // The last execution's schedule, replayed with tracing after a passing run
    // (`Config::trace_passing`).
    let mut last: Option<Schedule> = None;
    // A search that carries its position from one execution to the next (dfs, dpor) moves
    // it to a fresh process and back, where it runs executions there (`Job::Position`).
    let by_seed = search.executor.state().scheduler.by_seed();
    match role {
        isolate::Role::Serve {
            job,
            bytes,
            reply,
            wall_clock,
            time_left,
        } => {
            // This process was started to run one job of this run: run it and answer, under
            // the strategy the search would have run that seed with, from the run's date,
            // cut where the test's time limit runs out.
            search.executor.state().wall_clock = wall_clock;
            search.executor.state().cut_at = time_left.map(|left| Instant::now() + left);
            if let Job::Seed {
                strategy: Some(strategy),
                ..
            } = &job
            {
                search.executor.state().scheduler = for_strategy(
                    strategy,
                    config.odds,
                    config.memory.relaxed_for_systematic_search(),
                );
            }
            search.executor.state().journal = reply.journal();
            let (mut outcome, back) = match job {
                Job::Position => search.run_from_position(f, &bytes.unwrap_or_default()),
                job => (search.run_job(f, job), None),
            };
            outcome.warnings = std::mem::take(&mut search.executor.state().warnings);
            reply.send(&outcome, back.as_deref())
        }
        // A replay runs in process unless asked (a crash's replay line asks: there it is
        // caught and reported as the search reported it), but keeps the isolator: its
        // traced re-run, when it goes another way in this process (state the replayed
        // execution left in statics), is checked in a fresh one.
        isolate::Role::Search if config.isolation != Isolation::Off => {
            let wall_clock = search.executor.state().wall_clock;
            search.isolator = isolate::Isolator::new(run_id, config.blocking_timeout, wall_clock);
            if search.isolator.is_none() && config.isolation == Isolation::Always {
                search.executor.state().warn(NO_ISOLATION.to_string());
            }
        }
        isolate::Role::Search | isolate::Role::Bystander => {}
    }
    search.isolated = config.isolation == Isolation::Always && search.isolator.is_some();
    let mut last_progress = Instant::now();
    search.executor.state().reported = (0, planned);
    let threads_before = config.watch_os_threads.then(os_threads::Snapshot::take);
    let mut i = 0;
    let mut first_had_choices = false;
    // A systematic search had nothing left to run.
    let mut ran_out = false;
    let deadline = config.time_budget.map(|limit| started + limit);
    // The most steps an execution of this test took and passed.
    let mut longest_passed = 0;
    while i < planned {
        // `run_job` prepares the scheduler for the seed, here or in an isolated worker.
        let seed = base_seed.wrapping_add(i);
        // The strategy this seed's execution runs under, as one that replays from the seed.
        let mut strategy = match replaying {
            false => search.executor.state().scheduler.strategy_for(seed),
            true => None,
        };
        let mut fallback_seed = None;
        let execution_started = Instant::now();
        let mut outcome = if by_seed || replaying {
            let cut_at = deadline.filter(|_| !replaying);
            search.until(cut_at, |s| s.execute(f, Job::Seed { seed, strategy }))
        } else {
            let more = search.executor.state().scheduler.new_execution(seed);
            if let Some(why) = search.restart_reason() {
                search.start_over(config, why, &mut report);
                i = 0;
                continue;
            }
            if !more {
                let covered = {
                    let mut st = search.executor.state();
                    if st.scheduler.diverged() {
                        st.warn(RUNS_DIFFER_SYSTEMATIC.to_string());
                    }
                    st.scheduler.exhaustive()
                };
                report.exhaustive = covered.map(|c| Exhaustive {
                    schedules: report.executions,
                    bound: c.bound,
                    pruned: c.pruned,
                    spurious_limited: c.spurious_limited,
                    no_choice: false,
                });
                ran_out = true;
                break;
            }
            search.until(deadline, |s| s.execute_systematic(f))
        };
        // The fresh process that confirms a failure gets this long to run it again.
        let took = execution_started.elapsed();
        let confirm_by = Some(Instant::now() + confirm_allowance(took));
        // Cut past its step bound, but before it had taken as many steps as a schedule of
        // this test that passed: a long test, not a runaway one.
        let only_long = outcome.cut == Some(Cut::PastBound) && outcome.steps <= longest_passed;
        match (outcome.cut, report.executions) {
            // Cut past its step bound: a step-limit finding (explained as one), reported
            // without a traced replay, which would take as long again.
            (Some(Cut::PastBound), _) if !only_long => outcome.failed = true,
            // A first execution cut short of its bound: the test has no verdict.
            (Some(Cut::BeforeBound), 0) => {
                let why = outcome.explanation.take().map(|e| e.message);
                outcome = Outcome::lost(FailureKind::ToolError, why.unwrap_or_default());
            }
            // A later one: as if the limit had come between schedules.
            (Some(_), ran) => {
                let past = match only_long {
                    true => format!(
                        " (past the step bound, no more than the {longest_passed} an earlier \
                         schedule took to pass)"
                    ),
                    false => String::new(),
                };
                let warning = format!(
                    "{} the test's time limit ran out during schedule {} of {planned}, which was \
                     cut after {} steps{past}; the {ran} before it all passed. `--test-time` sets \
                     it (`none`: run them all)",
                    env::TIME_LIMIT_REACHED,
                    ran + 1,
                    outcome.steps
                );
                search.executor.state().warn(warning);
                break;
            }
            (None, _) if !outcome.failed => longest_passed = longest_passed.max(outcome.steps),
            (None, _) => {}
        }
        if outcome.failed
            && i > 0
            && !search.isolated
            && !outcome.crashed
            && outcome.cut.is_none()
            && !by_seed
        {
            // A systematic search's failure, replayed in a fresh process: if it does not
            // fail there, it came from state earlier executions left behind.
            let schedule = Schedule::new(outcome.schedule.clone())
                .with_time(outcome.time)
                .with_relaxed(outcome.relaxed);
            let job = Job::Replay {
                schedule,
                tracing: Tracing::Off,
            };
            if let Some(fresh) = search.confirm_fresh(&job, confirm_by, report.executions) {
                let reproduced = fresh.failed
                    && fresh
                        .explanation
                        .as_ref()
                        .is_some_and(|e| e.kind != FailureKind::ReplayDiverged);
                if !reproduced {
                    let why = format!(
                        "{STATE_CARRIED_RESTART}{}",
                        set_aside(&outcome, None, report.executions)
                    );
                    search.start_over(config, &why, &mut report);
                    i = 0;
                    continue;
                }
                search.isolated = true;
                search.failure_confirmed_fresh = true;
                outcome = fresh;
            }
        }
        if outcome.failed
            && i > 0
            && !search.isolated
            && !outcome.crashed
            && outcome.cut.is_none()
            && by_seed
        {
            // The same seed from a clean process (its schedule would not fit: from clean
            // state the program takes another path). If that passes, the failure came from
            // state earlier executions left behind.
            let job = Job::Seed { seed, strategy };
            if let Some(fresh) = search.confirm_fresh(&job, confirm_by, report.executions) {
                search.isolated = true;
                if !fresh.failed {
                    let warning = format!(
                        "{STATE_CARRIED}{}",
                        set_aside(&outcome, Some(seed), report.executions)
                    );
                    search.executor.state().warn(warning);
                    continue; // this schedule again, in its own process
                }
                // A real failure: report it as a clean process sees it, and replay it there.
                if let Some(note) = failed_otherwise(&outcome, &fresh) {
                    search.executor.state().warn(note);
                }
                search.failure_confirmed_fresh = true;
                outcome = fresh;
            }
        }
        if i == 0 {
            first_had_choices = !outcome.schedule.is_empty();
        }
        if i > 0
            && by_seed
            && first_had_choices
            && outcome.schedule.is_empty()
            && !outcome.failed
            && !search.isolated
            && search.isolator.is_some()
        {
            // Where the first execution had choices, a later one with none took another path
            // from state the earlier ones left (a flag set on first use): the schedules that
            // remain would all be that one. From here each runs from a clean process.
            search.isolated = true;
            search.executor.state().warn(PATH_CHANGED.to_string());
            continue; // this schedule again, in its own process
        }
        if outcome.failed && i > 0 && !by_seed && !replaying && !search.isolated {
            // `dfs` and `dpor` could not re-run the failure in a fresh process: say that
            // state kept in statics may be its cause.
            let mut st = search.executor.state();
            let shared = st
                .warnings
                .iter()
                .any(|w| w.contains(crate::object::SHARED_BETWEEN_EXECUTIONS));
            if shared {
                st.warn(STATE_CARRIED_SYSTEMATIC.to_string());
            }
        }
        if let Some(schedule) = config.replay.as_ref().filter(|_| replaying) {
            // A recorded failure's schedule that passes leads elsewhere now: with a seed to
            // fall back to, that counts too.
            let passed = (!outcome.failed && config.replay_fallback.is_some()).then(|| {
                format!(
                    "all {} of its choices were taken and the program passed: it no longer leads \
                     to the recorded failure",
                    outcome.schedule.len()
                )
            });
            if let Some(diverged) = diverged(&outcome, schedule).or(passed) {
                let mut warning = format!("the schedule no longer fits the program ({diverged})");
                match config.replay_fallback {
                    Some(fallback) => {
                        outcome = search.run_fallback(f, fallback, schedule);
                        strategy = Some(fallback.strategy);
                        fallback_seed = Some(fallback.seed);
                        warning.push_str(&format!(
                            "; {} {} under {} instead: {}",
                            pulse_protocol::FELL_BACK_TO_SEED,
                            fallback.seed,
                            fallback.strategy,
                            if outcome.failed {
                                "it failed (below)"
                            } else {
                                "it passed, so the failure did not reproduce"
                            }
                        ));
                    }
                    None => warning.push_str(
                        "; a failure file also keeps the seed, and `--replay FILE` replays from it then",
                    ),
                }
                search.executor.state().warn(warning);
            }
        }
        report.search_time = match outcome.detected_at.filter(|_| outcome.failed) {
            Some(at) => at.saturating_duration_since(started),
            None => started.elapsed(),
        };
        report.detected_at = outcome.failed.then(|| started + report.search_time);
        report.executions += 1;
        report.decisions += outcome.steps;
        report.choices += outcome.schedule.len() as u64;
        if search.executor.leaked_stacks() > LEAKED_STACKS_LIMIT
            && !search.isolated
            && search.isolator.is_some()
        {
            // Every stack left behind stays mapped; a fresh process per schedule frees them.
            search.isolated = true;
            search.executor.state().warn(LEAKING.to_string());
        }
        // Checked after the first execution too: threads it started may have ended by the last.
        if let (0, Some(before)) = (i, &threads_before) {
            note_unscheduled_threads(before, &mut report.os_threads);
        }
        if config.trace_passing && !outcome.failed {
            last = Some(
                Schedule::new(outcome.schedule.clone())
                    .with_time(outcome.time)
                    .with_relaxed(outcome.relaxed),
            );
        }
        if outcome.failed {
            // A seed replays a sampling strategy's execution, not a systematic search's.
            let seed = (!replaying && by_seed).then_some(seed).or(fallback_seed);
            let found = Found {
                seed,
                strategy: seed.and(strategy),
                index: i,
                executions: report.executions,
                took,
            };
            report.failure = Some(search.explain(config, f, outcome, found));
            break;
        }
        if i == 0 && outcome.schedule.is_empty() && by_seed && !replaying {
            // Nothing was left to a choice (one thread at every step, no weak CAS, no test
            // data): every seed runs this same execution. A long single-threaded test would
            // otherwise repeat it for the whole budget (chashmap's `lots_of_insertions`).
            // The first execution only: a later one may offer no choice because an earlier
            // one changed a static (a registry built once), and the first's choices count.
            report.exhaustive = Some(Exhaustive {
                schedules: 1,
                bound: 0,
                pruned: false,
                spurious_limited: false,
                no_choice: true,
            });
            break;
        }
        // Checked after every execution: a stress test's take a second or more.
        let ended_by = config
            .step_budget
            .filter(|&b| report.decisions >= b)
            .map(|b| {
                (
                    env::STEP_BUDGET_REACHED,
                    format!("{b} steps"),
                    "--test-steps",
                )
            })
            .or_else(|| {
                let limit = config.time_budget.filter(|&b| started.elapsed() >= b)?;
                Some((env::TIME_LIMIT_REACHED, format!("{limit:?}"), "--test-time"))
            });
        if let Some((prefix, budget, flag)) = ended_by {
            if report.executions < planned {
                let warning = cut_short_warning(prefix, &budget, flag, report.executions, planned);
                search.executor.state().warn(warning);
            }
            break;
        }
        if let Some(progress) = &config.progress {
            // Every 100 ms at most, checked after every execution: one that takes a second
            // (a stress test) must not leave the driver without news for 64 of them, which
            // it takes for a stall past a minute.
            if last_progress.elapsed().as_millis() >= 100 {
                progress(report.executions, planned);
                let mut state = search.executor.state();
                state.reported = (report.executions, planned);
                if let Some(hb) = &state.heartbeat {
                    hb.reported(report.executions, planned);
                }
                last_progress = Instant::now();
            }
        }
        i += 1;
    }
    if let Some(progress) = &config.progress {
        // An exhausted search is complete with fewer executions than planned, and so is a
        // systematic one that ran out without being a proof (its runs differed).
        let planned = match report.exhaustive.is_some() || ran_out {
            true => report.executions,
            false => planned,
        };
        progress(report.executions, planned);
    }
    for warning in os_threads::take_outside_uses() {
        search.executor.state().warn(warning);
    }
    if let Some(before) = &threads_before {
        note_unscheduled_threads(before, &mut report.os_threads);
        if !report.os_threads.is_empty() {
            let warning = unscheduled_threads_warning(&report.os_threads);
            search.executor.state().warn(warning);
        }
    }
    if let (None, Some(schedule)) = (&report.failure, last) {
        let text = schedule.to_string();
        let outcome = search.run_job(
            f,
            Job::Replay {
                schedule,
                tracing: Tracing::From(0),
            },
        );
        if let (None, Some(why)) = (&outcome.passed_trace, &outcome.explanation) {
            search.executor.state().warn(format!(
                "no trace of the passing run was written: its traced re-run did not pass \
                 ({}), so the test's runs depend on state kept between them (statics) or \
                 on nondeterminism outside pulse",
                why.message
            ));
        }
        report.trace = outcome.passed_trace.map(|mut t| {
            t.test = std::thread::current().name().unwrap_or("").to_string();
            t.outcome = "passed".to_string();
            // Nothing failed: no event is the failure's (the last one was taken for it).
            t.failing_event = None;
            t.schedule = text;
            t
        });
    }
    report.warnings = std::mem::take(&mut search.executor.state().warnings);
    if let Some(failure) = &mut report.failure {
        failure.warnings = report.warnings.clone();
    }
    report.elapsed = started.elapsed();
    report
}

/// Said of a search its time limit or step budget (`budget`, set by `flag`) ended before
/// its planned schedules; it begins with `prefix`, which the harness contract reads.
fn cut_short_warning(prefix: &str, budget: &str, flag: &str, ran: u64, planned: u64) -> String {
    format!(
        "{prefix} the test's {budget} ran out after {ran} of its {planned} schedules, all \
         passing; `{flag}` sets it (`none`: run them all)"
    )
}

fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    // Keep seeds short enough to type.
    h.finish() % 1_000_000_000_000
}

impl Search {
    /// Runs `execution` (one of the search's own, not a replay) cut at `cut_at`, here or in
    /// a worker (`execute_isolated_with` passes on what is left).
    fn until<T>(&mut self, cut_at: Option<Instant>, execution: impl FnOnce(&mut Self) -> T) -> T {
        self.executor.state().cut_at = cut_at;
        let result = execution(self);
        self.executor.state().cut_at = None;
        result
    }

    /// Runs one execution, in a fresh process when `isolated` (and that can be done), else
    /// in this one.
    fn execute(&mut self, f: &dyn Fn(), job: Job) -> Outcome {
        if self.isolated {
            if let Some(outcome) = self.execute_isolated(&job) {
                return outcome;
            }
            self.isolated = false;
        }
        self.run_job(f, job)
    }

    /// Runs `job` in this process: a seeded execution (the scheduler was prepared by the
    /// caller) or a replay.
    fn run_job(&mut self, f: &dyn Fn(), job: Job) -> Outcome {
        match job {
            Job::Seed { seed, .. } => {
                let (time, relaxed) = {
                    let mut st = self.executor.state();
                    st.scheduler.new_execution(seed);
                    conditions(&st.config, &job)
                };
                self.executor.run(f, Tracing::Off, time, relaxed)
            }
            Job::Replay { schedule, tracing } => {
                let replay = Box::new(ReplayScheduler::new(&schedule));
                self.run_under(f, replay, 0, &schedule, tracing)
            }
            // Only a worker runs one, with the position that came with it.
            Job::Position => self.run_from_position(f, &[]).0,
        }
    }

    /// Runs a systematic search's next execution from `position` (in a worker), and says
    /// where the search is after it.
    fn run_from_position(&mut self, f: &dyn Fn(), position: &[u8]) -> (Outcome, Option<Vec<u8>>) {
        let resumed = self.executor.state().scheduler.resume(position);
        if let Err(e) = resumed {
            let message = format!("pulse could not read the search's position ({e})");
            return (Outcome::lost(FailureKind::ToolError, message), None);
        }
        let outcome = self.run_systematic(f);
        let back = self.executor.state().scheduler.save_position();
        (outcome, back)
    }

    /// Runs a systematic search's next execution (its scheduler is at the position), under
    /// the time mode and memory model such a search runs.
    fn run_systematic(&mut self, f: &dyn Fn()) -> Outcome {
        let (time, relaxed) = conditions(&self.executor.state().config, &Job::Position);
        self.executor.run(f, Tracing::Off, time, relaxed)
    }

    /// Runs a systematic search's next execution: from its position in a fresh process when
    /// `isolated` (and that can be done), then on from the position the worker reached;
    /// else in this process.
    fn execute_systematic(&mut self, f: &dyn Fn()) -> Outcome {
        if self.isolated {
            let position = self.executor.state().scheduler.save_position();
            let reply = position.and_then(|p| self.execute_isolated_with(&Job::Position, Some(&p)));
            if let Some((outcome, back)) = reply {
                if let Some(e) = outcome
                    .explanation
                    .as_ref()
                    .filter(|e| e.kind == FailureKind::ReplayDiverged)
                {
                    // Not a verdict on the test: the search cannot go on.
                    let strategy = self.executor.state().config.strategy;
                    return Outcome::lost(
                        FailureKind::ToolError,
                        format!(
                            "{strategy} cannot search this test: a schedule it replayed in a fresh \
                             process went another way after {} choices (in {}), so the test's runs \
                             differ even from a clean start: nondeterminism outside pulse \
                             (randomness from the OS, such as `rand::thread_rng`; real time; \
                             threads pulse does not schedule). dfs and dpor need every run to go \
                             alike; the sampling strategies (the default) do not",
                            outcome.schedule.len(),
                            e.thread
                        ),
                    );
                }
                let resumed = back.map(|p| self.executor.state().scheduler.resume(&p));
                if let Some(Err(e)) = resumed {
                    return Outcome::lost(
                        FailureKind::ToolError,
                        format!("pulse could not read the position an isolated execution sent back ({e})"),
                    );
                }
                return outcome;
            }
            self.isolated = false;
        }
        self.run_systematic(f)
    }

    /// Why a systematic search running in this process should start over in fresh ones
    /// (it can): its runs here do not start from the same state.
    fn restart_reason(&mut self) -> Option<&'static str> {
        if self.isolated || self.isolator.is_none() {
            return None;
        }
        let st = self.executor.state();
        if st.scheduler.diverged() {
            Some(RUNS_DIFFER_RESTART)
        } else if st
            .warnings
            .iter()
            .any(|w| w.contains(crate::object::SHARED_BETWEEN_EXECUTIONS))
        {
            Some(SHARED_RESTART)
        } else {
            None
        }
    }

    /// Starts a systematic search over with a fresh scheduler, each execution in its own
    /// process from here on; what ran so far does not count.
    fn start_over(&mut self, config: &Config, why: &str, report: &mut Report) {
        let mut st = self.executor.state();
        st.scheduler = for_strategy(
            &config.strategy,
            config.odds,
            config.memory.relaxed_for_systematic_search(),
        );
        st.warn(format!("{why}; {RESTARTED}"));
        self.isolated = true;
        report.executions = 0;
        report.decisions = 0;
        report.choices = 0;
    }

    /// Runs one execution under `scheduler` (started at `seed`), with the time mode and
    /// memory model `schedule` names, then puts the search's scheduler back.
    fn run_under(
        &mut self,
        f: &dyn Fn(),
        scheduler: Box<dyn Scheduler>,
        seed: u64,
        schedule: &Schedule,
        tracing: Tracing,
    ) -> Outcome {
        let original = std::mem::replace(&mut self.executor.state().scheduler, scheduler);
        let relaxed = {
            let mut st = self.executor.state();
            st.scheduler.new_execution(seed);
            replays_relaxed(schedule, st.config.memory)
        };
        let outcome = self
            .executor
            .run(f, tracing, schedule.time_params(), relaxed);
        self.executor.state().scheduler = original;
        outcome
    }

    /// Runs the recorded execution a replay falls back to: `fallback`'s strategy from its
    /// seed, under the time mode and memory model the schedule names (the seed drew them).
    fn run_fallback(&mut self, f: &dyn Fn(), fallback: SeedReplay, schedule: &Schedule) -> Outcome {
        // In a fresh process where it can: the replay that did not fit ran in this one, and
        // may have changed what the test keeps in statics.
        let job = Job::Seed {
            seed: fallback.seed,
            strategy: Some(fallback.strategy),
        };
        if let Some(fresh) = self.execute_isolated(&job).filter(|o| !inconclusive(o)) {
            return fresh;
        }
        let (odds, memory) = {
            let st = self.executor.state();
            (st.config.odds, st.config.memory)
        };
        let seeded = for_strategy(
            &fallback.strategy,
            odds,
            memory.relaxed_for_systematic_search(),
        );
        self.run_under(f, seeded, fallback.seed, schedule, Tracing::Off)
    }

    /// Runs `job` in a fresh process, by `by`, to confirm a failure this process found at
    /// schedule `index`; `None` when that cannot be done, or when its answer says nothing
    /// (cut, or killed: said in a warning, and the failure stands as found here).
    fn confirm_fresh(&mut self, job: &Job, by: Option<Instant>, index: u64) -> Option<Outcome> {
        let fresh = self.until(by, |s| s.execute_isolated(job))?;
        if inconclusive(&fresh) {
            let warning = unconfirmed(&fresh, index);
            self.executor.state().warn(warning);
            return None;
        }
        Some(fresh)
    }

    /// Runs `job` in a fresh process; `None` if this run cannot be isolated (then it never
    /// tries again, and says so).
    fn execute_isolated(&mut self, job: &Job) -> Option<Outcome> {
        self.execute_isolated_with(job, None)
            .map(|(outcome, _)| outcome)
    }

    /// `execute_isolated` for a job that comes with `bytes` (a search's position), and the
    /// bytes the answer brought back.
    fn execute_isolated_with(
        &mut self,
        job: &Job,
        bytes: Option<&[u8]>,
    ) -> Option<(Outcome, Option<Vec<u8>>)> {
        // The worker has a watchdog of its own; the isolator's deadline bounds the wait.
        let time_left =
            (self.executor.state().cut_at).map(|at| at.saturating_duration_since(Instant::now()));
        // A sign of life for the driver while the worker runs (`isolate::wait_until`).
        let (done, planned) = self.executor.state().reported;
        let progress = self.executor.state().config.progress.clone();
        let alive = move || {
            if let Some(progress) = &progress {
                progress(done, planned);
            }
        };
        let reply = self.isolator.as_mut()?.run(job, bytes, time_left, &alive);
        let lost = |kind, message| (Outcome::lost(kind, message), None);
        Some(match reply {
            isolate::Reply::Done(outcome, back) => {
                let outcome: Outcome = outcome;
                for w in &outcome.warnings {
                    self.executor.state().warn(w.clone());
                }
                (outcome, back)
            }
            // The worker's watchdog already reported and wrote its record.
            isolate::Reply::Blocked => std::process::exit(watchdog::BLOCKED_EXIT_CODE),
            isolate::Reply::Died { how, stderr, kept } => {
                let conditions = conditions(&self.executor.state().config, job);
                (Outcome::died(with_tail(how, &stderr), kept, conditions), None)
            }
            isolate::Reply::TimedOut { phase, after, stderr } => lost(
                FailureKind::ToolError,
                with_tail(
                    format!(
                        "the isolated run of {job} did not finish within {}s: the test binary {phase}; it was killed",
                        after.as_secs()
                    ),
                    &stderr,
                ),
            ),
            isolate::Reply::Unreachable { how } => {
                self.isolator = None;
                self.executor.state().warn(format!(
                    "executions could not run in fresh processes: a re-run of the test binary ended without \
                     reaching this run ({how}); they ran in this process"
                ));
                return None;
            }
        })
    }

    /// Builds the failure report: replays the failing schedule with tracing on to get the
    /// trace, and checks that the replay fails the same way.
    fn explain(&mut self, config: &Config, f: &dyn Fn(), fast: Outcome, found: Found) -> Failure {
        let failure = self.explain_with(config, f, fast.clone(), &found, true);
        if failure.minimized.is_some() && !failure.reproduced {
            // The minimized schedule did not fail again where it was replayed: report the
            // search's own.
            self.executor
                .state()
                .warn(MINIMIZED_DID_NOT_REPRODUCE.to_string());
            return self.explain_with(config, f, fast, &found, false);
        }
        failure
    }

    fn explain_with(
        &mut self,
        config: &Config,
        f: &dyn Fn(),
        fast: Outcome,
        found: &Found,
        minimize: bool,
    ) -> Failure {
        let Found {
            seed,
            strategy,
            index,
            executions,
            took,
        } = *found;
        let original = Schedule::new(fast.schedule.clone())
            .with_time(fast.time)
            .with_relaxed(fast.relaxed);
        let fast_expl = fast
            .explanation
            .clone()
            .expect("a stopped execution is explained");
        let test = std::thread::current().name().unwrap_or("").to_string();
        let crash = fast_expl.kind == FailureKind::Crash;
        let failure = |expl: Explanation, reproduced: bool| Failure {
            kind: expl.kind,
            message: expl.message,
            location: expl.location,
            thread: expl.thread,
            details: expl.details,
            seed,
            strategy,
            search: (seed.is_none() && config.replay.is_none()).then_some(config.strategy),
            seed_command: seed.zip(strategy).map(|(seed, strategy)| {
                // A crashed execution's outcome was lost with its process: what the seed drew
                // is read off the settings, as the execution itself did.
                let (time, relaxed) = if fast.crashed {
                    (
                        config.time.params_for(seed),
                        config.memory.relaxed_for(seed),
                    )
                } else {
                    (fast.time, fast.relaxed)
                };
                // A time mode the run was given is stated as given: an execution where no
                // thread waited with a deadline replays under any, and says the default.
                let time = match config.time {
                    pulse_protocol::TimeMode::Fixed(given) => given,
                    pulse_protocol::TimeMode::Portfolio => time,
                };
                seed_command(config, seed, &strategy, time, relaxed, &test, crash)
            }),
            replay_command: replay_command(config, &original, seed, &test, crash),
            schedule: original.clone(),
            original_schedule: None,
            minimized: None,
            preemptions: None,
            execution: index,
            executions,
            trace: expl.trace,
            reproduced,
            backtrace: expl.backtrace.filter(|_| backtrace_wanted()),
            warnings: Vec::new(),
            trace_tail: config.trace_tail,
            full_trace: expl.full,
            race: None,
            race_steps: None,
            notes: expl.notes,
        };
        // Said before the traced replay, which may take the process down with it: then what
        // the hook kept (seed, schedule, the first explanation) is all that is left.
        if let Some(found) = &config.on_found {
            // Not replayed yet, so not contradicted either: the pending warning says so.
            let mut first = failure(fast_expl.clone(), true);
            first.warnings.push(REPLAY_PENDING.to_string());
            found(&first);
        }
        // Minimized in this process only: a test whose executions run in fresh processes
        // (statics) would pay a process start per candidate.
        // A replay reports the schedule it was given.
        let here = !self.isolated || self.failure_confirmed_fresh;
        let short = fast.steps <= MINIMIZE_MAX_STEPS;
        let minimized = match (fast.crashed, here && minimize && short, config.minimize) {
            (false, true, Some(budget)) if !original.is_empty() && config.replay.is_none() => {
                let (time, relaxed) = (fast.time, fast.relaxed);
                let executor = &mut self.executor;
                minimize::minimize(&fast.schedule, &fast_expl, budget, &mut |scheduler| {
                    let saved = std::mem::replace(&mut executor.state().scheduler, scheduler);
                    executor.state().scheduler.new_execution(0);
                    let outcome = executor.run(f, Tracing::Off, time, relaxed);
                    executor.state().scheduler = saved;
                    outcome
                })
            }
            _ => None,
        };
        let preemptions = minimized.as_ref().map(|(_, m)| m.preemptions);
        let minimized = minimized.filter(|(_, m)| {
            (m.preemptions, m.steps) != (m.original_preemptions, m.original_steps)
        });
        let (schedule, original, minimized) = match minimized {
            Some((choices, m)) => (
                Schedule::new(choices)
                    .with_time(fast.time)
                    .with_relaxed(fast.relaxed),
                Some(original.clone()),
                Some(m),
            ),
            None => (original.clone(), None, None),
        };
        // A minimized schedule is not its seed's: the replay line names the schedule.
        let replay_seed = if minimized.is_some() { None } else { seed };
        let failure = |expl: Explanation, reproduced: bool| Failure {
            replay_command: replay_command(config, &schedule, replay_seed, &test, crash),
            schedule: schedule.clone(),
            original_schedule: original.clone(),
            minimized: minimized.clone(),
            preemptions,
            ..failure(expl, reproduced)
        };
        let again = match (fast.crashed, seed) {
            // Cut by the time limit: its replay would take as long again.
            (false, _) if fast.cut.is_some() => None,
            (false, _) => Some(Job::Replay {
                schedule: schedule.clone(),
                // What the report keeps of a long execution is its end; of one past its
                // step bound, the loop it was in.
                tracing: Tracing::From(match minimized {
                    None if fast_expl.kind == FailureKind::StepLimit => {
                        fast.steps.saturating_sub(STEP_LIMIT_TAIL)
                    }
                    None => fast.steps.saturating_sub(TRACED_TAIL),
                    Some(_) => 0,
                }),
            }),
            // A crash whose journal kept its schedule: replayed traced from shortly before
            // the last step the journal knew (its trace table's length, and the up to 4,096
            // steps the journal may lag).
            (true, _) if fast.journaled => Some(Job::Replay {
                schedule: schedule.clone(),
                tracing: Tracing::From(fast.steps.saturating_sub(2 * KEPT_TRACE as u64)),
            }),
            // One that left no schedule: its seed says whether the crash reproduces. A worker
            // that never answered is not tried again.
            (true, Some(seed)) if fast_expl.kind == FailureKind::Crash => {
                Some(Job::Seed { seed, strategy })
            }
            (true, _) => None,
        };
        // A minimized schedule fails at the same place, not always with the same words (an
        // assertion's values).
        let alike = |e: &Explanation| match minimized {
            Some(_) => minimize::same_failure(&fast_expl, e),
            None => e.kind == fast_expl.kind && e.message == fast_expl.message,
        };
        let same = |t: &Outcome| t.explanation.as_ref().is_some_and(alike);
        // The failure in the search's own words: a replay that says anything else (the
        // minimized schedule's assertion values, or a static's later value) is checked in a
        // fresh process too.
        let verbatim = |t: &Outcome| {
            t.explanation
                .as_ref()
                .is_some_and(|e| e.kind == fast_expl.kind && e.message == fast_expl.message)
        };
        // A replay in a fresh process is cut when it runs far longer than the failing
        // execution did (in this process a replay has no such limit).
        let fresh_by = || Some(Instant::now() + confirm_allowance(took));
        let mut traced = again.clone().and_then(|job| match fast.crashed {
            // In this process the crash would take the search down with it.
            true => self.until(fresh_by(), |s| s.execute_isolated(&job)),
            false if self.isolated => Some(self.until(fresh_by(), |s| s.execute(f, job))),
            false => Some(self.execute(f, job)),
        });
        // Replayed in this process, the schedule starts from what the failing execution left
        // in statics (a counter it bumped), not from what that execution started from. In a
        // fresh process it starts as the failing one did (the search re-checks failures after
        // the first schedule in one, so here the first schedule or a test that keeps no state
        // failed).
        // A minimized schedule that fails otherwise there was found on state the minimizer's
        // own runs left in statics (r2d2's drop counter, session 29's trial): not reproduced.
        let mut fresh_contradicts = false;
        if let (Some(job), false, false) = (&again, self.isolated, fast.crashed) {
            if !traced.as_ref().is_some_and(verbatim) {
                let fresh = self.until(fresh_by(), |s| s.execute_isolated(job));
                let better =
                    |t: &Outcome| verbatim(t) || (same(t) && !traced.as_ref().is_some_and(same));
                match fresh {
                    Some(fresh) if better(&fresh) => {
                        self.executor.state().warn(REPLAYED_FRESH.to_string());
                        traced = Some(fresh);
                    }
                    Some(fresh) => {
                        fresh_contradicts =
                            minimized.is_some() && !same(&fresh) && !inconclusive(&fresh);
                    }
                    None => {}
                }
            }
        }
        // A replay cut by its time, or a worker killed at its deadline, says nothing of the
        // failure: reported without a trace, not as one that did not reproduce.
        let unfinished = traced.as_ref().is_some_and(inconclusive) && !fast.crashed;
        if let Some(cut) = traced.take_if(|_| unfinished) {
            let why = why_inconclusive(&cut);
            self.executor.state().warn(format!(
                "the failing schedule's traced replay did not finish ({why}): the report has \
                 no trace of it; its replay lines still run it"
            ));
        }
        let traced_expl = traced.and_then(|t| t.explanation);
        let reproduced = traced_expl.as_ref().is_some_and(alike) && !fresh_contradicts;
        let failure = match traced_expl {
            Some(e) if reproduced => failure(e, true),
            // Not replayed, so not contradicted either (a cut execution, or one that left
            // the test without a verdict, or a replay that could not finish).
            None if fast.cut.is_some()
                || fast_expl.kind == FailureKind::ToolError
                || unfinished =>
            {
                failure(fast_expl, true)
            }
            _ => failure(fast_expl, false),
        };
        failure.with_trace_named(&test)
    }
}

/// The time mode and memory model `job`'s execution runs under: a seed's draw (or, in a
/// replay run, the replayed schedule's), a schedule's own, or a systematic search's.
fn conditions(config: &Config, job: &Job) -> (pulse_protocol::TimeParams, bool) {
    let replayed = |schedule: &Schedule| {
        (
            schedule.time_params(),
            replays_relaxed(schedule, config.memory),
        )
    };
    match job {
        Job::Seed { seed, .. } => match &config.replay {
            Some(schedule) => replayed(schedule),
            None => (
                config.time.params_for(*seed),
                config.memory.relaxed_for(*seed),
            ),
        },
        Job::Replay { schedule, .. } => replayed(schedule),
        Job::Position => (
            config.time.for_systematic_search(),
            config.memory.relaxed_for_systematic_search(),
        ),
    }
}

/// Where a failing execution came from, for its report.
#[derive(Clone, Copy)]
struct Found {
    /// Its seed (`None`: a replay of a schedule).
    seed: Option<u64>,
    /// The strategy that replays it from `seed` alone (`Scheduler::strategy_for`).
    strategy: Option<Strategy>,
    /// Its index in the run, and how many executions ran.
    index: u64,
    executions: u64,
    /// How long the failing execution took (its replays in a fresh process get
    /// `confirm_allowance` of it).
    took: std::time::Duration,
}

/// How a replay of `schedule` shows it no longer fits the program, if it does: it named a
/// thread that could not run (or a choice the program did not offer) or ran out, or the
/// program ended before the schedule did. `None` for a crash (nothing to compare).
fn diverged(outcome: &Outcome, schedule: &Schedule) -> Option<String> {
    let made = outcome.schedule.len();
    let recorded = schedule.len();
    let kind = outcome.explanation.as_ref().map(|e| e.kind);
    if outcome.crashed {
        None
    } else if kind == Some(FailureKind::ReplayDiverged) && made >= recorded {
        Some(format!(
            "its {recorded} choices ran out before the program ended"
        ))
    } else if kind == Some(FailureKind::ReplayDiverged) {
        Some(format!(
            "at choice {} of {recorded} it names a thread or answer the program did not offer",
            made + 1
        ))
    } else if made < recorded && !outcome.failed {
        Some(format!(
            "the program ended after {made} of its {recorded} choices"
        ))
    } else {
        None
    }
}

/// Said when a minimized schedule did not fail the same way when replayed.
const MINIMIZED_DID_NOT_REPRODUCE: &str =
    "the minimized schedule did not fail the same way when replayed (in a fresh process, if it \
     went otherwise in this one: state the minimizer's runs left in statics can change the \
     program), so the search's own schedule is reported";

/// Said when a fresh process ran a seed that failed in this one, and failed another way: it
/// is a failure, but the first may have left behind what made it (async-io's
/// `abstract_socket`: the search's process still held the abandoned execution's listener,
/// and the fresh one's `bind` failed with `AddrInUse`).
fn failed_otherwise(here: &Outcome, fresh: &Outcome) -> Option<String> {
    let (a, b) = (here.explanation.as_ref()?, fresh.explanation.as_ref()?);
    if a.kind == b.kind && a.message == b.message {
        return None;
    }
    let said = a.message.lines().next().unwrap_or_default();
    let said = match said.starts_with(a.kind.title()) {
        true => said.to_string(),
        false => format!("{}: {said}", a.kind.title()),
    };
    Some(format!(
        "this seed failed otherwise in the search's process ({said}); a fresh process running \
         it failed as below. The search's process still holds what that failing execution's \
         threads held (they are never resumed): a file, socket or address the fresh one then \
         finds taken is not the program's bug. `--isolation always` runs every schedule from a \
         process that never ran the test"
    ))
}

/// Said when the failing schedule reproduced only in a fresh process.
const REPLAYED_FRESH: &str =
    "the failing schedule was replayed in a fresh process: replayed in this one, \
     after the failing execution, it went another way (state the failing execution left in \
     statics, or nondeterminism outside pulse: randomness from the OS, real time)";

/// The steps at the end of a failing execution its traced replay records: every one the
/// trace file keeps (each step is at least one event), and none it would drop.
const TRACED_TAIL: u64 = crate::report::explain::KEPT_FULL_TRACE as u64;

/// The steps a step limit's traced replay records: its loop, many turns of it. All of
/// `TRACED_TAIL` made seize's 32-thread stress tests' trace files and viewers 85-140 MB each.
const STEP_LIMIT_TAIL: u64 = 20_000;

/// The warning on a failure handed out before its traced replay ran.
const REPLAY_PENDING: &str = "written before the failing schedule was replayed with tracing; if this is \
     the last word, that replay took the process down (the seed and schedule above still replay it)";

/// `message`, then the last lines a dead worker wrote to stderr (its panic messages).
fn with_tail(message: String, stderr: &str) -> String {
    const LINES: usize = 20;
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return message;
    }
    let tail = &lines[lines.len().saturating_sub(LINES)..];
    format!("{message}; its last words on stderr:\n{}", tail.join("\n"))
}

/// Adds the names of OS threads started since `before` to `names`, each once.
fn note_unscheduled_threads(before: &os_threads::Snapshot, names: &mut Vec<String>) {
    for name in before.started_since() {
        if !names.contains(&name) {
            names.push(name);
        }
    }
}

/// Whether a replay of `schedule` runs the relaxed memory model: the schedule says so when
/// it was made under it, and a `relaxed` run replays everything under it.
fn replays_relaxed(schedule: &Schedule, memory: Memory) -> bool {
    schedule.relaxed || memory == Memory::Relaxed
}

fn unscheduled_threads_warning(names: &[String]) -> String {
    format!(
        "the test started OS threads pulse does not schedule ({}): code that was not \
         instrumented spawned them (a dependency: try `--instrument-dep`; FFI; a `std::thread` \
         path the rewrite did not reach). What they do is not explored, and a failure they \
         cause may not replay",
        names.join(", ")
    )
}

impl Failure {
    /// Names the trace file's execution after this failure (test, outcome, message, seed,
    /// schedule) and puts its racing pair in words.
    fn with_trace_named(mut self, test: &str) -> Failure {
        if let Some(t) = &mut self.full_trace {
            t.test = test.to_string();
            t.outcome = pulse_protocol::json::to_string(&self.kind)
                .trim_matches('"')
                .to_string();
            t.message = self.message.clone();
            t.seed = self.seed;
            t.schedule = self.schedule.to_string();
            if let Some(race) = t.race() {
                self.race = Some(race.summary);
                self.race_steps = Some(race.steps);
            }
        }
        self
    }
}
