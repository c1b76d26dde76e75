//! Runs executions: gives each virtual thread a coroutine on a pooled stack, resumes
//! whichever thread the last decision picked, and when an execution stops, explains it
//! (replaying the failing schedule with tracing on) and cleans up leftover threads.

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

use corosensei::stack::{DefaultStack, Stack};
use corosensei::{Coroutine, CoroutineResult, Yielder};

use crate::config::{Cleanup, Config, Isolation};
use crate::failure::FailureKind;
use crate::isolate;
use crate::ctx::{set_current, ExecCell, PulseAbort};
use crate::execution::{ExecState, Stop, Tid};
use crate::explain::{backtrace_wanted, explain_stop, replay_command, Explanation};
use crate::failure::{Failure, Report};
use crate::panic_hook;
use crate::registry;
use crate::schedule::Schedule;
use crate::scheduler::{for_strategy, ReplayScheduler, Scheduler};

type Co = Coroutine<(), (), (), DefaultStack>;

/// Resumes a thread that is being cleaned up at most this often before giving up on it.
const TEARDOWN_RESUMES: usize = 1000;

/// What one execution did (sent back from a child process when isolated).
#[derive(serde::Serialize, serde::Deserialize)]
struct Outcome {
    failed: bool,
    /// The process running it died (isolated executions only): nothing to replay.
    crashed: bool,
    schedule: Vec<u32>,
    steps: u64,
    /// Filled in when the execution failed: read off the state before cleanup.
    explanation: Option<Explanation>,
    /// Warnings raised in a child process, for the parent's report.
    warnings: Vec<String>,
}

impl Outcome {
    /// An execution whose process died or never answered: nothing to replay from it.
    fn lost(kind: FailureKind, message: String) -> Outcome {
        Outcome {
            failed: true,
            crashed: true,
            schedule: Vec::new(),
            steps: 0,
            explanation: Some(Explanation {
                kind,
                message,
                location: None,
                thread: "-".to_string(),
                details: Vec::new(),
                trace: Vec::new(),
                backtrace: None,
            }),
            warnings: Vec::new(),
        }
    }
}

/// One execution to run: a fresh one from a seed, or a replay of a schedule.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
enum Job {
    Seed(u64),
    Replay { schedule: Vec<u32>, tracing: bool },
}

impl std::fmt::Display for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Job::Seed(seed) => write!(f, "seed {seed}"),
            Job::Replay { schedule, .. } => write!(f, "the replay of {}", Schedule::new(schedule.clone())),
        }
    }
}

/// Said when a test turns out to depend on state left by earlier schedules.
const STATE_CARRIED: &str = "a failure appeared after the first schedule that does not reproduce in a fresh \
     process: the test keeps state across runs (a `static` counter, cache or registry), which \
     running it many times in one process would report as a bug. Each schedule now runs in its \
     own process (slower); `PULSE_ISOLATION=always` starts that way, `off` never does";

struct Runner {
    /// The OS thread's name (libtest's test name), given to every main virtual thread.
    main_name: Option<Arc<str>>,
    /// Each execution runs in a fresh process started by `isolator` (`Isolation`).
    isolated: bool,
    isolator: Option<isolate::Isolator>,
    cell: Box<ExecCell>,
    coroutines: Vec<Option<Co>>,
    /// The guard page of each thread's stack, `[start, end)`.
    stack_guards: Vec<(usize, usize)>,
    stacks: Vec<DefaultStack>,
}

