//! Per-execution state of a shim object (a lock's holder, a condvar's waiters...).
//!
//! The state lives inside the object, so a lock operation costs no table lookup, but it is
//! tagged with the execution that owns it: an object that outlives its execution (a
//! `static`, or one captured from outside `pulse::check`) is reset when the next execution
//! first touches it, so leftover holders or waiters from an aborted schedule never leak
//! into the next one, and the execution records a warning that state crosses schedules.

use std::cell::UnsafeCell;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};

/// Words of the warning about an object a later execution reuses (`search` looks for them).
pub(crate) use pulse_protocol::warnings::SHARED_BETWEEN_EXECUTIONS;

use crate::ctx::Ctx;
use crate::obj_ref::ObjRef;
use crate::registry;

/// The per-execution state of one kind of object. `Default` is its state when an
/// execution first touches it.
pub trait ObjectState: Default {
    const KIND: &'static str;
}

/// An object's state as one operation of the running thread sees it (`ObjectCell::enter`).
pub struct Entry<'a, S> {
    pub state: &'a mut S,
    /// The object's name in this execution.
    pub obj: ObjRef,
    /// The running virtual thread.
    pub me: u32,
}

pub struct ObjectCell<S> {
    /// Id of the execution the state belongs to; 0 = never used under pulse.
    owner: AtomicU64,
    slot: UnsafeCell<Option<(ObjRef, S)>>,
}

// SAFETY: the slot is only accessed by the execution recorded in `owner`, which runs on one
// OS thread; `claim` refuses to take an object a live execution owns.
unsafe impl<S: Send> Sync for ObjectCell<S> {}
unsafe impl<S: Send> Send for ObjectCell<S> {}

impl<S: ObjectState> ObjectCell<S> {
    pub const fn new() -> Self {
        ObjectCell {
            owner: AtomicU64::new(0),
            slot: UnsafeCell::new(None),
        }
    }

    /// One shim operation's access to this object: one ownership check (claiming the
    /// object for this execution on first use), one read of the running thread. Drop the
    /// entry before the next `Ctx` call that can switch threads (`switch`, `block`, a wake
    /// that yields): another thread may enter the same object then.
    #[inline]
    #[track_caller]
    pub fn enter(&self, ctx: Ctx) -> Entry<'_, S> {
        if self.owner.load(Ordering::Acquire) != ctx.execution_id() {
            self.claim(ctx, Location::caller());
        }
        // SAFETY: owned by the running execution (just checked or claimed), whose threads
        // run one at a time on this OS thread; an entry never lives across a switch.
        let slot = unsafe { &mut *self.slot.get() };
        let (obj, state) = slot.as_mut().expect("claimed object has state");
        Entry {
            state,
            obj: *obj,
            me: ctx.me(),
        }
    }

    /// An operation on this object outside any execution: on an OS thread pulse does not
    /// schedule. If a running execution is using the object, the two sides are not mutually
    /// exclusive (each uses its own implementation) and wake-ups between them are lost: the
    /// run warns, naming the operation, its place and the thread (decision 18). One relaxed
    /// load when no execution ever used the object.
    #[inline]
    #[track_caller]
    pub fn outside(&self, op: &'static str) {
        let owner = self.owner.load(Ordering::Relaxed);
        if owner != 0 && registry::is_live(owner) {
            crate::process::os_threads::note_outside_use(op, S::KIND, Location::caller());
        }
    }

    /// The object's name in this execution.
    #[inline]
    #[track_caller]
    pub fn obj(&self, ctx: Ctx) -> ObjRef {
        self.enter(ctx).obj
    }

    /// Takes the object for the running execution; `used_at` is the user's operation that
    /// first touched it in this execution (as far as `#[track_caller]` reaches).
    #[cold]
    fn claim(&self, ctx: Ctx, used_at: &'static Location<'static>) {
        let me = ctx.execution_id();
        let previous = self.owner.load(Ordering::Acquire);
        if previous != 0 && registry::is_live(previous) {
            panic!(
                "pulse: a {} is used by two executions at once (a `static` shared by tests running \
                 in parallel?); run such tests one at a time (`--test-threads 1`)",
                S::KIND
            );
        }
        if self
            .owner
            .compare_exchange(previous, me, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            panic!(
                "pulse: a {} was claimed by two executions at once; run such tests one at a time",
                S::KIND
            );
        }
        let obj = ctx.new_object(S::KIND);
        // SAFETY: we own it now and nobody else can (see above).
        unsafe { *self.slot.get() = Some((obj, S::default())) };
        if previous != 0 {
            ctx.warn(pulse_protocol::warnings::shared_between_executions(
                S::KIND,
                &crate::report::trace::location_string(used_at),
            ));
        }
    }
}

impl<S: ObjectState> Default for ObjectCell<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S> std::fmt::Debug for ObjectCell<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ObjectCell")
    }
}
