//! The handle shim-std uses to talk to the running execution: scheduling points,
//! blocking and waking, spawning and joining, clock, choices, thread-locals.
//!
//! Every method that reaches a scheduling point is `#[track_caller]`, so the location a
//! trace shows is the user's call site, as long as the shim method calling it is too.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::Location;
use std::ptr;
use std::sync::Arc;
use std::time::Duration;

use crate::config::duration_nanos;
use crate::execution::{Blocked, ExecState, PanicRecord, WakeReason};
use crate::obj_ref::ObjRef;
use crate::report::trace::{EventKind, TraceKind};
use crate::scheduler::ChoiceKind;

/// An execution's state, pinned for its duration. The id lives outside the `RefCell` so
/// the object-ownership check on every operation is one plain load.
pub(crate) struct ExecCell {
    pub id: Cell<u64>,
    pub state: RefCell<ExecState>,
    /// A virtual thread is running (the executor resumed its coroutine and it has not
    /// switched back): only its code is the test's.
    pub in_thread: Cell<bool>,
}

thread_local! {
    static CURRENT: Cell<*const ExecCell> = const { Cell::new(ptr::null()) };
}

pub(crate) fn set_current(cell: *const ExecCell) -> *const ExecCell {
    CURRENT.with(|c| c.replace(cell))
}

/// The payload used to unwind a thread that is being cleaned up after its execution ended.
/// It is never reported as a panic.
pub struct PulseAbort;

/// What an atomic operation owes beyond itself (`Ctx::atomic_duties`).
#[derive(Default, Clone, Copy)]
pub(crate) struct AtomicDuties {
    pub relaxed: bool,
    pub tracing: bool,
    pub probing: bool,
}

/// A handle to the execution running on this OS thread.
#[derive(Clone, Copy)]
pub struct Ctx {
    cell: &'static ExecCell,
}

/// The running execution, or `None` outside `pulse::check` (then shims behave like std).
/// Also `None` while the runtime runs code of its own during an execution (the executor
/// between two threads, or the runtime updating the execution's state): what runs then (an
/// allocation, through a `#[global_allocator]` that counts in an instrumented atomic, as
/// crossbeam-channel's tests do) is not an operation of the test, and scheduling it would
/// re-enter the runtime (a double borrow and an abort, or a switch off a stack that is no
/// coroutine's).
#[inline]
pub fn current() -> Option<Ctx> {
    let p = CURRENT.with(Cell::get);
    if p.is_null() {
        return None;
    }
    // SAFETY: the runner sets CURRENT only while the cell is alive and clears it after.
    let cell: &'static ExecCell = unsafe { &*p };
    // SAFETY: only the borrow flag is read; the reference is never used.
    if !cell.in_thread.get() || unsafe { cell.state.try_borrow_unguarded() }.is_err() {
        return None;
    }
    Some(Ctx { cell })
}

/// The number the scheduler is told an operation's object by (`Scheduler::pending`): equal
/// for the same object within an execution, 0 for none.
#[inline]
fn resource(object: Option<ObjRef>) -> u64 {
    object.map_or(0, ObjRef::resource)
}

impl Ctx {
    /// The running execution's process-unique id (handles that outlive their execution,
    /// e.g. a `Thread` kept in a static, compare it to know they are stale).
    #[inline]
    pub fn execution_id(self) -> u64 {
        self.cell.id.get()
    }

    /// Whether this execution runs the relaxed memory model, read without taking a borrow
    /// (under `sc`, three executions in four by default, every atomic and object operation
    /// asks: two flag writes per ask cost ~8% on the lock and CAS benchmarks).
    #[inline]
    pub(crate) fn relaxed(self) -> bool {
        // SAFETY: the reference is dropped before this returns; the check fails (false) if
        // the runtime holds the state mutably.
        unsafe { self.cell.state.try_borrow_unguarded() }.is_ok_and(|st| st.memory.relaxed)
    }

