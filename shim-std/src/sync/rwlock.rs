//! `std::sync::RwLock`, with every read, write and unlock a scheduling point under pulse.
//!
//! Inside an execution the lock is logical (the writer and the number of readers live in
//! the object's per-execution state). Which of several waiters gets the lock when it is
//! released is a scheduler choice, and so is whether a reader that arrives while a writer
//! waits goes first or waits behind it: std's API leaves writer preference unspecified and
//! its futex lock prefers writers, which makes a thread that takes `read` twice while a
//! writer queues deadlock — pulse explores both policies (`ChoiceKind::WriterPreference`).
//! Outside an execution a real std `RwLock` does the work, so instrumented code still runs
//! normally.

use std::cell::UnsafeCell;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};

use pulse_runtime::{ChoiceKind, ObjRef, ObjectCell, ObjectState, WakeReason};

use super::poison::{self, LockResult, PoisonError, TryLockError, TryLockResult};
use crate::rt;

#[derive(Default)]
struct RwLockState {
    writer: Option<u32>,
    readers: usize,
    /// Writers blocked waiting for the lock (readers may defer to them).
    writers_waiting: usize,
    /// Readers blocked waiting for it.
    readers_waiting: usize,
    poisoned: bool,
}

impl RwLockState {
    fn waiting(&mut self, mode: Mode) -> &mut usize {
        match mode {
            Mode::Read => &mut self.readers_waiting,
            Mode::Write => &mut self.writers_waiting,
        }
    }
}

impl ObjectState for RwLockState {
    const KIND: &'static str = "RwLock";
}

pub struct RwLock<T: ?Sized> {
    raw: Raw,
    data: UnsafeCell<T>,
}

/// Everything but the data, so a read guard can point at it without naming `T` and stay
/// covariant in `T`, as std's is.
struct Raw {
    os: std::sync::RwLock<()>,
    os_poisoned: AtomicBool,
    state: ObjectCell<RwLockState>,
}

// Same bounds as std.
unsafe impl<T: ?Sized + Send> Send for RwLock<T> {}
unsafe impl<T: ?Sized + Send + Sync> Sync for RwLock<T> {}

#[must_use = "if unused the RwLock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct RwLockReadGuard<'a, T: ?Sized + 'a> {
    data: NonNull<T>,
    raw: &'a Raw,
    /// The std guard when locked outside an execution (it also makes this type `!Send`).
    os: Option<std::sync::RwLockReadGuard<'a, ()>>,
}

unsafe impl<T: ?Sized + Sync> Sync for RwLockReadGuard<'_, T> {}

#[must_use = "if unused the RwLock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct RwLockWriteGuard<'a, T: ?Sized + 'a> {
    lock: &'a RwLock<T>,
    /// The std guard when locked outside an execution (it also makes this type `!Send`).
    os: Option<std::sync::RwLockWriteGuard<'a, ()>>,
    /// Whether the thread was already panicking when it locked (then dropping the guard
    /// does not poison, as in std).
    panicking: bool,
}

unsafe impl<T: ?Sized + Sync> Sync for RwLockWriteGuard<'_, T> {}

impl<T> RwLock<T> {
    /// Creates a new instance of an `RwLock<T>` which is unlocked.
    #[inline]
    pub const fn new(t: T) -> RwLock<T> {
        RwLock {
            raw: Raw {
                os: std::sync::RwLock::new(()),
                os_poisoned: AtomicBool::new(false),
                state: ObjectCell::new(),
            },
            data: UnsafeCell::new(t),
        }
    }
}

