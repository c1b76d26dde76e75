//! `parking_lot_core` 0.4's public API (parking_lot 0.7's core), routed to pulse's scheduler:
//! the functions and types of pulse's 0.9 shim (`shim-parking-lot-core`), re-exported.
//! 0.4 to 0.9 have one parking API: `park`, `unpark_one/all/requeue/filter` with the same
//! parameters (0.4 and 0.5 spell the closures as generic parameters, 0.6 on as `impl Fn..`:
//! the same calls), `UnparkResult` with `requeued_threads`, `be_fair` and a private field,
//! `RequeueOp`'s five variants, the tokens, `SpinWait` and `deadlock`. As in the 0.9 shim,
//! `park`'s timeout is pulse's `Instant` (parking_lot, instrumented, computes its deadlines
//! with it) and `deadlock::DeadlockedThread` (never produced) has std's thread id and
//! backtrace types. Re-exporting keeps one implementation, so every parking_lot version in a
//! graph parks its threads in the same per-execution queues.

pub use parking_lot_core_09::{
    park, unpark_all, unpark_filter, unpark_one, unpark_requeue, FilterOp, ParkResult, ParkToken,
    RequeueOp, SpinWait, UnparkResult, UnparkToken, DEFAULT_PARK_TOKEN, DEFAULT_UNPARK_TOKEN,
};

/// Deadlock detection (see the 0.9 shim: pulse reports deadlocks itself).
pub mod deadlock {
    pub use parking_lot_core_09::deadlock::*;
}
