//! The values that cross the API: results, requeue and filter operations, tokens. Same
//! derives and fields as parking_lot_core 0.9, so code matching on them compiles unchanged.

/// Result of a park operation.
#[derive(Copy, Clone, Eq, PartialEq, Debug)]
pub enum ParkResult {
    /// We were unparked by another thread with the given token.
    Unparked(UnparkToken),
    /// The validation callback returned false.
    Invalid,
    /// The timeout expired.
    TimedOut,
}

impl ParkResult {
    /// Returns true if we were unparked by another thread.
    #[inline]
    pub const fn is_unparked(self) -> bool {
        matches!(self, ParkResult::Unparked(_))
    }
}

/// Result of an unpark operation.
// A private field, not `#[non_exhaustive]`: the same shape as parking_lot_core's.
#[allow(clippy::manual_non_exhaustive)]
#[derive(Copy, Clone, Default, Eq, PartialEq, Debug)]
pub struct UnparkResult {
    /// The number of threads that were unparked.
    pub unparked_threads: usize,
    /// The number of threads that were requeued.
    pub requeued_threads: usize,
    /// Whether there are any threads remaining in the queue. This only returns true if a
    /// thread was unparked.
    pub have_more_threads: bool,
    /// Set about once every 0.5 ms for a given key (inside a pulse execution: of virtual
    /// time); locks use it to switch to a fair unlock, handing the lock to the woken thread.
    pub be_fair: bool,
    /// Private field so new fields can be added without breakage.
    _sealed: (),
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
    /// Unpark one thread and leave the rest parked. No requeuing is done.
    UnparkOne,
    /// Requeue one thread and leave the rest parked on the original queue.
    RequeueOne,
}

/// Operation that `unpark_filter` should perform for each thread.
#[derive(Copy, Clone, Eq, PartialEq, Debug)]
pub enum FilterOp {
    /// Unpark the thread and continue scanning the list of parked threads.
    Unpark,
    /// Don't unpark the thread and continue scanning the list of parked threads.
    Skip,
    /// Don't unpark the thread and stop scanning the list of parked threads.
    Stop,
}

/// A value which is passed from an unparker to a parked thread.
#[derive(Copy, Clone, Eq, PartialEq, Debug)]
pub struct UnparkToken(pub usize);

/// A value associated with a parked thread which can be used by `unpark_filter`.
#[derive(Copy, Clone, Eq, PartialEq, Debug)]
pub struct ParkToken(pub usize);

/// A default unpark token to use.
pub const DEFAULT_UNPARK_TOKEN: UnparkToken = UnparkToken(0);

/// A default park token to use.
pub const DEFAULT_PARK_TOKEN: ParkToken = ParkToken(0);