impl<T: ?Sized> RwLock<T> {
    /// Locks this `RwLock` with shared read access, blocking the current thread until it
    /// can be acquired.
    #[inline]
    #[track_caller]
    pub fn read(&self) -> LockResult<RwLockReadGuard<'_, T>> {
        let os = self.raw.read();
        poison::map_result(self.is_poisoned(), self.read_guard(os))
    }

    /// Attempts to acquire this `RwLock` with shared read access.
    #[inline]
    #[track_caller]
    pub fn try_read(&self) -> TryLockResult<RwLockReadGuard<'_, T>> {
        let Some(os) = self.raw.try_read() else {
            return Err(TryLockError::WouldBlock);
        };
        Ok(poison::map_result(self.is_poisoned(), self.read_guard(os))?)
    }

    /// Locks this `RwLock` with exclusive write access, blocking the current thread until
    /// it can be acquired.
    #[inline]
    #[track_caller]
    pub fn write(&self) -> LockResult<RwLockWriteGuard<'_, T>> {
        let (os, panicking) = self.raw.write();
        self.write_result(os, panicking)
    }

    /// Attempts to lock this `RwLock` with exclusive write access.
    #[inline]
    #[track_caller]
    pub fn try_write(&self) -> TryLockResult<RwLockWriteGuard<'_, T>> {
        match self.raw.try_write() {
            Some((os, panicking)) => Ok(self.write_result(os, panicking)?),
            None => Err(TryLockError::WouldBlock),
        }
    }

    fn read_guard<'a>(
        &'a self,
        os: Option<std::sync::RwLockReadGuard<'a, ()>>,
    ) -> RwLockReadGuard<'a, T> {
        // SAFETY: `UnsafeCell::get` is never null.
        let data = unsafe { NonNull::new_unchecked(self.data.get()) };
        RwLockReadGuard {
            data,
            raw: &self.raw,
            os,
        }
    }

    fn write_result<'a>(
        &'a self,
        os: Option<std::sync::RwLockWriteGuard<'a, ()>>,
        panicking: bool,
    ) -> LockResult<RwLockWriteGuard<'a, T>> {
        poison::map_result(
            self.is_poisoned(),
            RwLockWriteGuard {
                lock: self,
                os,
                panicking,
            },
        )
    }

    /// Determines whether the lock is poisoned.
    #[inline]
    pub fn is_poisoned(&self) -> bool {
        self.raw.is_poisoned()
    }

    /// Clear the poisoned state from a lock.
    #[inline]
    pub fn clear_poison(&self) {
        self.raw.clear_poison();
    }

    /// Consumes this `RwLock`, returning the underlying data.
    pub fn into_inner(self) -> LockResult<T>
    where
        T: Sized,
    {
        let poisoned = self.is_poisoned();
        poison::map_result(poisoned, self.data.into_inner())
    }

    /// Returns a mutable reference to the underlying data.
    pub fn get_mut(&mut self) -> LockResult<&mut T> {
        let poisoned = self.is_poisoned();
        poison::map_result(poisoned, self.data.get_mut())
    }
}

#[derive(Clone, Copy)]
enum Mode {
    Read,
    Write,
}

impl RwLockState {
    /// Takes the lock for `me` if `mode` allows it now. Readers share it; the same thread
    /// may read twice, as std allows.
    fn try_take(&mut self, me: u32, mode: Mode) -> bool {
        match mode {
            Mode::Read if self.writer.is_none() => self.readers += 1,
            Mode::Write if self.writer.is_none() && self.readers == 0 => self.writer = Some(me),
            _ => return false,
        }
        true
    }
}

type OsRead<'a> = std::sync::RwLockReadGuard<'a, ()>;
type OsWrite<'a> = std::sync::RwLockWriteGuard<'a, ()>;

