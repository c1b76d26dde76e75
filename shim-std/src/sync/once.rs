//! `std::sync::Once`, and the one-time-initialisation core `OnceLock` and `LazyLock` share.
//!
//! Under pulse, starting, finishing and checking an initialisation are scheduling
//! points: which caller runs the closure is the scheduler's choice (the others block until
//! it finishes), and other threads may see the closure's effects before they see the
//! `Once` complete.
//!
//! What persists between executions: a `static` initialised in one execution stays
//! initialised (statics cannot be reset), so the outcome — complete or poisoned — is
//! process-wide, in an atomic. Only the initialisation in progress (who runs it, who
//! waits) is per execution: an initialisation cut short when its execution ends leaves
//! the object uninitialised, never blocking the next execution (`LazyLock`'s is poisoned
//! instead, its closure being consumed). Outside an execution the atomic and an OS
//! condvar work as std's `Once` does.

use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::PoisonError;

use pulse_runtime::{ObjRef, ObjectCell, ObjectState, WakeReason};

use crate::rt;

const INCOMPLETE: u8 = 0;
const POISONED: u8 = 1;
const COMPLETE: u8 = 2;
/// A thread outside any execution is running the closure.
const RUNNING: u8 = 3;
/// A virtual thread of execution `running_exec` is running the closure; it started from
/// INCOMPLETE or POISONED. Recorded process-wide so that an initialisation cut short by the
/// end of its execution (its thread leaked, never to finish) is recognised later.
const VIRTUAL_FROM_INCOMPLETE: u8 = 4;
const VIRTUAL_FROM_POISONED: u8 = 5;

fn is_virtual_running(state: u8) -> bool {
    state == VIRTUAL_FROM_INCOMPLETE || state == VIRTUAL_FROM_POISONED
}

/// The object a [`RawOnce`] is part of: it names it in traces and deadlock reports, and
/// decides what an initialisation cut short by the end of its execution leaves.
pub(crate) trait Kind: 'static {
    const NAME: &'static str;
    /// The scheduling point between the closure's end and its completion being visible.
    const DONE: &'static str;
    /// Poison rather than stay uninitialised when an execution ends mid-initialisation
    /// (needed when the closure consumed something that cannot be run again).
    const ABORT_POISONS: bool;
}

/// The per-execution part: which virtual thread runs the closure.
pub(crate) struct Progress<K> {
    running: Option<u32>,
    kind: PhantomData<fn() -> K>,
}

impl<K> Default for Progress<K> {
    fn default() -> Self {
        Progress {
            running: None,
            kind: PhantomData,
        }
    }
}

impl<K: Kind> ObjectState for Progress<K> {
    const KIND: &'static str = K::NAME;
}

/// The state as seen through `&mut` (no initialisation can be running then).
pub(crate) enum Exclusive {
    Incomplete,
    Poisoned,
    Complete,
}

pub(crate) struct RawOnce<K: Kind> {
    state: AtomicU8,
    /// The execution whose virtual thread runs the closure (with a VIRTUAL_* state).
    running_exec: AtomicU64,
    /// Threads outside any execution wait here for another OS thread's initialisation.
    os_lock: std::sync::Mutex<()>,
    os_done: std::sync::Condvar,
    exec: ObjectCell<Progress<K>>,
}

impl<K: Kind> RawOnce<K> {
    pub(crate) const fn new() -> Self {
        RawOnce {
            state: AtomicU8::new(INCOMPLETE),
            running_exec: AtomicU64::new(0),
            os_lock: std::sync::Mutex::new(()),
            os_done: std::sync::Condvar::new(),
            exec: ObjectCell::new(),
        }
    }

    /// Whether initialisation has completed, without a scheduling point.
    pub(crate) fn is_completed(&self) -> bool {
        self.state.load(Ordering::Acquire) == COMPLETE
    }

    /// Whether initialisation has completed: a load that races with the completion, so a
    /// scheduling point under pulse.
    #[track_caller]
    pub(crate) fn is_completed_at(&self, op: &'static str) -> bool {
        if let Some(ctx) = rt::current() {
            ctx.switch(op, Some(self.exec.obj(ctx)));
        }
        self.is_completed()
    }