pub(crate) fn run(config: &Config, f: &dyn Fn()) -> Report {
    panic_hook::install();
    crate::overflow::install();
    let started = Instant::now();
    let run_id = isolate::RunId::next();
    let role = isolate::role::<Job>(&run_id);
    let replaying = config.replay.is_some();
    let scheduler: Box<dyn Scheduler> = match &config.replay {
        Some(schedule) => Box::new(ReplayScheduler::new(schedule)),
        None => for_strategy(&config.strategy, config.odds),
    };
    let base_seed = config.seed.unwrap_or_else(random_seed);
    let planned = if replaying { 1 } else { config.schedules };
    let mut runner = Runner::new(config.clone(), scheduler);
    let _watchdog = config.blocking_timeout.map(|timeout| {
        let hb = Arc::new(crate::watchdog::Heartbeat::default());
        runner.state().heartbeat = Some(hb.clone());
        crate::watchdog::start(hb, timeout, config.on_blocked.clone())
    });
    let mut report = Report {
        executions: 0,
        decisions: 0,
        choices: 0,
        elapsed: Default::default(),
        search_time: Default::default(),
        failure: None,
        warnings: Vec::new(),
    };
    match role {
        isolate::Role::Serve { job, reply } => {
            // This process was started to run one job of this run: run it and answer.
            let mut outcome = runner.run_job(f, job);
            outcome.warnings = std::mem::take(&mut runner.state().warnings);
            reply.send(&outcome)
        }
        isolate::Role::Search if config.isolation != Isolation::Off && !replaying => {
            runner.isolator = isolate::Isolator::new(run_id, config.blocking_timeout);
        }
        isolate::Role::Search | isolate::Role::Bystander => {}
    }
    runner.isolated = config.isolation == Isolation::Always && runner.isolator.is_some();
    let mut last_progress = Instant::now();
    let mut i = 0;
    while i < planned {
        // `run_job` prepares the scheduler for the seed, here or in an isolated worker.
        let seed = base_seed.wrapping_add(i);
        let mut outcome = runner.execute(f, Job::Seed(seed));
        if outcome.failed && i > 0 && !runner.isolated && !outcome.crashed {
            // The same seed from a clean process (its schedule would not fit: from clean
            // state the program takes another path). If that passes, the failure came from
            // state earlier executions left behind.
            if let Some(fresh) = runner.execute_isolated(&Job::Seed(seed)) {
                runner.isolated = true;
                if !fresh.failed {
                    runner.state().warn(STATE_CARRIED.to_string());
                    continue; // this schedule again, in its own process
                }
                // A real failure: report it as a clean process sees it, and replay it there.
                outcome = fresh;
            }
        }
        report.search_time = started.elapsed();
        report.executions += 1;
        report.decisions += outcome.steps;
        report.choices += outcome.schedule.len() as u64;
        if outcome.failed {
            let seed = (!replaying).then_some(seed);
            report.failure = Some(runner.explain(config, f, outcome, seed, i, report.executions));
            break;
        }
        if i % 64 == 63 && config.time_budget.is_some_and(|b| started.elapsed() >= b) {
            break;
        }
        if let Some(progress) = &config.progress {
            if (i % 64 == 0 || runner.isolated) && last_progress.elapsed().as_millis() >= 100 {
                progress(report.executions, planned);
                last_progress = Instant::now();
            }
        }
        i += 1;
    }
    if let Some(progress) = &config.progress {
        progress(report.executions, planned);
    }
    report.warnings = std::mem::take(&mut runner.state().warnings);
    if let Some(failure) = &mut report.failure {
        failure.warnings = report.warnings.clone();
    }
    report.elapsed = started.elapsed();
    report
}

fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    // Keep seeds short enough to type.
    h.finish() % 1_000_000_000_000
}

impl Runner {
    fn new(config: Config, scheduler: Box<dyn Scheduler>) -> Self {
        Runner {
            main_name: std::thread::current().name().map(Arc::from),
            isolated: false,
            isolator: None,
            cell: Box::new(ExecCell { id: Cell::new(0), state: RefCell::new(ExecState::new(config, scheduler)) }),
            coroutines: Vec::new(),
            stack_guards: Vec::new(),
            stacks: Vec::new(),
        }
    }