/// The lock's work, not generic, so it is compiled once, optimised, in pulse-shim-std
/// rather than per `T` in the user's crate (ARCHITECTURE.md, decision 40).
impl Raw {
    /// Takes a read hold; the std guard outside an execution.
    #[track_caller]
    fn read(&self) -> Option<OsRead<'_>> {
        match rt::current() {
            Some(ctx) => {
                let obj = self.state.obj(ctx);
                ctx.switch("RwLock::read", Some(obj));
                self.acquire(ctx, obj, "RwLock::read", Mode::Read);
                None
            }
            None => {
                self.state.outside("RwLock::read");
                Some(self.os.read().unwrap_or_else(PoisonError::into_inner))
            }
        }
    }

    /// As `read`, or `None` if it would block.
    #[track_caller]
    fn try_read(&self) -> Option<Option<OsRead<'_>>> {
        match rt::current() {
            Some(ctx) => {
                let obj = self.state.obj(ctx);
                ctx.switch("RwLock::try_read", Some(obj));
                self.try_acquire(ctx, obj, Mode::Read).then_some(None)
            }
            None => match self.os.try_read() {
                Ok(os) => Some(Some(os)),
                Err(std::sync::TryLockError::Poisoned(e)) => Some(Some(e.into_inner())),
                Err(std::sync::TryLockError::WouldBlock) => None,
            },
        }
    }

    /// Takes the write hold: the std guard outside an execution, and whether the thread
    /// was panicking.
    #[track_caller]
    fn write(&self) -> (Option<OsWrite<'_>>, bool) {
        match rt::current() {
            Some(ctx) => {
                let obj = self.state.obj(ctx);
                ctx.switch("RwLock::write", Some(obj));
                self.acquire(ctx, obj, "RwLock::write", Mode::Write);
                (None, ctx.panicking())
            }
            None => {
                self.state.outside("RwLock::write");
                let os = self.os.write().unwrap_or_else(PoisonError::into_inner);
                (Some(os), std::thread::panicking())
            }
        }
    }

    /// As `write`, or `None` if it would block.
    #[track_caller]
    fn try_write(&self) -> Option<(Option<OsWrite<'_>>, bool)> {
        match rt::current() {
            Some(ctx) => {
                let obj = self.state.obj(ctx);
                ctx.switch("RwLock::try_write", Some(obj));
                self.try_acquire(ctx, obj, Mode::Write)
                    .then(|| (None, ctx.panicking()))
            }
            None => match self.os.try_write() {
                Ok(os) => Some((Some(os), std::thread::panicking())),
                Err(std::sync::TryLockError::Poisoned(e)) => {
                    Some((Some(e.into_inner()), std::thread::panicking()))
                }
                Err(std::sync::TryLockError::WouldBlock) => None,
            },
        }
    }

    /// The logical half of a downgrade: the write hold becomes a read hold, atomically.
    #[track_caller]
    fn downgrade(&self) {
        if let Some(ctx) = rt::current() {
            let obj = self.state.obj(ctx);
            ctx.switch("RwLockWriteGuard::downgrade", Some(obj));
            let st = self.state.enter(ctx).state;
            st.writer = None;
            st.readers += 1;
            ctx.released(obj);
            ctx.acquired(obj);
            // Waiting readers may now share the lock.
            ctx.wake_all(obj);
        }
    }

    /// A read guard's unlock.
    fn read_unlock(&self, os: &mut Option<OsRead<'_>>) {
        if os.take().is_some() {
            return;
        }
        if let Some(ctx) = rt::current() {
            self.release(ctx, "RwLock::read_unlock", Mode::Read);
        }
    }

    /// A write guard's unlock: poisons if its thread started panicking while it held the
    /// lock (not in the cleanup of an ended execution, which unwinds threads artificially).
    fn write_unlock(&self, os: &mut Option<OsWrite<'_>>, panicking: bool) {
        if os.take().is_some() {
            if !panicking && std::thread::panicking() {
                self.os_poisoned.store(true, Ordering::Relaxed);
            }
            return;
        }
        if let Some(ctx) = rt::current() {
            if !panicking && ctx.panicking() && !ctx.is_teardown() {
                self.state.enter(ctx).state.poisoned = true;
            }
            self.release(ctx, "RwLock::write_unlock", Mode::Write);
        }
    }

    fn clear_poison(&self) {
        match rt::current() {
            Some(ctx) => self.state.enter(ctx).state.poisoned = false,
            None => self.os_poisoned.store(false, Ordering::Relaxed),
        }
    }

    /// Blocks until the running virtual thread holds the lock in `mode` (the caller has
    /// had its scheduling point).
    #[track_caller]
    fn acquire(&self, ctx: rt::Ctx, obj: ObjRef, op: &'static str, mode: Mode) {
        let mut waiting = false;
        while !self.may_take(ctx, mode) {
            if !waiting {
                waiting = true;
                *self.state.enter(ctx).state.waiting(mode) += 1;
            }
            if ctx.block(op, Some(obj), None) == WakeReason::Teardown {
                // Cleanup of an ended execution must not block: take it over.
                let e = self.state.enter(ctx);
                match mode {
                    Mode::Read => e.state.readers += 1,
                    Mode::Write => e.state.writer = Some(e.me),
                }
                break;
            }
        }
        if waiting {
            *self.state.enter(ctx).state.waiting(mode) -= 1;
        }
        ctx.acquired(obj);
    }

    /// Takes the lock if `mode` allows it now. A reader that could share the lock while a
    /// writer waits defers to the writer when the scheduler says so (writer preference).
    fn may_take(&self, ctx: rt::Ctx, mode: Mode) -> bool {
        let writer_waits = matches!(mode, Mode::Read) && {
            let s = self.state.enter(ctx).state;
            s.writer.is_none() && s.writers_waiting > 0
        };
        if writer_waits && ctx.choose(ChoiceKind::WriterPreference) {
            return false;
        }
        let e = self.state.enter(ctx);
        let taken = e.state.try_take(e.me, mode);
        // Held for writing, every other thread's attempt fails: the waiters its last
        // release woke that have not run yet wait again.
        if taken && matches!(mode, Mode::Write) {
            ctx.reblock_contenders(e.obj);
        }
        taken
    }

    #[track_caller]
    fn try_acquire(&self, ctx: rt::Ctx, obj: ObjRef, mode: Mode) -> bool {
        let got = self.may_take(ctx, mode);
        if got {
            ctx.acquired(obj);
        }
        got
    }

    /// Gives up one hold in `mode`: a scheduling point, then waiters race for the lock.
    fn release(&self, ctx: rt::Ctx, op: &'static str, mode: Mode) {
        let obj = self.state.obj(ctx);
        if !ctx.is_teardown() {
            ctx.switch(op, Some(obj));
        }
        // Readers only ever wait for a writer, and writers for an empty lock, so only a
        // lock that became free can let a waiter in.
        let (free, readers_wait) = {
            let s = self.state.enter(ctx).state;
            match mode {
                Mode::Read => s.readers = s.readers.saturating_sub(1),
                Mode::Write => s.writer = None,
            }
            (s.writer.is_none() && s.readers == 0, s.readers_waiting > 0)
        };
        ctx.released(obj);
        match (free, readers_wait) {
            (false, _) => {}
            // Only writers wait: one of them, as a `Mutex` release wakes one.
            (true, false) => {
                ctx.wake_one(obj);
            }
            // Readers may all take it together: every waiter races for it.
            (true, true) => ctx.wake_contenders(obj),
        }
    }

    fn is_poisoned(&self) -> bool {
        match rt::current() {
            Some(ctx) => self.state.enter(ctx).state.poisoned,
            None => self.os_poisoned.load(Ordering::Relaxed),
        }
    }
}

