//! `std::sync::atomic`, with a scheduling point before every load, store and
//! read-modify-write under pulse.
//!
//! Each type is `#[repr(transparent)]` over std's, so size, alignment, `from_ptr` and
//! `as_ptr` agree with std and an atomic needs no per-execution state: the value itself is
//! the state, and the object is named by its address in traces. Unlike std's, each has a
//! `Drop` (and `get_mut` does the same): under the relaxed model it ends the address's store
//! history, so a new atomic allocated there does not inherit a dead one's stores.
//!
//! Nondeterministic here: which thread's operation reaches the atomic first (the scheduler
//! picks at each point) and whether a `compare_exchange_weak` that would succeed fails
//! spuriously (a `ChoiceKind::WeakCasFailure` choice, recorded in the schedule). Memory
//! always holds the newest store. Under `Memory::Sc` every operation behaves as `SeqCst`
//! whatever ordering it names; under `Memory::Relaxed` each operation is also told to the
//! runtime's memory model, and a load returns the value of the store the model lets it read
//! (possibly an older one: a recorded choice). Fences are not scheduling points.
//! Outside an execution every method is std's.

use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::sync::atomic as sa;

use pulse_runtime::ChoiceKind;

use crate::rt;

pub use std::sync::atomic::Ordering;

/// std's own compiler fence: it orders nothing between threads, so the model ignores it.
pub use std::sync::atomic::compiler_fence;

/// An atomic fence: std's, and under the relaxed memory model an acquire and/or release
/// (and for `SeqCst` a step in the single total order) of the running thread.
#[track_caller]
#[inline]
pub fn fence(order: Ordering) {
    sa::fence(order);
    fenced(order);
}

// The runtime's side of each operation is in the functions below, not `#[inline]`: the
// operations themselves are (std's atomic, with its ordering a constant, inlined into the
// caller), but what they tell the runtime would otherwise be compiled into the user's
// crate, at its debug opt-level 0 (~2x slower executions); this way it is compiled once,
// optimised, in pulse-shim-std (ARCHITECTURE.md, decision 40).

/// A fence's side in the relaxed memory model and the trace.
#[track_caller]
fn fenced(order: Ordering) {
    if let Some(ctx) = rt::current() {
        ctx.atomic_fence(order);
    }
}

/// The running execution at an atomic operation's scheduling point.
#[derive(Clone, Copy)]
struct Point {
    ctx: rt::Ctx,
    /// Whether the operation must be told to the runtime (`Ctx::atomic_told`): false under
    /// `sc`, untraced, so most operations make one call into it, not two.
    told: bool,
}

/// A scheduling point before an operation on the atomic at `addr`; the running execution,
/// if any.
#[track_caller]
fn point(op: &'static str, kind: &'static str, addr: usize) -> Option<Point> {
    let ctx = rt::current()?;
    ctx.switch_addr(op, kind, addr);
    Some(Point {
        ctx,
        told: ctx.atomic_told(),
    })
}

/// The atomic at `addr` is dropped or mutably borrowed: tells the relaxed model, if it runs,
/// to end the address's store history (`Ctx::atomic_forget`).
fn forget(addr: usize) {
    if let Some(ctx) = rt::current() {
        ctx.atomic_forget(addr);
    }
}

/// Called first in every `Drop::drop` the instrumenter sees, with the value being dropped:
/// its owner has every other owner's accesses behind it, though the edge (std's last `Arc`
/// going, a handle in uninstrumented code) may be invisible to pulse. Tells the relaxed
/// model (`Ctx::atomic_exclusive`); not a scheduling point.
#[doc(hidden)]
#[inline]
pub fn __pulse_drop_acquire<T: ?Sized>(value: &T) {
    held_exclusively(value);
}

/// The running thread holds the only reference to `value` (`Ctx::atomic_exclusive`).
pub(crate) fn held_exclusively<T: ?Sized>(value: &T) {
    if let Some(ctx) = rt::current() {
        let addr = value as *const T as *const () as usize;
        ctx.atomic_exclusive(addr, std::mem::size_of_val(value));
    }
}

