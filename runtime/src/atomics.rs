//! What shim-std's atomics and fences tell the running execution, for the relaxed memory
//! model (`memory`). Under `Memory::Sc` every call returns at once: memory itself holds the
//! only value a load can read.
//!
//! Values travel as `u64` bits (every atomic std has fits); the shim keeps memory holding the
//! newest store, so RMWs and `Debug` act on it directly.

use std::panic::Location;
use std::sync::atomic::Ordering;

use crate::ctx::{AtomicDuties, Ctx};
use crate::report::trace::{AtomicValue, EventKind};

impl Ctx {
    /// Whether an atomic operation at this point owes the runtime anything (the relaxed
    /// model's step, a traced value, the progress probe's write): if not, the shim need not
    /// call `atomic_load`, `atomic_store` or `atomic_rmw` at all.
    #[inline]
    pub fn atomic_told(self) -> bool {
        let AtomicDuties {
            relaxed,
            tracing,
            probing,
        } = self.atomic_duties();
        relaxed || tracing || probing
    }

    /// A load of the atomic at `addr`, which holds `actual`, right after its scheduling
    /// point: returns the value it reads (under the relaxed model possibly an older store's,
    /// which one a recorded scheduler choice).
    #[track_caller]
    #[inline]
    pub fn atomic_load(self, kind: &'static str, addr: usize, actual: u64, order: Ordering) -> u64 {
        let AtomicDuties {
            relaxed,
            tracing,
            probing,
        } = self.atomic_duties();
        if probing {
            self.state().progress.read(addr);
        }
        let value = if relaxed {
            self.relaxed_load(kind, addr, actual, order)
        } else {
            actual
        };
        if tracing {
            self.note_atomic(AtomicValue::read(value, order));
        }
        value
    }

    #[track_caller]
    fn relaxed_load(self, kind: &'static str, addr: usize, actual: u64, order: Ordering) -> u64 {
        let mut st = self.state();
        if st.teardown {
            return actual;
        }
        let me = st.current;
        st.memory.now = st.clock_ns;
        let options = st.memory.load_options(me, addr, actual, order);
        let back = st.choose_read(options);
        let (value, old) = st.memory.load(me, addr, back, order);
        if let (Some(old), Some(_)) = (old, &st.trace) {
            let object = st.object_at(kind, addr);
            // The load's own row (its last event) says which store it read.
            if let Some(e) = st
                .trace
                .as_mut()
                .and_then(|t| t.iter_mut().rev().find(|e| e.thread == me))
            {
                if e.kind == EventKind::Op && e.object == Some(object) {
                    e.kind = EventKind::ReadOld(old);
                }
            }
        }
        value
    }

    /// A store of `new` to the atomic at `addr`, which held `actual` before it.
    #[track_caller]
    #[inline]
    pub fn atomic_store(self, addr: usize, actual: u64, new: u64, order: Ordering) {
        let AtomicDuties {
            relaxed,
            tracing,
            probing,
        } = self.atomic_duties();
        if tracing {
            self.note_atomic(AtomicValue::wrote(new, order));
        }
        if probing {
            self.state().progress.wrote(addr, actual, new);
        }
        if relaxed {
            let at = Location::caller();
            self.with_memory(|m, me| m.store(me, addr, actual, new, order, at));
        }
    }

    /// A read-modify-write of the atomic at `addr`: it read `actual` (always the newest
    /// store) and wrote `new` (`None`: a compare-exchange that failed, a load).
    #[track_caller]
    #[inline]
    pub fn atomic_rmw(self, addr: usize, actual: u64, new: Option<u64>, order: Ordering) {
        self.rmw(addr, actual, new, order, false);
    }

    /// A `compare_exchange_weak` that failed spuriously: it read `actual`, the value it
    /// expected, and wrote nothing.
    #[track_caller]
    #[inline]
    pub fn atomic_cas_spurious(self, addr: usize, actual: u64, failure: Ordering) {
        self.rmw(addr, actual, None, failure, true);
    }

