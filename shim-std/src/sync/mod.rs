//! `std::sync`, module for module.

mod barrier;
mod condvar;
mod lazy_lock;
mod mutex;
mod once;
mod once_lock;
mod poison;
mod rwlock;

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

/// Reference counting is not a scheduling concern (its operations commute with every
/// other thread's under sequential consistency), so these are std's own types.
pub use std::sync::{Arc, Weak};