/// A load of `actual` at `addr`: the value it reads (`Ctx::atomic_load`).
#[track_caller]
fn loaded(ctx: rt::Ctx, kind: &'static str, addr: usize, actual: u64, order: Ordering) -> u64 {
    ctx.atomic_load(kind, addr, actual, order)
}

/// A store of `new` over `old` at `addr` (`Ctx::atomic_store`).
#[track_caller]
fn stored(ctx: rt::Ctx, addr: usize, old: u64, new: u64, order: Ordering) {
    ctx.atomic_store(addr, old, new, order);
}

/// A read-modify-write that read `old` and wrote `new` (`None`: failed, a load)
/// (`Ctx::atomic_rmw`).
#[track_caller]
fn rmw_told(ctx: rt::Ctx, addr: usize, old: u64, new: Option<u64>, order: Ordering) {
    ctx.atomic_rmw(addr, old, new, order);
}

/// Whether a weak compare-exchange that would succeed fails spuriously (a scheduler
/// choice), and if so the failure told to the memory model.
#[track_caller]
fn weak_cas_fails(ctx: rt::Ctx, addr: usize, current: u64, failure: Ordering) -> bool {
    let fails = ctx.choose(ChoiceKind::WeakCasFailure);
    if fails {
        ctx.atomic_cas_spurious(addr, current, failure);
    }
    fails
}

/// The failure ordering std's `compare_and_swap` derives from its one ordering.
fn strongest_failure_ordering(order: Ordering) -> Ordering {
    match order {
        Ordering::Release | Ordering::Relaxed => Ordering::Relaxed,
        Ordering::Acquire | Ordering::AcqRel => Ordering::Acquire,
        _ => Ordering::SeqCst,
    }
}

/// The methods every atomic type shares, for a value type `$v` that is `Copy + PartialEq`
/// and `$std`, the std atomic the type is layout-identical to.
macro_rules! common_methods {
    ($name:ident, $v:ty, $std:ty) => {
        /// The std atomic this one is.
        #[inline]
        const fn inner(&self) -> &$std {
            // SAFETY: `Self` is `repr(transparent)` over `$std` (or, for `AtomicPtr`, over
            // std's `AtomicPtr<()>`, which has the same layout for every sized `T`).
            unsafe { &*(self as *const Self).cast::<$std>() }
        }

        /// Gets a mutable reference to the underlying value (exclusive access: no
        /// scheduling point). Everything done to the atomic happens-before it, so under the
        /// relaxed model the store history restarts from the value left here.
        #[inline]
        pub fn get_mut(&mut self) -> &mut $v {
            forget(self.addr());
            // SAFETY: as in `inner`, and `self` is borrowed exclusively.
            unsafe { &mut *(self as *mut Self).cast::<$std>() }.get_mut()
        }

        /// Consumes the atomic and returns the contained value (moved out without `Drop`,
        /// so still usable in `const`).
        #[inline]
        pub const fn into_inner(self) -> $v {
            let this = ManuallyDrop::new(self);
            // SAFETY: as in `inner`; `this` is never used or dropped again.
            unsafe { (&raw const this).cast::<$std>().read() }.into_inner()
        }

        /// Returns a mutable pointer to the underlying value.
        #[inline]
        pub const fn as_ptr(&self) -> *mut $v {
            self.inner().as_ptr()
        }

        #[inline]
        fn addr(&self) -> usize {
            self as *const Self as usize
        }
    };
}

