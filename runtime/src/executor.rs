//! One execution: gives each virtual thread a coroutine on a pooled stack, resumes
//! whichever thread the last decision picked until none is left, reads off what went wrong,
//! and cleans up leftover threads. It runs exactly one execution; `search.rs` decides which.

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

use corosensei::stack::{DefaultStack, Stack};
use corosensei::{Coroutine, CoroutineResult, Yielder};

use crate::config::{Cleanup, Config};
use crate::ctx::{set_current, ExecCell, PulseAbort};
use crate::execution::{ExecState, Stop, Tid, Tracing};
use crate::registry;
use crate::report::explain::{explain_stop, Explanation};
use crate::report::failure::FailureKind;
use crate::scheduler::Scheduler;
use crate::stack_pool;
use pulse_protocol::TimeParams;

type Co = Coroutine<(), (), (), DefaultStack>;

/// Resumes a thread that is being cleaned up at most this often before giving up on it.
const TEARDOWN_RESUMES: usize = 1000;

/// What one execution did (sent back from a child process when isolated).
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Outcome {
    pub failed: bool,
    /// The process running it died or never answered (isolated executions only): what
    /// is known of it is what the parent saw, and what the worker's journal kept.
    pub crashed: bool,
    /// A crashed execution whose journal kept its choices: `schedule` (and `time`,
    /// `relaxed`) replay it up to the crash.
    #[serde(skip)]
    pub journaled: bool,
    pub schedule: Vec<u32>,
    /// How time passed in it: its schedule means something only under this.
    pub time: TimeParams,
    /// Whether it ran the relaxed memory model (its schedule then holds read choices).
    #[serde(default)]
    pub relaxed: bool,
    pub steps: u64,
    /// Filled in when the execution failed or was cut: read off the state before cleanup.
    pub explanation: Option<Explanation>,
    /// The test's time limit cut it (`Stop::TimeLimit`): neither passed nor failed; the
    /// explanation says where it was.
    #[serde(default)]
    pub cut: Option<Cut>,
    /// Warnings raised in a child process, for the parent's report.
    pub warnings: Vec<String>,
    /// A traced execution that passed: its trace file (`Config::trace_passing`).
    #[serde(default)]
    pub passed_trace: Option<pulse_protocol::trace::Trace>,
    /// A failed execution's moment of detection in this process: its first panic, or when
    /// the scheduler found it stuck (None from another process).
    #[serde(skip)]
    pub detected_at: Option<std::time::Instant>,
}

/// Where the test's time limit cut an execution: before its step bound (a long execution),
/// or past it, where the probe saw it change state without ending (maybe a livelock).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) enum Cut {
    BeforeBound,
    PastBound,
}

impl Outcome {
    /// An execution whose process died or never answered: nothing to replay from it.
    pub(crate) fn lost(kind: FailureKind, message: String) -> Outcome {
        Outcome {
            failed: true,
            cut: None,
            crashed: true,
            journaled: false,
            schedule: Vec::new(),
            time: TimeParams::INFINITELY_FAST,
            relaxed: false,
            steps: 0,
            explanation: Some(Explanation {
                kind,
                message,
                location: None,
                thread: "-".to_string(),
                tid: None,
                details: Vec::new(),
                trace: Vec::new(),
                backtrace: None,
                full: None,
                notes: Vec::new(),
            }),
            warnings: Vec::new(),
            passed_trace: None,
            detected_at: None,
        }
    }

    /// An execution that took its worker's process down (`how`, and its last words on
    /// stderr): a crash, with the schedule its journal kept, which replays it under `time`
    /// and `relaxed` (the job's).
    pub(crate) fn died(
        message: String,
        kept: Option<Box<crate::process::journal::Kept>>,
        (time, relaxed): (TimeParams, bool),
    ) -> Outcome {
        let mut outcome = Outcome::lost(FailureKind::Crash, message);
        if let Some(kept) = kept {
            outcome.journaled = true;
            outcome.schedule = kept.choices;
            outcome.steps = kept.steps;
            outcome.time = replayed_time(time, kept.timed);
            outcome.relaxed = relaxed;
            if let Some(e) = &mut outcome.explanation {
                // A traced replay's last row is the step after which the process died.
                if let Some(last) = kept.trace.last() {
                    e.thread = last.thread.clone();
                    let at = last
                        .location
                        .as_ref()
                        .map(|l| format!(" at {}", l.trim_start_matches("after ")))
                        .unwrap_or_default();
                    e.notes.push(format!(
                        "the process died while {} ran, after its last step pulse saw ({}{at}; \
                         the trace's last row)",
                        last.thread, last.op
                    ));
                }
                e.trace = kept.trace;
                e.full = kept.full;
            }
        }
        outcome
    }
}

