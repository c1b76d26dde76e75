//! `std::sync`, module for module.

mod barrier;
mod condvar;
mod lazy_lock;
mod mutex;
mod once;
mod once_lock;
mod poison;
mod rwlock;

#[doc(hidden)]
pub mod arc_ops;
pub mod atomic;
pub mod mpsc;

pub use barrier::{Barrier, BarrierWaitResult};
pub use condvar::{Condvar, WaitTimeoutResult};
pub use lazy_lock::LazyLock;
pub use mutex::{Mutex, MutexGuard};
#[allow(deprecated)]
pub use once::{Once, OnceState, ONCE_INIT};
pub use once_lock::OnceLock;
pub use poison::{LockResult, PoisonError, TryLockError, TryLockResult};
pub use rwlock::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// std's own types (values cross into uninstrumented code). Their operations whose answer
/// depends on other threads (counts, `get_mut`, `try_unwrap`, `upgrade`, ...) are visible
/// through `arc_ops`, where the instrumenter rewrites calls to them.
pub use std::sync::{Arc, Weak};