    fn state(&self) -> std::cell::RefMut<'_, ExecState> {
        self.cell.state.borrow_mut()
    }

    /// Runs one execution of `f` to its end, cleans up, and says how it went.
    fn run_execution(&mut self, f: &dyn Fn(), tracing: bool) -> Outcome {
        assert!(
            crate::ctx::current().is_none(),
            "pulse: `pulse::check` cannot run inside another pulse execution"
        );
        let id = registry::begin();
        self.cell.id.set(id);
        set_current(&*self.cell);
        let main_name = self.main_name.clone();
        {
            let mut st = self.state();
            st.reset(tracing);
            // SAFETY: before this function returns, the main thread's coroutine has
            // finished, been unwound, or been leaked never to run again (`Cleanup`), so
            // borrowing `f` is fine.
            let body: Box<dyn FnOnce() + '_> = Box::new(f);
            let body: Box<dyn FnOnce()> = unsafe { std::mem::transmute(body) };
            let stack = st.config.stack_size;
            st.add_thread(main_name, body, stack);
            st.next = Some(0);
        }
        self.drive();
        let explanation = {
            let mut st = self.state();
            if st.stop.is_none() && st.config.fail_on_unjoined_panic {
                if let Some(t) = st.threads.iter().position(|t| t.panic_payload.is_some()) {
                    st.stop = Some(Stop::Panic { thread: t as Tid });
                }
            }
            st.stop.as_ref().map(|stop| explain_stop(&st, stop))
        };
        self.teardown();
        set_current(std::ptr::null());
        registry::end(id);
        let mut st = self.state();
        Outcome {
            failed: st.stop.take().is_some(),
            crashed: false,
            schedule: std::mem::take(&mut st.schedule),
            steps: st.steps,
            explanation,
            warnings: Vec::new(),
        }
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
            Job::Seed(seed) => {
                self.state().scheduler.new_execution(seed);
                self.run_execution(f, false)
            }
            Job::Replay { schedule, tracing } => {
                let replay = Box::new(ReplayScheduler::new(&Schedule::new(schedule)));
                let original = std::mem::replace(&mut self.state().scheduler, replay);
                self.state().scheduler.new_execution(0);
                let outcome = self.run_execution(f, tracing);
                self.state().scheduler = original;
                outcome
            }
        }
    }

    /// Runs `job` in a fresh process; `None` if this run cannot be isolated (then it never
    /// tries again, and says so).
    fn execute_isolated(&mut self, job: &Job) -> Option<Outcome> {
        let heartbeat = self.state().heartbeat.clone();
        let pause = |on: bool| {
            if let Some(hb) = &heartbeat {
                hb.paused.store(on, std::sync::atomic::Ordering::Relaxed);
            }
        };
        // The worker has a watchdog of its own; the isolator's deadline bounds the wait.
        pause(true);
        let reply = self.isolator.as_mut()?.run(job);
        pause(false);
        let lost = |kind, message| Outcome::lost(kind, message);
        Some(match reply {
            isolate::Reply::Done(outcome) => {
                let outcome: Outcome = outcome;
                for w in &outcome.warnings {
                    self.state().warn(w.clone());
                }
                outcome
            }
            // The worker's watchdog already reported and wrote its record.
            isolate::Reply::Blocked => std::process::exit(crate::watchdog::BLOCKED_EXIT_CODE),
            isolate::Reply::Died { how } => lost(FailureKind::Crash, how),
            isolate::Reply::TimedOut { phase, after } => lost(
                FailureKind::ToolError,
                format!(
                    "the isolated run of {job} did not finish within {}s: the test binary {phase}; it was killed",
                    after.as_secs()
                ),
            ),
            isolate::Reply::Unreachable { how } => {
                self.isolator = None;
                self.state().warn(format!(
                    "executions could not run in fresh processes: a re-run of the test binary ended without \
                     reaching this run ({how}); they ran in this process"
                ));
                return None;
            }
        })
    }

    /// Resumes threads until no decision names one.
    fn drive(&mut self) {
        loop {
            self.materialize_spawns();
            let next = {
                let mut st = self.state();
                match st.next {
                    Some(t) => {
                        st.current = t;
                        if let Some(hb) = &st.heartbeat {
                            hb.beat(t, None);
                        }
                        t
                    }
                    None => return,
                }
            };
            self.resume(next);
        }
    }

    fn resume(&mut self, tid: Tid) {
        let co = self.coroutines[tid as usize].as_mut().expect("a runnable thread has a coroutine");
        crate::overflow::set_running(self.stack_guards[tid as usize]);
        let result = co.resume(());
        crate::overflow::set_running((0, 0));
        if let CoroutineResult::Return(()) = result {
            let co = self.coroutines[tid as usize].take().expect("just resumed");
            self.stacks.push(co.into_stack());
        }
    }

    /// Gives every newly spawned thread a coroutine.
    fn materialize_spawns(&mut self) {
        loop {
            let pending = {
                let mut st = self.state();
                if st.pending_spawns.is_empty() {
                    return;
                }
                std::mem::take(&mut st.pending_spawns)
            };
            for p in pending {
                let stack = self.take_stack(p.stack_size);
                let guard = crate::overflow::guard_of(stack.limit().get());
                let cell: &'static ExecCell = unsafe { &*(&*self.cell as *const ExecCell) };
                let tid = p.tid;
                let body = p.body;
                // SAFETY: the coroutine is run to completion or cleaned up (`teardown`)
                // before the execution, and so `cell` and anything `body` borrows, ends.
                let co = unsafe { Co::with_stack_unchecked(stack, move |y: &Yielder<(), ()>, ()| thread_main(cell, tid, body, y)) };
                let slot = tid as usize;
                if self.coroutines.len() <= slot {
                    self.coroutines.resize_with(slot + 1, || None);
                    self.stack_guards.resize(slot + 1, (0, 0));
                }
                self.coroutines[slot] = Some(co);
                self.stack_guards[slot] = guard;
            }
        }
    }

    fn take_stack(&mut self, size: usize) -> DefaultStack {
        if let Some(i) = self.stacks.iter().rposition(|s| s.base().get() - s.limit().get() >= size) {
            return self.stacks.swap_remove(i);
        }
        DefaultStack::new(size).unwrap_or_else(|e| panic!("pulse: cannot allocate a {size}-byte thread stack: {e}"))
    }

    /// Deals with every thread that has not finished (only failing executions have any):
    /// leaks them, or unwinds them so their resources are released (`Cleanup`).
    fn teardown(&mut self) {
        self.state().teardown = true;
        if self.state().config.cleanup == Cleanup::Leak {
            let pending = std::mem::take(&mut self.state().pending_spawns);
            std::mem::forget(pending);
            for co in self.coroutines.drain(..).flatten() {
                if co.done() {
                    self.stacks.push(co.into_stack());
                } else {
                    // Never resumed again: nothing on its stack is touched.
                    std::mem::forget(co);
                }
            }
            self.stack_guards.clear();
            return;
        }
        // Threads spawned but never started: their closures are dropped here.
        let pending = std::mem::take(&mut self.state().pending_spawns);
        drop(pending);
        // Newest first: a thread's children (scoped threads borrowing its stack among them)
        // always have higher indices, so they unwind while what they borrow is alive.
        for tid in (0..self.coroutines.len()).rev() {
            let Some(co) = self.coroutines[tid].as_mut() else { continue };
            self.cell.state.borrow_mut().current = tid as Tid;
            if !co.started() {
                let co = self.coroutines[tid].take().expect("present");
                drop(co);
                continue;
            }
            let mut finished = false;
            for _ in 0..TEARDOWN_RESUMES {
                if let CoroutineResult::Return(()) = co.resume(()) {
                    finished = true;
                    break;
                }
            }
            let co = self.coroutines[tid].take().expect("present");
            if finished {
                self.stacks.push(co.into_stack());
            } else {
                // It keeps blocking while unwinding: leak its stack rather than risk
                // aborting the process by forcing a second unwind through its frames.
                self.state().warn(format!("thread #{tid} could not be cleaned up; its stack was leaked"));
                std::mem::forget(co);
            }
        }
        self.coroutines.clear();
        self.stack_guards.clear();
    }

    /// Builds the failure report: replays the failing schedule with tracing on to get the
    /// trace, and checks that the replay fails the same way.
    fn explain(&mut self, config: &Config, f: &dyn Fn(), fast: Outcome, seed: Option<u64>, index: u64, executions: u64) -> Failure {
        let schedule = Schedule::new(fast.schedule.clone());
        let fast_expl = fast.explanation.expect("a stopped execution is explained");
        // A crashed process left no schedule: its seed, run again in a fresh process, says
        // whether the crash reproduces. A worker that never answered is not tried again.
        let again = match (fast.crashed, seed) {
            (false, _) => Some(Job::Replay { schedule: fast.schedule.clone(), tracing: true }),
            (true, Some(seed)) if fast_expl.kind == FailureKind::Crash => Some(Job::Seed(seed)),
            (true, _) => None,
        };
        let traced = again.map(|job| self.execute(f, job));
        let traced_expl = traced.and_then(|t| t.explanation);
        let reproduced = traced_expl.as_ref().is_some_and(|e| e.kind == fast_expl.kind && e.message == fast_expl.message);
        let expl = match traced_expl {
            Some(e) if reproduced => e,
            _ => fast_expl,
        };
        let test = std::thread::current().name().unwrap_or("").to_string();
        Failure {
            kind: expl.kind,
            message: expl.message,
            location: expl.location,
            thread: expl.thread,
            details: expl.details,
            seed,
            replay_command: replay_command(config, &schedule, seed, &test),
            schedule,
            execution: index,
            executions,
            trace: expl.trace,
            reproduced,
            backtrace: expl.backtrace.filter(|_| backtrace_wanted()),
            warnings: Vec::new(),
            trace_tail: config.trace_tail,
        }
    }
}

