//! Probabilistic concurrency testing (Burckhardt, Kothari, Musuvathi, Nagarakatte,
//! ASPLOS 2010): threads get random distinct priorities, the highest-priority runnable
//! thread runs, and at `depth - 1` random steps the running thread drops to the lowest
//! priority. A bug of depth d is found with probability at least 1/(n k^(d-1)).
//!
//! `k`, the range the change points are drawn from, is the longest execution seen so far
//! in the search (adaptive, `pct:D`) or given (`pct:D:K`). Either way one execution is a
//! function of its seed and that `k`, so a failing execution is reported as the `pct:D:K`
//! that replays it from its seed alone (`strategy_for`).

use super::{
    below, one_in, rng_from_seed, ChoiceKind, ChoiceOdds, PastBound, RankedSet, Rng, RunLength,
    Scheduler, Strategy,
};

pub struct PctScheduler {
    depth: usize,
    /// A fixed `k` (`pct:D:K`): change points are drawn below it, whatever ran before.
    fixed_k: Option<u64>,
    odds: ChoiceOdds,
    rng: Rng,
    /// Priority per thread index; higher runs first. Assigned when a thread first appears.
    priorities: Vec<i64>,
    /// Steps (counted over `next_thread` calls) at which the chosen thread is demoted.
    change_points: Vec<u64>,
    step: u64,
    /// The longest execution seen so far, the `k` PCT draws change points from.
    max_steps_seen: u64,
    /// The next demoted priority: strictly below every priority given so far, so a demoted
    /// (or yielding) thread never ties with another and starves it.
    next_low: i64,
    /// A thread that runs about `FAIR_RUN` choice points in a row is demoted as if it yielded.
    run: RunLength,
    /// The execution's runnable threads by priority.
    ranked: RankedSet<i64>,
    /// Past the step bound, picks are as with random time slices.
    past_bound: PastBound,
}

impl PctScheduler {
    pub fn new(depth: usize, fixed_k: Option<u64>, odds: ChoiceOdds) -> Self {
        PctScheduler {
            depth: depth.max(1),
            fixed_k: fixed_k.map(|k| k.max(1)),
            odds,
            rng: rng_from_seed(0),
            priorities: Vec::new(),
            change_points: Vec::new(),
            step: 0,
            max_steps_seen: 32,
            next_low: 0,
            run: RunLength::default(),
            ranked: RankedSet::default(),
            past_bound: PastBound::default(),
        }
    }

    /// The `k` the next execution draws its change points below.
    fn next_k(&self) -> u64 {
        self.fixed_k
            .unwrap_or_else(|| self.max_steps_seen.max(self.step))
            .max(1)
    }

    /// Ranks the threads that joined since the last decision.
    fn rank_joined(&mut self) {
        let mut ranked = std::mem::take(&mut self.ranked);
        ranked.rank_joined(|t| self.priority(t));
        self.ranked = ranked;
    }

    /// Sets `thread`'s priority, keeping `ranked` in step.
    fn set_priority(&mut self, thread: u32, p: i64) {
        let i = thread as usize;
        self.ranked.rekey(thread, p);
        self.priorities[i] = p;
    }

    /// The pick after demotions: the highest-priority thread of `runnable`.
    fn scan(&mut self, runnable: &[u32]) -> u32 {
        let mut best = runnable[0];
        let mut best_p = self.priority(best);
        for &t in &runnable[1..] {
            let p = self.priority(t);
            if p > best_p {
                best = t;
                best_p = p;
            }
        }
        best
    }

    /// Demotions before a pick, the pick's change point after it (both paths).
    fn before_pick(&mut self, current: Option<u32>, yielding: bool) {
        self.step += 1;
        if yielding || self.run.overstayed(current) {
            if let Some(c) = current {
                // A yielding (or busy-waiting) thread is waiting for others: let them go first.
                self.demote(c);
            }
        }
    }

    fn after_pick(&mut self, best: u32) -> u32 {
        if self.change_points.contains(&self.step) {
            self.demote(best);
        }
        self.run.ran(best);
        best
    }

    fn priority(&mut self, thread: u32) -> i64 {
        let t = thread as usize;
        while self.priorities.len() <= t {
            // Random positive priorities, above every demoted one (those are <= 0) and
            // distinct with overwhelming probability.
            let p = 1 + (self.rng.next_u64() >> 2) as i64;
            self.priorities.push(p);
        }
        self.priorities[t]
    }

    fn demote(&mut self, thread: u32) {
        self.priority(thread);
        self.next_low -= 1;
        self.set_priority(thread, self.next_low);
    }
}

impl Scheduler for PctScheduler {
    fn new_execution(&mut self, seed: u64) -> bool {
        self.max_steps_seen = self.max_steps_seen.max(self.step);
        self.rng = rng_from_seed(seed);
        self.priorities.clear();
        self.step = 0;
        self.next_low = 0;
        self.run.reset_seeded(seed);
        self.ranked = RankedSet::default();
        self.past_bound.reset();
        let k = self.next_k() as usize;
        self.change_points = (1..self.depth)
            .map(|_| below(&mut self.rng, k) as u64)
            .collect();
        true
    }

    fn next_thread(
        &mut self,
        runnable: &[u32],
        current: Option<u32>,
        yielding: bool,
    ) -> Option<u32> {
        self.before_pick(current, yielding);
        let best = self.scan(runnable);
        let best = self
            .past_bound
            .or(best, &mut self.rng, runnable, current, yielding);
        Some(self.after_pick(best))
    }

    fn runnable_changed(&mut self, thread: u32, runnable: bool) {
        self.ranked.changed(thread, runnable);
    }

    fn past_bound(&mut self) {
        self.past_bound.set();
    }

    fn next_runnable(
        &mut self,
        runnable: &[u32],
        current: Option<u32>,
        yielding: bool,
    ) -> Option<u32> {
        self.before_pick(current, yielding);
        self.rank_joined();
        // The ranked view is the runnable set unless the scheduler missed notices (it was
        // swapped in mid-execution): then the scan decides.
        let best = match self.ranked.top(runnable.len()) {
            Some(t) => t,
            None => self.scan(runnable),
        };
        let best = self
            .past_bound
            .or(best, &mut self.rng, runnable, current, yielding);
        Some(self.after_pick(best))
    }

    fn next_read(&mut self, stores: u32) -> Option<u32> {
        Some(super::below(&mut self.rng, stores as usize) as u32)
    }

    fn next_word(&mut self) -> Option<u32> {
        Some(self.rng.next_u32())
    }

    fn strategy_for(&self, _seed: u64) -> Option<Strategy> {
        Some(Strategy::Pct {
            depth: self.depth,
            k: Some(self.next_k()),
        })
    }

    fn next_bool(&mut self, kind: ChoiceKind) -> Option<bool> {
        Some(one_in(&mut self.rng, self.odds.one_in(kind)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::priority_checks;

    fn pct(seed: u64) -> Box<dyn Scheduler> {
        let mut s = PctScheduler::new(3, None, ChoiceOdds::default());
        s.new_execution(seed);
        Box::new(s)
    }

    #[test]
    fn the_ranked_pick_is_the_scans_pick() {
        priority_checks::ranked_pick_is_the_scans_pick(pct);
    }

    #[test]
    fn a_busy_waiter_without_yields_gives_way() {
        priority_checks::a_busy_waiter_gives_way(pct);
    }

    #[test]
    fn a_yielding_spinner_never_starves_the_holder() {
        priority_checks::a_yielding_spinner_never_starves_the_holder(pct);
    }
}