/// The operations every atomic type shares: each a scheduling point, then std's operation,
/// then the memory model told (the first and last through the outlined functions above).
macro_rules! op_methods {
    ($name:ident, $v:ty, $std:ty) => {
        /// Loads a value from the atomic.
        #[track_caller]
        #[inline]
        pub fn load(&self, order: Ordering) -> $v {
            let ctx = point(
                concat!(stringify!($name), "::load"),
                stringify!($name),
                self.addr(),
            );
            let v = self.inner().load(order);
            match ctx {
                Some(Point { ctx, told: true }) => Self::from_bits(loaded(
                    ctx,
                    stringify!($name),
                    self.addr(),
                    Self::to_bits(v),
                    order,
                )),
                _ => v,
            }
        }

        /// Stores a value into the atomic.
        #[track_caller]
        #[inline]
        pub fn store(&self, val: $v, order: Ordering) {
            let ctx = point(
                concat!(stringify!($name), "::store"),
                stringify!($name),
                self.addr(),
            );
            match ctx {
                Some(Point { ctx, told: true }) => {
                    let old = self.inner().load(Ordering::Relaxed);
                    self.inner().store(val, order);
                    stored(
                        ctx,
                        self.addr(),
                        Self::to_bits(old),
                        Self::to_bits(val),
                        order,
                    );
                }
                _ => self.inner().store(val, order),
            }
        }

        /// Stores a value into the atomic, returning the previous value.
        #[track_caller]
        #[inline]
        pub fn swap(&self, val: $v, order: Ordering) -> $v {
            let ctx = point(
                concat!(stringify!($name), "::swap"),
                stringify!($name),
                self.addr(),
            );
            let old = self.inner().swap(val, order);
            self.rmw_done(ctx, old, Ok(val), order);
            old
        }

        /// Tells the memory model about a read-modify-write that read `old` (the newest
        /// store) and wrote `new` (`Err`: failed with the given ordering, a load).
        #[track_caller]
        #[inline]
        fn rmw_done(
            &self,
            ctx: Option<Point>,
            old: $v,
            new: Result<$v, Ordering>,
            order: Ordering,
        ) {
            if let Some(Point { ctx, told: true }) = ctx {
                match new {
                    Ok(new) => rmw_told(
                        ctx,
                        self.addr(),
                        Self::to_bits(old),
                        Some(Self::to_bits(new)),
                        order,
                    ),
                    Err(failure) => rmw_told(ctx, self.addr(), Self::to_bits(old), None, failure),
                }
            }
        }

        /// A compare-exchange's result, told to the memory model.
        #[track_caller]
        #[inline]
        fn cas_done(
            &self,
            ctx: Option<Point>,
            r: Result<$v, $v>,
            new: $v,
            success: Ordering,
            failure: Ordering,
        ) -> Result<$v, $v> {
            match r {
                Ok(old) => self.rmw_done(ctx, old, Ok(new), success),
                Err(old) => self.rmw_done(ctx, old, Err(failure), failure),
            }
            r
        }

        /// Stores `new` if the current value is `current`; returns the previous value.
        #[deprecated(
            since = "1.50.0",
            note = "Use `compare_exchange` or `compare_exchange_weak` instead"
        )]
        #[track_caller]
        #[inline]
        pub fn compare_and_swap(&self, current: $v, new: $v, order: Ordering) -> $v {
            let ctx = point(
                concat!(stringify!($name), "::compare_and_swap"),
                stringify!($name),
                self.addr(),
            );
            let failure = strongest_failure_ordering(order);
            let r = self.inner().compare_exchange(current, new, order, failure);
            match self.cas_done(ctx, r, new, order, failure) {
                Ok(x) | Err(x) => x,
            }
        }

        /// Stores `new` if the current value is `current`.
        #[track_caller]
        #[inline]
        pub fn compare_exchange(
            &self,
            current: $v,
            new: $v,
            success: Ordering,
            failure: Ordering,
        ) -> Result<$v, $v> {
            let ctx = point(
                concat!(stringify!($name), "::compare_exchange"),
                stringify!($name),
                self.addr(),
            );
            let r = self
                .inner()
                .compare_exchange(current, new, success, failure);
            self.cas_done(ctx, r, new, success, failure)
        }

        /// Stores `new` if the current value is `current`, but may fail spuriously even
        /// when they are equal: under pulse whether it does is a scheduler choice.
        #[track_caller]
        #[inline]
        pub fn compare_exchange_weak(
            &self,
            current: $v,
            new: $v,
            success: Ordering,
            failure: Ordering,
        ) -> Result<$v, $v> {
            match point(
                concat!(stringify!($name), "::compare_exchange_weak"),
                stringify!($name),
                self.addr(),
            ) {
                Some(point) => {
                    // The execution owns the OS thread, so this load and the exchange below
                    // are one indivisible step. Loading with `failure` also rejects the
                    // orderings std rejects for it.
                    if self.inner().load(failure) == current
                        && weak_cas_fails(point.ctx, self.addr(), Self::to_bits(current), failure)
                    {
                        return Err(current);
                    }
                    let r = self
                        .inner()
                        .compare_exchange(current, new, success, failure);
                    self.cas_done(Some(point), r, new, success, failure)
                }
                None => self
                    .inner()
                    .compare_exchange_weak(current, new, success, failure),
            }
        }
    };
}

