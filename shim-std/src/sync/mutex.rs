//! `std::sync::Mutex`, with every lock and unlock a scheduling point under pulse.
//!
//! Inside an execution the lock is logical (who holds it lives in the object's
//! per-execution state). A release wakes one waiter, which one a scheduler choice, to race
//! for it with the running threads, as a futex unlock does. Outside an execution a real std
//! mutex does the work, so instrumented code still runs normally.

use std::cell::UnsafeCell;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::panic::Location;
use std::sync::atomic::{AtomicBool, Ordering};

use pulse_runtime::{ObjRef, ObjectCell, ObjectState, TraceKind, WakeReason};

use super::poison::{self, LockResult, PoisonError, TryLockError, TryLockResult};
use crate::rt;

#[derive(Default)]
pub(crate) struct MutexState {
    pub holder: Option<u32>,
    pub poisoned: bool,
}

impl ObjectState for MutexState {
    const KIND: &'static str = "Mutex";
}

pub struct Mutex<T: ?Sized> {
    raw: RawMutex,
    data: UnsafeCell<T>,
}

/// The lock apart from its data. Not generic, so locking and unlocking are compiled once,
/// optimised, in pulse-shim-std: a `Mutex<T>`'s methods are compiled per `T` in the user's
/// crate, at its debug opt-level (ARCHITECTURE.md, decision 40).
pub(crate) struct RawMutex {
    os: std::sync::Mutex<()>,
    os_poisoned: AtomicBool,
    state: ObjectCell<MutexState>,
}

/// The std guard a lock taken outside an execution holds.
type OsGuard<'a> = std::sync::MutexGuard<'a, ()>;

// Same bounds as std.
unsafe impl<T: ?Sized + Send> Send for Mutex<T> {}
unsafe impl<T: ?Sized + Send> Sync for Mutex<T> {}

#[must_use = "if unused the Mutex will immediately unlock"]
#[clippy::has_significant_drop]
pub struct MutexGuard<'a, T: ?Sized + 'a> {
    pub(crate) lock: &'a Mutex<T>,
    /// The std guard when locked outside an execution.
    pub(crate) os: Option<OsGuard<'a>>,
    /// Whether the thread was already panicking when it locked (then dropping the guard
    /// does not poison, as in std).
    pub(crate) panicking: bool,
    /// Where the lock was taken: the unlock in `Drop` is attributed to it.
    pub(crate) locked_at: &'static Location<'static>,
}

unsafe impl<T: ?Sized + Sync> Sync for MutexGuard<'_, T> {}

impl<T> Mutex<T> {
    /// Creates a new mutex in an unlocked state ready for use.
    #[inline]
    pub const fn new(t: T) -> Mutex<T> {
        Mutex {
            raw: RawMutex::new(),
            data: UnsafeCell::new(t),
        }
    }

    /// Consumes this mutex, returning the underlying data.
    pub fn into_inner(self) -> LockResult<T>
    where
        T: Sized,
    {
        let poisoned = self.is_poisoned();
        let data = self.data.into_inner();
        poison::map_result(poisoned, data)
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Acquires the mutex, blocking the current thread until it is able to do so.
    #[track_caller]
    #[inline]
    pub fn lock(&self) -> LockResult<MutexGuard<'_, T>> {
        let (os, panicking) = self.raw.lock();
        self.guard_result(os, panicking)
    }

    /// Attempts to acquire this lock without blocking.
    #[track_caller]
    #[inline]
    pub fn try_lock(&self) -> TryLockResult<MutexGuard<'_, T>> {
        match self.raw.try_lock() {
            Some((os, panicking)) => Ok(self.guard_result(os, panicking)?),
            None => Err(TryLockError::WouldBlock),
        }
    }

    #[track_caller]
    #[inline]
    fn guard_result<'a>(
        &'a self,
        os: Option<OsGuard<'a>>,
        panicking: bool,
    ) -> LockResult<MutexGuard<'a, T>> {
        let guard = MutexGuard {
            lock: self,
            os,
            panicking,
            locked_at: Location::caller(),
        };
        poison::map_result(self.raw.is_poisoned(), guard)
    }

    /// Determines whether the mutex is poisoned.
    #[inline]
    pub fn is_poisoned(&self) -> bool {
        self.raw.is_poisoned()
    }

    /// Clear the poisoned state from a mutex.
    #[inline]
    pub fn clear_poison(&self) {
        self.raw.clear_poison();
    }

    /// Returns a mutable reference to the underlying data.
    pub fn get_mut(&mut self) -> LockResult<&mut T> {
        let poisoned = self.is_poisoned();
        poison::map_result(poisoned, self.data.get_mut())
    }

    pub(crate) fn raw(&self) -> &RawMutex {
        &self.raw
    }
}

impl RawMutex {
    const fn new() -> RawMutex {
        RawMutex {
            os: std::sync::Mutex::new(()),
            os_poisoned: AtomicBool::new(false),
            state: ObjectCell::new(),
        }
    }

    /// Takes the lock: the std guard outside an execution, and whether the thread was
    /// panicking.
    #[track_caller]
    fn lock(&self) -> (Option<OsGuard<'_>>, bool) {
        match rt::current() {
            Some(ctx) => {
                let obj = self.state.obj(ctx);
                ctx.switch("Mutex::lock", Some(obj));
                self.acquire(ctx, obj, "Mutex::lock");
                (None, ctx.panicking())
            }
            None => {
                self.state.outside("Mutex::lock");
                let os = self.os.lock().unwrap_or_else(PoisonError::into_inner);
                (Some(os), std::thread::panicking())
            }
        }
    }

