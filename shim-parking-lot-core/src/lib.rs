//! `parking_lot_core` 0.9's public API, signature for signature, with its parking routed to
//! pulse's scheduler, so `parking_lot`, `lock_api` locks and the crates built on them run
//! under pulse with no code change (cargo-pulse patches this crate in for the real one).
//!
//! parking_lot_core keeps one queue of parked threads per key (an address). This crate
//! keeps the same queues with the same contract (`validate` under the queue lock,
//! `before_sleep` after enqueueing, `timed_out` with the key the thread was last queued on
//! and whether it was the last one, FIFO wakeups, requeueing to the tail):
//!
//! - inside a pulse execution (`pulse_runtime::current()` is `Some`) the queues are
//!   per-execution state (`lot`): every call is a scheduling point, a parked thread blocks
//!   in the scheduler until exactly the thread the API names wakes it, timeouts run on the
//!   virtual clock, and `SpinWait` yields to the scheduler instead of spinning;
//! - outside one (code that runs before `pulse::check`, plain threads) a real
//!   implementation on std's `Mutex`/`Condvar` does the work (`os_lot`).

mod deadlock_impl;
mod lot;
mod os_lot;
mod spinwait;
mod types;

// pulse's `Instant`: parking_lot (instrumented by cargo-pulse, like every crate that calls
// it) computes deadlines with it.
use pulse_shim_std::time::Instant;

pub use spinwait::SpinWait;
pub use types::{
    FilterOp, ParkResult, ParkToken, RequeueOp, UnparkResult, UnparkToken, DEFAULT_PARK_TOKEN,
    DEFAULT_UNPARK_TOKEN,
};

/// Deadlock detection. parking_lot calls `acquire_resource`/`release_resource` around every
/// exclusive lock; inside an execution they record the lock as held by the running thread,
/// so pulse's own deadlock report says which locks each blocked thread holds. Outside one
/// they do nothing. `check_deadlock` (feature `deadlock_detection`) always returns no
/// cycles: under pulse a deadlock ends the execution and is reported with its schedule.
pub mod deadlock {
    pub use crate::deadlock_impl::{acquire_resource, release_resource};
    #[cfg(feature = "deadlock_detection")]
    pub use crate::deadlock_impl::{check_deadlock, DeadlockedThread};
}

/// Parks the current thread in the queue associated with the given key.
///
/// The `validate` function is called while the queue is locked and can abort the operation
/// by returning false. If `validate` returns true then the current thread is appended to
/// the queue and the queue is unlocked.
///
/// The `before_sleep` function is called after the queue is unlocked but before the thread
/// is put to sleep. The thread will then sleep until it is unparked or the given timeout is
/// reached (inside a pulse execution: the time left until `timeout` on the real clock when
/// the thread parks, rounded up to a millisecond, measured on the virtual clock).
///
/// The `timed_out` function is also called while the queue is locked, but only if the
/// timeout was reached. It is passed the key of the queue it was in when it timed out,
/// which may be different from the original key if `unpark_requeue` was called. It is also
/// passed a bool which indicates whether it was the last thread in the queue.
///
/// # Safety
///
/// You should only call this function with an address that you control, since you could
/// otherwise interfere with the operation of other synchronization primitives.
///
/// The `validate` and `timed_out` functions are called while the queue is locked and must
/// not panic or call into any function in `parking_lot`.
///
/// The `before_sleep` function is called outside the queue lock and is allowed to call
/// `unpark_one`, `unpark_all`, `unpark_requeue` or `unpark_filter`, but it is not allowed
/// to call `park` or panic.
#[inline]
#[track_caller]
pub unsafe fn park(
    key: usize,
    validate: impl FnOnce() -> bool,
    before_sleep: impl FnOnce(),
    timed_out: impl FnOnce(usize, bool),
    park_token: ParkToken,
    timeout: Option<Instant>,
) -> ParkResult {
    match pulse_runtime::current() {
        Some(ctx) => lot::park(
            ctx,
            key,
            validate,
            before_sleep,
            timed_out,
            park_token,
            timeout,
        ),
        None => os_lot::park(
            key,
            validate,
            before_sleep,
            timed_out,
            park_token,
            timeout.map(Instant::__pulse_to_std),
        ),
    }
}

