//! `std::sync::OnceLock`, on the same core as `Once` (see `once.rs` for what persists
//! between executions).
//!
//! Under pulse, `get` is a scheduling point (it races with `set`), and of several threads
//! calling `get_or_init` or `set` the scheduler picks which one initialises; the others
//! block until it is done. An initialiser that panics leaves the cell uninitialised, as in
//! std.

use std::cell::UnsafeCell;
use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::panic::{RefUnwindSafe, UnwindSafe};

use super::once::{Exclusive, Kind, RawOnce};

struct OnceLockKind;

impl Kind for OnceLockKind {
    const NAME: &'static str = "OnceLock";
    const DONE: &'static str = "OnceLock: initialised";
    const ABORT_POISONS: bool = false;
}

/// A synchronization primitive which can nominally be written to only once.
pub struct OnceLock<T> {
    once: RawOnce<OnceLockKind>,
    value: UnsafeCell<MaybeUninit<T>>,
    /// Like std: dropping a `OnceLock<T>` may drop a `T`.
    _marker: PhantomData<T>,
}

impl<T> OnceLock<T> {
    /// Creates a new uninitialized cell.
    #[inline]
    #[must_use]
    pub const fn new() -> OnceLock<T> {
        OnceLock {
            once: RawOnce::new(),
            value: UnsafeCell::new(MaybeUninit::uninit()),
            _marker: PhantomData,
        }
    }

    /// Gets the reference to the underlying value.
    ///
    /// Returns `None` if the cell is uninitialized, or being initialized.
    #[inline]
    #[track_caller]
    pub fn get(&self) -> Option<&T> {
        if self.once.is_completed_at("OnceLock::get") {
            // SAFETY: complete, so the value is written and never written again.
            Some(unsafe { self.get_unchecked() })
        } else {
            None
        }
    }

    /// Gets the mutable reference to the underlying value.
    #[inline]
    pub fn get_mut(&mut self) -> Option<&mut T> {
        match self.once.exclusive() {
            // SAFETY: complete, so the value is written.
            Exclusive::Complete => Some(unsafe { self.value.get_mut().assume_init_mut() }),
            _ => None,
        }
    }

    /// Blocks the current thread until the cell is initialized.
    #[inline]
    #[track_caller]
    pub fn wait(&self) -> &T {
        if !self.once.wait("OnceLock::wait", true) {
            ended_mid_initialisation();
        }
        // SAFETY: complete, so the value is written.
        unsafe { self.get_unchecked() }
    }

    /// Initializes the contents of the cell to `value`.
    ///
    /// May block if another thread is currently attempting to initialize the cell. The
    /// cell is guaranteed to contain a value when `set` returns, though not necessarily
    /// the one provided.
    ///
    /// Returns `Ok(())` if the cell was uninitialized and `Err(value)` if the cell was
    /// already initialized.
    #[inline]
    #[track_caller]
    pub fn set(&self, value: T) -> Result<(), T> {
        let mut value = Some(value);
        self.initialize("OnceLock::set", || value.take().expect("taken once"));
        match value {
            None => Ok(()),
            Some(value) => Err(value),
        }
    }

    /// Gets the contents of the cell, initializing it to `f()` if the cell was
    /// uninitialized.
    ///
    /// Many threads may call `get_or_init` concurrently with different initializing
    /// functions, but it is guaranteed that only one function will be executed.
    #[inline]
    #[track_caller]
    pub fn get_or_init<F>(&self, f: F) -> &T
    where
        F: FnOnce() -> T,
    {
        self.initialize("OnceLock::get_or_init", f);
        // SAFETY: `initialize` returned, so the value is written.
        unsafe { self.get_unchecked() }
    }

    /// Consumes the `OnceLock`, returning the wrapped value. Returns `None` if the cell
    /// was uninitialized.
    #[inline]
    pub fn into_inner(mut self) -> Option<T> {
        self.take()
    }