    /// Runs `f` unless initialisation is complete, or waits while another thread runs it.
    /// A poisoned state panics unless `ignore_poisoning`. Returns `false` only when the
    /// running thread is being cleaned up after its execution ended while another
    /// thread's initialisation was in progress: it can neither wait nor run `f`.
    #[track_caller]
    pub(crate) fn call(
        &self,
        op: &'static str,
        ignore_poisoning: bool,
        f: impl FnOnce(&OnceState),
    ) -> bool {
        let exec = match rt::current() {
            Some(ctx) => {
                let obj = self.exec.obj(ctx);
                ctx.switch(op, Some(obj));
                Some((ctx, obj))
            }
            None => None,
        };
        loop {
            let state = self.state.load(Ordering::Acquire);
            if self.recover_cut_short(state, exec.map(|(ctx, _)| ctx)) {
                continue;
            }
            match state {
                COMPLETE => return true,
                POISONED if !ignore_poisoning => {
                    panic!("Once instance has previously been poisoned")
                }
                RUNNING => self.wait_os(|s| s != RUNNING),
                s if exec.is_none() && is_virtual_running(s) => {
                    self.wait_os(|s| !is_virtual_running(s))
                }
                _ => match exec {
                    None => {
                        if self
                            .state
                            .compare_exchange(state, RUNNING, Ordering::Acquire, Ordering::Acquire)
                            .is_ok()
                        {
                            self.run(None, state, f);
                            return true;
                        }
                    }
                    Some((ctx, obj)) => {
                        let free = {
                            let e = self.exec.enter(ctx);
                            let free = e.state.running.is_none();
                            if free {
                                e.state.running = Some(e.me);
                            }
                            free
                        };
                        if free {
                            let running = if state == POISONED {
                                VIRTUAL_FROM_POISONED
                            } else {
                                VIRTUAL_FROM_INCOMPLETE
                            };
                            self.running_exec
                                .store(ctx.execution_id(), Ordering::Relaxed);
                            self.state.store(running, Ordering::Release);
                            self.run(exec, state, f);
                            return true;
                        }
                        if ctx.block(op, Some(obj), None) == WakeReason::Teardown {
                            return false;
                        }
                    }
                },
            }
        }
    }

    #[track_caller]
    fn run(&self, exec: Option<(rt::Ctx, ObjRef)>, from: u8, f: impl FnOnce(&OnceState)) {
        let mut finish = Finish {
            once: self,
            exec,
            done: false,
        };
        f(&OnceState {
            poisoned: from == POISONED,
        });
        finish.done = true;
        if let Some((ctx, obj)) = exec {
            // Other threads may see what `f` did before they see the completion.
            ctx.switch(K::DONE, Some(obj));
        }
    }

    /// Blocks until initialisation completes (or, unless `ignore_poisoning`, is poisoned:
    /// then panics). Returns `false` only when the thread is being cleaned up after its
    /// execution ended, so it must not block.
    #[track_caller]
    pub(crate) fn wait(&self, op: &'static str, ignore_poisoning: bool) -> bool {
        let settled = |s| s == COMPLETE || (s == POISONED && !ignore_poisoning);
        match rt::current() {
            None => self.wait_os(settled),
            Some(ctx) => {
                let obj = self.exec.obj(ctx);
                ctx.switch(op, Some(obj));
                loop {
                    let state = self.state.load(Ordering::Acquire);
                    if self.recover_cut_short(state, Some(ctx)) {
                        continue;
                    }
                    if settled(state) {
                        break;
                    }
                    if state == RUNNING {
                        self.wait_os(settled);
                        break;
                    }
                    if ctx.block(op, Some(obj), None) == WakeReason::Teardown {
                        return false;
                    }
                }
            }
        }
        if !self.is_completed() {
            panic!("Once instance has previously been poisoned");
        }
        true
    }

    /// If a virtual thread of an execution that has ended was running the closure (its
    /// thread was leaked mid-initialisation), settles the state as an aborted
    /// initialisation does: back to where it started, or poisoned (`K::ABORT_POISONS`).
    /// Returns whether it changed anything.
    fn recover_cut_short(&self, state: u8, ctx: Option<rt::Ctx>) -> bool {
        if !is_virtual_running(state) {
            return false;
        }
        let runner = self.running_exec.load(Ordering::Relaxed);
        let ended = match ctx {
            // Another live execution cannot own it (it would have been refused the object).
            Some(ctx) => runner != ctx.execution_id() && !pulse_runtime::is_execution_live(runner),
            None => !pulse_runtime::is_execution_live(runner),
        };
        if !ended {
            return false;
        }
        let to = if K::ABORT_POISONS || state == VIRTUAL_FROM_POISONED {
            POISONED
        } else {
            INCOMPLETE
        };
        let _ = self
            .state
            .compare_exchange(state, to, Ordering::AcqRel, Ordering::Acquire);
        true
    }

