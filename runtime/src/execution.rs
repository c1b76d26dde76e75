//! The state of one execution: its virtual threads, who runs next, the virtual clock, the
//! recorded schedule, and the failure if one was found. Decisions are made here (by asking
//! the scheduler); switching stacks is `ctx`'s and the runner's business.

use std::any::Any;
use std::panic::Location;
use std::sync::Arc;

use corosensei::Yielder;

use crate::config::{Config, Detached};
use pulse_protocol::time::{TimeParams, UNBOUNDED};

/// Said when the test returned while threads it never joined stayed blocked or running.
const DETACHED_LEFT: &str = "the test returned while threads it never joined were still blocked or running; they \
     were let go as std's process exit would (`--detached fail` / PULSE_DETACHED=fail reports them as failures)";

/// Scheduling points per thread in the step bound: an execution is a livelock past
/// `max(Config::max_steps, threads x STEPS_PER_THREAD)` steps, so a test with many threads
/// that each do a little never trips it (1,000 threads: 10,000,000), a livelock among them is
/// still stopped after a time proportional to the threads, and a test with few threads has
/// the bound it asked for.
pub(crate) const STEPS_PER_THREAD: u64 = 10_000;

/// Steps threads the test did not join may take after it returned, under `Detached::Warn`
/// (then they are let go, as std's process exit would).
pub(crate) const DETACHED_STEPS: u64 = 10_000;
use crate::fast_hash::{FastMap, FastSet};
use crate::fd_waiters::{FdWaiters, REAL_WAIT_MS};
use crate::memory::Memory;
use crate::obj_ref::ObjRef;
use crate::process::journal::Journal;
use crate::process::watchdog::Company;
use crate::progress::{Progress, Verdict};
use crate::report::trace::{Event, EventKind, UserLines};
use crate::scheduler::{ChoiceKind, Scheduler};
use crate::waiters::Waiters;

pub(crate) type Tid = u32;

/// Whether an execution records its trace: not at all, or from a step on (`From(0)`: all
/// of it). A long failing execution's traced replay records only its end, the part a report
/// keeps: tracing an 11-million-step stress test from its start took longer than the test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tracing {
    Off,
    From(u64),
}