/// The body of every virtual thread's coroutine.
fn thread_main(cell: &'static ExecCell, tid: Tid, body: Box<dyn FnOnce()>, yielder: &Yielder<(), ()>) {
    cell.state.borrow_mut().threads[tid as usize].yielder = yielder;
    let result = panic::catch_unwind(AssertUnwindSafe(body));
    // Thread-locals die with the thread, newest first, one at a time: a destructor may use
    // shims and the keys not destroyed yet (as in std). A panicking destructor fails the
    // thread like a panic in its body (std aborts the process instead).
    let mut result = result;
    loop {
        let local = {
            let mut st = cell.state.borrow_mut();
            let t = &mut st.threads[tid as usize];
            let local = t.locals.pop();
            if let Some((key, _)) = &local {
                t.destroyed_locals.push(*key);
            }
            local
        };
        let Some(local) = local else { break };
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(move || drop(local))) {
            if result.is_ok() {
                result = Err(payload);
            }
        }
    }
    let mut st = cell.state.borrow_mut();
    st.threads[tid as usize].in_panic = false;
    match result {
        Ok(()) => st.threads[tid as usize].panic = None,
        Err(payload) if payload.is::<PulseAbort>() => {}
        Err(payload) => {
            if tid == 0 {
                st.stop.get_or_insert(Stop::Panic { thread: 0 });
            }
            st.threads[tid as usize].panic_payload = Some(payload);
        }
    }
    st.finish_current();
    if !st.teardown {
        st.decide(false);
    }
}
