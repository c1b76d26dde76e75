//! A counter whose `increment` reads the value under the lock, releases it, and writes
//! `value + 1` under the lock again. If the other thread increments in between, that
//! increment is overwritten: a lost update. `Counter` (the fixed twin) reads and writes
//! under one guard.

use std::sync::{Arc, Mutex};
use std::thread;

/// Lock, read, unlock, lock, write.
#[derive(Default)]
pub struct BuggyCounter {
    value: Mutex<u64>,
}

impl BuggyCounter {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn increment(&self) {
        let current = *self.value.lock().unwrap();
        // BUG: the lock is not held here; another increment may land and be overwritten.
        *self.value.lock().unwrap() = current + 1;
    }

    pub fn get(&self) -> u64 {
        *self.value.lock().unwrap()
    }
}

/// Read-modify-write under one guard.
#[derive(Default)]
pub struct Counter {
    value: Mutex<u64>,
}

impl Counter {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn increment(&self) {
        *self.value.lock().unwrap() += 1;
    }

    pub fn get(&self) -> u64 {
        *self.value.lock().unwrap()
    }
}

const INCREMENTS: u64 = 3;

/// Counts requests: the main thread counts one request at startup, then it and a worker
/// thread count three each. The count must be 7.
fn scenario<C: Send + Sync + 'static>(counter: C, increment: fn(&C), get: fn(&C) -> u64) {
    let counter = Arc::new(counter);
    increment(&counter);

    let worker = {
        let counter = Arc::clone(&counter);
        thread::spawn(move || {
            for _ in 0..INCREMENTS {
                increment(&counter);
            }
        })
    };
    for _ in 0..INCREMENTS {
        increment(&counter);
    }
    worker.join().expect("worker panicked");

    assert_eq!(get(&counter), 1 + 2 * INCREMENTS, "increments were lost");
}

/// Runs the scenario against `BuggyCounter`; panics when an update is lost.
pub fn scenario_buggy() {
    scenario(BuggyCounter::new(), BuggyCounter::increment, BuggyCounter::get);
}

/// Runs the scenario against `Counter`; never panics.
pub fn scenario_fixed() {
    scenario(Counter::new(), Counter::increment, Counter::get);
}