    /// What an atomic operation owes beyond itself, in one borrow-free read: the memory
    /// model's step, its value on a traced row, its write to the progress probe. All false
    /// (`sc`, untraced, within the step bound) is nearly every search execution's case.
    #[inline]
    pub(crate) fn atomic_duties(self) -> AtomicDuties {
        // SAFETY: as in `relaxed`.
        unsafe { self.cell.state.try_borrow_unguarded() }.map_or(AtomicDuties::default(), |st| {
            AtomicDuties {
                relaxed: st.memory.relaxed,
                tracing: st.trace.is_some(),
                probing: st.progress.probing(),
            }
        })
    }

    #[inline]
    pub(crate) fn state(self) -> std::cell::RefMut<'static, ExecState> {
        self.cell.state.borrow_mut()
    }

    pub(crate) fn new_object(self, kind: &'static str) -> ObjRef {
        let mut st = self.state();
        let id = st.next_object;
        st.next_object += 1;
        ObjRef { kind, id }
    }

    /// Records a warning for the run's report (deduplicated).
    pub fn warn(self, message: String) {
        self.state().warn(message);
    }

    /// Index of the running virtual thread (0 = the test's main thread).
    #[inline]
    pub fn me(self) -> u32 {
        self.state().current
    }

    /// A scheduling point before a visible operation: the scheduler may run other threads
    /// first. `op` names the operation ("Mutex::lock"), `object` what it acts on.
    #[track_caller]
    #[inline]
    pub fn switch(self, op: &'static str, object: Option<ObjRef>) {
        self.switch_at(op, object, resource(object), Location::caller(), false);
        self.sync_with(object);
    }

    /// A scheduling point for an object that carries no pulse state (an atomic, which must
    /// stay layout-compatible with std's). It is named by address, and only while tracing,
    /// where first-use order gives it a stable number.
    #[track_caller]
    #[inline]
    pub fn switch_addr(self, op: &'static str, kind: &'static str, addr: usize) {
        let object = {
            let mut st = self.state();
            if st.trace.is_some() {
                Some(st.object_at(kind, addr))
            } else {
                None
            }
        };
        // The address names the atomic for POS's race detection (equal within an execution).
        self.switch_at(op, object, addr as u64 | 1 << 63, Location::caller(), false)
    }

    /// A scheduling point attributed to `location` rather than the caller: for operations
    /// in `Drop`, which cannot be `#[track_caller]` (an unlock is shown at its lock site).
    #[inline]
    pub fn switch_from(
        self,
        op: &'static str,
        object: Option<ObjRef>,
        location: &'static Location<'static>,
    ) {
        self.switch_at(op, object, resource(object), location, false);
        self.sync_with(object);
    }

    /// `thread::yield_now`: a scheduling point that tells the strategy this thread waits
    /// for others (PCT lowers its priority).
    #[track_caller]
    pub fn yield_now(self) {
        self.switch_at("thread::yield_now", None, 0, Location::caller(), true)
    }

    #[inline]
    fn switch_at(
        self,
        op: &'static str,
        object: Option<ObjRef>,
        resource: u64,
        location: &'static Location<'static>,
        yielding: bool,
    ) {
        let must_suspend = {
            let mut st = self.state();
            if st.teardown {
                drop(st);
                self.teardown_point();
                return;
            }
            st.record(op, object, location);
            let me = st.current;
            st.scheduler.pending_op(me, op, resource);
            if st.threads[me as usize].atomic_depth > 0 {
                return;
            }
            st.decide(yielding);
            st.next != Some(me)
        };
        if must_suspend {
            self.suspend();
        }
    }

    /// Blocks the running thread on `object` until another thread wakes it, or until
    /// `timeout` passes on the virtual clock. The caller re-checks its condition after:
    /// being woken is a hint, not a guarantee (another thread may get there first).
    #[track_caller]
    pub fn block(
        self,
        op: &'static str,
        object: Option<ObjRef>,
        timeout: Option<Duration>,
    ) -> WakeReason {
        let location = Location::caller();
        {
            let mut st = self.state();
            if st.teardown {
                drop(st);
                return self.teardown_point();
            }
            let now = st.clock_ns;
            let deadline = timeout.map(|d| now.saturating_add(duration_nanos(d)));
            let me = st.current as usize;
            // `pulse::max_wait` bounds the next timed wait only.
            let max_wait = deadline.and_then(|_| st.threads[me].max_wait.take());
            let latest = match (deadline, max_wait) {
                (Some(d), Some(w)) => now.saturating_add(w).max(d),
                _ => u64::MAX,
            };
            st.block_current(Blocked {
                op,
                object,
                location,
                deadline,
                latest,
            });
            st.decide(false);
        }
        self.suspend();
        // Woken by an unlock, send or exit: what that thread did is now visible.
        self.sync_with(object);
        let mut st = self.state();
        if st.teardown {
            return WakeReason::Teardown;
        }
        st.resumed(object);
        let reason = st.threads[st.current as usize].wake;
        if st.trace.is_some() {
            let why = match (reason, object.map(|o| o.kind)) {
                (WakeReason::TimedOut, _) => "timeout",
                (_, Some("Mutex" | "RwLock")) => "unlock",
                (_, Some("Thread")) => "exit",
                (_, Some("Condvar" | "Park")) => "notify",
                (_, Some(EPOLL)) => "readable",
                _ => "woken",
            };
            st.trace_value(
                EventKind::Note(TraceKind::Wake),
                op,
                object,
                Some(location),
                Some(why),
            );
        }
        reason
    }

    /// Blocks the running thread until file descriptor `fd` is readable, or until `timeout`
    /// passes on the virtual clock: an epoll wait (`fd_waiters`). The descriptor is looked
    /// at in every decision while the thread waits, so it wakes at the first one after
    /// another thread's write made it ready. The object (`Epoll#n`, by descriptor) names
    /// the wait in the trace. The caller looks again: readable is a hint, as a wake is.
    #[track_caller]
    pub fn wait_readable(self, op: &'static str, fd: i32, timeout: Option<Duration>) -> WakeReason {
        let object = {
            let mut st = self.state();
            let me = st.current;
            st.fd_waiters.add(me, fd);
            st.object_at(EPOLL, fd as usize)
        };
        let reason = self.block(op, Some(object), timeout);
        let mut st = self.state();
        let me = st.current;
        st.fd_waiters.remove(me);
        reason
    }

    /// Wakes every thread blocked on `object`; they race (a scheduler choice) to proceed.
    pub fn wake_all(self, object: ObjRef) {
        // The woken threads acquire `object` when they resume (`block`).
        self.sync_with(Some(object));
        self.state().wake_all(object);
    }

    /// Wakes the threads waiting for lock `object`, just released, to race for it; those
    /// that have not run when it is next taken (`reblock_contenders`) wait again.
    pub fn wake_contenders(self, object: ObjRef) {
        self.sync_with(Some(object));
        self.state().wake_contenders(object);
    }

    /// Lock `object` was just taken so that every other thread's attempt fails: the
    /// threads its release woke that have not run yet wait again, as their attempt would
    /// have made them (without the steps).
    pub fn reblock_contenders(self, object: ObjRef) {
        self.state().reblock_contenders(object);
    }

    /// Whether any thread is blocked on `object` (no allocation).
    pub fn has_waiters(self, object: ObjRef) -> bool {
        self.state().has_waiters(object)
    }

    /// How many threads are blocked on `object`: a `FUTEX_WAKE` returns how many it woke.
    pub fn waiter_count(self, object: ObjRef) -> usize {
        self.state().waiter_count(object)
    }

    /// Wakes one thread blocked on `object`, which one a scheduler choice: the waiter a
    /// `notify_one` wakes, or the one a mutex's release wakes to race for it. Returns
    /// whether there was one.
    pub fn wake_one(self, object: ObjRef) -> bool {
        self.sync_with(Some(object));
        self.state().wake_one(object)
    }

    /// A nondeterministic yes/no that std allows (spurious wakeup, weak CAS failure).
    pub fn choose(self, kind: ChoiceKind) -> bool {
        let mut st = self.state();
        if st.teardown {
            return false;
        }
        st.choose_bool(kind)
    }

    /// Test data the execution draws like a scheduling choice: a property test's input seed
    /// (`pulse::__private::run_proptest`). A replay of the execution's schedule draws the
    /// same value, so the input replays with the interleaving.
    pub fn choose_data(self) -> u64 {
        let mut st = self.state();
        let high = st.choose_word() as u64;
        (high << 32) | st.choose_word() as u64
    }

    /// Notes that the running thread took lock `object` (for deadlock reports).
    #[track_caller]
    pub fn acquired(self, object: ObjRef) {
        // A lock taken without blocking or a scheduling point of its own (`Condvar::wait`
        // re-locking) still sees what the last holder did.
        self.sync_with(Some(object));
        let mut st = self.state();
        let me = st.current as usize;
        st.threads[me].held.push((object, Location::caller()));
        st.scheduler.acquired(me as u32, object.resource());
        if st.progress.probing() {
            st.progress.took(object.resource(), me as u32);
        }
        st.trace_outcome(TraceKind::Acquire, object, Location::caller());
    }

    /// Notes that the running thread released lock `object`.
    #[track_caller]
    pub fn released(self, object: ObjRef) {
        let mut st = self.state();
        let me = st.current as usize;
        let held = &mut st.threads[me].held;
        if let Some(i) = held.iter().rposition(|(o, _)| *o == object) {
            held.remove(i);
        }
        st.scheduler.released(me as u32, object.resource());
        st.trace_outcome(TraceKind::Release, object, Location::caller());
    }

    /// Puts what an operation did in the trace file (not the console's table): a message
    /// sent, a receive's result, a failed `try_lock`. Nothing unless the execution is traced.
    #[track_caller]
    pub fn note(
        self,
        kind: TraceKind,
        op: &'static str,
        object: Option<ObjRef>,
        value: Option<&'static str>,
    ) {
        let mut st = self.state();
        if kind == TraceKind::Send {
            st.progress.moved();
        }
        if st.trace.is_some() && !st.teardown {
            st.trace_value(
                EventKind::Note(kind),
                op,
                object,
                Some(Location::caller()),
                value,
            );
        }
    }

    /// Creates a virtual thread running `body` and returns its index. The new thread
    /// becomes runnable at once; the spawn itself is a scheduling point.
    ///
    /// # Safety
    /// `body` may borrow data that does not live for `'static`: the caller must make sure
    /// the thread is joined before that data goes away (as `thread::scope` does).
    #[track_caller]
    pub unsafe fn spawn_unchecked<'a>(
        self,
        name: Option<Arc<str>>,
        stack_size: Option<usize>,
        body: Box<dyn FnOnce() + 'a>,
    ) -> u32 {
        // SAFETY: lifetime erased per this function's contract.
        let body: Box<dyn FnOnce() + 'static> = unsafe { std::mem::transmute(body) };
        if self.is_teardown() {
            self.teardown_point();
            // An unwinding thread's cleanup spawned a thread: the execution is over, so it
            // never runs; its closure is dropped now, while this execution is current.
            drop(body);
            return self.state().add_finished_thread(name);
        }
        let tid = {
            let mut st = self.state();
            let stack = stack_size.unwrap_or(st.config.stack_size);
            st.add_thread(name, Some(Location::caller()), body, stack)
        };
        self.switch(crate::execution::SPAWN_OP, Some(ObjRef::thread(tid)));
        tid
    }

    /// Whether a thread with `stack_size` (`None`: the default) can be spawned: `Err` when its
    /// stack cannot be mapped (rayon asks for `isize::MAX` bytes and expects `Err`), as std's
    /// `Builder::spawn` returns.
    pub fn can_spawn(self, stack_size: Option<usize>) -> std::io::Result<()> {
        let size = stack_size.unwrap_or(self.state().config.stack_size);
        crate::stack_pool::can_allocate(size)
    }

    /// Waits for `thread` to finish. `Err` carries its panic payload.
    #[track_caller]
    pub fn join(self, thread: u32) -> Result<(), Box<dyn Any + Send>> {
        let obj = ObjRef::thread(thread);
        self.switch("JoinHandle::join", Some(obj));
        loop {
            if self.is_finished(thread) {
                self.note(TraceKind::Join, "JoinHandle::join", Some(obj), None);
                let mut st = self.state();
                return match st.threads[thread as usize].panic_payload.take() {
                    Some(p) => Err(p),
                    None => Ok(()),
                };
            }
            if self.block("JoinHandle::join", Some(obj), None) == WakeReason::Teardown {
                return Err(Box::new(
                    "pulse: execution ended before the thread finished",
                ));
            }
        }
    }

    pub fn is_finished(self, thread: u32) -> bool {
        self.state().threads[thread as usize].is_finished()
    }

    pub fn thread_name(self, thread: u32) -> Option<Arc<str>> {
        self.state().threads[thread as usize].name.clone()
    }

    /// `thread::park`/`park_timeout`: returns at once if the thread's token is set
    /// (consuming it), may return spuriously (a scheduler choice), otherwise blocks until
    /// `unpark` or the timeout.
    #[track_caller]
    pub fn park(self, timeout: Option<Duration>) {
        let op = if timeout.is_some() {
            "thread::park_timeout"
        } else {
            "thread::park"
        };
        let me = self.me();
        let obj = ObjRef::park(me);
        // The token is the operation's object for the strategies (DPOR's footprint, POS's
        // races); the trace names it only where the park consumes a token or blocks.
        self.switch_at(op, None, obj.resource(), Location::caller(), false);
        let token = std::mem::take(&mut self.state().threads[me as usize].park_token);
        if token {
            self.sync_with(Some(obj));
            self.note(TraceKind::Wake, op, Some(obj), Some("token"));
            return;
        }
        if self.choose(ChoiceKind::SpuriousWakeup) {
            self.note(TraceKind::Wake, op, Some(obj), Some("spurious"));
            return;
        }
        self.block(op, Some(obj), timeout);
        self.state().threads[me as usize].park_token = false;
    }

    /// `Thread::unpark`: sets the token and wakes the thread if it is parked.
    #[track_caller]
    pub fn unpark(self, thread: u32) {
        let token = ObjRef::park(thread).resource();
        self.switch_at("Thread::unpark", None, token, Location::caller(), false);
        // Unpark happens-before the park it ends (std's documented handoff).
        self.sync_with(Some(ObjRef::park(thread)));
        self.note(
            TraceKind::Notify,
            "Thread::unpark",
            Some(ObjRef::park(thread)),
            None,
        );
        let mut st = self.state();
        let t = &mut st.threads[thread as usize];
        let parked = matches!(t.status, crate::execution::Status::Blocked(b) if b.object == Some(ObjRef::park(thread)));
        if parked {
            st.wake(thread, WakeReason::Notified);
        } else {
            t.park_token = true;
        }
    }

    /// `thread::sleep`: blocks until the virtual clock has advanced by `duration`.
    #[track_caller]
    pub fn sleep(self, duration: Duration) {
        self.switch("thread::sleep", None);
        if !duration.is_zero() {
            self.block("thread::sleep", None, Some(duration));
        }
    }

    /// pulse_time's `max_wait_time`: the running thread's next timed wait ends at most `d`
    /// after it starts, however the time mode's jitter orders timers.
    pub fn max_wait(self, d: Duration) {
        let mut st = self.state();
        let me = st.current as usize;
        st.threads[me].max_wait = Some(duration_nanos(d));
    }

    /// Virtual time since the execution started.
    pub fn now(self) -> Duration {
        Duration::from_nanos(self.state().clock_ns)
    }

    /// A scheduling point before clock read `op` (`Instant::now`), then the read: the
    /// virtual clock. If others ran or a timer fired in between, the trace gets a row for
    /// the read itself, at the time it read (the scheduling point's row shows an earlier
    /// time, and a timer firing in between is often the story).
    #[track_caller]
    pub fn read_clock(self, op: &'static str) -> Duration {
        let location = Location::caller();
        let before = self.state().trace.as_ref().map(Vec::len);
        self.switch(op, None);
        let mut st = self.state();
        // The scheduling point pushed one event; anything after it came from elsewhere.
        if before.is_some_and(|n| st.trace.as_ref().is_some_and(|t| t.len() > n + 1)) {
            st.trace_event(EventKind::ClockRead, op, None, Some(location));
        }
        Duration::from_nanos(st.clock_ns)
    }

    /// The execution's `SystemTime`: the run's date (the real one when the run started; in
    /// an isolated worker, its parent run's) plus the virtual clock.
    pub fn wall_clock(self) -> std::time::SystemTime {
        let clock = self.now();
        self.wall_clock_at(clock)
    }

    /// The execution's `SystemTime` when the virtual clock read `clock`.
    pub fn wall_clock_at(self, clock: Duration) -> std::time::SystemTime {
        self.state().wall_clock + clock
    }

    /// Whether the running virtual thread is unwinding from a panic (std's answer is per
    /// OS thread, shared by every virtual thread, so it is combined with ours).
    pub fn panicking(self) -> bool {
        std::thread::panicking() && {
            let st = self.state();
            st.threads[st.current as usize].in_panic
        }
    }

    /// Whether the execution is over and threads are being cleaned up.
    pub fn is_teardown(self) -> bool {
        self.state().teardown
    }

    /// Runs `f` as one atomic step: a scheduling point before it, none inside it
    /// (PULSE's treatment of declared side effects, §5.3).
    #[track_caller]
    pub fn atomic<R>(self, f: impl FnOnce() -> R) -> R {
        self.switch("pulse::atomic", None);
        struct Depth(Ctx);
        impl Drop for Depth {
            fn drop(&mut self) {
                let mut st = self.0.state();
                let me = st.current as usize;
                st.threads[me].atomic_depth -= 1;
            }
        }
        {
            let mut st = self.state();
            let me = st.current as usize;
            st.threads[me].atomic_depth += 1;
        }
        let _depth = Depth(self);
        f()
    }

    /// The running thread's value of the thread-local keyed by `key`, created with `init`
    /// on first use. `None` once that key's value was destroyed at thread exit.
    pub fn with_local<T: 'static, R>(
        self,
        key: usize,
        init: impl FnOnce() -> T,
        f: impl FnOnce(&T) -> R,
    ) -> Option<R> {
        let found = {
            let st = self.state();
            let t = &st.threads[st.current as usize];
            if t.destroyed_locals.contains(&key) {
                return None;
            }
            t.locals
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| &**v as *const dyn Any)
        };
        let ptr = match found {
            Some(p) => p,
            None => {
                // init may itself use shims or other thread-locals: no borrow held.
                let value: Box<dyn Any> = Box::new(init());
                let p = &*value as *const dyn Any;
                let mut st = self.state();
                let me = st.current as usize;
                let locals = &mut st.threads[me].locals;
                // If `init` itself touched this key, std keeps the outer value: replace
                // the inner one (dropped outside the borrow, its Drop may use shims).
                let replaced = match locals.iter_mut().find(|(k, _)| *k == key) {
                    Some(slot) => Some(std::mem::replace(&mut slot.1, value)),
                    None => {
                        locals.push((key, value));
                        None
                    }
                };
                drop(st);
                drop(replaced);
                p
            }
        };
        // SAFETY: boxed values stay put until the thread's locals are destroyed, which
        // happens only after the thread's code has returned.
        let value = unsafe { &*ptr };
        Some(f(value
            .downcast_ref::<T>()
            .expect("thread-local keyed by its own address")))
    }

    /// `available_parallelism` inside an execution: a fixed number, so replays agree
    /// across machines.
    pub fn available_parallelism(self) -> usize {
        self.state().config.available_parallelism
    }

    /// Switches to whichever thread the last decision picked.
    fn suspend(self) {
        let yielder = {
            let st = self.state();
            st.threads[st.current as usize].yielder
        };
        // SAFETY: the yielder lives on this coroutine's stack for its whole life, and we
        // are running on that coroutine.
        unsafe { (*yielder).suspend(()) };
        if self.state().teardown {
            self.teardown_point();
        }
    }

    /// Called when a thread reaches a pulse operation after its execution ended. A thread
    /// that is not unwinding yet is made to unwind (with `PulseAbort`, never reported);
    /// one that is already unwinding gets non-blocking answers so its cleanup completes.
    /// A thread that keeps catching the abort is abandoned.
    #[cold]
    fn teardown_point(self) -> WakeReason {
        let (unwinding, aborts) = {
            let st = self.state();
            let t = &st.threads[st.current as usize];
            (t.in_panic && std::thread::panicking(), t.aborts)
        };
        if !unwinding {
            if aborts >= MAX_TEARDOWN_ABORTS {
                self.abandon();
            }
            {
                let mut st = self.state();
                let me = st.current as usize;
                st.threads[me].in_panic = true;
                st.threads[me].aborts += 1;
            }
            std::panic::resume_unwind(Box::new(PulseAbort));
        }
        WakeReason::Teardown
    }

    /// Gives up on the running thread during teardown: it can neither finish nor wait for
    /// anything, so it hands control back to the runner for good, which leaks its stack
    /// (with a warning) instead of aborting the process or looping forever.
    pub fn abandon(self) -> ! {
        let yielder = {
            let st = self.state();
            st.threads[st.current as usize].yielder
        };
        loop {
            // SAFETY: as in `suspend`; the runner stops resuming it after a bounded count.
            unsafe { (*yielder).suspend(()) };
        }
    }
}

