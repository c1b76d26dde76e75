//! PULSE's scheduler: at every scheduling point, pick uniformly among runnable threads.

use super::{below, one_in, rng_from_seed, ChoiceKind, ChoiceOdds, Rng, Scheduler, Strategy};

pub struct RandomScheduler {
    rng: Rng,
    odds: ChoiceOdds,
}

impl RandomScheduler {
    pub fn new(odds: ChoiceOdds) -> Self {
        RandomScheduler {
            rng: rng_from_seed(0),
            odds,
        }
    }
}

impl Scheduler for RandomScheduler {
    fn new_execution(&mut self, seed: u64) -> bool {
        self.rng = rng_from_seed(seed);
        true
    }

    #[inline]
    fn next_thread(
        &mut self,
        runnable: &[u32],
        _current: Option<u32>,
        _yielding: bool,
    ) -> Option<u32> {
        Some(runnable[below(&mut self.rng, runnable.len())])
    }

    /// Uniform: an old store is as likely as the newest.
    fn next_read(&mut self, stores: u32) -> Option<u32> {
        Some(below(&mut self.rng, stores as usize) as u32)
    }

    fn next_word(&mut self) -> Option<u32> {
        Some(self.rng.next_u32())
    }

    fn strategy_for(&self, _seed: u64) -> Option<Strategy> {
        Some(Strategy::Random)
    }

    fn next_bool(&mut self, kind: ChoiceKind) -> Option<bool> {
        Some(one_in(&mut self.rng, self.odds.one_in(kind)))
    }
}
