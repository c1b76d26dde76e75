//! `std::hint`. Only `spin_loop` concerns scheduling: a spin loop waits for another thread,
//! and under pulse that thread runs only if the spinner yields, so inside an execution
//! `spin_loop` is a yield (a scheduling point that tells the strategy this thread is
//! waiting). Without it a spinning thread would spin to the step limit. Nothing else here
//! is nondeterministic.
//!
//! `cold_path` (std 1.95) is defined here with std's signature so the shim builds on
//! pulse's minimum Rust (1.92); the rest are std's own.

pub use std::hint::{assert_unchecked, black_box, select_unpredictable, unreachable_unchecked};

/// Signals a busy-wait loop. Under pulse: `thread::yield_now`; outside, std's.
#[track_caller]
#[inline]
pub fn spin_loop() {
    match crate::rt::current() {
        Some(ctx) => ctx.yield_now(),
        None => std::hint::spin_loop(),
    }
}

/// Hints that the path calling it is unlikely to be taken. Here a no-op: it changes
/// nothing observable, only code layout.
#[inline(always)]
pub const fn cold_path() {}
