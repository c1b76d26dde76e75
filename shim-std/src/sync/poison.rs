//! std's poison types, re-exported so values cross between instrumented and
//! uninstrumented code; plus the helper every lock uses to wrap a guard.

pub use std::sync::{LockResult, PoisonError, TryLockError, TryLockResult};

/// `Ok(value)`, or `Err(PoisonError)` carrying it when the lock is poisoned.
#[inline]
pub(crate) fn map_result<T>(poisoned: bool, value: T) -> LockResult<T> {
    if poisoned {
        Err(PoisonError::new(value))
    } else {
        Ok(value)
    }
}