/// Unparks one thread from the queue associated with the given key.
///
/// The `callback` function is called while the queue is locked and before the target
/// thread is woken up. The `UnparkResult` argument to the function indicates whether a
/// thread was found in the queue and whether this was the last thread in the queue. This
/// value is also returned by `unpark_one`.
///
/// The `callback` function should return an `UnparkToken` value which will be passed to
/// the thread that is unparked. If no thread is unparked then the returned value is
/// ignored.
///
/// # Safety
///
/// You should only call this function with an address that you control, since you could
/// otherwise interfere with the operation of other synchronization primitives.
///
/// The `callback` function is called while the queue is locked and must not panic or call
/// into any function in `parking_lot`.
#[inline]
#[track_caller]
pub unsafe fn unpark_one(
    key: usize,
    callback: impl FnOnce(UnparkResult) -> UnparkToken,
) -> UnparkResult {
    match pulse_runtime::current() {
        Some(ctx) => lot::unpark_one(ctx, key, callback),
        None => os_lot::unpark_one(key, callback),
    }
}

/// Unparks all threads in the queue associated with the given key.
///
/// The given `UnparkToken` is passed to all unparked threads.
///
/// This function returns the number of threads that were unparked.
///
/// # Safety
///
/// You should only call this function with an address that you control, since you could
/// otherwise interfere with the operation of other synchronization primitives.
#[inline]
#[track_caller]
pub unsafe fn unpark_all(key: usize, unpark_token: UnparkToken) -> usize {
    match pulse_runtime::current() {
        Some(ctx) => lot::unpark_all(ctx, key, unpark_token),
        None => os_lot::unpark_all(key, unpark_token),
    }
}

/// Removes all threads from the queue associated with `key_from`, optionally unparks the
/// first one and requeues the rest onto the queue associated with `key_to`.
///
/// The `validate` function is called while both queues are locked. Its return value will
/// determine which operation is performed, or whether the operation should be aborted. See
/// `RequeueOp` for details about the different possible return values.
///
/// The `callback` function is also called while both queues are locked. It is passed the
/// `RequeueOp` returned by `validate` and an `UnparkResult` indicating whether a thread was
/// unparked and whether there are threads still parked in the new queue. This
/// `UnparkResult` value is also returned by `unpark_requeue`.
///
/// The `callback` function should return an `UnparkToken` value which will be passed to
/// the thread that is unparked. If no thread is unparked then the returned value is
/// ignored.
///
/// # Safety
///
/// You should only call this function with an address that you control, since you could
/// otherwise interfere with the operation of other synchronization primitives.
///
/// The `validate` and `callback` functions are called while the queue is locked and must
/// not panic or call into any function in `parking_lot`.
#[inline]
#[track_caller]
pub unsafe fn unpark_requeue(
    key_from: usize,
    key_to: usize,
    validate: impl FnOnce() -> RequeueOp,
    callback: impl FnOnce(RequeueOp, UnparkResult) -> UnparkToken,
) -> UnparkResult {
    match pulse_runtime::current() {
        Some(ctx) => lot::unpark_requeue(ctx, key_from, key_to, validate, callback),
        None => os_lot::unpark_requeue(key_from, key_to, validate, callback),
    }
}

/// Unparks a number of threads from the front of the queue associated with `key` depending
/// on the results of a filter function which inspects the `ParkToken` associated with each
/// thread.
///
/// The `filter` function is called for each thread in the queue or until `FilterOp::Stop`
/// is returned. This function is passed the `ParkToken` associated with a particular
/// thread, which is unparked if `FilterOp::Unpark` is returned.
///
/// The `callback` function is also called while both queues are locked. It is passed an
/// `UnparkResult` indicating the number of threads that were unparked and whether there
/// are still parked threads in the queue. This `UnparkResult` value is also returned by
/// `unpark_filter`.
///
/// The `callback` function should return an `UnparkToken` value which will be passed to
/// all threads that are unparked. If no thread is unparked then the returned value is
/// ignored.
///
/// # Safety
///
/// You should only call this function with an address that you control, since you could
/// otherwise interfere with the operation of other synchronization primitives.
///
/// The `filter` and `callback` functions are called while the queue is locked and must not
/// panic or call into any function in `parking_lot`.
#[inline]
#[track_caller]
pub unsafe fn unpark_filter(
    key: usize,
    filter: impl FnMut(ParkToken) -> FilterOp,
    callback: impl FnOnce(UnparkResult) -> UnparkToken,
) -> UnparkResult {
    match pulse_runtime::current() {
        Some(ctx) => lot::unpark_filter(ctx, key, filter, callback),
        None => os_lot::unpark_filter(key, filter, callback),
    }
}
