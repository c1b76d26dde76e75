//! `std::time`, reading pulse's virtual clock inside an execution.
//!
//! Reading the time is a side effect in PULSE's sense: what a thread sees depends on when
//! it runs. So inside an execution `Instant::now` and `SystemTime::now` are scheduling
//! points, and both read the execution's virtual clock, which advances 1µs per scheduling
//! point and jumps forward when every thread waits on a timer. Sleeps and timeouts
//! therefore cost no real time, and what a test observes depends only on its schedule.
//! `SystemTime` starts from a fixed virtual date, so traces are identical across runs;
//! `Instant` starts from a process-wide base instant (instants are opaque: only differences
//! between them mean anything). Outside an execution both are std's.

use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::sync::OnceLock;

use crate::rt;

pub use std::time::{Duration, TryFromFloatSecsError};

/// What `SystemTime::now` reads at the start of every execution: 2024-01-01T00:00:00Z.
const VIRTUAL_EPOCH: Duration = Duration::from_secs(1_704_067_200);

/// The instant every execution's virtual clock counts from.
fn base_instant() -> std::time::Instant {
    static BASE: OnceLock<std::time::Instant> = OnceLock::new();
    *BASE.get_or_init(std::time::Instant::now)
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
            Some(ctx) => {
                ctx.switch("Instant::now", None);
                Instant(base_instant() + ctx.now())
            }
            None => Instant(std::time::Instant::now()),
        }
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

/// A measurement of the system clock: std's, or a fixed virtual date plus pulse's virtual
/// clock inside an execution.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SystemTime(std::time::SystemTime);

/// 1970-01-01 00:00:00 UTC.
pub const UNIX_EPOCH: SystemTime = SystemTime(std::time::UNIX_EPOCH);

impl SystemTime {
    /// 1970-01-01 00:00:00 UTC.
    pub const UNIX_EPOCH: SystemTime = UNIX_EPOCH;

    /// The current system time. Inside an execution: a scheduling point, then
    /// 2024-01-01T00:00:00Z plus the virtual clock.
    #[must_use]
    #[track_caller]
    pub fn now() -> SystemTime {
        match rt::current() {
            Some(ctx) => {
                ctx.switch("SystemTime::now", None);
                SystemTime(std::time::UNIX_EPOCH + VIRTUAL_EPOCH + ctx.now())
            }
            None => SystemTime(std::time::SystemTime::now()),
        }
    }

    /// The time elapsed from `earlier` to this time; `Err` (holding how much later
    /// `earlier` is) if `earlier` is later.
    pub fn duration_since(&self, earlier: SystemTime) -> Result<Duration, SystemTimeError> {
        self.0
            .duration_since(earlier.0)
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

impl fmt::Display for SystemTimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "second time provided was later than self")
    }
}
