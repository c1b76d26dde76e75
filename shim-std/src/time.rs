//! `std::time`, reading pulse's virtual clock inside an execution.
//!
//! Reading the time is a side effect in PULSE's sense: what a thread sees depends on when
//! it runs. So inside an execution `Instant::now` and `SystemTime::now` are scheduling
//! points, and both read the execution's virtual clock, which advances 1µs per scheduling
//! point and jumps forward when every thread waits on a timer. Sleeps and timeouts
//! therefore cost no real time, and what a test observes depends only on its schedule.
//! `SystemTime` starts from the real date the run started (so every execution and replay of
//! a search reads the same dates, and real files' times are in the past, as outside pulse);
//! `Instant` starts from a process-wide base instant (instants are opaque: only differences
//! between them mean anything). Outside an execution both are std's.
//!
//! std's own `SystemTime` still reaches instrumented code from APIs pulse does not rewrite
//! (`fs::Metadata::modified`, `accessed`, `created`): pulse's converts to and from it
//! (`From`), compares with it both ways (`==`, `<`), and `duration_since` takes either.

use std::cell::Cell;
use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::sync::OnceLock;

use crate::rt;

pub use std::time::{Duration, TryFromFloatSecsError};

/// The instant every execution's virtual clock counts from.
fn base_instant() -> std::time::Instant {
    static BASE: OnceLock<std::time::Instant> = OnceLock::new();
    *BASE.get_or_init(std::time::Instant::now)
}

/// CLOCK_MONOTONIC as instrumented code reads it without std (`libc::clock_gettime`, the
/// CPU's time-stamp counter), in ns (elsewhere than Unix, from an arbitrary epoch): `clock`,
/// the virtual clock, in the epoch of `Instant`'s inside an execution (so `Instant` and raw
/// readings agree); the real clock outside one.
pub(crate) fn raw_monotonic_ns(clock: Option<Duration>) -> u64 {
    // An `Instant` is opaque: one pair of readings taken together converts.
    static PAIR: OnceLock<(u64, std::time::Instant)> = OnceLock::new();
    let Some(clock) = clock else {
        return real_monotonic_ns();
    };
    let &(ns, at) = PAIR.get_or_init(|| (real_monotonic_ns(), std::time::Instant::now()));
    let base = base_instant();
    let base_ns = match base.checked_duration_since(at) {
        Some(after) => ns.saturating_add(after.as_nanos() as u64),
        None => ns.saturating_sub((at - base).as_nanos() as u64),
    };
    base_ns.saturating_add(clock.as_nanos() as u64)
}

/// Elsewhere than Unix, no OS clock is rewritten: any fixed epoch does.
#[cfg(not(unix))]
fn real_monotonic_ns() -> u64 {
    static START: OnceLock<std::time::Instant> = OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
}

#[cfg(unix)]
fn real_monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// A measurement of a monotonically nondecreasing clock: std's, or pulse's virtual clock
/// inside an execution.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(std::time::Instant);

impl Instant {
    /// The current instant. Inside an execution: a scheduling point, then the virtual
    /// clock.
    #[must_use]
    #[track_caller]
    pub fn now() -> Instant {
        match rt::current() {
            Some(ctx) => Instant::at_virtual(ctx.read_clock("Instant::now")),
            None => Instant(std::time::Instant::now()),
        }
    }

    /// The instant at virtual time `clock` (an execution's clock reading), without a
    /// scheduling point.
    pub(crate) fn at_virtual(clock: Duration) -> Instant {
        Instant(base_instant() + clock)
    }

    /// The time elapsed from `earlier` to this instant, or zero if `earlier` is later.
    #[must_use]
    pub fn duration_since(&self, earlier: Instant) -> Duration {
        self.0.saturating_duration_since(earlier.0)
    }