    #[track_caller]
    #[inline]
    fn rmw(self, addr: usize, actual: u64, new: Option<u64>, order: Ordering, spurious: bool) {
        let AtomicDuties {
            relaxed,
            tracing,
            probing,
        } = self.atomic_duties();
        if let (true, Some(new)) = (probing, new) {
            self.state().progress.wrote(addr, actual, new);
        }
        if tracing {
            self.note_atomic(AtomicValue {
                read: Some(actual),
                wrote: new,
                failed: new.is_none(),
                spurious,
                ..AtomicValue::ordered(order)
            });
        }
        if relaxed {
            let at = Location::caller();
            self.with_memory(|m, me| m.rmw(me, addr, actual, new, order, at));
        }
    }

    /// Runs `f` on the memory model as the running thread, at the current virtual time (not
    /// during teardown, when leaked threads' writes no longer belong to the execution).
    fn with_memory(self, f: impl FnOnce(&mut crate::memory::Memory, u32)) {
        let mut st = self.state();
        if !st.teardown {
            let me = st.current;
            st.memory.now = st.clock_ns;
            f(&mut st.memory, me);
        }
    }

    /// Puts what the running thread's atomic operation read and wrote on its trace row (its
    /// last one, made at the operation's scheduling point). Untraced executions pay one flag
    /// read (`atomic_duties`).
    fn note_atomic(self, value: AtomicValue) {
        let mut st = self.state();
        let me = st.current;
        let row = st
            .trace
            .as_mut()
            .and_then(|t| t.iter_mut().rev().find(|e| e.thread == me));
        if let Some(e) = row {
            let atomic = e.object.is_some_and(|o| o.kind.starts_with("Atomic"));
            if atomic
                && matches!(e.kind, EventKind::Op | EventKind::ReadOld(_))
                && e.atomic.is_none()
            {
                e.atomic = Some(value);
            }
        }
    }

    /// The atomic at `addr` is being dropped or mutably borrowed: under the relaxed model its
    /// store history ends (`Memory::forget`). Under `sc` one borrow-free flag read.
    #[inline]
    pub fn atomic_forget(self, addr: usize) {
        if self.relaxed() {
            self.with_memory(|m, _| m.forget(addr));
        }
    }

    /// The running thread holds the only reference to the value at `addr`, `size` bytes (it
    /// runs its `Drop::drop`, or `Arc::get_mut` returned it): under the relaxed model, if the
    /// value holds an atomic, everything stored so far happens-before (`Memory::exclusive`).
    /// Under `sc` one borrow-free flag read.
    #[inline]
    pub fn atomic_exclusive(self, addr: usize, size: usize) {
        if self.relaxed() {
            self.with_memory(|m, me| m.exclusive(me, addr, size));
        }
    }

    /// A system call returned what another thread's made so (an `epoll_wait` that found a
    /// descriptor ready): the kernel orders the two, and pulse does not see which thread's
    /// write it was, so under the relaxed model the running thread acquires every store made
    /// so far. That only removes outcomes; without it a reactor woken by a task's wakeup
    /// could read the run queue from before the task was queued and sleep for ever (tokio-
    /// util's `spawn_pinned` tests: a false deadlock). Under `sc` one borrow-free flag read.
    #[inline]
    pub fn kernel_acquire(self) {
        if self.relaxed() {
            self.with_memory(|m, me| m.acquire_all(me));
        }
    }

    /// `atomic::fence(order)`: a step of the relaxed model, and a row of a traced replay's
    /// trace (a fence is no scheduling point, but what a relaxed read synchronises with).
    #[track_caller]
    #[inline]
    pub fn atomic_fence(self, order: Ordering) {
        let AtomicDuties {
            relaxed, tracing, ..
        } = self.atomic_duties();
        if !(relaxed || tracing) {
            return;
        }
        let mut st = self.state();
        if st.teardown {
            return;
        }
        let me = st.current;
        if relaxed {
            st.memory.fence(me, order);
        }
        if tracing {
            st.trace_fence(AtomicValue::ordered(order), Location::caller());
        }
    }

    /// The running thread's operation on `object` (a lock, channel, thread, ...) is an
    /// acquire and a release on it: what one thread did before unlocking is visible to the
    /// next that locks.
    #[inline]
    pub(crate) fn sync_with(self, object: Option<crate::obj_ref::ObjRef>) {
        if let Some(object) = object.filter(|_| self.relaxed()) {
            let mut st = self.state();
            if !st.teardown {
                let me = st.current;
                st.memory.sync_object(me, object);
            }
        }
    }
}
