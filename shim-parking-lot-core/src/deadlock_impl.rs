//! `parking_lot_core::deadlock`. parking_lot calls `acquire_resource` after taking an
//! exclusive lock and `release_resource` before releasing it, whatever its features. Inside
//! an execution they tell the runtime the running thread holds the lock (the key object
//! `ParkingLot#n` that `park` on the same address uses), so a deadlock report lists what
//! each blocked thread holds. pulse finds deadlocks itself: `check_deadlock` never has any.

use crate::lot;

/// Acquire a resource identified by key in the deadlock detector. Inside a pulse execution
/// the running thread is recorded as holding it (for deadlock reports); otherwise a no-op.
///
/// # Safety
///
/// Call after the resource is acquired
#[inline]
#[track_caller]
pub unsafe fn acquire_resource(key: usize) {
    if let Some(ctx) = pulse_runtime::current() {
        ctx.acquired(lot::key_object(ctx, key));
    }
}

/// Release a resource identified by key in the deadlock detector. Inside a pulse execution
/// the running thread stops holding it; otherwise a no-op. Unlike parking_lot_core with
/// `deadlock_detection`, releasing a resource that is not held does not panic.
///
/// # Safety
///
/// Call before the resource is released
#[inline]
pub unsafe fn release_resource(key: usize) {
    if let Some(ctx) = pulse_runtime::current() {
        ctx.released(lot::key_object(ctx, key));
    }
}

/// Returns all deadlocks detected *since* the last call: always none here. Inside a pulse
/// execution a deadlock stops the execution and pulse reports it (each thread, what it waits
/// on and what it holds) with a replayable schedule; outside one nothing is tracked.
#[cfg(feature = "deadlock_detection")]
pub fn check_deadlock() -> Vec<Vec<DeadlockedThread>> {
    Vec::new()
}

/// Representation of a deadlocked thread (never produced: see `check_deadlock`). Its
/// backtrace is std's `Backtrace` rather than the `backtrace` crate's.
#[cfg(feature = "deadlock_detection")]
pub struct DeadlockedThread {
    thread_id: std::thread::ThreadId,
    backtrace: std::backtrace::Backtrace,
}

#[cfg(feature = "deadlock_detection")]
impl DeadlockedThread {
    /// The system thread id
    pub fn thread_id(&self) -> std::thread::ThreadId {
        self.thread_id
    }

    /// The thread backtrace
    pub fn backtrace(&self) -> &std::backtrace::Backtrace {
        &self.backtrace
    }
}
