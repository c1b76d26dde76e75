//! Probabilistic concurrency testing (Burckhardt, Kothari, Musuvathi, Nagarakatte,
//! ASPLOS 2010): threads get random distinct priorities, the highest-priority runnable
//! thread runs, and at `depth - 1` random steps the running thread drops to the lowest
//! priority. A bug of depth d is found with probability at least 1/(n k^(d-1)).

use super::{below, one_in, rng_from_seed, ChoiceKind, ChoiceOdds, Rng, Scheduler};

pub struct PctScheduler {
    depth: usize,
    odds: ChoiceOdds,
    rng: Rng,
    /// Priority per thread index; higher runs first. Assigned when a thread first appears.
    priorities: Vec<u64>,
    /// Steps (counted over `next_thread` calls) at which the chosen thread is demoted.
    change_points: Vec<u64>,
    step: u64,
    /// The longest execution seen so far, the `k` PCT draws change points from.
    max_steps_seen: u64,
    next_low: u64,
}

impl PctScheduler {
    pub fn new(depth: usize, odds: ChoiceOdds) -> Self {
        PctScheduler {
            depth: depth.max(1),
            odds,
            rng: rng_from_seed(0),
            priorities: Vec::new(),
            change_points: Vec::new(),
            step: 0,
            max_steps_seen: 32,
            next_low: 0,
        }
    }

    fn priority(&mut self, thread: u32) -> u64 {
        let t = thread as usize;
        while self.priorities.len() <= t {
            // Random high priorities, distinct with overwhelming probability; ties break
            // by thread index below.
            let p = (1u64 << 40) + (rand_core::RngCore::next_u64(&mut self.rng) >> 24);
            self.priorities.push(p);
        }
        self.priorities[t]
    }
}

impl Scheduler for PctScheduler {
    fn new_execution(&mut self, seed: u64) -> bool {
        self.max_steps_seen = self.max_steps_seen.max(self.step);
        self.rng = rng_from_seed(seed);
        self.priorities.clear();
        self.step = 0;
        self.next_low = self.depth as u64;
        let k = self.max_steps_seen.max(1) as usize;
        self.change_points = (1..self.depth).map(|_| below(&mut self.rng, k) as u64).collect();
        true
    }

    fn next_thread(&mut self, runnable: &[u32], current: Option<u32>, yielding: bool) -> Option<u32> {
        self.step += 1;
        if yielding {
            if let Some(c) = current {
                // A yielding thread is waiting for others: let them go first.
                self.priority(c);
                self.next_low = self.next_low.saturating_sub(1);
                self.priorities[c as usize] = self.next_low;
            }
        }
        let mut best = runnable[0];
        let mut best_p = self.priority(best);
        for &t in &runnable[1..] {
            let p = self.priority(t);
            if p > best_p {
                best = t;
                best_p = p;
            }
        }
        if self.change_points.contains(&self.step) {
            self.next_low = self.next_low.saturating_sub(1);
            self.priorities[best as usize] = self.next_low;
        }
        Some(best)
    }

    fn next_bool(&mut self, kind: ChoiceKind) -> Option<bool> {
        Some(one_in(&mut self.rng, self.odds.one_in(kind)))
    }
}
