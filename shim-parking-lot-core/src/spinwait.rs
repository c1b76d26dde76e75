//! `SpinWait`: the bounded spin before parking. A spin waits for another thread, and under
//! pulse that thread runs only if the spinner gives way, so inside an execution each spin is
//! one `thread::yield_now` (a scheduling point that tells the strategy this thread waits;
//! PCT lowers its priority) and the OS thread never spins. Outside one it spins as
//! parking_lot_core does: 2, 4, 8 `spin_loop` hints, then OS yields, 10 spins in all.

use std::hint::spin_loop;

/// A counter used to perform exponential backoff in spin loops.
#[derive(Default)]
pub struct SpinWait {
    counter: u32,
}

/// How many times `spin` says yes before the caller should park.
const SPIN_LIMIT: u32 = 10;
/// Spins up to this count are CPU hints; later ones yield the OS thread.
const RELAX_LIMIT: u32 = 3;

impl SpinWait {
    /// Creates a new `SpinWait`.
    #[inline]
    pub const fn new() -> Self {
        Self { counter: 0 }
    }

    /// Resets a `SpinWait` to its initial state.
    #[inline]
    pub const fn reset(&mut self) {
        self.counter = 0;
    }

    /// Spins until the sleep threshold has been reached.
    ///
    /// This function returns whether the sleep threshold has been reached, at which point
    /// further spinning has diminishing returns and the thread should be parked instead.
    #[inline]
    #[track_caller]
    pub fn spin(&mut self) -> bool {
        if self.counter >= SPIN_LIMIT {
            return false;
        }
        self.counter += 1;
        match pulse_runtime::current() {
            Some(ctx) => ctx.yield_now(),
            None if self.counter <= RELAX_LIMIT => relax(1 << self.counter),
            None => std::thread::yield_now(),
        }
        true
    }

    /// Spins without yielding the thread to the OS (inside a pulse execution it still
    /// yields to pulse's scheduler: the OS thread is shared by every virtual thread).
    #[inline]
    #[track_caller]
    pub fn spin_no_yield(&mut self) {
        self.counter = (self.counter + 1).min(SPIN_LIMIT);
        match pulse_runtime::current() {
            Some(ctx) => ctx.yield_now(),
            None => relax(1 << self.counter),
        }
    }
}

#[inline]
fn relax(iterations: u32) {
    for _ in 0..iterations {
        spin_loop()
    }
}
