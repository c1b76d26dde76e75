//! The default strategy: a portfolio. Execution `i` of a search runs under one of several
//! randomised strategies, chosen from its seed, so one test's budget is shared by the
//! strategies that each find a different kind of bug best (measured on the SCTBench-style
//! corpus in `tests/sct`, see ARCHITECTURE.md):
//!
//! - POS: bugs that need a few racing operations in one order (`reorder_3`, `twostage_2`,
//!   `wronglock_N`);
//! - PCT at depths 3, 5 and 8: PCT at depth 5 finds `reorder_10` in a median of 261
//!   schedules where depth 3 needs 423 and depths 1-2 miss it within 1,000, and deeper PCT
//!   finds the spinning and lock-order bugs sooner; depth 5 gets the largest share;
//! - random: shallow bugs with many ways to hit them (`spinlock`, `lost_wakeup`).
//!
//! With this rotation the portfolio finds 19 of the 22 corpus programs within 1,000
//! schedules (as many as the best single strategy), with medians near the best column's on
//! each program (ARCHITECTURE.md has the table).
//!
//! Each arm's choices depend only on the seed (PCT also on the longest execution its arm has
//! seen, as PCT alone does), and an arm is given the execution's seed as it is: the arm's
//! `strategy_for` (`pos`, `pct:5:137`, `random`) run alone from that seed makes the same
//! choices, which is how a portfolio failure replays from its seed.

use super::{
    ChoiceKind, ChoiceOdds, PctScheduler, PosScheduler, RandomScheduler, RolesScheduler, Scheduler,
    Strategy,
};

pub struct PortfolioScheduler {
    arms: Vec<Box<dyn Scheduler>>,
    /// The arm of each slot of the rotation (an arm may take several slots).
    rotation: Vec<usize>,
    active: usize,
}

impl PortfolioScheduler {
    pub fn new(odds: ChoiceOdds) -> Self {
        let arms: Vec<Box<dyn Scheduler>> = vec![
            Box::new(PosScheduler::new(odds)),
            Box::new(PctScheduler::new(3, None, odds)),
            Box::new(PctScheduler::new(5, None, odds)),
            Box::new(RolesScheduler::new(4, None, odds)),
            Box::new(RandomScheduler::new(odds)),
        ];
        PortfolioScheduler {
            rotation: ROTATION.to_vec(),
            arms,
            active: 0,
        }
    }

    /// The arm an execution with this seed runs under.
    pub fn arm_of(&self, seed: u64) -> usize {
        self.rotation[(seed % self.rotation.len() as u64) as usize]
    }
}

/// Arms by index into `PortfolioScheduler::arms` (POS, PCT 3, PCT 5, PCT 8, random): PCT 5
/// three slots in eight, POS two, the others one.
const ROTATION: [usize; 8] = [0, 2, 3, 1, 0, 3, 4, 2];

impl Scheduler for PortfolioScheduler {
    fn new_execution(&mut self, seed: u64) -> bool {
        self.active = self.arm_of(seed);
        self.arms[self.active].new_execution(seed)
    }

    fn strategy_for(&self, seed: u64) -> Option<Strategy> {
        self.arms[self.arm_of(seed)].strategy_for(seed)
    }

    fn pending(&mut self, thread: u32, resource: u64) {
        self.arms[self.active].pending(thread, resource)
    }

    fn next_thread(
        &mut self,
        runnable: &[u32],
        current: Option<u32>,
        yielding: bool,
    ) -> Option<u32> {
        self.arms[self.active].next_thread(runnable, current, yielding)
    }

    fn next_read(&mut self, stores: u32) -> Option<u32> {
        self.arms[self.active].next_read(stores)
    }

    fn next_bool(&mut self, kind: ChoiceKind) -> Option<bool> {
        self.arms[self.active].next_bool(kind)
    }

    fn spawned(&mut self, thread: u32, site: u64) {
        self.arms[self.active].spawned(thread, site)
    }

    fn runnable_changed(&mut self, thread: u32, runnable: bool) {
        self.arms[self.active].runnable_changed(thread, runnable)
    }

    fn next_runnable(
        &mut self,
        runnable: &[u32],
        current: Option<u32>,
        yielding: bool,
    ) -> Option<u32> {
        self.arms[self.active].next_runnable(runnable, current, yielding)
    }
}