/// The time mode a schedule made under `time` replays under: where no thread waited with a
/// deadline (`timed`), any mode with the same pace replays it.
fn replayed_time(time: TimeParams, timed: bool) -> TimeParams {
    if timed || time.increment.is_some() {
        time
    } else {
        TimeParams::INFINITELY_FAST
    }
}

/// Runs executions one at a time on this OS thread, reusing coroutine stacks.
pub(crate) struct Executor {
    /// The OS thread's name (libtest's test name), given to every main virtual thread.
    main_name: Option<Arc<str>>,
    cell: Box<ExecCell>,
    coroutines: Vec<Option<Co>>,
    /// The guard page of each thread's stack, `[start, end)`.
    stack_guards: Vec<(usize, usize)>,
    stacks: Vec<DefaultStack>,
    /// Stacks of threads left behind and never resumed (`Cleanup::Leak`), over all
    /// executions.
    leaked_stacks: usize,
}

impl Drop for Executor {
    /// The next search in this process starts with these stacks (`stack_pool`).
    fn drop(&mut self) {
        stack_pool::give_back(self.stacks.drain(..));
    }
}

impl Executor {
    pub(crate) fn new(config: Config, scheduler: Box<dyn Scheduler>) -> Self {
        Executor {
            main_name: std::thread::current().name().map(Arc::from),
            cell: Box::new(ExecCell {
                id: Cell::new(0),
                state: RefCell::new(ExecState::new(config, scheduler)),
                in_thread: Cell::new(false),
            }),
            coroutines: Vec::new(),
            stack_guards: Vec::new(),
            stacks: Vec::new(),
            leaked_stacks: 0,
        }
    }

    /// How many thread stacks executions have left behind so far.
    pub(crate) fn leaked_stacks(&self) -> usize {
        self.leaked_stacks
    }

