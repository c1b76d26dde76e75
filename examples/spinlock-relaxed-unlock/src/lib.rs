//! A spinlock taken with `compare_exchange_weak(false, true, Acquire, Relaxed)`. The buggy
//! unlock stores `false` with `Relaxed`: the next holder's `Acquire` then synchronises with
//! nothing, so what the previous holder wrote inside the critical section need not be
//! visible to it. The protected counter is read and written with relaxed atomics (as a
//! plain field would be): with the relaxed unlock an increment can be lost. `unlock` with
//! `Release` fixes it.

use std::hint;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

pub struct SpinLock {
    locked: AtomicBool,
    unlock_order: Ordering,
}

impl SpinLock {
    /// BUG: the unlock is `Relaxed`.
    pub fn relaxed_unlock() -> Self {
        SpinLock {
            locked: AtomicBool::new(false),
            unlock_order: Ordering::Relaxed,
        }
    }

    pub fn new() -> Self {
        SpinLock {
            locked: AtomicBool::new(false),
            unlock_order: Ordering::Release,
        }
    }

    pub fn lock(&self) {
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            while self.locked.load(Ordering::Relaxed) {
                hint::spin_loop();
            }
        }
    }

    pub fn unlock(&self) {
        self.locked.store(false, self.unlock_order);
    }
}

impl Default for SpinLock {
    fn default() -> Self {
        Self::new()
    }
}

const ROUNDS: u64 = 2;

fn scenario(lock: SpinLock) {
    let shared = Arc::new((lock, AtomicU64::new(0)));
    let work = |shared: &(SpinLock, AtomicU64)| {
        for _ in 0..ROUNDS {
            shared.0.lock();
            let n = shared.1.load(Ordering::Relaxed);
            shared.1.store(n + 1, Ordering::Relaxed);
            shared.0.unlock();
        }
    };
    let worker = {
        let shared = Arc::clone(&shared);
        thread::spawn(move || work(&shared))
    };
    work(&shared);
    worker.join().unwrap();
    assert_eq!(shared.1.load(Ordering::Relaxed), 2 * ROUNDS, "an increment was lost");
}

/// With the relaxed unlock: panics when an increment is lost.
pub fn scenario_buggy() {
    scenario(SpinLock::relaxed_unlock());
}

/// With the release unlock: never panics.
pub fn scenario_fixed() {
    scenario(SpinLock::new());
}
