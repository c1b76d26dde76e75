//! A hand-rolled spinlock. `BrokenSpinLock::lock` spins while the flag is set and then
//! sets it with a separate store. Two threads can both see the flag clear and both store
//! `true`: both are "holding" the lock at once. `SpinLock::lock` takes the flag with
//! `compare_exchange_weak`, which succeeds for only one of them.
//!
//! The scenario counts the threads inside the critical section and also does a plain
//! (non-atomic read-then-write) increment there, which the lock is supposed to protect.

use std::hint;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

#[derive(Default)]
pub struct BrokenSpinLock {
    locked: AtomicBool,
}

impl BrokenSpinLock {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn lock(&self) {
        while self.locked.load(Ordering::Acquire) {
            hint::spin_loop();
        }
        // BUG: the flag may have been taken since the load saw it clear.
        self.locked.store(true, Ordering::Release);
    }

    pub fn unlock(&self) {
        self.locked.store(false, Ordering::Release);
    }
}

#[derive(Default)]
pub struct SpinLock {
    locked: AtomicBool,
}

impl SpinLock {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn lock(&self) {
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            // Wait with plain loads until the lock looks free, then try again.
            while self.locked.load(Ordering::Relaxed) {
                hint::spin_loop();
            }
        }
    }

    pub fn unlock(&self) {
        self.locked.store(false, Ordering::Release);
    }
}

/// Shared state of the scenario: the lock, a counter it protects, and a census of the
/// threads inside the critical section.
struct Shared<L> {
    lock: L,
    counter: AtomicU64,
    inside: AtomicUsize,
    most_inside: AtomicUsize,
}

const ROUNDS: u64 = 3;

/// One round: take the lock, register in the census, increment the counter with a
/// separate load and store (fine, it is protected by the lock), leave, unlock.
fn critical_section<L>(shared: &Shared<L>, acquire: fn(&L), release: fn(&L)) {
    acquire(&shared.lock);
    let now_inside = shared.inside.fetch_add(1, Ordering::SeqCst) + 1;
    shared.most_inside.fetch_max(now_inside, Ordering::SeqCst);
    let value = shared.counter.load(Ordering::Relaxed);
    shared.counter.store(value + 1, Ordering::Relaxed);
    shared.inside.fetch_sub(1, Ordering::SeqCst);
    release(&shared.lock);
}

/// The main thread initialises the counter under the lock (one round), then it and a
/// worker thread take the lock three times each. At most one thread may ever be inside,
/// and no increment may be lost.
fn scenario<L: Send + Sync + 'static>(lock: L, acquire: fn(&L), release: fn(&L)) {
    let shared = Arc::new(Shared {
        lock,
        counter: AtomicU64::new(0),
        inside: AtomicUsize::new(0),
        most_inside: AtomicUsize::new(0),
    });
    critical_section(&shared, acquire, release);

    let worker = {
        let shared = Arc::clone(&shared);
        thread::spawn(move || {
            for _ in 0..ROUNDS {
                critical_section(&shared, acquire, release);
            }
        })
    };
    for _ in 0..ROUNDS {
        critical_section(&shared, acquire, release);
    }
    worker.join().expect("worker panicked");

    let most_inside = shared.most_inside.load(Ordering::SeqCst);
    assert_eq!(most_inside, 1, "{most_inside} threads were inside the critical section at once");
    assert_eq!(shared.counter.load(Ordering::SeqCst), 1 + 2 * ROUNDS, "increments were lost");
}

/// Runs the scenario with `BrokenSpinLock`; panics when both threads get in.
pub fn scenario_buggy() {
    scenario(BrokenSpinLock::new(), BrokenSpinLock::lock, BrokenSpinLock::unlock);
}

/// Runs the scenario with `SpinLock`; never panics.
pub fn scenario_fixed() {
    scenario(SpinLock::new(), SpinLock::lock, SpinLock::unlock);
}