/// Why a blocked thread was made runnable again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeReason {
    /// Another thread's operation (unlock, notify, send, exit, unpark) woke it.
    Notified,
    /// Its deadline passed on the virtual clock.
    TimedOut,
    /// The execution is over and the thread is being cleaned up: do not block, return.
    Teardown,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Blocked {
    pub op: &'static str,
    pub object: Option<ObjRef>,
    pub location: &'static Location<'static>,
    /// Virtual-clock nanoseconds at which a timed wait gives up (at the earliest).
    pub deadline: Option<u64>,
    /// The latest it may give up (`pulse::max_wait`; `u64::MAX`: no bound), when jitter
    /// lets later timers fire first.
    pub latest: u64,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Status {
    Runnable,
    Blocked(Blocked),
    Finished,
}

/// What the panic hook saw when a virtual thread panicked.
#[derive(Clone, Debug)]
pub(crate) struct PanicRecord {
    pub message: String,
    pub location: Option<String>,
    pub backtrace: Option<String>,
    /// The panic this thread was unwinding from when this one happened (in a destructor).
    pub earlier: Option<Box<PanicRecord>>,
    /// The thread that raised it, when this one resumed another's caught panic
    /// (`std::panic::resume_unwind`, which the hook never sees).
    pub raised_in: Option<Tid>,
    /// The execution's step when it was raised: which of two panics came first.
    pub step: u64,
}

impl PanicRecord {
    /// ` at file:line:col`, or nothing where the hook saw no location.
    pub fn at(&self) -> String {
        (self.location.as_deref())
            .map(|l| format!(" at {l}"))
            .unwrap_or_default()
    }
}

/// A scheduling point's trace row: its operation, object and the user's location.
pub(crate) type OpRow = (&'static str, Option<ObjRef>, &'static Location<'static>);

pub(crate) struct VThread {
    pub name: Option<Arc<str>>,
    /// An earlier thread of the execution has the same name (`label` adds the index).
    pub repeats_a_name: bool,
    pub status: Status,
    pub yielder: *const Yielder<(), ()>,
    pub wake: WakeReason,
    pub park_token: bool,
    /// Locks it holds, with where it took them (for deadlock reports).
    pub held: Vec<(ObjRef, &'static Location<'static>)>,
    /// The last panic the hook saw on this thread.
    pub panic: Option<PanicRecord>,
    /// The payload of the panic that ended the thread, until a `join` takes it.
    pub panic_payload: Option<Box<dyn Any + Send>>,
    pub in_panic: bool,
    /// How many trace events there were when this thread's last panic began (with tracing
    /// on): the failure shows at its last event before, not at what a `Drop` run by the
    /// unwinding did after.
    pub panicked_after_events: Option<usize>,
    pub locals: Vec<(usize, Box<dyn Any>)>,
    /// Keys whose value was destroyed at thread exit (`with` on them fails, as in std).
    pub destroyed_locals: Vec<usize>,
    /// `PulseAbort`s raised at this thread during teardown (a thread that keeps catching
    /// them is abandoned rather than looped forever).
    pub aborts: u32,
    /// Depth of `pulse::atomic` regions: inside one the thread is never preempted.
    pub atomic_depth: u32,
    pub last_location: Option<&'static Location<'static>>,
    /// The operation at its last scheduling point, while tracing: its trace row is written
    /// when the thread is picked to run it (`ExecState::grant_row`), not when it asked.
    pub asked: Option<OpRow>,
    /// A scheduling point whose row was written before its decision (a spawn's), with that
    /// decision's step: if another thread runs first, the decision that resumes this one
    /// has a row of its own (`thread::spawn returns`).
    pub written_early: Option<(u64, OpRow)>,
    pub steps: u64,
    /// Virtual time since which its next step has been enabled (pulse_time's interval is
    /// measured from it).
    pub enabled_at: u64,
    /// `pulse::max_wait`: the bound on its next timed wait, taken when that wait starts.
    pub max_wait: Option<u64>,
    /// The wait a lock's release woke it from, while it has not run since
    /// (`ExecState::wake_contenders`).
    pub contending: Option<Blocked>,
}

impl VThread {
    pub fn new(name: Option<Arc<str>>) -> Self {
        VThread {
            name,
            repeats_a_name: false,
            status: Status::Runnable,
            yielder: std::ptr::null(),
            wake: WakeReason::Notified,
            park_token: false,
            held: Vec::new(),
            panic: None,
            panic_payload: None,
            in_panic: false,
            panicked_after_events: None,
            locals: Vec::new(),
            destroyed_locals: Vec::new(),
            aborts: 0,
            atomic_depth: 0,
            last_location: None,
            asked: None,
            written_early: None,
            steps: 0,
            enabled_at: 0,
            max_wait: None,
            contending: None,
        }
    }

    /// Its name in reports (`report::trace::thread_name`), `name#index` when an earlier
    /// thread had the name: which of a pool's workers did what.
    pub fn label(&self, tid: Tid) -> String {
        let name = crate::report::trace::thread_name(tid, self.name.as_deref());
        match self.repeats_a_name {
            true => format!("{name}#{tid}"),
            false => name,
        }
    }

    pub fn is_finished(&self) -> bool {
        matches!(self.status, Status::Finished)
    }
}

/// A thread waiting to be given a coroutine by the runner.
pub(crate) struct PendingSpawn {
    pub tid: Tid,
    pub body: Box<dyn FnOnce()>,
    pub stack_size: usize,
}

impl Drop for ExecState {
    fn drop(&mut self) {
        self.forget_unfinished_locals();
    }
}

/// Why the execution stopped early.
#[derive(Debug)]
pub(crate) enum Stop {
    Panic {
        thread: Tid,
    },
    Deadlock,
    LeakedThread,
    /// Past the step bound: stuck there, or (`capped`) still changing state at the probe's
    /// cap, writing new values (`progressing`) or cycling through the same ones, or one
    /// thread still running `alone` at the cap for threads alone.
    StepLimit {
        capped: bool,
        progressing: bool,
        alone: bool,
    },
    ReplayDiverged,
    /// The test's time limit passed while it ran (`ExecState::cut_at`): neither a pass nor
    /// a failure.
    TimeLimit,
}

/// Steps between two looks at the clock for `ExecState::cut_at` (a power of two): a few
/// milliseconds at the slowest steps seen (~10 µs), nothing measurable at the fastest.
const CUT_CHECK_EVERY: u64 = 1 << 12;

/// A spawn's scheduling point: its thread exists before it (`Ctx::spawn_unchecked`).
pub(crate) const SPAWN_OP: &str = "thread::spawn";

/// Steps between two signs of life to `Config::progress` in a long execution (a multiple of
/// `CUT_CHECK_EVERY`): a file write per ~0.1-1 s of steps.
const ALIVE_EVERY: u64 = 1 << 20;

pub(crate) struct ExecState {
    pub config: Config,
    pub scheduler: Box<dyn Scheduler>,
    pub threads: Vec<VThread>,
    /// The names threads were given so far: a later thread with one of them is shown as
    /// `name#index` (tokio's workers are all `tokio-rt-worker`).
    thread_names: FastSet<Arc<str>>,
    /// Runnable thread indices, sorted.
    pub runnable: Vec<Tid>,
    /// Per thread: whether it is in `runnable` (a lookup without a binary search).
    in_runnable: Vec<bool>,
    pub live: u32,
    pub current: Tid,
    /// The thread the runner resumes next; `None` ends the execution.
    pub next: Option<Tid>,
    pub steps: u64,
    /// The step past which the execution is a livelock: `max_steps`, or `STEPS_PER_THREAD`
    /// for each thread, whichever is larger; moved on while the execution still progresses
    /// there (`progress`).
    pub step_bound: u64,
    /// The probe that tells a long execution from a livelock once it passed its bound.
    pub progress: Progress,
    /// When the test's time limit runs out: the execution is cut there (`Stop::TimeLimit`).
    /// Set by the search around each execution it runs for the test, not for replays.
    pub cut_at: Option<std::time::Instant>,
    /// What the search last told `Config::progress` (executions done, planned): told again
    /// at each of the probe's windows, so a driver watching for stalls sees a long
    /// execution alive.
    pub reported: (u64, u64),
    pub schedule: Vec<u32>,
    pub clock_ns: u64,
    /// The run's date: where every execution's `SystemTime` starts (`Ctx::wall_clock`). The
    /// real wall clock when the run started (an isolated worker's: its parent run's), so the
    /// executions and replays of one run read the same dates and real files' times are in
    /// the past (ARCHITECTURE.md, decision 36).
    pub wall_clock: std::time::SystemTime,
    /// How time passes in this execution (drawn per execution under the portfolio).
    pub time: TimeParams,
    /// Virtual ns an untimed step costs (`time.increment`, else the run's `step_nanos`).
    increment: u64,
    /// The last step at which a timer fired (a livelock that sleeps is told from a spin).
    pub last_timer_step: u64,
    /// Whether any thread waited with a deadline: if none did, the time mode changed nothing
    /// but the clock's pace.
    pub timed: bool,
    /// The first step at which a timer fired while a thread was ready to run (the time
    /// mode's "loaded machine"; never under `infinitely-fast`).
    pub timer_overtook: Option<u64>,
    /// Scratch list of scheduler candidates when timers compete (kept to avoid allocating).
    candidates: Vec<Tid>,
    /// The step past which threads the test did not join are let go (`u64::MAX` until the
    /// main thread returns, and always under `Detached::Fail`).
    let_go_after: u64,
    /// No timed wait ends before this (`u64::MAX`: none pending); may be early, never late.
    earliest_deadline: u64,
    pub next_object: u32,
    pub trace: Option<Vec<Event>>,
    /// The step at which `trace` starts (`u64::MAX`: never).
    trace_from: u64,
    pub stop: Option<Stop>,
    /// When this execution's first panic reached the panic hook: a failure by panic was
    /// detected then (`Outcome::detected_at`), however long unwinding takes after.
    pub first_panic_at: Option<std::time::Instant>,
    /// Panics caught since (a thread that ended well, or panicked again), newest last, for a
    /// thread that resumes one: the hook does not see `resume_unwind`.
    pub caught_panics: Vec<(Tid, PanicRecord)>,
    pub teardown: bool,
    pub pending_spawns: Vec<PendingSpawn>,
    pub warnings: Vec<String>,
    pub capture_backtraces: bool,
    /// Objects named by address (atomics), numbered per kind in first-use order while
    /// tracing; looked up by (address, kind), since a traced replay of a test with 50,000
    /// atomics made a scan quadratic (minutes).
    addr_objects: FastMap<(usize, &'static str), ObjRef>,
    /// How many objects of each kind `addr_objects` has numbered.
    addr_object_counts: FastMap<&'static str, u32>,
    pub heartbeat: Option<Arc<crate::process::watchdog::Heartbeat>>,
    /// The threads blocked on each object.
    blocked_on: Waiters,
    /// Per lock: the threads its last release woke that have not run since.
    contenders: Waiters,
    /// Scratch: the threads `wake_all` wakes.
    woken: Vec<Tid>,
    /// Threads waiting for a descriptor to become readable (`Ctx::wait_readable`), looked
    /// at in each decision while any wait.
    pub fd_waiters: FdWaiters,
    /// The relaxed memory model's state (`Memory::Relaxed`; idle under `sc`).
    pub memory: Memory,
    /// An isolated worker's running record of its execution, read by the parent if the
    /// execution takes the process down (`process::journal`).
    pub journal: Option<Journal>,
    /// Each thread's last line in the user's code, for the journal's trace rows.
    journal_lines: UserLines,
}

impl ExecState {
    pub fn new(config: Config, scheduler: Box<dyn Scheduler>) -> Self {
        ExecState {
            config,
            scheduler,
            threads: Vec::new(),
            thread_names: FastSet::default(),
            runnable: Vec::new(),
            in_runnable: Vec::new(),
            live: 0,
            current: 0,
            next: None,
            steps: 0,
            step_bound: u64::MAX,
            progress: Progress::default(),
            cut_at: None,
            reported: (0, 0),
            trace_from: u64::MAX,
            schedule: Vec::new(),
            clock_ns: 0,
            wall_clock: std::time::SystemTime::now(),
            time: TimeParams::INFINITELY_FAST,
            increment: 0,
            last_timer_step: 0,
            timed: false,
            timer_overtook: None,
            candidates: Vec::new(),
            let_go_after: u64::MAX,
            earliest_deadline: u64::MAX,
            next_object: 0,
            trace: None,
            stop: None,
            first_panic_at: None,
            caught_panics: Vec::new(),
            teardown: false,
            pending_spawns: Vec::new(),
            warnings: Vec::new(),
            capture_backtraces: false,
            addr_objects: FastMap::default(),
            addr_object_counts: FastMap::default(),
            heartbeat: None,
            blocked_on: Waiters::default(),
            contenders: Waiters::default(),
            woken: Vec::new(),
            fd_waiters: FdWaiters::default(),
            memory: Memory::default(),
            journal: None,
            journal_lines: UserLines::default(),
        }
    }

    /// Clears per-execution state, keeping allocations; `time` rules this execution, and
    /// `relaxed` says whether its atomics follow the relaxed memory model.
    pub fn reset(&mut self, tracing: Tracing, time: TimeParams, relaxed: bool) {
        self.time = time;
        self.increment = time.increment.unwrap_or(self.config.step_nanos);
        self.last_timer_step = 0;
        self.timed = false;
        self.timer_overtook = None;
        self.forget_unfinished_locals();
        self.threads.clear();
        self.thread_names.clear();
        self.runnable.clear();
        self.in_runnable.clear();
        self.live = 0;
        self.current = 0;
        self.next = None;
        self.steps = 0;
        self.step_bound = self.config.max_steps;
        self.progress.reset();
        self.schedule.clear();
        if let Some(journal) = &mut self.journal {
            journal.clear();
        }
        self.journal_lines = UserLines::default();
        self.clock_ns = 0;
        self.let_go_after = u64::MAX;
        self.earliest_deadline = u64::MAX;
        self.next_object = 0;
        self.trace_from = match tracing {
            Tracing::Off => u64::MAX,
            Tracing::From(step) => step,
        };
        self.trace = (self.trace_from == 0).then(Vec::new);
        // Symbolising a backtrace costs ~100 ms: only when it will be shown.
        self.capture_backtraces =
            tracing != Tracing::Off && crate::report::backtrace::backtrace_wanted();
        self.stop = None;
        self.first_panic_at = None;
        self.caught_panics.clear();
        self.teardown = false;
        self.pending_spawns.clear();
        self.addr_objects.clear();
        self.addr_object_counts.clear();
        self.memory.reset(relaxed);
        self.blocked_on.clear();
        self.contenders.clear();
        self.fd_waiters.clear();
    }

    pub fn object_at(&mut self, kind: &'static str, addr: usize) -> ObjRef {
        // Numbered apart from stateful objects so tracing never renumbers those.
        let counts = &mut self.addr_object_counts;
        *self.addr_objects.entry((addr, kind)).or_insert_with(|| {
            let next = counts.entry(kind).or_insert(0);
            *next += 1;
            ObjRef {
                kind,
                id: *next - 1,
            }
        })
    }

    /// Registers a new runnable thread and returns its index.
    pub fn add_thread(
        &mut self,
        name: Option<Arc<str>>,
        site: Option<&'static std::panic::Location<'static>>,
        body: Box<dyn FnOnce()>,
        stack_size: usize,
    ) -> Tid {
        let tid = self.threads.len() as Tid;
        self.scheduler.spawned(tid, site);
        let thread = self.new_thread(name);
        self.threads.push(thread);
        if let Some(hb) = &self.heartbeat {
            hb.set_name(tid, self.thread_name(tid));
        }
        if self.memory.relaxed {
            self.memory.spawned(self.current, tid);
        }
        let per_thread = (tid as u64 + 1).saturating_mul(STEPS_PER_THREAD);
        self.step_bound = self.step_bound.max(per_thread);
        self.progress.moved();
        self.live += 1;
        self.make_runnable(tid);
        self.pending_spawns.push(PendingSpawn {
            tid,
            body,
            stack_size,
        });
        tid
    }

    /// Registers a thread that never runs (spawned during teardown).
    pub fn add_finished_thread(&mut self, name: Option<Arc<str>>) -> Tid {
        let tid = self.threads.len() as Tid;
        let mut thread = self.new_thread(name);
        thread.status = Status::Finished;
        self.threads.push(thread);
        tid
    }

    pub fn make_runnable(&mut self, tid: Tid) {
        self.threads[tid as usize].enabled_at = self.clock_ns;
        if self.is_runnable(tid) {
            return;
        }
        let i = self.runnable.partition_point(|&t| t < tid);
        self.runnable.insert(i, tid);
        self.set_in_runnable(tid, true);
        self.scheduler.runnable_changed(tid, true);
    }

    fn is_runnable(&self, tid: Tid) -> bool {
        self.in_runnable.get(tid as usize) == Some(&true)
    }

    fn set_in_runnable(&mut self, tid: Tid, runnable: bool) {
        let i = tid as usize;
        if self.in_runnable.len() <= i {
            self.in_runnable.resize(i + 1, false);
        }
        self.in_runnable[i] = runnable;
    }

    /// Adds `tids` (in index order, none runnable) to the runnable set in one merge: one by
    /// one, a barrier's release of n threads moved O(n^2) entries.
    fn add_runnable(&mut self, tids: &[Tid]) {
        if tids.len() < 8 {
            tids.iter().for_each(|&t| self.make_runnable(t));
            return;
        }
        let old = self.runnable.len();
        self.runnable.extend_from_slice(tids);
        // Merge from the back: the larger of the two tails goes last.
        let (mut i, mut j, mut out) = (old, tids.len(), self.runnable.len());
        while j > 0 {
            out -= 1;
            if i > 0 && self.runnable[i - 1] > tids[j - 1] {
                i -= 1;
                self.runnable[out] = self.runnable[i];
            } else {
                j -= 1;
                self.runnable[out] = tids[j];
            }
        }
        debug_assert!(self.runnable.windows(2).all(|w| w[0] < w[1]));
        for &t in tids {
            self.set_in_runnable(t, true);
            self.scheduler.runnable_changed(t, true);
        }
    }

    /// `remove_runnable` for each of `tids`, in one pass over `runnable` when they
    /// are many.
    fn remove_runnables(&mut self, tids: &[Tid]) {
        if tids.len() < 8 {
            tids.iter().for_each(|&t| self.remove_runnable(t));
            return;
        }
        for &t in tids {
            if self.is_runnable(t) {
                self.set_in_runnable(t, false);
                self.scheduler.runnable_changed(t, false);
            }
        }
        let in_runnable = &self.in_runnable;
        self.runnable.retain(|&t| in_runnable[t as usize]);
    }

    fn remove_runnable(&mut self, tid: Tid) {
        if !self.is_runnable(tid) {
            return;
        }
        let i = self.runnable.partition_point(|&t| t < tid);
        self.runnable.remove(i);
        self.set_in_runnable(tid, false);
        self.scheduler.runnable_changed(tid, false);
    }

    pub fn record(
        &mut self,
        op: &'static str,
        object: Option<ObjRef>,
        location: &'static Location<'static>,
    ) {
        let thread = self.current;
        let t = &mut self.threads[thread as usize];
        t.last_location = Some(location);
        t.steps += 1;
        // A panic the thread caught is over once std says so (checked only after one).
        if t.in_panic && !std::thread::panicking() {
            t.in_panic = false;
        }
        if let Some(hb) = &self.heartbeat {
            hb.beat(thread, Some(location));
        }
        if self.trace.is_some() && t.atomic_depth == 0 {
            if op == SPAWN_OP {
                // Its thread already exists and may run at this decision: the row goes first.
                self.push_op_row(self.steps, thread, (op, object, location));
                self.threads[thread as usize].written_early =
                    Some((self.steps, (op, object, location)));
            } else {
                self.threads[thread as usize].asked = Some((op, object, location));
            }
        }
    }

    /// Writes the trace row of the scheduling point the thread just picked (`next`) asked
    /// at, numbered with this decision: its operation runs now. Written when the thread
    /// asked, a row showed a load that waited while other threads ran before their stores,
    /// with the value it read after them (it looked like a broken `SeqCst`).
    fn grant_row(&mut self) {
        let Some(next) = self.next else {
            return;
        };
        // Every decision has a row, so no step number is missing from the table: the
        // operation it lets run, or the thread's start, or its return from a call whose row
        // came before the threads that ran in between.
        let step = self.steps.saturating_sub(1);
        let t = &mut self.threads[next as usize];
        let early = t.written_early.take();
        if let Some(asked) = t.asked.take() {
            self.push_op_row(step, next, asked);
        } else if t.steps == 0 {
            self.push_row(step, next, EventKind::Start, ("", None, None));
        } else if let Some((_, (op, object, location))) = early.filter(|e| e.0 < step) {
            self.push_row(step, next, EventKind::Returns, (op, object, Some(location)));
        }
    }

    /// The row of `thread`'s scheduling point `(op, object, location)`, at `step`.
    fn push_op_row(&mut self, step: u64, thread: Tid, (op, object, location): OpRow) {
        self.push_row(step, thread, EventKind::Op, (op, object, Some(location)));
    }

    /// A row of `kind` without a value, at `step`.
    fn push_row(
        &mut self,
        step: u64,
        thread: Tid,
        kind: EventKind,
        (op, object, location): (
            &'static str,
            Option<ObjRef>,
            Option<&'static Location<'static>>,
        ),
    ) {
        self.push_event(Event {
            step,
            thread,
            kind,
            op,
            object,
            location,
            clock_ns: self.clock_ns,
            value: None,
            atomic: None,
        });
    }

    pub fn trace_event(
        &mut self,
        kind: EventKind,
        op: &'static str,
        object: Option<ObjRef>,
        location: Option<&'static Location<'static>>,
    ) {
        self.trace_value(kind, op, object, location, None);
    }

    /// A trace event with a value; none inside a `#[pulse::atomic]` call, which is one
    /// event (the scheduling point before it).
    pub fn trace_value(
        &mut self,
        kind: EventKind,
        op: &'static str,
        object: Option<ObjRef>,
        location: Option<&'static Location<'static>>,
        value: Option<&'static str>,
    ) {
        if self.trace.is_none() {
            return;
        }
        // Numbered with the decision that let the thread run: what it does until its next
        // scheduling point (a block, its exit, a note) belongs to that step.
        self.push_event(Event {
            step: self.steps.saturating_sub(1),
            thread: self.current,
            kind,
            op,
            object,
            location,
            clock_ns: self.clock_ns,
            value,
            atomic: None,
        });
    }

    /// A fence's row: for the trace file only (what a relaxed read synchronises with).
    pub(crate) fn trace_fence(
        &mut self,
        fence: crate::report::trace::AtomicValue,
        location: &'static Location<'static>,
    ) {
        if self.trace.is_none() {
            return;
        }
        self.push_event(Event {
            step: self.steps.saturating_sub(1),
            thread: self.current,
            kind: EventKind::Note(crate::report::trace::TraceKind::Fence),
            op: "atomic::fence",
            object: None,
            location: Some(location),
            clock_ns: self.clock_ns,
            value: None,
            atomic: Some(fence),
        });
    }

    /// Adds `event` to the trace (and the journal, in a worker); none inside a
    /// `#[pulse::atomic]` call.
    fn push_event(&mut self, event: Event) {
        if let Some(trace) = &mut self.trace {
            if self
                .threads
                .get(event.thread as usize)
                .is_some_and(|t| t.atomic_depth > 0)
            {
                return;
            }
            trace.push(event);
            if self.journal.is_some() {
                let threads = &self.threads;
                let names = |t: u32| threads[t as usize].label(t);
                let file_event =
                    crate::report::trace_file::event(trace, trace.len() - 1, 0, &names);
                let name = names(event.thread);
                let row = (!matches!(event.kind, EventKind::Note(_)))
                    .then(|| self.journal_lines.row(&event, &names));
                if let Some(journal) = &mut self.journal {
                    journal.trace(name, row, file_event);
                }
            }
        }
    }

    pub fn block_current(&mut self, blocked: Blocked) {
        self.trace_event(
            EventKind::Block,
            blocked.op,
            blocked.object,
            Some(blocked.location),
        );
        let me = self.current;
        if let Some(deadline) = blocked.deadline {
            self.earliest_deadline = self.earliest_deadline.min(deadline);
            if !self.timed {
                if let Some(journal) = &mut self.journal {
                    journal.timed();
                }
            }
            self.timed = true;
        }
        self.threads[me as usize].status = Status::Blocked(blocked);
        self.remove_runnable(me);
        if let Some(object) = blocked.object {
            self.blocked_on.add(object, me);
        }
    }

    /// An acquire or release in the trace file, named after the operation that led to it
    /// (the thread's last request: `RwLock::read`, `MutexGuard::drop`).
    pub fn trace_outcome(
        &mut self,
        kind: crate::report::trace::TraceKind,
        object: ObjRef,
        location: &'static Location<'static>,
    ) {
        let Some(trace) = &self.trace else {
            return;
        };
        if self.teardown {
            return;
        }
        let me = self.current;
        let request = trace
            .iter()
            .rev()
            .take(64)
            .find(|e| e.thread == me && e.kind == EventKind::Op);
        let op = request.map_or("", |e| e.op);
        // A release runs in a guard's `Drop`, whose caller is the shim: its request was
        // attributed to the lock site.
        let location = match (kind, request.and_then(|e| e.location)) {
            (crate::report::trace::TraceKind::Release, Some(at)) => at,
            _ => location,
        };
        self.trace_value(
            EventKind::Note(kind),
            op,
            Some(object),
            Some(location),
            None,
        );
    }

    /// Wakes `tid` if it is blocked.
    pub fn wake(&mut self, tid: Tid, reason: WakeReason) -> bool {
        let t = &mut self.threads[tid as usize];
        if let Status::Blocked(b) = t.status {
            t.status = Status::Runnable;
            t.wake = reason;
            if let Some(object) = b.object {
                self.blocked_on.remove(object, tid);
            }
            self.make_runnable(tid);
            true
        } else {
            false
        }
    }

    /// Wakes one thread blocked on `object`, which one a scheduler choice; false if none
    /// was. A mutex's release wakes one waiter to race for it with the running threads, as
    /// a futex unlock does (std's `Mutex` on Linux), so a contended lock costs a copy of its
    /// waiter list and one pick per release, not a wake and a re-block per waiter
    /// (ARCHITECTURE.md, decision 42). In teardown, which makes no choices, it wakes them
    /// all.
    pub fn wake_one(&mut self, object: ObjRef) -> bool {
        if self.teardown {
            let any = self.has_waiters(object);
            self.wake_all(object);
            return any;
        }
        let mut among = std::mem::take(&mut self.woken);
        among.clear();
        among.extend_from_slice(self.blocked_on.of(object));
        let chosen = self.choose_waiter(&among);
        self.woken = among;
        chosen.is_some_and(|t| self.wake(t, WakeReason::Notified))
    }

    pub fn has_waiters(&self, object: ObjRef) -> bool {
        self.blocked_on.any(object)
    }

    pub fn waiter_count(&self, object: ObjRef) -> usize {
        self.blocked_on.of(object).len()
    }

    /// Wakes every thread blocked on `object` (on every unlock: no allocation).
    pub fn wake_all(&mut self, object: ObjRef) {
        let mut woken = std::mem::take(&mut self.woken);
        self.blocked_on.take_all(object, &mut woken);
        self.woken = woken;
        self.wake_listed();
    }

    /// Makes the threads in `woken` (taken off their object's waiters) runnable.
    fn wake_listed(&mut self) {
        let woken = std::mem::take(&mut self.woken);
        for &tid in &woken {
            let t = &mut self.threads[tid as usize];
            t.status = Status::Runnable;
            t.wake = WakeReason::Notified;
            t.enabled_at = self.clock_ns;
        }
        self.add_runnable(&woken);
        self.woken = woken;
    }

    /// Wakes the threads waiting for lock `object`, which its holder just released, to race
    /// for it. Those that have not run by the time one of them (or any thread) takes it go
    /// back to waiting (`reblock_contenders`).
    pub fn wake_contenders(&mut self, object: ObjRef) {
        let mut woken = std::mem::take(&mut self.woken);
        self.blocked_on.take_all(object, &mut woken);
        for &tid in &woken {
            let t = &mut self.threads[tid as usize];
            if let Status::Blocked(b) = t.status {
                t.contending = Some(b);
            }
        }
        self.contenders.add_all(object, &woken);
        self.woken = woken;
        self.wake_listed();
    }

    /// Lock `object` was just taken. The threads its last release woke that have not run
    /// since would each find it held and wait again: they wait again now, without taking a
    /// step. With n threads contending, the release-retry-block round otherwise costs n
    /// decisions per acquisition, n² for a contended lock (ARCHITECTURE.md, decision 42).
    pub fn reblock_contenders(&mut self, object: ObjRef) {
        if self.teardown || !self.contenders.any(object) {
            return;
        }
        let mut back = std::mem::take(&mut self.woken);
        self.contenders.take_all_unordered(object, &mut back);
        back.retain(|&tid| {
            let t = &mut self.threads[tid as usize];
            match (t.status, t.contending.take()) {
                (Status::Runnable, Some(b)) => {
                    t.status = Status::Blocked(b);
                    true
                }
                _ => false,
            }
        });
        self.blocked_on.add_all(object, &back);
        self.remove_runnables(&back);
        self.woken = back;
    }

    /// The running thread resumed: it is no longer a contender that has not run.
    pub fn resumed(&mut self, object: Option<ObjRef>) {
        let me = self.current;
        if self.threads[me as usize].contending.take().is_some() {
            if let Some(object) = object {
                self.contenders.remove(object, me);
            }
        }
    }

    /// A thread the last execution left unfinished (leaked after a failure, or let go as
    /// process exit would) never destroys its thread-locals, as under std: dropping them
    /// with it would run user destructors on state it was interrupted in (crossbeam-epoch's
    /// `LocalHandle` asserting it is unpinned).
    fn forget_unfinished_locals(&mut self) {
        for t in self.threads.iter_mut().filter(|t| !t.is_finished()) {
            std::mem::forget(std::mem::take(&mut t.locals));
        }
    }

    /// Whether the test's main thread has returned.
    pub fn main_returned(&self) -> bool {
        self.threads.first().is_some_and(VThread::is_finished)
    }

    pub fn finish_current(&mut self) {
        self.trace_event(EventKind::Exit, "", None, None);
        let me = self.current;
        if me == 0 && self.config.detached == Detached::Warn {
            self.let_go_after = self.steps + DETACHED_STEPS;
        }
        self.threads[me as usize].status = Status::Finished;
        self.threads[me as usize].held.clear();
        if self.memory.relaxed {
            self.memory.finished(me);
        }
        self.live -= 1;
        self.progress.moved();
        self.scheduler.ended(me);
        self.remove_runnable(me);
        self.wake_all(ObjRef::thread(me));
    }

    /// At the end of an execution nothing failed: threads the test never joined that
    /// panicked or were left blocked or running fail it (`Detached::Fail`) or are warned
    /// about, as std would let such a test pass.
    pub fn judge_detached(&mut self) {
        let unjoined = self.threads.iter().position(|t| t.panic_payload.is_some());
        match (self.config.detached, unjoined) {
            (Detached::Fail, Some(t)) => self.stop = Some(Stop::Panic { thread: t as Tid }),
            (Detached::Fail, None) => {}
            (Detached::Warn, _) => {
                if let Some(t) = unjoined {
                    let name = self.thread_name(t as Tid);
                    let said = self.threads[t]
                        .panic
                        .as_ref()
                        .map_or_else(String::new, |r| format!("{}: {}", r.at(), r.message));
                    self.warn(format!(
                        "thread '{name}' panicked{said}, and the test never joined it (std lets such a test pass; \
                         `--detached fail` / PULSE_DETACHED=fail makes it fail)"
                    ));
                }
                if self.live > 0 {
                    self.warn(DETACHED_LEFT.to_string());
                }
            }
        }
    }

    /// Keeps a panic record a thread no longer holds (it caught the panic): another thread
    /// may resume it. The newest few are enough: a resumed panic is the last one caught.
    pub(crate) fn keep_caught(&mut self, thread: Tid, record: PanicRecord) {
        const KEPT: usize = 16;
        if self.caught_panics.len() == KEPT {
            self.caught_panics.remove(0);
        }
        self.caught_panics.push((thread, record));
    }

    /// What `thread` panicked with when it ended by a payload saying `said` that its own
    /// record does not hold: another thread's panic it resumed (the newest record of another
    /// thread with that message, held or caught), or the payload alone.
    pub(crate) fn resumed_panic(&self, thread: Tid, said: String) -> PanicRecord {
        let held = (self.threads.iter().enumerate())
            .filter_map(|(t, v)| Some((t as Tid, v.panic.as_ref()?)));
        let caught = self.caught_panics.iter().rev().map(|(t, r)| (*t, r));
        let origin = caught
            .chain(held)
            .find(|(t, r)| *t != thread && r.message == said);
        match origin {
            Some((t, r)) => PanicRecord {
                raised_in: Some(r.raised_in.unwrap_or(t)),
                earlier: None,
                ..r.clone()
            },
            None => PanicRecord {
                message: said,
                location: None,
                backtrace: None,
                earlier: None,
                raised_in: None,
                step: self.steps,
            },
        }
    }

    /// The test's body runs alone (or the last thread just ended): no other thread can
    /// change what it waits for.
    pub(crate) fn body_alone(&self) -> bool {
        self.live == 0 || (self.live == 1 && !self.threads[0].is_finished())
    }

    /// Timed waits ran out within the probe's last window: the threads sleep and poll.
    pub(crate) fn polling(&self) -> bool {
        self.last_timer_step > 0
            && self.steps.saturating_sub(self.last_timer_step) < self.progress.window()
    }

    /// Picks who runs next and stores it in `next` (`None` ends the execution).
    #[inline]
    pub fn decide(&mut self, yielding: bool) {
        self.pick_next(yielding);
        if self.trace.is_some() {
            self.grant_row();
        }
    }

    fn pick_next(&mut self, yielding: bool) {
        self.decide_next(yielding);
        if let Some(hb) = &self.heartbeat {
            // No other thread could run (or the others only sleep on pulse's clock) and the
            // test has not returned: a stall in the next one may be the program's own wait (a
            // child process, a long read), as it would be outside pulse, not a hang that
            // pulse's one OS thread made (`watchdog::waits_on_its_own`). (After the test
            // returned, std would abandon a thread stuck at exit: that is still reported.)
            let others = self.runnable.len() > 1
                || !self.fd_waiters.is_empty()
                || self.threads.first().is_some_and(VThread::is_finished);
            hb.set_company(match others {
                true => Company::Others,
                false if self.earliest_deadline == u64::MAX => Company::Alone,
                false => Company::Sleepers,
            });
        }
    }

    fn decide_next(&mut self, yielding: bool) {
        if self.stop.is_some() {
            self.next = None;
            return;
        }
        self.steps += 1;
        if self.steps == self.trace_from {
            self.trace = Some(Vec::new());
        }
        if self.steps & (CUT_CHECK_EVERY - 1) == 0 {
            if let Some(journal) = &mut self.journal {
                journal.step(self.steps);
            }
            if self.steps & (ALIVE_EVERY - 1) == 0 {
                // A sign of life for a driver watching for stalls (cargo-pulse's backstop),
                // in any long execution: a search's past its bound tells at each window
                // too, but a replay's or a minimization's did not (seize's 100,000,000-step
                // traced replay was stopped as stalled after 60 s).
                if let Some(progress) = &self.config.progress {
                    progress(self.reported.0, self.reported.1);
                }
            }
            if self
                .cut_at
                .is_some_and(|at| std::time::Instant::now() >= at)
            {
                self.stop = Some(Stop::TimeLimit);
                self.next = None;
                return;
            }
        }
        if self.steps > self.step_bound {
            self.scheduler.past_bound();
            // (A body alone that only sleeps and polls is judged as polling, at once.)
            let alone = self.body_alone() && !self.polling();
            match self
                .progress
                .at_bound(self.step_bound, self.config.max_steps, alone)
            {
                Verdict::Continue(bound) => {
                    self.step_bound = bound;
                    if let Some(progress) = &self.config.progress {
                        progress(self.reported.0, self.reported.1);
                    }
                }
                verdict => {
                    self.stop = Some(Stop::StepLimit {
                        capped: verdict != Verdict::Stuck,
                        progressing: verdict == Verdict::Capped { progressing: true },
                        alone: verdict == Verdict::Alone,
                    });
                    self.next = None;
                    return;
                }
            }
        }
        // After the test returned, threads it did not join run on for a while, then are let
        // go, as std's process exit would (unless detached threads are to fail the test).
        if self.steps > self.let_go_after {
            self.next = None;
            return;
        }
        self.clock_ns = self.clock_ns.saturating_add(self.increment);
        // Untimed steps take time too: a timed wait whose deadline they passed is over, and
        // its thread competes with the others (a sleeper wakes while another thread spins).
        if self.clock_ns >= self.earliest_deadline {
            self.wake_expired();
        }
        let current = self.current;
        if let Some(t) = self.threads.get_mut(current as usize) {
            if matches!(t.status, Status::Runnable) {
                t.enabled_at = self.clock_ns;
            }
        }
        if !self.fd_waiters.is_empty() {
            self.wake_readable(0);
        }
        if self.runnable.is_empty() {
            // Readiness from outside the process is waited for while the test runs; once it
            // returned, threads blocked on descriptors are let go at once, as std's process
            // exit would (async-io's driver thread waits on its reactor for ever).
            let real_wait = match self.threads.first().is_some_and(VThread::is_finished) {
                true => 0,
                false => REAL_WAIT_MS,
            };
            if !self.fire_when_all_blocked() && !self.wake_readable(real_wait) {
                self.next = None;
                if self.live > 0 {
                    let main_done = self.threads[0].is_finished();
                    if !main_done {
                        self.stop = Some(Stop::Deadlock);
                    } else if self.config.detached == Detached::Fail {
                        self.stop = Some(Stop::LeakedThread);
                    }
                }
                return;
            }
        } else if self.time.timers_compete()
            && self.earliest_deadline != u64::MAX
            && self.decide_with_timers(current, yielding)
        {
            return;
        }
        self.next = if self.runnable.len() == 1 {
            Some(self.runnable[0])
        } else {
            let cur = Some(current).filter(|&c| self.is_runnable(c));
            match self.scheduler.next_runnable(&self.runnable, cur, yielding) {
                Some(t) => {
                    self.push_choice(t);
                    Some(t)
                }
                None => {
                    self.stop = Some(self.replay_stop());
                    None
                }
            }
        };
    }

    /// The timers that may fire next, into `candidates` (sorted thread indices): those due
    /// by `horizon`, within `jitter` of the earliest deadline, and not past any timer's
    /// `latest` (a timer with a `max_wait` is never overtaken beyond it).
    fn timer_candidates(&mut self, horizon: u64) {
        self.candidates.clear();
        let (mut earliest, mut latest) = (u64::MAX, u64::MAX);
        for t in &self.threads {
            if let Status::Blocked(Blocked {
                deadline: Some(d),
                latest: l,
                ..
            }) = t.status
            {
                earliest = earliest.min(d);
                latest = latest.min(l);
            }
        }
        if earliest > horizon {
            return;
        }
        let limit = earliest
            .saturating_add(self.time.jitter)
            .min(latest.max(earliest))
            .min(horizon);
        for (tid, t) in self.threads.iter().enumerate() {
            if matches!(t.status, Status::Blocked(Blocked { deadline: Some(d), .. }) if d <= limit)
            {
                self.candidates.push(tid as Tid);
            }
        }
    }

    /// Runnable threads and timers compete (pulse_time's `timeoutInterval` and
    /// `timeoutPrecedence`): a timer due within `interval` of the oldest enabled untimed step
    /// may fire first; with precedence it does, without it a coin says whether it does
    /// (`ChoiceKind::TimerFirst`). Returns whether it decided (`next` is set).
    fn decide_with_timers(&mut self, current: Tid, yielding: bool) -> bool {
        let oldest_enabled = self
            .runnable
            .iter()
            .map(|&t| self.threads[t as usize].enabled_at)
            .min()
            .unwrap_or(self.clock_ns);
        self.timer_candidates(oldest_enabled.saturating_add(self.time.interval));
        if self.candidates.is_empty() {
            return false;
        }
        if !self.time.precedence && !self.choose_bool(ChoiceKind::TimerFirst) {
            if self.stop.is_none() {
                return false; // the untimed steps go first this time
            }
            self.next = None; // a replay that no longer fits
            return true;
        }
        let candidates = std::mem::take(&mut self.candidates);
        let picked = self.pick(&candidates, current, yielding);
        self.candidates = candidates;
        let Some(t) = picked else {
            self.stop = Some(self.replay_stop());
            self.next = None;
            return true;
        };
        if !matches!(self.threads[t as usize].status, Status::Runnable) {
            if !self.runnable.is_empty() {
                self.timer_overtook = self.timer_overtook.or(Some(self.steps));
            }
            self.fire_timer(t);
        }
        self.next = Some(t);
        true
    }

    /// Picks one of `among` (sorted, non-empty), recording the choice when there was one.
    fn pick(&mut self, among: &[Tid], current: Tid, yielding: bool) -> Option<Tid> {
        if among.len() == 1 {
            return Some(among[0]);
        }
        let cur = among.binary_search(&current).ok().map(|_| current);
        let t = self.scheduler.next_thread(among, cur, yielding)?;
        self.push_choice(t);
        Some(t)
    }

    /// `tid`'s timed wait ends now: the clock reaches its deadline (if it is not past it
    /// already) and every wait due by then ends with it.
    fn fire_timer(&mut self, tid: Tid) {
        if let Status::Blocked(Blocked {
            deadline: Some(d), ..
        }) = self.threads[tid as usize].status
        {
            self.clock_ns = self.clock_ns.max(d);
            self.wake_expired();
        }
    }

    /// Puts a fired timer in the trace, as a step of the thread whose wait ended.
    fn trace_timer(&mut self, tid: Tid) {
        if self.trace.is_some() {
            let (op, object, location) = match self.threads[tid as usize].status {
                Status::Blocked(b) => (b.op, b.object, Some(b.location)),
                _ => return,
            };
            let me = std::mem::replace(&mut self.current, tid);
            self.trace_event(EventKind::Timeout, op, object, location);
            self.current = me;
        }
    }

    /// Wakes every thread whose deadline has passed and notes the next deadline.
    fn wake_expired(&mut self) {
        self.earliest_deadline = u64::MAX;
        for tid in 0..self.threads.len() {
            if let Status::Blocked(Blocked {
                deadline: Some(d), ..
            }) = self.threads[tid].status
            {
                if d <= self.clock_ns {
                    self.last_timer_step = self.steps;
                    self.trace_timer(tid as Tid);
                    self.wake(tid as Tid, WakeReason::TimedOut);
                } else {
                    self.earliest_deadline = self.earliest_deadline.min(d);
                }
            }
        }
    }

    /// No thread can run: the clock jumps to the next timer (pulse_time's timed transition;
    /// with jitter, any timer close enough to the earliest, a scheduler choice) and every
    /// wait due by then ends. False if no thread waits with a deadline.
    fn fire_when_all_blocked(&mut self) -> bool {
        self.timer_candidates(UNBOUNDED);
        let candidates = std::mem::take(&mut self.candidates);
        let picked = match candidates.len() {
            0 => None,
            // Without jitter every candidate has the earliest deadline: all fire together.
            _ if self.time.jitter == 0 => Some(candidates[0]),
            _ => {
                let current = self.current;
                let p = self.pick(&candidates, current, false);
                if p.is_none() {
                    self.stop = Some(self.replay_stop());
                }
                p
            }
        };
        self.candidates = candidates;
        if let Some(t) = picked {
            self.fire_timer(t);
        }
        picked.is_some()
    }

    /// Wakes the threads whose descriptor is readable, after waiting up to `timeout_ms` of
    /// real time for one (0: a look); returns whether any woke. What made it readable was
    /// written in the step just taken, by the current thread: its wait's object carries that
    /// thread's view to the woken one (a system call orders memory as a fence does).
    fn wake_readable(&mut self, timeout_ms: i32) -> bool {
        if self.fd_waiters.is_empty() {
            return false;
        }
        let mut ready = std::mem::take(&mut self.woken);
        ready.clear();
        self.fd_waiters.ready(timeout_ms, &mut ready);
        let mut any = false;
        for &tid in &ready {
            if let Status::Blocked(Blocked {
                object: Some(object),
                ..
            }) = self.threads[tid as usize].status
            {
                if self.memory.relaxed && self.current != tid {
                    self.memory.sync_object(self.current, object);
                }
            }
            any |= self.wake(tid, WakeReason::Notified);
        }
        self.woken = ready;
        any
    }

    /// Which of `waiters` an object wakes (a scheduler choice, recorded like a thread's).
    fn choose_waiter(&mut self, waiters: &[Tid]) -> Option<Tid> {
        match waiters.len() {
            0 => None,
            1 => Some(waiters[0]),
            _ => match self.scheduler.next_waiter(waiters) {
                Some(t) => {
                    self.push_choice(t);
                    Some(t)
                }
                None => {
                    self.stop = Some(self.replay_stop());
                    Some(waiters[0])
                }
            },
        }
    }

    pub fn choose_bool(&mut self, kind: ChoiceKind) -> bool {
        let enabled = match kind {
            ChoiceKind::SpuriousWakeup => self.config.odds.spurious_wakeup != 0,
            ChoiceKind::WeakCasFailure => self.config.odds.weak_cas_failure != 0,
            ChoiceKind::WriterPreference => self.config.odds.writer_preference != 0,
            ChoiceKind::TimerFirst => self.config.odds.timer_first != 0,
        };
        if !enabled {
            return false;
        }
        let b = self.scheduler.next_bool(kind).map(u32::from);
        self.record_answer(b) == 1
    }

    /// Why a replay's scheduler had no answer. Recorded choices that ran out past the step
    /// bound end where a time limit cut the recorded execution there: the replay has
    /// reached that step-limit finding (`Stop::TimeLimit`, judged as the cut was).
    /// Otherwise the schedule no longer fits the program.
    fn replay_stop(&self) -> Stop {
        match self.config.replay.is_some() && self.scheduler.ran_out() && self.progress.probing() {
            true => Stop::TimeLimit,
            false => Stop::ReplayDiverged,
        }
    }

    /// Appends a choice to the schedule (and the journal, in a worker).
    #[inline]
    fn push_choice(&mut self, choice: u32) {
        self.schedule.push(choice);
        if let Some(journal) = &mut self.journal {
            journal.choice(choice, self.steps);
        }
    }

    /// Appends a non-thread choice to the schedule; `None` (a replay that no longer fits)
    /// stops the execution and answers 0.
    #[inline]
    fn record_answer(&mut self, choice: Option<u32>) -> u32 {
        match choice {
            Some(c) => {
                self.push_choice(c);
                c
            }
            None => {
                self.stop = Some(self.replay_stop());
                0
            }
        }
    }

    /// Which of `stores` stores a load reads (relaxed memory; 0: the newest).
    pub fn choose_read(&mut self, stores: u32) -> u32 {
        if stores < 2 || self.teardown {
            return 0;
        }
        let k = self.scheduler.next_read(stores);
        self.record_answer(k)
    }

    /// A word of test data, recorded in the schedule like any choice (0 once the execution
    /// is tearing down or its replay diverged).
    pub fn choose_word(&mut self) -> u32 {
        if self.teardown || self.stop.is_some() {
            return 0;
        }
        let w = self.scheduler.next_word();
        self.record_answer(w)
    }

    /// A thread's name in reports (`VThread::label`).
    pub fn thread_name(&self, tid: Tid) -> String {
        self.threads[tid as usize].label(tid)
    }

    /// A thread named `name`, marked if an earlier thread of this execution had the name.
    fn new_thread(&mut self, name: Option<Arc<str>>) -> VThread {
        let repeats_a_name = name
            .as_ref()
            .is_some_and(|n| !self.thread_names.insert(n.clone()));
        VThread {
            repeats_a_name,
            ..VThread::new(name)
        }
    }

    pub fn warn(&mut self, message: String) {
        if (self.config.keep_warning)(&message) && !self.warnings.contains(&message) {
            self.warnings.push(message);
        }
    }
}
