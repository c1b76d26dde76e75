//! `parking_lot_core` 0.10's public API, routed to pulse's scheduler: the same functions and
//! types as pulse's 0.9 shim (`shim-parking-lot-core`), re-exported. 0.10 changed the
//! implementation, not the parking API: `park`, `unpark_one/all/requeue/filter`, `SpinWait`,
//! the tokens and `deadlock` have the 0.9 signatures (`SpinWait::new`/`reset` and
//! `ParkResult::is_unparked` became `const`, as they are in the 0.9 shim too), and
//! `UnparkResult` lost `be_fair` (kept here; 0.10's users never read it). Re-exporting keeps
//! one implementation, so a graph holding both versions (parking_lot 0.12 and 0.13) parks
//! every thread in the same per-execution queues.

pub use parking_lot_core_09::{
    park, unpark_all, unpark_filter, unpark_one, unpark_requeue, FilterOp, ParkResult, ParkToken,
    RequeueOp, SpinWait, UnparkResult, UnparkToken, DEFAULT_PARK_TOKEN, DEFAULT_UNPARK_TOKEN,
};

/// Deadlock detection (see the 0.9 shim: pulse reports deadlocks itself).
pub mod deadlock {
    pub use parking_lot_core_09::deadlock::*;
}