/// A panic `record_panic` stored, and on which thread.
pub(crate) struct Recorded {
    pub thread: String,
    pub record: PanicRecord,
}

/// The kind of the object an epoll wait blocks on (`Ctx::wait_readable`).
const EPOLL: &str = "Epoll";

/// How many `PulseAbort`s a thread may catch during teardown before it is abandoned.
const MAX_TEARDOWN_ABORTS: u32 = 100;

impl Ctx {
    /// Called by the panic hook: stores what it saw on the running thread. `None` if the
    /// state is busy (a panic inside the runtime itself) or cleanup runs user code, so the
    /// default hook prints it. A panic while the thread unwinds from another (a destructor's)
    /// keeps that one as its `earlier`.
    pub(crate) fn record_panic(
        self,
        make: impl FnOnce(bool, u64) -> PanicRecord,
    ) -> Option<Recorded> {
        let Ok(mut st) = self.cell.state.try_borrow_mut() else {
            return None;
        };
        if st.teardown {
            // Cleanup's own aborts never reach the hook: this is a real panic in user code
            // run during cleanup, worth printing.
            return None;
        }
        st.first_panic_at
            .get_or_insert_with(std::time::Instant::now);
        let capture = st.capture_backtraces;
        let me = st.current;
        let thread = st.thread_name(me);
        let events = st.trace.as_ref().map(Vec::len);
        let step = st.steps;
        let t = &mut st.threads[me as usize];
        if !t.in_panic {
            t.panicked_after_events = events;
        }
        let mut record = make(capture, step);
        let mut caught = None;
        if t.in_panic {
            record.earlier = t.panic.take().map(Box::new);
        } else {
            caught = t.panic.take();
        }
        let recorded = Recorded {
            thread,
            record: record.clone(),
        };
        t.panic = Some(record);
        t.in_panic = true;
        if let Some(caught) = caught {
            st.keep_caught(me, caught);
        }
        Some(recorded)
    }
}
