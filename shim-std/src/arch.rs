//! The CPU's time-stamp counter as instrumented code reads it: the instrumenter rewrites
//! `core::arch::x86_64::_rdtsc` and `__rdtscp` (and `x86`'s, and through `std::`) to this
//! module. A TSC clock (quanta's, so governor's and moka's) otherwise measures real time
//! while everything else under pulse runs on the virtual clock: governor's rate-limited
//! sink slept 100 ms of virtual time, saw microseconds pass on the counter, and slept
//! again, until 1,280 s of virtual time had gone by for one send.
//!
//! Under pulse the counter ticks once per nanosecond of CLOCK_MONOTONIC, inside and outside
//! an execution, so a calibration against the OS clock (quanta's, once per process, wherever
//! it runs) finds one tick per ns. Inside an execution a read returns the virtual clock as
//! it stands, then is a scheduling point: a loop polling the counter lets time pass, and a
//! read right after a `clock_gettime` sees the same instant, as on a fast CPU (so quanta's
//! calibration settles in its minimum 500 rounds, not at its 200 ms cap).

/// `_rdtsc`, read from pulse's clock (see the module doc).
///
/// # Safety
/// None needed; `unsafe` as the intrinsic is, so calls to it compile unchanged.
#[track_caller]
pub unsafe fn _rdtsc() -> u64 {
    read("_rdtsc")
}

/// `__rdtscp`, read from pulse's clock; `aux` (the processor's id) is set to 0: every
/// virtual thread runs on one CPU.
///
/// # Safety
/// `aux` is valid for a write, as the intrinsic requires.
#[track_caller]
pub unsafe fn __rdtscp(aux: *mut u32) -> u64 {
    // SAFETY: the caller's.
    unsafe { aux.write(0) };
    read("__rdtscp")
}

#[track_caller]
fn read(op: &'static str) -> u64 {
    match crate::rt::current() {
        Some(ctx) => {
            let ns = crate::time::raw_monotonic_ns(Some(ctx.now()));
            ctx.switch(op, None);
            ns
        }
        None => crate::time::raw_monotonic_ns(None),
    }
}

/// The counter under `core::arch::x86_64`'s names.
pub mod x86_64 {
    pub use super::{__rdtscp, _rdtsc};
}

/// The counter under `core::arch::x86`'s names.
pub mod x86 {
    pub use super::{__rdtscp, _rdtsc};
}