    /// The time elapsed from `earlier` to this instant, or `None` if `earlier` is later.
    #[must_use]
    pub fn checked_duration_since(&self, earlier: Instant) -> Option<Duration> {
        self.0.checked_duration_since(earlier.0)
    }

    /// The time elapsed from `earlier` to this instant, or zero if `earlier` is later.
    #[must_use]
    pub fn saturating_duration_since(&self, earlier: Instant) -> Duration {
        self.0.saturating_duration_since(earlier.0)
    }

    /// The time elapsed since this instant (reads the clock: a scheduling point under
    /// pulse).
    #[must_use]
    #[track_caller]
    pub fn elapsed(&self) -> Duration {
        Instant::now() - *self
    }

    /// `self + duration`, or `None` on overflow.
    pub fn checked_add(&self, duration: Duration) -> Option<Instant> {
        self.0.checked_add(duration).map(Instant)
    }

    /// `self - duration`, or `None` on overflow.
    pub fn checked_sub(&self, duration: Duration) -> Option<Instant> {
        self.0.checked_sub(duration).map(Instant)
    }

    /// For pulse's other shims (parking_lot_core): the std instant this one stands for, on
    /// the real clock outside an execution and on the virtual one inside.
    #[doc(hidden)]
    pub fn __pulse_to_std(self) -> std::time::Instant {
        self.0
    }

