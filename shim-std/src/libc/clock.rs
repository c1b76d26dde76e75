//! `clock_gettime` of a monotonic clock reads the virtual clock inside an execution, in the
//! epoch of `Instant`'s (quanta's OS clock, which it calibrates its TSC clock against), and
//! of a real-time clock the execution's date, as `SystemTime::now` does: a scheduling point,
//! then the read. CPU-time clocks, and every clock outside an execution, are real.

use ::libc::{c_int, clockid_t, time_t, timespec, CLOCK_MONOTONIC, CLOCK_REALTIME};

use crate::rt;

/// The monotonic clocks: CLOCK_MONOTONIC, and Linux's raw, coarse and boot-time ones.
fn monotonic(clk: clockid_t) -> bool {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if matches!(
        clk,
        ::libc::CLOCK_MONOTONIC_RAW | ::libc::CLOCK_MONOTONIC_COARSE | ::libc::CLOCK_BOOTTIME
    ) {
        return true;
    }
    clk == CLOCK_MONOTONIC
}

/// The real-time clocks: CLOCK_REALTIME, and Linux's coarse one.
fn realtime(clk: clockid_t) -> bool {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if clk == ::libc::CLOCK_REALTIME_COARSE {
        return true;
    }
    clk == CLOCK_REALTIME
}

/// `clock_gettime(2)`, on pulse's clock inside an execution (see the module doc).
///
/// # Safety
/// As the system call's: `tp` is valid for a write.
#[track_caller]
pub unsafe fn clock_gettime(clk: clockid_t, tp: *mut timespec) -> c_int {
    let (monotonic, realtime) = (monotonic(clk), realtime(clk));
    let ctx = match rt::current() {
        Some(ctx) if monotonic || realtime => ctx,
        // SAFETY: the caller's.
        _ => return unsafe { ::libc::clock_gettime(clk, tp) },
    };
    let clock = ctx.read_clock("clock_gettime");
    let ns = match monotonic {
        true => crate::time::raw_monotonic_ns(Some(clock)),
        false => (ctx
            .wall_clock_at(clock)
            .duration_since(std::time::UNIX_EPOCH))
        .map_or(0, |d| d.as_nanos() as u64),
    };
    let ts = timespec {
        tv_sec: (ns / 1_000_000_000) as time_t,
        tv_nsec: (ns % 1_000_000_000) as _,
    };
    // SAFETY: the caller's.
    unsafe { tp.write(ts) };
    0
}