/// The closure-driven updates, loops of `load` and `compare_exchange_weak`.
macro_rules! update_methods {
    ($v:ty) => {
        /// Fetches the value and applies `f` to it until the update succeeds or `f`
        /// returns `None` (a loop of loads and weak exchanges, so retries are visible).
        #[track_caller]
        #[inline]
        pub fn fetch_update<F>(
            &self,
            set_order: Ordering,
            fetch_order: Ordering,
            f: F,
        ) -> Result<$v, $v>
        where
            F: FnMut($v) -> Option<$v>,
        {
            self.try_update(set_order, fetch_order, f)
        }

        /// Fetches the value and applies `f` to it until the update succeeds or `f`
        /// returns `None`; `Ok(previous)` or `Err(previous)`.
        #[track_caller]
        #[inline]
        pub fn try_update(
            &self,
            set_order: Ordering,
            fetch_order: Ordering,
            mut f: impl FnMut($v) -> Option<$v>,
        ) -> Result<$v, $v> {
            let mut prev = self.load(fetch_order);
            while let Some(next) = f(prev) {
                match self.compare_exchange_weak(prev, next, set_order, fetch_order) {
                    x @ Ok(_) => return x,
                    Err(next_prev) => prev = next_prev,
                }
            }
            Err(prev)
        }

        /// Fetches the value and applies `f` to it until the update succeeds; returns the
        /// previous value.
        #[track_caller]
        #[inline]
        pub fn update(
            &self,
            set_order: Ordering,
            fetch_order: Ordering,
            mut f: impl FnMut($v) -> $v,
        ) -> $v {
            let mut prev = self.load(fetch_order);
            loop {
                match self.compare_exchange_weak(prev, f(prev), set_order, fetch_order) {
                    Ok(x) => break x,
                    Err(next_prev) => prev = next_prev,
                }
            }
        }
    };
}