    /// For pulse's other shims: `now` without the scheduling point (they have their own).
    #[doc(hidden)]
    pub fn __pulse_now_unscheduled() -> Instant {
        match rt::current() {
            Some(ctx) => Instant(base_instant() + ctx.now()),
            None => Instant(std::time::Instant::now()),
        }
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;

    /// # Panics
    /// On overflow, as std's.
    fn add(self, other: Duration) -> Instant {
        self.checked_add(other)
            .expect("overflow when adding duration to instant")
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, other: Duration) {
        *self = *self + other;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;

    fn sub(self, other: Duration) -> Instant {
        self.checked_sub(other)
            .expect("overflow when subtracting duration from instant")
    }
}

impl SubAssign<Duration> for Instant {
    fn sub_assign(&mut self, other: Duration) {
        *self = *self - other;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;

    /// Zero if `other` is later, as std's.
    fn sub(self, other: Instant) -> Duration {
        self.duration_since(other)
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A measurement of the system clock: std's, or inside an execution the date its run started
/// (real) plus pulse's virtual clock.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SystemTime(std::time::SystemTime);

/// 1970-01-01 00:00:00 UTC.
pub const UNIX_EPOCH: SystemTime = SystemTime(std::time::UNIX_EPOCH);

impl SystemTime {
    /// 1970-01-01 00:00:00 UTC.
    pub const UNIX_EPOCH: SystemTime = UNIX_EPOCH;

    /// The current system time. Inside an execution: a scheduling point, then the date its
    /// run started plus the virtual clock (the same in every execution and replay of a
    /// search, in a fresh process running one of them too).
    #[must_use]
    #[track_caller]
    pub fn now() -> SystemTime {
        match rt::current() {
            Some(ctx) => {
                let since_start = ctx.read_clock("SystemTime::now");
                SystemTime(ctx.wall_clock_at(since_start))
            }
            None => SystemTime(std::time::SystemTime::now()),
        }
    }

    /// The time elapsed from `earlier` (pulse's `SystemTime` or std's, e.g. a file's
    /// `modified()`) to this time; `Err` (holding how much later `earlier` is) if `earlier`
    /// is later.
    pub fn duration_since(
        &self,
        earlier: impl Into<SystemTime>,
    ) -> Result<Duration, SystemTimeError> {
        self.0
            .duration_since(earlier.into().0)
            .map_err(|e| SystemTimeError(e.duration()))
    }

    /// The time elapsed since this time (reads the clock: a scheduling point under pulse).
    #[track_caller]
    pub fn elapsed(&self) -> Result<Duration, SystemTimeError> {
        SystemTime::now().duration_since(*self)
    }

    /// `self + duration`, or `None` if it cannot be represented.
    pub fn checked_add(&self, duration: Duration) -> Option<SystemTime> {
        self.0.checked_add(duration).map(SystemTime)
    }

    /// `self - duration`, or `None` if it cannot be represented.
    pub fn checked_sub(&self, duration: Duration) -> Option<SystemTime> {
        self.0.checked_sub(duration).map(SystemTime)
    }
}

impl Add<Duration> for SystemTime {
    type Output = SystemTime;

    fn add(self, dur: Duration) -> SystemTime {
        self.checked_add(dur)
            .expect("overflow when adding duration to instant")
    }
}

impl AddAssign<Duration> for SystemTime {
    fn add_assign(&mut self, other: Duration) {
        *self = *self + other;
    }
}

impl Sub<Duration> for SystemTime {
    type Output = SystemTime;

    fn sub(self, dur: Duration) -> SystemTime {
        self.checked_sub(dur)
            .expect("overflow when subtracting duration from instant")
    }
}

impl SubAssign<Duration> for SystemTime {
    fn sub_assign(&mut self, other: Duration) {
        *self = *self - other;
    }
}

impl fmt::Debug for SystemTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

// std's `SystemTime` next to pulse's. Instrumented code names only pulse's (every
// `std::time::SystemTime` path is rewritten), but APIs pulse does not rewrite still return
// std's: `fs::Metadata::{modified, accessed, created}`, other crates' functions. These let the
// two meet as two values of one type would. The impls on std's type are the exception to
// decision 16 (ARCHITECTURE.md): each names pulse's type, so only code that has both can
// select it.

impl From<std::time::SystemTime> for SystemTime {
    fn from(t: std::time::SystemTime) -> SystemTime {
        SystemTime(t)
    }
}

impl From<SystemTime> for std::time::SystemTime {
    /// For APIs that take std's `SystemTime` (`File::set_modified`, `FileTimes`).
    fn from(t: SystemTime) -> std::time::SystemTime {
        t.0
    }
}

impl PartialEq<std::time::SystemTime> for SystemTime {
    fn eq(&self, other: &std::time::SystemTime) -> bool {
        self.0 == *other
    }
}

impl PartialEq<SystemTime> for std::time::SystemTime {
    fn eq(&self, other: &SystemTime) -> bool {
        *self == other.0
    }
}

impl PartialOrd<std::time::SystemTime> for SystemTime {
    fn partial_cmp(&self, other: &std::time::SystemTime) -> Option<std::cmp::Ordering> {
        self.0.partial_cmp(other)
    }
}

impl PartialOrd<SystemTime> for std::time::SystemTime {
    fn partial_cmp(&self, other: &SystemTime) -> Option<std::cmp::Ordering> {
        self.partial_cmp(&other.0)
    }
}

/// What a `.duration_since(UNIX_EPOCH)` call's receiver is passed through by the
/// instrumenter: std's `duration_since` takes only std's `SystemTime`, and `UNIX_EPOCH`
/// became pulse's, so `metadata.modified()?.duration_since(UNIX_EPOCH)` needs the
/// receiver as pulse's. Pulse's own pass through unchanged (so does a reference to either).
#[doc(hidden)]
pub fn __pulse_system_time(t: impl __PulseAnySystemTime) -> SystemTime {
    t.__pulse_system_time()
}

/// std's `SystemTime` or pulse's, or a reference to one (`__pulse_system_time`).
#[doc(hidden)]
pub trait __PulseAnySystemTime {
    #[doc(hidden)]
    fn __pulse_system_time(&self) -> SystemTime;
}

impl __PulseAnySystemTime for SystemTime {
    fn __pulse_system_time(&self) -> SystemTime {
        *self
    }
}

impl __PulseAnySystemTime for std::time::SystemTime {
    fn __pulse_system_time(&self) -> SystemTime {
        SystemTime(*self)
    }
}

impl<T: __PulseAnySystemTime + ?Sized> __PulseAnySystemTime for &T {
    fn __pulse_system_time(&self) -> SystemTime {
        (**self).__pulse_system_time()
    }
}

impl<T: __PulseAnySystemTime + ?Sized> __PulseAnySystemTime for &mut T {
    fn __pulse_system_time(&self) -> SystemTime {
        (**self).__pulse_system_time()
    }
}

/// What a `.modified()`, `.accessed()` or `.created()` call's value is passed through by
/// the instrumenter, then taken out with `.__pulse_into()`: std's `fs::Metadata` returns
/// std's `SystemTime`, which pulse's no longer is, so `m.modified().unwrap_or_else(|_|
/// SystemTime::now())` (chrono 0.4) or a field of pulse's type set from one would not
/// compile. `io::Result<std::time::SystemTime>` and std's `SystemTime` come out as pulse's;
/// a value of any other type (another type's method of that name) comes out as it went in.
/// The choice is method resolution's, no trait in scope needed: the inherent methods of
/// these two types are found first, any other type's through `Deref` to [`__PulseAsIs`].
#[doc(hidden)]
pub fn __pulse_file_time<T>(value: T) -> __PulseFileTime<T> {
    __PulseFileTime(__PulseAsIs(Cell::new(Some(value))))
}

/// A value of a file-time method on its way out (`__pulse_file_time`).
#[doc(hidden)]
pub struct __PulseFileTime<T>(__PulseAsIs<T>);

/// Any other type's value, returned as it is.
#[doc(hidden)]
pub struct __PulseAsIs<T>(Cell<Option<T>>);

impl<T> __PulseAsIs<T> {
    #[doc(hidden)]
    pub fn __pulse_into(&self) -> T {
        self.0
            .take()
            .expect("taken once, where it was passed through")
    }
}

impl<T> std::ops::Deref for __PulseFileTime<T> {
    type Target = __PulseAsIs<T>;

    fn deref(&self) -> &__PulseAsIs<T> {
        &self.0
    }
}

impl __PulseFileTime<std::io::Result<std::time::SystemTime>> {
    #[doc(hidden)]
    pub fn __pulse_into(self) -> std::io::Result<SystemTime> {
        self.0.__pulse_into().map(SystemTime)
    }
}

impl __PulseFileTime<std::time::SystemTime> {
    #[doc(hidden)]
    pub fn __pulse_into(self) -> SystemTime {
        SystemTime(self.0.__pulse_into())
    }
}

/// What the argument of a `set_modified`, `set_accessed` or `set_created` call is passed
/// through by the instrumenter: std's `fs::FileTimes` and `File::set_modified` take std's
/// `SystemTime`, a crate's own setter pulse's; `Into` gives either (tokio 1.54's
/// `fs/file_times.rs` hands its own times to std's `FileTimes`).
#[doc(hidden)]
#[inline]
pub fn __pulse_time_arg<T: Into<U>, U>(value: T) -> U {
    value.into()
}

/// Returned by `SystemTime::duration_since` and `elapsed` when the second time is later
/// than the first. (std's cannot be constructed outside std, hence this copy.)
#[derive(Clone, Debug)]
pub struct SystemTimeError(Duration);

impl SystemTimeError {
    /// How much later the second time was.
    #[must_use]
    pub fn duration(&self) -> Duration {
        self.0
    }
}

impl std::error::Error for SystemTimeError {}

impl From<std::time::SystemTimeError> for SystemTimeError {
    /// So `?` carries the error of std's `duration_since` (on a file's time) where the
    /// code, instrumented, names pulse's.
    fn from(e: std::time::SystemTimeError) -> SystemTimeError {
        SystemTimeError(e.duration())
    }
}

impl fmt::Display for SystemTimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "second time provided was later than self")
    }
}