    /// As `lock`, or `None` if it is held.
    #[track_caller]
    fn try_lock(&self) -> Option<(Option<OsGuard<'_>>, bool)> {
        match rt::current() {
            Some(ctx) => {
                let obj = self.state.obj(ctx);
                ctx.switch("Mutex::try_lock", Some(obj));
                if !self.try_take(ctx) {
                    ctx.note(
                        TraceKind::Other,
                        "Mutex::try_lock",
                        Some(obj),
                        Some("WouldBlock"),
                    );
                    return None;
                }
                ctx.acquired(obj);
                Some((None, ctx.panicking()))
            }
            None => {
                self.state.outside("Mutex::try_lock");
                let os = match self.os.try_lock() {
                    Ok(os) => os,
                    Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
                    Err(std::sync::TryLockError::WouldBlock) => return None,
                };
                Some((Some(os), std::thread::panicking()))
            }
        }
    }

    /// Blocks until the running virtual thread holds the lock (no scheduling point first:
    /// callers have one, e.g. `Condvar::wait` re-acquiring after its wait).
    #[track_caller]
    pub(crate) fn acquire(&self, ctx: rt::Ctx, obj: ObjRef, op: &'static str) {
        while !self.try_take(ctx) {
            if ctx.block(op, Some(obj), None) == WakeReason::Teardown {
                // Cleanup of an ended execution must not block: take it over.
                let e = self.state.enter(ctx);
                e.state.holder = Some(e.me);
                break;
            }
        }
        ctx.acquired(obj);
    }

    /// Takes the lock for the running thread if it is free.
    fn try_take(&self, ctx: rt::Ctx) -> bool {
        let e = self.state.enter(ctx);
        let free = e.state.holder.is_none();
        if free {
            e.state.holder = Some(e.me);
        }
        free
    }

    pub(crate) fn is_poisoned(&self) -> bool {
        match rt::current() {
            Some(ctx) => self.state.enter(ctx).state.poisoned,
            None => self.os_poisoned.load(Ordering::Relaxed),
        }
    }

    fn clear_poison(&self) {
        match rt::current() {
            Some(ctx) => self.state.enter(ctx).state.poisoned = false,
            None => self.os_poisoned.store(false, Ordering::Relaxed),
        }
    }

    pub(crate) fn obj(&self, ctx: rt::Ctx) -> ObjRef {
        self.state.obj(ctx)
    }

    /// Frees the logical lock and wakes one waiter, chosen by the scheduler, to race for it
    /// with the running threads (a futex unlock's wake); one that finds it taken waits
    /// again.
    pub(crate) fn release(&self, ctx: rt::Ctx, obj: ObjRef) {
        self.state.enter(ctx).state.holder = None;
        ctx.released(obj);
        ctx.wake_one(obj);
    }

    fn set_poisoned(&self) {
        match rt::current() {
            Some(ctx) => self.state.enter(ctx).state.poisoned = true,
            None => self.os_poisoned.store(true, Ordering::Relaxed),
        }
    }

    /// A guard's unlock: poisons if its thread started panicking while it held the lock
    /// (not in the cleanup of an ended execution, which unwinds threads artificially).
    fn unlock(
        &self,
        os: &mut Option<OsGuard<'_>>,
        panicking: bool,
        locked_at: &'static Location<'static>,
    ) {
        let now_panicking = match os {
            Some(_) => std::thread::panicking(),
            None => rt::current().is_some_and(|ctx| ctx.panicking() && !ctx.is_teardown()),
        };
        if !panicking && now_panicking {
            self.set_poisoned();
        }
        if os.take().is_some() {
            return;
        }
        if let Some(ctx) = rt::current() {
            let obj = self.obj(ctx);
            if !ctx.is_teardown() {
                ctx.switch_from("Mutex::unlock", Some(obj), locked_at);
            }
            self.release(ctx, obj);
        }
    }

    /// Whether the lock is free, read without a scheduling point (`Debug`); outside an
    /// execution the std guard that keeps it so while the data is read.
    fn peek_free(&self) -> (bool, Option<OsGuard<'_>>) {
        match rt::current() {
            Some(ctx) => (self.state.enter(ctx).state.holder.is_none(), None),
            None => match self.os.try_lock() {
                Ok(g) => (true, Some(g)),
                Err(std::sync::TryLockError::Poisoned(e)) => (true, Some(e.into_inner())),
                Err(std::sync::TryLockError::WouldBlock) => (false, None),
            },
        }
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock
            .raw
            .unlock(&mut self.os, self.panicking, self.locked_at);
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl<T> From<T> for Mutex<T> {
    fn from(t: T) -> Self {
        Mutex::new(t)
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Mutex<T> {
        Mutex::new(Default::default())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    /// Like std: shows the data only if the lock is free, without a scheduling point.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Mutex");
        let (free, _os_guard) = self.raw.peek_free();
        if free {
            d.field("data", &unsafe { &*self.data.get() });
        } else {
            d.field("data", &format_args!("<locked>"));
        }
        d.field("poisoned", &self.is_poisoned());
        d.finish_non_exhaustive()
    }
}

impl<T: ?Sized> std::panic::UnwindSafe for Mutex<T> {}
impl<T: ?Sized> std::panic::RefUnwindSafe for Mutex<T> {}