    /// Blocks the OS thread until `settled` holds (for initialisations run outside pulse).
    fn wait_os(&self, settled: impl Fn(u8) -> bool) {
        let mut guard = self.os_lock.lock().unwrap_or_else(PoisonError::into_inner);
        while !settled(self.state.load(Ordering::Acquire)) {
            guard = self
                .os_done
                .wait(guard)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    pub(crate) fn exclusive(&mut self) -> Exclusive {
        match *self.state.get_mut() {
            COMPLETE => Exclusive::Complete,
            POISONED | VIRTUAL_FROM_POISONED => Exclusive::Poisoned,
            // Cut short by the end of its execution (nobody can be running it while we
            // hold `&mut`): as `recover_cut_short` settles it.
            VIRTUAL_FROM_INCOMPLETE if K::ABORT_POISONS => Exclusive::Poisoned,
            _ => Exclusive::Incomplete,
        }
    }

    pub(crate) fn set_exclusive(&mut self, state: Exclusive) {
        *self.state.get_mut() = match state {
            Exclusive::Incomplete => INCOMPLETE,
            Exclusive::Poisoned => POISONED,
            Exclusive::Complete => COMPLETE,
        };
    }
}

/// Publishes how an initialisation ended, also when the closure unwinds.
struct Finish<'a, K: Kind> {
    once: &'a RawOnce<K>,
    exec: Option<(rt::Ctx, ObjRef)>,
    done: bool,
}

impl<K: Kind> Drop for Finish<'_, K> {
    fn drop(&mut self) {
        let aborted = self.exec.is_some_and(|(ctx, _)| ctx.is_teardown());
        let started_from = self.once.state.load(Ordering::Acquire);
        let to = if self.done {
            COMPLETE
        } else if aborted && !K::ABORT_POISONS && started_from != VIRTUAL_FROM_POISONED {
            INCOMPLETE
        } else {
            POISONED
        };
        self.once.state.store(to, Ordering::Release);
        if let Some((ctx, obj)) = self.exec {
            self.once.exec.enter(ctx).state.running = None;
            ctx.wake_all(obj);
        }
        let _guard = self
            .once
            .os_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.once.os_done.notify_all();
    }
}

pub(crate) struct OnceKind;

impl Kind for OnceKind {
    const NAME: &'static str = "Once";
    const DONE: &'static str = "Once: call_once done";
    const ABORT_POISONS: bool = false;
}

/// A synchronization primitive which can nominally be written to only once.
pub struct Once {
    inner: RawOnce<OnceKind>,
}

impl std::panic::UnwindSafe for Once {}
impl std::panic::RefUnwindSafe for Once {}

/// State yielded to [`Once::call_once_force()`]'s closure parameter. The state can be
/// used to query the poison status of the [`Once`].
pub struct OnceState {
    poisoned: bool,
}

/// Initialization value for static [`Once`] values.
#[deprecated(since = "1.38.0", note = "the `Once::new()` function is now preferred")]
#[allow(clippy::declare_interior_mutable_const)]
pub const ONCE_INIT: Once = Once::new();

impl Once {
    /// Creates a new `Once` value.
    #[inline]
    #[must_use]
    #[allow(clippy::new_without_default)] // std's `Once` has no `Default`
    pub const fn new() -> Once {
        Once {
            inner: RawOnce::new(),
        }
    }

    /// Performs an initialization routine once and only once. The given closure will be
    /// executed if this is the first time `call_once` has been called, and otherwise the
    /// routine will *not* be invoked.
    #[inline]
    #[track_caller]
    pub fn call_once<F>(&self, f: F)
    where
        F: FnOnce(),
    {
        // `false` (cleanup after the execution ended) has nothing to give back here.
        self.inner.call("Once::call_once", false, |_| f());
    }

    /// Performs the same function as [`call_once()`](Once::call_once) except ignores
    /// poisoning.
    #[inline]
    #[track_caller]
    pub fn call_once_force<F>(&self, f: F)
    where
        F: FnOnce(&OnceState),
    {
        self.inner.call("Once::call_once_force", true, f);
    }

    /// Returns `true` if some [`call_once()`](Once::call_once) call has completed
    /// successfully.
    #[inline]
    #[track_caller]
    pub fn is_completed(&self) -> bool {
        self.inner.is_completed_at("Once::is_completed")
    }

    /// Blocks the current thread until initialization has completed.
    ///
    /// # Panics
    ///
    /// If this [`Once`] has been poisoned because an initialization closure has panicked.
    #[track_caller]
    pub fn wait(&self) {
        self.inner.wait("Once::wait", false);
    }

    /// Blocks the current thread until initialization has completed, ignoring poisoning.
    #[track_caller]
    pub fn wait_force(&self) {
        self.inner.wait("Once::wait_force", true);
    }
}

impl fmt::Debug for Once {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Once").finish_non_exhaustive()
    }
}

impl OnceState {
    /// Returns `true` if the associated [`Once`] was poisoned prior to the invocation of
    /// the closure passed to [`Once::call_once_force()`].
    #[inline]
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }
}

impl fmt::Debug for OnceState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OnceState")
            .field("poisoned", &self.is_poisoned())
            .finish()
    }
}
