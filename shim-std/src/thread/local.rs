//! `std::thread::LocalKey`, with one value per *virtual* thread under pulse.
//!
//! Every virtual thread of an execution runs on the same OS thread, so std's thread-locals
//! would be shared by all of them. Inside an execution a key's value lives in the running
//! virtual thread's local table (keyed by the address of the key's `static`), is created on
//! first use and destroyed when that virtual thread exits; values never carry over from
//! one execution to the next. Outside an execution a real std `thread_local!` (declared by
//! `thread_local!` next to the key) backs it. Nothing here is a scheduling point: a
//! thread's own locals are invisible to other threads, so when it touches them does not
//! matter.

use std::cell::{Cell, RefCell};
use std::error::Error;
use std::fmt;

use crate::rt;

/// A thread-local storage key which owns its contents; declared with `thread_local!`.
pub struct LocalKey<T: 'static> {
    /// The std thread-local used outside an execution.
    os: &'static std::thread::LocalKey<T>,
    /// Makes a virtual thread's first value (the `thread_local!` initializer).
    init: fn() -> T,
}

impl<T: 'static> fmt::Debug for LocalKey<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalKey").finish_non_exhaustive()
    }
}

/// The error returned by `LocalKey::try_with` during or after the value's destruction.
#[non_exhaustive]
#[derive(Clone, Copy, Eq, PartialEq)]
pub struct AccessError;

impl fmt::Debug for AccessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccessError").finish()
    }
}

impl fmt::Display for AccessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt("already destroyed", f)
    }
}

impl Error for AccessError {}

#[cold]
#[track_caller]
fn panic_access_error(err: AccessError) -> ! {
    panic!("cannot access a Thread Local Storage value during or after destruction: {err:?}")
}

impl<T: 'static> LocalKey<T> {
    /// Used by `thread_local!` only.
    #[doc(hidden)]
    pub const fn __new(os: &'static std::thread::LocalKey<T>, init: fn() -> T) -> LocalKey<T> {
        LocalKey { os, init }
    }

    /// The running virtual thread's value: its own, created with `init` on first use.
    /// `None` once its locals are being destroyed.
    fn with_pulse<R>(
        &'static self,
        ctx: rt::Ctx,
        init: impl FnOnce() -> T,
        f: impl FnOnce(&T) -> R,
    ) -> Option<R> {
        ctx.with_local(self as *const Self as usize, init, f)
    }

    /// Acquires a reference to the value in this thread's slot, initializing it first if
    /// needed.
    ///
    /// # Panics
    /// During or after the destruction of this thread's value.
    #[track_caller]
    pub fn with<F, R>(&'static self, f: F) -> R
    where
        F: FnOnce(&T) -> R,
    {
        match self.try_with(f) {
            Ok(r) => r,
            Err(err) => panic_access_error(err),
        }
    }

    /// As `with`, but `Err(AccessError)` instead of a panic during or after destruction.
    #[inline]
    pub fn try_with<F, R>(&'static self, f: F) -> Result<R, AccessError>
    where
        F: FnOnce(&T) -> R,
    {
        match rt::current() {
            Some(ctx) => self.with_pulse(ctx, self.init, f).ok_or(AccessError),
            None => self.os.try_with(f).map_err(|_| AccessError),
        }
    }

    /// std's `initialize_with`, under pulse: runs `f` on the thread's value, which is
    /// `value` if it was not yet initialized (then `f` gets `None`, else `Some(value)`).
    #[track_caller]
    fn initialize_with<R>(
        &'static self,
        ctx: rt::Ctx,
        value: T,
        f: impl FnOnce(Option<T>, &T) -> R,
    ) -> R {
        let slot = Cell::new(Some(value));
        let init = || slot.take().expect("the initializer runs at most once");
        match self.with_pulse(ctx, init, |v| f(slot.take(), v)) {
            Some(r) => r,
            None => panic_access_error(AccessError),
        }
    }
}

impl<T: 'static> LocalKey<Cell<T>> {
    /// Sets the contained value, without running the initializer if it was not yet
    /// initialized.
    #[track_caller]
    pub fn set(&'static self, value: T) {
        match rt::current() {
            Some(ctx) => self.initialize_with(ctx, Cell::new(value), |value, cell| {
                if let Some(value) = value {
                    cell.set(value.into_inner());
                }
            }),
            None => self.os.set(value),
        }
    }

    /// Returns a copy of the contained value.
    #[track_caller]
    pub fn get(&'static self) -> T
    where
        T: Copy,
    {
        self.with(Cell::get)
    }

    /// Takes the contained value, leaving `Default::default()` in its place.
    #[track_caller]
    pub fn take(&'static self) -> T
    where
        T: Default,
    {
        self.with(Cell::take)
    }

    /// Replaces the contained value, returning the old one.
    #[track_caller]
    pub fn replace(&'static self, value: T) -> T {
        self.with(|cell| cell.replace(value))
    }
}

impl<T: 'static> LocalKey<RefCell<T>> {
    /// Acquires a reference to the contained value.
    ///
    /// # Panics
    /// If the value is mutably borrowed, or during or after destruction.
    #[track_caller]
    pub fn with_borrow<F, R>(&'static self, f: F) -> R
    where
        F: FnOnce(&T) -> R,
    {
        self.with(|cell| f(&cell.borrow()))
    }

    /// Acquires a mutable reference to the contained value.
    ///
    /// # Panics
    /// If the value is borrowed, or during or after destruction.
    #[track_caller]
    pub fn with_borrow_mut<F, R>(&'static self, f: F) -> R
    where
        F: FnOnce(&mut T) -> R,
    {
        self.with(|cell| f(&mut cell.borrow_mut()))
    }

    /// Sets the contained value, without running the initializer if it was not yet
    /// initialized.
    ///
    /// # Panics
    /// If the value is borrowed, or during or after destruction.
    #[track_caller]
    pub fn set(&'static self, value: T) {
        match rt::current() {
            Some(ctx) => self.initialize_with(ctx, RefCell::new(value), |value, cell| {
                if let Some(value) = value {
                    *cell.borrow_mut() = value.into_inner();
                }
            }),
            None => self.os.set(value),
        }
    }

    /// Takes the contained value, leaving `Default::default()` in its place.
    ///
    /// # Panics
    /// If the value is borrowed, or during or after destruction.
    #[track_caller]
    pub fn take(&'static self) -> T
    where
        T: Default,
    {
        self.with(RefCell::take)
    }

    /// Replaces the contained value, returning the old one.
    ///
    /// # Panics
    /// If the value is borrowed, or during or after destruction.
    #[track_caller]
    pub fn replace(&'static self, value: T) -> T {
        self.with(|cell| cell.replace(value))
    }
}

/// The body of `thread_local!` (which routes `const { }` initializers here too: the
/// initializer runs lazily on first use either way, which std's `const` form only skips
/// as an optimization). Declares the key as a `static`, whose address names it under
/// pulse, and a hidden std thread-local that backs it outside an execution.
#[doc(hidden)]
#[macro_export]
macro_rules! __thread_local_inner {
    ($(#[$attr:meta])* $vis:vis $name:ident, $t:ty, $init:expr) => {
        $(#[$attr])* $vis static $name: $crate::thread::LocalKey<$t> = {
            #[inline]
            fn __pulse_init() -> $t {
                $init
            }
            ::std::thread_local!(static __PULSE_OS: $t = __pulse_init());
            $crate::thread::LocalKey::__new(&__PULSE_OS, __pulse_init)
        };
    };
}
