//! `parking_lot_core` 0.2's public API (parking_lot 0.4 and 0.5's core), routed to pulse's
//! scheduler through pulse's 0.9 shim (`shim-parking-lot-core`). 0.2 and 0.3 differ from 0.4
//! on in two types only: `UnparkResult` has no `requeued_threads` and no private field (its
//! three fields are all public), and `RequeueOp` has three variants (no `UnparkOne`,
//! `RequeueOne`). Those two are this crate's own; the functions take and give them and forward
//! to the 0.9 shim's, converting on the way; `ParkResult`, `FilterOp`, the tokens, `SpinWait`
//! and `deadlock` are the 0.9 shim's, re-exported (0.2 spells the closures as generic
//! parameters, the shim as `impl Fn..`: the same calls). As in the 0.9 shim, `park`'s timeout
//! is pulse's `Instant` (parking_lot, instrumented, computes its deadlines with it). One
//! implementation: every parking_lot version in a graph parks in the same per-execution queues.

use parking_lot_core_09 as core09;
// pulse's `Instant`, as the 0.9 shim's `park` takes it.
use pulse_shim_std::time::Instant;

pub use core09::{
    FilterOp, ParkResult, ParkToken, SpinWait, UnparkToken, DEFAULT_PARK_TOKEN,
    DEFAULT_UNPARK_TOKEN,
};

/// Deadlock detection (see the 0.9 shim: pulse reports deadlocks itself).
pub mod deadlock {
    pub use parking_lot_core_09::deadlock::*;
}

/// Result of an unpark operation.
#[derive(Copy, Clone, Eq, PartialEq, Debug)]
pub struct UnparkResult {
    /// The number of threads that were unparked.
    pub unparked_threads: usize,
    /// Whether there are any threads remaining in the queue. This only returns true if a
    /// thread was unparked.
    pub have_more_threads: bool,
    /// Set about once every 0.5 ms for a given key (inside a pulse execution: of virtual
    /// time); locks use it to switch to a fair unlock, handing the lock to the woken thread.
    pub be_fair: bool,
}

impl From<core09::UnparkResult> for UnparkResult {
    #[inline]
    fn from(r: core09::UnparkResult) -> Self {
        UnparkResult {
            unparked_threads: r.unparked_threads,
            have_more_threads: r.have_more_threads,
            be_fair: r.be_fair,
        }
    }
}

/// Operation that `unpark_requeue` should perform.
#[derive(Copy, Clone, Eq, PartialEq, Debug)]
pub enum RequeueOp {
    /// Abort the operation without doing anything.
    Abort,
    /// Unpark one thread and requeue the rest onto the target queue.
    UnparkOneRequeueRest,
    /// Requeue all threads onto the target queue.
    RequeueAll,
}

impl From<RequeueOp> for core09::RequeueOp {
    #[inline]
    fn from(op: RequeueOp) -> Self {
        match op {
            RequeueOp::Abort => core09::RequeueOp::Abort,
            RequeueOp::UnparkOneRequeueRest => core09::RequeueOp::UnparkOneRequeueRest,
            RequeueOp::RequeueAll => core09::RequeueOp::RequeueAll,
        }
    }
}

/// The 0.9 shim hands `unpark_requeue`'s callback the operation `validate` chose, one of the
/// three above; the other two cannot come back (mapped to their nearest for totality).
impl From<core09::RequeueOp> for RequeueOp {
    #[inline]
    fn from(op: core09::RequeueOp) -> Self {
        match op {
            core09::RequeueOp::Abort => RequeueOp::Abort,
            core09::RequeueOp::UnparkOneRequeueRest | core09::RequeueOp::UnparkOne => {
                RequeueOp::UnparkOneRequeueRest
            }
            core09::RequeueOp::RequeueAll | core09::RequeueOp::RequeueOne => RequeueOp::RequeueAll,
        }
    }
}

/// Parks the current thread in the queue associated with the given key (see the 0.9 shim's
/// `park`: `validate` and `timed_out` run under the queue lock, `before_sleep` after
/// enqueueing, the timeout on pulse's clock).
///
/// # Safety
///
/// As parking_lot_core's: only with an address you control; `validate` and `timed_out` must
/// not panic or call into `parking_lot`; `before_sleep` must not park or panic.
#[inline]
#[track_caller]
pub unsafe fn park<V, B, T>(
    key: usize,
    validate: V,
    before_sleep: B,
    timed_out: T,
    park_token: ParkToken,
    timeout: Option<Instant>,
) -> ParkResult
where
    V: FnOnce() -> bool,
    B: FnOnce(),
    T: FnOnce(usize, bool),
{
    // SAFETY: the caller's contract is the 0.9 shim's.
    unsafe { core09::park(key, validate, before_sleep, timed_out, park_token, timeout) }
}

/// Unparks one thread from the queue associated with the given key; `callback` runs under
/// the queue lock with the outcome and gives the token the woken thread receives.
///
/// # Safety
///
/// As parking_lot_core's: only with an address you control; `callback` must not panic or
/// call into `parking_lot`.
#[inline]
#[track_caller]
pub unsafe fn unpark_one<C>(key: usize, callback: C) -> UnparkResult
where
    C: FnOnce(UnparkResult) -> UnparkToken,
{
    // SAFETY: the caller's contract is the 0.9 shim's.
    unsafe { core09::unpark_one(key, |r| callback(r.into())) }.into()
}

/// Unparks all threads in the queue associated with the given key, each with `unpark_token`;
/// returns how many.
///
/// # Safety
///
/// Only with an address you control.
#[inline]
#[track_caller]
pub unsafe fn unpark_all(key: usize, unpark_token: UnparkToken) -> usize {
    // SAFETY: the caller's contract is the 0.9 shim's.
    unsafe { core09::unpark_all(key, unpark_token) }
}

/// Removes all threads from the queue associated with `key_from`, optionally unparks the
/// first one and requeues the rest onto the queue associated with `key_to`, as `validate`
/// decides; `callback` runs under both queue locks with the operation and the outcome.
///
/// # Safety
///
/// As parking_lot_core's: only with addresses you control; `validate` and `callback` must not
/// panic or call into `parking_lot`.
#[inline]
#[track_caller]
pub unsafe fn unpark_requeue<V, C>(
    key_from: usize,
    key_to: usize,
    validate: V,
    callback: C,
) -> UnparkResult
where
    V: FnOnce() -> RequeueOp,
    C: FnOnce(RequeueOp, UnparkResult) -> UnparkToken,
{
    // SAFETY: the caller's contract is the 0.9 shim's.
    unsafe {
        core09::unpark_requeue(
            key_from,
            key_to,
            || validate().into(),
            |op, r| callback(op.into(), r.into()),
        )
    }
    .into()
}

/// Unparks the threads at the front of the queue associated with `key` that `filter` picks
/// by their `ParkToken`; `callback` runs under the queue lock with the outcome and gives the
/// token every woken thread receives.
///
/// # Safety
///
/// As parking_lot_core's: only with an address you control; `filter` and `callback` must not
/// panic or call into `parking_lot`.
#[inline]
#[track_caller]
pub unsafe fn unpark_filter<F, C>(key: usize, filter: F, callback: C) -> UnparkResult
where
    F: FnMut(ParkToken) -> FilterOp,
    C: FnOnce(UnparkResult) -> UnparkToken,
{
    // SAFETY: the caller's contract is the 0.9 shim's.
    unsafe { core09::unpark_filter(key, filter, |r| callback(r.into())) }.into()
}