/// A read-modify-write std offers directly: a scheduling point, then std's operation.
macro_rules! rmw {
    ($(#[$doc:meta])* $name:ident, $v:ty, $method:ident) => {
        $(#[$doc])*
        #[track_caller]
        #[inline]
        pub fn $method(&self, val: $v, order: Ordering) -> $v {
            let ctx = point(concat!(stringify!($name), "::", stringify!($method)), stringify!($name), self.addr());
            let old = self.inner().$method(val, order);
            if ctx.is_some_and(|p| p.told) {
                // What it wrote, for the memory model and a traced row (one execution runs
                // on one OS thread: nothing wrote in between).
                let new = self.inner().load(Ordering::Relaxed);
                self.rmw_done(ctx, old, Ok(new), order);
            }
            old
        }
    };
}

macro_rules! atomic_int {
    ($($name:ident $int:ty;)*) => {$(
        #[doc = concat!("`std::sync::atomic::", stringify!($name), "`, with a scheduling point before every operation under pulse.")]
        #[repr(transparent)]
        pub struct $name(sa::$name);

        impl $name {
            /// Creates a new atomic integer.
            #[inline]
            #[must_use]
            pub const fn new(v: $int) -> Self {
                $name(sa::$name::new(v))
            }

            /// Creates a new reference to an atomic integer from a pointer.
            ///
            /// # Safety
            /// As `std`'s: `ptr` must be aligned to `align_of::<Self>()`, valid for reads
            /// and writes for `'a`, and only accessed atomically (or not concurrently)
            /// meanwhile.
            #[inline]
            pub const unsafe fn from_ptr<'a>(ptr: *mut $int) -> &'a $name {
                // SAFETY: the caller's contract; `Self` is layout-identical to the integer's
                // std atomic, which is layout-identical to the integer when aligned.
                unsafe { &*ptr.cast::<$name>() }
            }

            #[inline]
            fn to_bits(v: $int) -> u64 {
                v as u64
            }

            #[inline]
            fn from_bits(b: u64) -> $int {
                b as $int
            }

            common_methods!($name, $int, sa::$name);
            op_methods!($name, $int, sa::$name);
            update_methods!($int);
            rmw!(/** Adds to the current value, returning the previous value (wrapping). */ $name, $int, fetch_add);
            rmw!(/** Subtracts from the current value, returning the previous value (wrapping). */ $name, $int, fetch_sub);
            rmw!(/** Bitwise "and" with the current value, returning the previous value. */ $name, $int, fetch_and);
            rmw!(/** Bitwise "nand" with the current value, returning the previous value. */ $name, $int, fetch_nand);
            rmw!(/** Bitwise "or" with the current value, returning the previous value. */ $name, $int, fetch_or);
            rmw!(/** Bitwise "xor" with the current value, returning the previous value. */ $name, $int, fetch_xor);
            rmw!(/** Maximum with the current value, returning the previous value. */ $name, $int, fetch_max);
            rmw!(/** Minimum with the current value, returning the previous value. */ $name, $int, fetch_min);
        }

        impl Drop for $name {
            #[inline]
            fn drop(&mut self) {
                forget(self.addr());
            }
        }

        impl Default for $name {
            #[inline]
            fn default() -> Self {
                Self::new(Default::default())
            }
        }

        impl From<$int> for $name {
            #[inline]
            fn from(v: $int) -> Self {
                Self::new(v)
            }
        }

        impl fmt::Debug for $name {
            /// The value, read with a relaxed load as std does; not a scheduling point.
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(self.inner(), f)
            }
        }
    )*};
}

atomic_int! {
    AtomicI8 i8;
    AtomicU8 u8;
    AtomicI16 i16;
    AtomicU16 u16;
    AtomicI32 i32;
    AtomicU32 u32;
    AtomicI64 i64;
    AtomicU64 u64;
    AtomicIsize isize;
    AtomicUsize usize;
}

/// `std::sync::atomic::AtomicBool`, with a scheduling point before every operation under
/// pulse.
#[repr(transparent)]
pub struct AtomicBool(sa::AtomicBool);

impl AtomicBool {
    /// Creates a new `AtomicBool`.
    #[inline]
    #[must_use]
    pub const fn new(v: bool) -> AtomicBool {
        AtomicBool(sa::AtomicBool::new(v))
    }

    /// Creates a new `AtomicBool` from a pointer.
    ///
    /// # Safety
    /// As `std`'s: `ptr` must be valid for reads and writes for `'a`, hold a valid `bool`
    /// and only be accessed atomically (or not concurrently) meanwhile.
    #[inline]
    pub const unsafe fn from_ptr<'a>(ptr: *mut bool) -> &'a AtomicBool {
        // SAFETY: the caller's contract; `AtomicBool` is layout-identical to `bool`.
        unsafe { &*ptr.cast::<AtomicBool>() }
    }

    #[inline]
    fn to_bits(v: bool) -> u64 {
        v as u64
    }

    #[inline]
    fn from_bits(b: u64) -> bool {
        b != 0
    }

    common_methods!(AtomicBool, bool, sa::AtomicBool);
    op_methods!(AtomicBool, bool, sa::AtomicBool);
    update_methods!(bool);
    rmw!(/** Logical "and" with the current value, returning the previous value. */ AtomicBool, bool, fetch_and);
    rmw!(/** Logical "nand" with the current value, returning the previous value. */ AtomicBool, bool, fetch_nand);
    rmw!(/** Logical "or" with the current value, returning the previous value. */ AtomicBool, bool, fetch_or);
    rmw!(/** Logical "xor" with the current value, returning the previous value. */ AtomicBool, bool, fetch_xor);

    /// Logical "not" of the current value, returning the previous value.
    #[track_caller]
    #[inline]
    pub fn fetch_not(&self, order: Ordering) -> bool {
        let ctx = point("AtomicBool::fetch_not", "AtomicBool", self.addr());
        let old = self.inner().fetch_xor(true, order);
        self.rmw_done(ctx, old, Ok(!old), order);
        old
    }
}

impl Drop for AtomicBool {
    #[inline]
    fn drop(&mut self) {
        forget(self.addr());
    }
}

impl Default for AtomicBool {
    #[inline]
    fn default() -> Self {
        Self::new(false)
    }
}

impl From<bool> for AtomicBool {
    #[inline]
    fn from(b: bool) -> Self {
        Self::new(b)
    }
}

impl fmt::Debug for AtomicBool {
    /// The value, read with a relaxed load as std does; not a scheduling point.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.inner(), f)
    }
}