    pub(crate) fn state(&self) -> std::cell::RefMut<'_, ExecState> {
        self.cell.state.borrow_mut()
    }

    /// Runs one execution of `f` to its end, with time passing as `time` says and atomics
    /// under the relaxed memory model if `relaxed`, cleans up, and says how it went.
    pub(crate) fn run(
        &mut self,
        f: &dyn Fn(),
        tracing: Tracing,
        time: TimeParams,
        relaxed: bool,
    ) -> Outcome {
        assert!(
            crate::ctx::current().is_none(),
            "pulse: `pulse::check` cannot run inside another pulse execution"
        );
        // The watchdog watches the test's code (the threads, their teardown), not pulse's
        // own work between (explaining a huge trace).
        let heartbeat = self.state().heartbeat.clone();
        let watch = || heartbeat.clone().map(crate::process::watchdog::Watch::new);
        let watched = watch();
        let id = registry::begin();
        self.cell.id.set(id);
        set_current(&*self.cell);
        crate::process::panic_hook::last_words::forget();
        let main_name = self.main_name.clone();
        {
            let mut st = self.state();
            st.reset(tracing, time, relaxed);
            // SAFETY: before this function returns, the main thread's coroutine has
            // finished, been unwound, or been leaked never to run again (`Cleanup`), so
            // borrowing `f` is fine.
            let body: Box<dyn FnOnce() + '_> = Box::new(f);
            let body: Box<dyn FnOnce()> = unsafe { std::mem::transmute(body) };
            let stack = st.config.stack_size;
            st.add_thread(main_name, None, body, stack);
            st.next = Some(0);
        }
        self.drive();
        drop(watched);
        let (explanation, detected_at, alone) = {
            let mut st = self.state();
            if st.stop.is_none() {
                st.judge_detached();
            }
            // A peer's time to failure ends at its first panic; a failure by panic here is
            // dated the same way, not after unwinding.
            let detected_at = st.stop.as_ref().map(|stop| match stop {
                Stop::Panic { .. } => st.first_panic_at.unwrap_or_else(Instant::now),
                _ => Instant::now(),
            });
            (
                st.stop.as_ref().map(|stop| explain_stop(&st, stop)),
                detected_at,
                st.body_alone(),
            )
        };
        let passed_trace = match explanation {
            None if tracing != Tracing::Off => {
                crate::report::explain::full_trace(&self.state(), None)
            }
            _ => None,
        };
        let watched = watch();
        self.teardown();
        drop(watched);
        set_current(std::ptr::null());
        registry::end(id);
        let mut st = self.state();
        let stop = st.stop.take();
        // Past its bound, a cut execution is a step-limit finding, unless the test's body ran
        // alone: then it is only long (no livelock is possible), as short of its bound.
        let cut = matches!(stop, Some(Stop::TimeLimit)).then(|| match st.progress.probing() {
            true if !alone => Cut::PastBound,
            _ => Cut::BeforeBound,
        });
        Outcome {
            failed: stop.is_some() && cut.is_none(),
            cut,
            crashed: false,
            journaled: false,
            schedule: std::mem::take(&mut st.schedule),
            // Where no thread waited with a deadline, any mode with the same pace replays it.
            time: replayed_time(time, st.timed),
            relaxed,
            steps: st.steps,
            explanation,
            warnings: Vec::new(),
            passed_trace,
            detected_at,
        }
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
        let co = self.coroutines[tid as usize]
            .as_mut()
            .expect("a runnable thread has a coroutine");
        crate::process::overflow::set_running(self.stack_guards[tid as usize]);
        self.cell.in_thread.set(true);
        let result = co.resume(());
        self.cell.in_thread.set(false);
        crate::process::overflow::set_running((0, 0));
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
                let guard = crate::process::overflow::guard_of(stack.limit().get());
                let cell: &'static ExecCell = unsafe { &*(&*self.cell as *const ExecCell) };
                let tid = p.tid;
                let body = p.body;
                // SAFETY: the coroutine is run to completion or cleaned up (`teardown`)
                // before the execution, and so `cell` and anything `body` borrows, ends.
                let co = unsafe {
                    Co::with_stack_unchecked(stack, move |y: &Yielder<(), ()>, ()| {
                        thread_main(cell, tid, body, y)
                    })
                };
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
        let size = size.max(stack_pool::MIN_STACK);
        if let Some(i) = self.stacks.iter().rposition(|s| stack_pool::fits(s, size)) {
            return self.stacks.swap_remove(i);
        }
        stack_pool::take(size).unwrap_or_else(|| {
            DefaultStack::new(size).unwrap_or_else(|e| {
                panic!("pulse: cannot allocate a {size}-byte thread stack: {e}")
            })
        })
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
                    self.leaked_stacks += 1;
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
            let Some(co) = self.coroutines[tid].as_mut() else {
                continue;
            };
            self.cell.state.borrow_mut().current = tid as Tid;
            if !co.started() {
                let co = self.coroutines[tid].take().expect("present");
                drop(co);
                continue;
            }
            let mut finished = false;
            for _ in 0..TEARDOWN_RESUMES {
                self.cell.in_thread.set(true);
                let resumed = co.resume(());
                self.cell.in_thread.set(false);
                if let CoroutineResult::Return(()) = resumed {
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
                self.state().warn(format!(
                    "thread #{tid} could not be cleaned up; its stack was leaked"
                ));
                std::mem::forget(co);
            }
        }
        self.coroutines.clear();
        self.stack_guards.clear();
    }
}

/// The body of every virtual thread's coroutine.
fn thread_main(
    cell: &'static ExecCell,
    tid: Tid,
    body: Box<dyn FnOnce()>,
    yielder: &Yielder<(), ()>,
) {
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
        Ok(()) => {
            if let Some(caught) = st.threads[tid as usize].panic.take() {
                st.keep_caught(tid, caught);
            }
        }
        Err(payload) if payload.is::<PulseAbort>() => {}
        Err(payload) => {
            // A payload the hook did not see is another thread's panic, resumed.
            let said = crate::process::panic_hook::payload_message(&*payload);
            let t = &st.threads[tid as usize];
            if t.panic.as_ref().is_none_or(|r| r.message != said) {
                let resumed = st.resumed_panic(tid, said);
                if let Some(stale) = st.threads[tid as usize].panic.replace(resumed) {
                    st.keep_caught(tid, stale);
                }
            }
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
