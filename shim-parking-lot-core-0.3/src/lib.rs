//! `parking_lot_core` 0.3's public API (parking_lot 0.6's core), routed to pulse's scheduler:
//! 0.3 changed 0.2's implementation, not its API (`UnparkResult` without `requeued_threads`,
//! `RequeueOp` with three variants), so this is pulse's 0.2 shim re-exported, whose parking is
//! the 0.9 shim's: one implementation, one set of per-execution queues.

pub use parking_lot_core_02::{
    park, unpark_all, unpark_filter, unpark_one, unpark_requeue, FilterOp, ParkResult, ParkToken,
    RequeueOp, SpinWait, UnparkResult, UnparkToken, DEFAULT_PARK_TOKEN, DEFAULT_UNPARK_TOKEN,
};

/// Deadlock detection (see the 0.9 shim: pulse reports deadlocks itself).
pub mod deadlock {
    pub use parking_lot_core_02::deadlock::*;
}