/// `std::sync::atomic::AtomicPtr`, with a scheduling point before every operation under
/// pulse.
///
/// Holds the pointer untyped so that its `Drop` is not generic: a `Drop for AtomicPtr<T>`
/// would make dropck require `T`'s lifetimes to outlive the atomic, which std's does not
/// (an `AtomicPtr<Node<'a>>` next to what `'a` borrows would stop compiling). The
/// `PhantomData` gives it exactly std's variance and auto traits in `T`.
#[repr(transparent)]
pub struct AtomicPtr<T>(UntypedPtr, PhantomData<sa::AtomicPtr<T>>);

/// An `AtomicPtr`'s storage, with its `Drop` and its operations: not generic, so they are
/// compiled once, optimised, in pulse-shim-std rather than per `T` in the user's crate.
#[repr(transparent)]
struct UntypedPtr(sa::AtomicPtr<()>);

impl Drop for UntypedPtr {
    #[inline]
    fn drop(&mut self) {
        forget(self.addr());
    }
}

impl UntypedPtr {
    #[inline]
    const fn inner(&self) -> &sa::AtomicPtr<()> {
        &self.0
    }

    #[inline]
    fn addr(&self) -> usize {
        self as *const Self as usize
    }

    #[inline]
    fn to_bits(v: *mut ()) -> u64 {
        v as usize as u64
    }

    /// An older store's pointer, by address (stores keep no provenance).
    #[inline]
    fn from_bits(b: u64) -> *mut () {
        b as usize as *mut ()
    }

    op_methods!(AtomicPtr, *mut (), sa::AtomicPtr<()>);

    /// One read-modify-write of the address: a scheduling point, then a strong-exchange
    /// loop (std gained these operations after pulse's minimum Rust).
    #[track_caller]
    fn rmw_addr(&self, op: &'static str, order: Ordering, f: &dyn Fn(usize) -> usize) -> *mut () {
        let ctx = point(op, "AtomicPtr", self.addr());
        let failure = strongest_failure_ordering(order);
        let mut prev = self.inner().load(failure);
        loop {
            let new = map_addr(prev, f);
            match self
                .inner()
                .compare_exchange_weak(prev, new, order, failure)
            {
                Ok(p) => {
                    self.rmw_done(ctx, p, Ok(new), order);
                    return p;
                }
                Err(p) => prev = p,
            }
        }
    }
}

/// Moves a pointer to address `f(addr)`, keeping its provenance (`with_addr` without
/// needing a newer std).
fn map_addr<T>(p: *mut T, f: impl FnOnce(usize) -> usize) -> *mut T {
    let addr = p as usize;
    p.wrapping_byte_add(f(addr).wrapping_sub(addr))
}