impl<'a, T: ?Sized> RwLockWriteGuard<'a, T> {
    /// Downgrades a write-locked `RwLockWriteGuard` into a read-locked
    /// [`RwLockReadGuard`], atomically: no writer can get in between.
    #[track_caller]
    pub fn downgrade(s: Self) -> RwLockReadGuard<'a, T> {
        let s = std::mem::ManuallyDrop::new(s);
        let lock = s.lock;
        // SAFETY: `s` is never used or dropped again; the std guard is moved out once.
        let os = unsafe { std::ptr::read(&s.os) };
        let os = match os {
            // std's downgrade (stable since 1.92) keeps the outside behaviour exact.
            #[allow(clippy::incompatible_msrv)]
            Some(os) => Some(std::sync::RwLockWriteGuard::downgrade(os)),
            None => {
                lock.raw.downgrade();
                None
            }
        };
        lock.read_guard(os)
    }
}

impl<T: ?Sized> Drop for RwLockReadGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.raw.read_unlock(&mut self.os);
    }
}

impl<T: ?Sized> Drop for RwLockWriteGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.raw.write_unlock(&mut self.os, self.panicking);
    }
}

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock for reading, and the lock outlives it.
        unsafe { self.data.as_ref() }
    }
}

impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock exclusively.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock exclusively.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl<T: Default> Default for RwLock<T> {
    fn default() -> RwLock<T> {
        RwLock::new(Default::default())
    }
}

impl<T> From<T> for RwLock<T> {
    fn from(t: T) -> Self {
        RwLock::new(t)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLock<T> {
    /// Like std: shows the data unless a writer holds the lock, without a scheduling point.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RwLock");
        let ctx = rt::current();
        // Outside an execution the std read guard is held while formatting.
        let os = match ctx {
            Some(_) => None,
            None => match self.raw.os.try_read() {
                Ok(g) => Some(g),
                Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => None,
            },
        };
        let readable = match ctx {
            Some(ctx) => self.raw.state.enter(ctx).state.writer.is_none(),
            None => os.is_some(),
        };
        if readable {
            // SAFETY: no writer holds the lock (inside an execution none can take it
            // unless formatting itself reaches a scheduling point, as with std's guard).
            d.field("data", &unsafe { &*self.data.get() });
        } else {
            d.field("data", &format_args!("<locked>"));
        }
        d.field("poisoned", &self.is_poisoned());
        d.finish_non_exhaustive()
    }
}

impl<T: ?Sized> std::panic::UnwindSafe for RwLock<T> {}
impl<T: ?Sized> std::panic::RefUnwindSafe for RwLock<T> {}
// So a read guard (which points at `Raw`) is unwind safe whenever std's is.
impl std::panic::RefUnwindSafe for Raw {}
