//! `std::sync::LazyLock`, on the same core as `Once` (see `once.rs` for what persists
//! between executions).
//!
//! Under pulse, the first access is a scheduling point and of several threads forcing
//! the value at once the scheduler picks which one runs the initialiser; the others block
//! until it is done. If the initialiser panics (or its execution ends while it runs) the
//! `LazyLock` is poisoned, as in std: the initialiser is consumed and cannot run again.

use std::cell::UnsafeCell;
use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::panic::{RefUnwindSafe, UnwindSafe};

use super::once::{Exclusive, Kind, RawOnce};

struct LazyLockKind;

impl Kind for LazyLockKind {
    const NAME: &'static str = "LazyLock";
    const DONE: &'static str = "LazyLock: initialised";
    const ABORT_POISONS: bool = true;
}

/// The initialiser until it has run, the value after.
union Data<T, F> {
    value: ManuallyDrop<T>,
    f: ManuallyDrop<F>,
}

/// A value which is initialized on the first access.
pub struct LazyLock<T, F = fn() -> T> {
    once: RawOnce<LazyLockKind>,
    data: UnsafeCell<Data<T, F>>,
}

impl<T, F: FnOnce() -> T> LazyLock<T, F> {
    /// Creates a new lazy value with the given initializing function.
    #[inline]
    pub const fn new(f: F) -> LazyLock<T, F> {
        LazyLock {
            once: RawOnce::new(),
            data: UnsafeCell::new(Data {
                f: ManuallyDrop::new(f),
            }),
        }
    }

    /// Forces the evaluation of this lazy value and returns a mutable reference to the
    /// result.
    ///
    /// # Panics
    ///
    /// If the initialization closure panics (the panic is propagated to the caller, and
    /// the lock becomes poisoned), this panics too.
    #[inline]
    pub fn force_mut(this: &mut LazyLock<T, F>) -> &mut T {
        /// Poisons the lock if the initialiser unwinds (it has been taken by then).
        struct PoisonOnPanic<'a, T, F>(&'a mut LazyLock<T, F>);
        impl<T, F> Drop for PoisonOnPanic<'_, T, F> {
            fn drop(&mut self) {
                self.0.once.set_exclusive(Exclusive::Poisoned);
            }
        }

        match this.once.exclusive() {
            Exclusive::Poisoned => panic_poisoned(),
            Exclusive::Complete => {}
            Exclusive::Incomplete => {
                // SAFETY: incomplete, so `f` is there; it is taken once, and the state
                // says so whatever happens next.
                let f = unsafe { ManuallyDrop::take(&mut this.data.get_mut().f) };
                let guard = PoisonOnPanic(this);
                let value = f();
                guard.0.data.get_mut().value = ManuallyDrop::new(value);
                guard.0.once.set_exclusive(Exclusive::Complete);
                std::mem::forget(guard);
            }
        }
        // SAFETY: complete, so `value` is there.
        unsafe { &mut this.data.get_mut().value }
    }

    /// Forces the evaluation of this lazy value and returns a reference to the result.
    /// This is equivalent to the `Deref` impl, but is explicit.
    ///
    /// # Panics
    ///
    /// If the initialization closure panics (the panic is propagated to the caller, and
    /// the lock becomes poisoned), this panics too.
    #[inline]
    #[track_caller]
    pub fn force(this: &LazyLock<T, F>) -> &T {
        let done = this.once.call("LazyLock::force", true, |state| {
            if state.is_poisoned() {
                panic_poisoned();
            }
            // SAFETY: only the thread running the initialisation touches `data` until it
            // completes; `f` is there because the lock is neither complete nor poisoned,
            // and it is taken once (a panic from here on poisons).
            let data = unsafe { &mut *this.data.get() };
            let f = unsafe { ManuallyDrop::take(&mut data.f) };
            data.value = ManuallyDrop::new(f());
        });
        if !done {
            // Cleanup of an ended execution needs a value another thread never finished:
            // panicking inside the unwind would abort the process, so abandon the thread.
            match crate::rt::current() {
                Some(ctx) => ctx.abandon(),
                None => unreachable!("only reached while an execution is being cleaned up"),
            }
        }
        // SAFETY: complete, so `value` is there and never written again.
        unsafe { &(*this.data.get()).value }
    }
}

impl<T, F> LazyLock<T, F> {
    /// Returns a mutable reference to the value if initialized. Otherwise (if
    /// uninitialized or poisoned), returns `None`.
    #[inline]
    pub fn get_mut(this: &mut LazyLock<T, F>) -> Option<&mut T> {
        match this.once.exclusive() {
            // SAFETY: complete, so `value` is there.
            Exclusive::Complete => Some(unsafe { &mut this.data.get_mut().value }),
            _ => None,
        }
    }

    /// Returns a reference to the value if initialized. Otherwise (if uninitialized or
    /// poisoned), returns `None`.
    #[inline]
    #[track_caller]
    pub fn get(this: &LazyLock<T, F>) -> Option<&T> {
        if this.once.is_completed_at("LazyLock::get") {
            // SAFETY: complete, so `value` is there and never written again.
            Some(unsafe { &(*this.data.get()).value })
        } else {
            None
        }
    }
}

impl<T, F> Drop for LazyLock<T, F> {
    fn drop(&mut self) {
        match self.once.exclusive() {
            // SAFETY: incomplete, so `f` is there; complete, so `value` is. Poisoned: the
            // initialiser was consumed and no value was written.
            Exclusive::Incomplete => unsafe { ManuallyDrop::drop(&mut self.data.get_mut().f) },
            Exclusive::Complete => unsafe { ManuallyDrop::drop(&mut self.data.get_mut().value) },
            Exclusive::Poisoned => {}
        }
    }
}

impl<T, F: FnOnce() -> T> Deref for LazyLock<T, F> {
    type Target = T;

    #[inline]
    #[track_caller]
    fn deref(&self) -> &T {
        LazyLock::force(self)
    }
}

impl<T, F: FnOnce() -> T> DerefMut for LazyLock<T, F> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        LazyLock::force_mut(self)
    }
}

impl<T: Default> Default for LazyLock<T> {
    /// Creates a new lazy value using `Default` as the initializing function.
    #[inline]
    fn default() -> LazyLock<T> {
        LazyLock::new(T::default)
    }
}

impl<T: fmt::Debug, F> fmt::Debug for LazyLock<T, F> {
    /// Like std, but without a scheduling point.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_tuple("LazyLock");
        if self.once.is_completed() {
            // SAFETY: complete, so `value` is there.
            d.field(unsafe { &*(*self.data.get()).value });
        } else {
            d.field(&format_args!("<uninit>"));
        }
        d.finish()
    }
}

#[cold]
#[inline(never)]
fn panic_poisoned() -> ! {
    panic!("LazyLock instance has previously been poisoned")
}

// Same bounds as std.
unsafe impl<T: Sync + Send, F: Send> Sync for LazyLock<T, F> {}
impl<T: RefUnwindSafe + UnwindSafe, F: UnwindSafe> RefUnwindSafe for LazyLock<T, F> {}
impl<T: UnwindSafe, F: UnwindSafe> UnwindSafe for LazyLock<T, F> {}