impl<T> AtomicPtr<T> {
    /// Creates a new `AtomicPtr`.
    #[inline]
    #[must_use]
    pub const fn new(p: *mut T) -> AtomicPtr<T> {
        AtomicPtr(UntypedPtr(sa::AtomicPtr::new(p.cast())), PhantomData)
    }

    /// Creates a new `AtomicPtr` from a pointer.
    ///
    /// # Safety
    /// As `std`'s: `ptr` must be aligned to `align_of::<AtomicPtr<T>>()`, valid for reads
    /// and writes for `'a`, and only accessed atomically (or not concurrently) meanwhile.
    #[inline]
    pub const unsafe fn from_ptr<'a>(ptr: *mut *mut T) -> &'a AtomicPtr<T> {
        // SAFETY: the caller's contract; `AtomicPtr<T>` is layout-identical to `*mut T`
        // when aligned.
        unsafe { &*ptr.cast::<AtomicPtr<T>>() }
    }

    common_methods!(AtomicPtr, *mut T, sa::AtomicPtr<T>);

    /// Loads a value from the pointer.
    #[track_caller]
    #[inline]
    pub fn load(&self, order: Ordering) -> *mut T {
        self.0.load(order).cast()
    }

    /// Stores a value into the pointer.
    #[track_caller]
    #[inline]
    pub fn store(&self, ptr: *mut T, order: Ordering) {
        self.0.store(ptr.cast(), order);
    }

    /// Stores a value into the pointer, returning the previous value.
    #[track_caller]
    #[inline]
    pub fn swap(&self, ptr: *mut T, order: Ordering) -> *mut T {
        self.0.swap(ptr.cast(), order).cast()
    }

    /// Stores `new` if the current value is `current`; returns the previous value.
    #[deprecated(
        since = "1.50.0",
        note = "Use `compare_exchange` or `compare_exchange_weak` instead"
    )]
    #[track_caller]
    #[inline]
    pub fn compare_and_swap(&self, current: *mut T, new: *mut T, order: Ordering) -> *mut T {
        #[allow(deprecated)]
        self.0
            .compare_and_swap(current.cast(), new.cast(), order)
            .cast()
    }

    /// Stores `new` if the current value is `current`.
    #[track_caller]
    #[inline]
    pub fn compare_exchange(
        &self,
        current: *mut T,
        new: *mut T,
        success: Ordering,
        failure: Ordering,
    ) -> Result<*mut T, *mut T> {
        typed(
            self.0
                .compare_exchange(current.cast(), new.cast(), success, failure),
        )
    }

    /// Stores `new` if the current value is `current`, but may fail spuriously even when
    /// they are equal: under pulse whether it does is a scheduler choice.
    #[track_caller]
    #[inline]
    pub fn compare_exchange_weak(
        &self,
        current: *mut T,
        new: *mut T,
        success: Ordering,
        failure: Ordering,
    ) -> Result<*mut T, *mut T> {
        typed(
            self.0
                .compare_exchange_weak(current.cast(), new.cast(), success, failure),
        )
    }

    update_methods!(*mut T);

    /// Offsets the pointer by `val` elements of `T` (wrapping), returning the previous
    /// pointer.
    #[track_caller]
    #[inline]
    pub fn fetch_ptr_add(&self, val: usize, order: Ordering) -> *mut T {
        let bytes = val.wrapping_mul(std::mem::size_of::<T>());
        let f = |a: usize| a.wrapping_add(bytes);
        self.0
            .rmw_addr("AtomicPtr::fetch_ptr_add", order, &f)
            .cast()
    }

    /// Offsets the pointer back by `val` elements of `T` (wrapping), returning the
    /// previous pointer.
    #[track_caller]
    #[inline]
    pub fn fetch_ptr_sub(&self, val: usize, order: Ordering) -> *mut T {
        let bytes = val.wrapping_mul(std::mem::size_of::<T>());
        let f = |a: usize| a.wrapping_sub(bytes);
        self.0
            .rmw_addr("AtomicPtr::fetch_ptr_sub", order, &f)
            .cast()
    }

    /// Offsets the pointer by `val` bytes (wrapping), returning the previous pointer.
    #[track_caller]
    #[inline]
    pub fn fetch_byte_add(&self, val: usize, order: Ordering) -> *mut T {
        let f = |a: usize| a.wrapping_add(val);
        self.0
            .rmw_addr("AtomicPtr::fetch_byte_add", order, &f)
            .cast()
    }

    /// Offsets the pointer back by `val` bytes (wrapping), returning the previous pointer.
    #[track_caller]
    #[inline]
    pub fn fetch_byte_sub(&self, val: usize, order: Ordering) -> *mut T {
        let f = |a: usize| a.wrapping_sub(val);
        self.0
            .rmw_addr("AtomicPtr::fetch_byte_sub", order, &f)
            .cast()
    }

    /// Bitwise "or" of the address with `val`, keeping provenance; returns the previous
    /// pointer.
    #[track_caller]
    #[inline]
    pub fn fetch_or(&self, val: usize, order: Ordering) -> *mut T {
        let f = |a: usize| a | val;
        self.0.rmw_addr("AtomicPtr::fetch_or", order, &f).cast()
    }

    /// Bitwise "and" of the address with `val`, keeping provenance; returns the previous
    /// pointer.
    #[track_caller]
    #[inline]
    pub fn fetch_and(&self, val: usize, order: Ordering) -> *mut T {
        let f = |a: usize| a & val;
        self.0.rmw_addr("AtomicPtr::fetch_and", order, &f).cast()
    }

    /// Bitwise "xor" of the address with `val`, keeping provenance; returns the previous
    /// pointer.
    #[track_caller]
    #[inline]
    pub fn fetch_xor(&self, val: usize, order: Ordering) -> *mut T {
        let f = |a: usize| a ^ val;
        self.0.rmw_addr("AtomicPtr::fetch_xor", order, &f).cast()
    }
}