    /// Takes the value out of this `OnceLock`, moving it back to an uninitialized state.
    #[inline]
    pub fn take(&mut self) -> Option<T> {
        match self.once.exclusive() {
            Exclusive::Complete => {
                self.once.set_exclusive(Exclusive::Incomplete);
                // SAFETY: it was complete, and is now marked uninitialised, so the value
                // is read out exactly once.
                Some(unsafe { self.value.get_mut().assume_init_read() })
            }
            _ => None,
        }
    }

    /// Runs `f` to initialise the cell unless it is initialised, one thread at a time
    /// (the first check and the claim are one scheduling point).
    #[track_caller]
    fn initialize(&self, op: &'static str, f: impl FnOnce() -> T) {
        let slot = &self.value;
        let done = self.once.call(op, true, |_| {
            // SAFETY: only the thread running the initialisation writes, and nothing reads
            // until it completes.
            unsafe { (*slot.get()).write(f()) };
        });
        if !done {
            ended_mid_initialisation();
        }
    }

    /// # Safety
    /// The cell must be initialised.
    #[inline]
    unsafe fn get_unchecked(&self) -> &T {
        // SAFETY: per the contract.
        unsafe { (*self.value.get()).assume_init_ref() }
    }
}

/// A thread being cleaned up after its execution ended (it is already unwinding) asked
/// for a value another thread was still initialising: there is none to give and waiting
/// would never end. Panicking here would abort the process from inside the unwinding, so
/// the thread is abandoned (its stack is leaked, with a warning in the report).
#[cold]
fn ended_mid_initialisation() -> ! {
    match crate::rt::current() {
        Some(ctx) => ctx.abandon(),
        None => unreachable!("only reached while an execution is being cleaned up"),
    }
}

// Same bounds as std.
unsafe impl<T: Sync + Send> Sync for OnceLock<T> {}
unsafe impl<T: Send> Send for OnceLock<T> {}

impl<T: RefUnwindSafe + UnwindSafe> RefUnwindSafe for OnceLock<T> {}
impl<T: UnwindSafe> UnwindSafe for OnceLock<T> {}

impl<T> Default for OnceLock<T> {
    /// Creates a new uninitialized cell.
    #[inline]
    fn default() -> OnceLock<T> {
        OnceLock::new()
    }
}

impl<T: fmt::Debug> fmt::Debug for OnceLock<T> {
    /// Like std, but without a scheduling point.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_tuple("OnceLock");
        if self.once.is_completed() {
            // SAFETY: complete, so the value is written.
            d.field(unsafe { self.get_unchecked() });
        } else {
            d.field(&format_args!("<uninit>"));
        }
        d.finish()
    }
}

impl<T: Clone> Clone for OnceLock<T> {
    #[inline]
    #[track_caller]
    fn clone(&self) -> OnceLock<T> {
        match self.get() {
            Some(value) => OnceLock::from(value.clone()),
            None => OnceLock::new(),
        }
    }
}

impl<T> From<T> for OnceLock<T> {
    /// Creates a new cell with its contents set to `value`.
    #[inline]
    fn from(value: T) -> Self {
        let mut cell = OnceLock::new();
        cell.value.get_mut().write(value);
        cell.once.set_exclusive(Exclusive::Complete);
        cell
    }
}

impl<T: PartialEq> PartialEq for OnceLock<T> {
    #[inline]
    #[track_caller]
    fn eq(&self, other: &OnceLock<T>) -> bool {
        self.get() == other.get()
    }
}

impl<T: Eq> Eq for OnceLock<T> {}

impl<T> Drop for OnceLock<T> {
    #[inline]
    fn drop(&mut self) {
        if let Exclusive::Complete = self.once.exclusive() {
            // SAFETY: complete, so the value is written; it is dropped once.
            unsafe { self.value.get_mut().assume_init_drop() };
        }
    }
}
