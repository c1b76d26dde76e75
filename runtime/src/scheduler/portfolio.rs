//! The default strategy: a portfolio. Execution `i` of a search runs under one of several
//! randomised strategies, chosen from its seed, so one test's budget is shared by the
//! strategies that each find a different kind of bug best (measured on the SCTBench-style
//! corpus in `tests/sct`, ARCHITECTURE.md decisions 24 and 35):
//!
//! - POS: bugs that need a few racing operations in one order (`reorder_3`, `twostage_2`,
//!   `wronglock_N`);
//! - PCT at depths 3 and 5: lock-order and ordering bugs among a few distinct threads
//!   (`bluetooth_driver`, `deadlock01`);
//! - roles at depth 4 (PCT over spawn sites): one thread inside another's window while many
//!   copies of a third could close it (`reorder_10`/`20`, `twostage_20`/`100`), which the
//!   others find with a probability that falls with every copy;
//! - random: shallow bugs with many ways to hit them (`spinlock`, `lost_wakeup`).
//!
//! With this rotation the portfolio finds all 22 corpus programs within 1,000 schedules at
//! every one of 40 seeds.
//!
//! Each arm's choices depend only on the seed (PCT's and roles' also on what earlier
//! executions of their arm showed: the longest execution, the most roles), and an arm is
//! given the execution's seed as it is: the arm's `strategy_for` (`pos`, `pct:5:137`,
//! `roles:4:3`, `random`) run alone from that seed makes the same choices, which is how a
//! portfolio failure replays from its seed.

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

/// Arms by index into `PortfolioScheduler::arms` (POS, PCT 3, PCT 5, roles 4, random): POS,
/// PCT 5 and roles two slots in eight each, PCT 3 and random one.
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

    fn next_waiter(&mut self, waiters: &[u32]) -> Option<u32> {
        self.arms[self.active].next_waiter(waiters)
    }

    fn next_read(&mut self, stores: u32) -> Option<u32> {
        self.arms[self.active].next_read(stores)
    }

    fn next_word(&mut self) -> Option<u32> {
        self.arms[self.active].next_word()
    }

    fn next_bool(&mut self, kind: ChoiceKind) -> Option<bool> {
        self.arms[self.active].next_bool(kind)
    }

    fn spawned(&mut self, thread: u32, site: Option<&'static std::panic::Location<'static>>) {
        self.arms[self.active].spawned(thread, site)
    }

    fn runnable_changed(&mut self, thread: u32, runnable: bool) {
        self.arms[self.active].runnable_changed(thread, runnable)
    }

    fn past_bound(&mut self) {
        self.arms[self.active].past_bound()
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