/// An untyped exchange's result, typed.
#[inline]
fn typed<T>(r: Result<*mut (), *mut ()>) -> Result<*mut T, *mut T> {
    r.map(<*mut ()>::cast).map_err(<*mut ()>::cast)
}

impl<T> Default for AtomicPtr<T> {
    fn default() -> AtomicPtr<T> {
        AtomicPtr::new(std::ptr::null_mut())
    }
}

impl<T> From<*mut T> for AtomicPtr<T> {
    #[inline]
    fn from(p: *mut T) -> Self {
        Self::new(p)
    }
}

impl<T> fmt::Debug for AtomicPtr<T> {
    /// The pointer, read with a relaxed load as std does; not a scheduling point.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.inner(), f)
    }
}

impl<T> fmt::Pointer for AtomicPtr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Pointer::fmt(self.inner(), f)
    }
}

/// An `AtomicBool` initialized to `false`.
#[deprecated(since = "1.34.0", note = "the `new` function is now preferred")]
#[allow(clippy::declare_interior_mutable_const)] // std's API: a `const`, meant to be copied
pub const ATOMIC_BOOL_INIT: AtomicBool = AtomicBool::new(false);

/// An `AtomicIsize` initialized to `0`.
#[deprecated(since = "1.34.0", note = "the `new` function is now preferred")]
#[allow(clippy::declare_interior_mutable_const)] // std's API: a `const`, meant to be copied
pub const ATOMIC_ISIZE_INIT: AtomicIsize = AtomicIsize::new(0);

/// An `AtomicUsize` initialized to `0`.
#[deprecated(since = "1.34.0", note = "the `new` function is now preferred")]
#[allow(clippy::declare_interior_mutable_const)] // std's API: a `const`, meant to be copied
pub const ATOMIC_USIZE_INIT: AtomicUsize = AtomicUsize::new(0);

/// Signals a spin loop: under pulse a yield, so the spinning thread lets others run.
#[deprecated(since = "1.51.0", note = "use hint::spin_loop instead")]
#[track_caller]
#[inline]
pub fn spin_loop_hint() {
    crate::hint::spin_loop()
}
