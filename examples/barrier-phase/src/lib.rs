//! Workers compute in two phases. Phase 1: each worker squares the numbers in its chunk
//! and publishes the squares one by one, as they are computed, in its own slot. Phase 2:
//! each worker reads its neighbour's published squares (a halo exchange) and adds them to
//! its own, so every worker ends up with the sum of squares of the whole input.
//!
//! Phase 2 must not start before the neighbour has *finished* phase 1. `buggy::worker`
//! does not use a barrier: it waits until its neighbour's slot is non-empty, and then
//! reads it. But a non-empty slot only means the neighbour has *started* publishing; if
//! the reader gets in between two of the neighbour's publications it reads a partial
//! result. `fixed::worker` calls `Barrier::wait` between the phases.

use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::thread;

pub const WORKERS: usize = 2;
pub const INPUT: [u64; 6] = [1, 2, 3, 4, 5, 6];
const CHUNK: usize = INPUT.len() / WORKERS;

/// What every worker must end up with: the sum of squares of the whole input.
pub fn expected_total() -> u64 {
    INPUT.iter().map(|x| x * x).sum()
}

/// State shared by the workers.
pub struct Shared {
    /// Phase 1 results: each worker's squares, in its own slot.
    slots: Mutex<Vec<Vec<u64>>>,
    /// Notified by a worker when it has finished publishing (used by `buggy`).
    published: Condvar,
    /// Separates the phases (used by `fixed`).
    barrier: Barrier,
    /// Phase 2 results: each worker's total.
    totals: Mutex<Vec<u64>>,
}

impl Shared {
    fn new() -> Self {
        Shared {
            slots: Mutex::new(vec![Vec::new(); WORKERS]),
            published: Condvar::new(),
            barrier: Barrier::new(WORKERS),
            totals: Mutex::new(vec![0; WORKERS]),
        }
    }

    /// Phase 1: publish this worker's squares, each as soon as it is computed.
    fn publish_squares(&self, worker: usize) {
        for x in &INPUT[worker * CHUNK..(worker + 1) * CHUNK] {
            let square = x * x;
            self.slots.lock().unwrap()[worker].push(square);
        }
    }

    /// Phase 2: own squares plus the neighbour's.
    fn combine(&self, worker: usize) {
        let neighbour = (worker + 1) % WORKERS;
        let total = {
            let slots = self.slots.lock().unwrap();
            slots[worker].iter().sum::<u64>() + slots[neighbour].iter().sum::<u64>()
        };
        self.totals.lock().unwrap()[worker] = total;
    }
}

pub mod buggy {
    use super::{Shared, WORKERS};

    pub fn worker(shared: &Shared, worker: usize) {
        shared.publish_squares(worker);
        shared.published.notify_all();

        // BUG: a hand-rolled phase boundary. "My neighbour's slot is non-empty" is true as
        // soon as the neighbour has published its *first* square, not its last.
        let neighbour = (worker + 1) % WORKERS;
        let slots = shared.slots.lock().unwrap();
        drop(shared.published.wait_while(slots, |slots| slots[neighbour].is_empty()).unwrap());

        shared.combine(worker);
    }
}

pub mod fixed {
    use super::Shared;

    pub fn worker(shared: &Shared, worker: usize) {
        shared.publish_squares(worker);
        // Every worker has finished phase 1 before anyone starts phase 2.
        shared.barrier.wait();
        shared.combine(worker);
    }
}

/// Runs both phases on `WORKERS` threads (worker 0 is the main thread); every worker's
/// total must be the sum of squares of the whole input.
fn scenario(worker: fn(&Shared, usize)) {
    let shared = Arc::new(Shared::new());
    let others: Vec<_> = (1..WORKERS)
        .map(|id| {
            let shared = Arc::clone(&shared);
            thread::spawn(move || worker(&shared, id))
        })
        .collect();
    worker(&shared, 0);
    for handle in others {
        handle.join().expect("worker panicked");
    }
    let totals = shared.totals.lock().unwrap().clone();
    assert_eq!(
        totals,
        vec![expected_total(); WORKERS],
        "a worker combined its neighbour's results before the neighbour finished phase 1"
    );
}

/// Runs the phases with `buggy::worker`; panics when a worker reads a partial result.
pub fn scenario_buggy() {
    scenario(buggy::worker);
}

/// Runs the phases with `fixed::worker`; never panics.
pub fn scenario_fixed() {
    scenario(fixed::worker);
}
