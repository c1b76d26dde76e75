//! Scheduling strategies: each decides, and nothing else.
//!
//! The execution owns thread state and asks a `Scheduler` at every scheduling point which
//! runnable thread goes next, at every nondeterministic yes/no point (spurious wakeup,
//! weak CAS failure) which way it goes, and under the relaxed memory model which store a
//! load reads. Strategies never touch thread state (shuttle's split).

use std::panic::Location;

mod dfs;
mod dpor;
#[cfg(test)]
mod dpor_classes;
mod dpor_steps;
mod lazy_rank;
mod oldest_first;
mod pct;
mod portfolio;
mod pos;
mod pos_groups;
mod random;
mod replay;
mod rng;
mod roles;

pub use dfs::DfsScheduler;
pub use dpor::DporScheduler;
pub use pct::PctScheduler;
pub use portfolio::PortfolioScheduler;
pub use pos::PosScheduler;
pub use random::RandomScheduler;
pub use replay::ReplayScheduler;
pub use roles::RolesScheduler;

/// What a yes/no choice is about, so strategies can weigh them differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChoiceKind {
    /// Does a `Condvar::wait*` or `park*` return without a notification?
    SpuriousWakeup,
    /// Does a `compare_exchange_weak` that would succeed fail spuriously?
    WeakCasFailure,
    /// Does a reader arriving while a writer waits for an `RwLock` wait behind it (std's
    /// futex lock prefers writers; the API leaves it unspecified)?
    WriterPreference,
    /// Does a timer the time mode lets compete fire before the next untimed step
    /// (`quite-slow-random`, `time-random`)?
    TimerFirst,
}

impl ChoiceKind {
    /// A spurious event (a wakeup or a weak-CAS failure): an adversary's move that repeats
    /// a wait or CAS loop.
    pub(crate) fn is_spurious(self) -> bool {
        matches!(
            self,
            ChoiceKind::SpuriousWakeup | ChoiceKind::WeakCasFailure
        )
    }
}

/// What an exhaustive strategy (`dfs`, `dpor`) explored once it ran out of schedules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Covered {
    /// The preemption bound (`usize::MAX`: none).
    pub bound: usize,
    /// Some schedules needed more preemptions than the bound.
    pub pruned: bool,
    /// Without a bound, some schedules needed more than `UNBOUNDED_SPURIOUS` spurious events.
    pub spurious_limited: bool,
}

/// A systematic search's check that its runs replay alike: each execution must reach the
/// choices it replays (its prefix of an earlier run). One that ends before them took
/// another, shorter path (a static an earlier run set), and the search proves nothing.
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct ReplayCheck {
    /// Choice points the running execution replays.
    replayed: usize,
    diverged: bool,
}

impl ReplayCheck {
    /// Between executions: the one that ended made `made` choices; the next, if there is
    /// one (`more`), replays `path` of them. Returns `more`.
    pub(crate) fn next(&mut self, made: usize, more: bool, path: usize) -> bool {
        self.diverged |= made < self.replayed;
        self.replayed = if more { path } else { 0 };
        more
    }

    pub(crate) fn diverged(&self) -> bool {
        self.diverged
    }
}

/// Without a preemption bound, the spurious wakeups and weak-CAS failures an exhaustive
/// search lets one execution have. Each turns a wait or CAS loop once more, so with no
/// limit a loop has a schedule for every number of turns and the search never ends
/// (`lost_wakeup`'s fixed twin). One is what the bugs they expose take: a wait not in a
/// loop, a weak compare-exchange not retried. Under a bound each costs a preemption
/// instead, which ends the search too.
pub const UNBOUNDED_SPURIOUS: usize = 1;

/// An execution's spurious events counted against `UNBOUNDED_SPURIOUS` (`dfs`, `dpor`).
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct SpuriousLimit {
    /// Spurious events in this execution so far.
    taken: usize,
    /// Some spurious event was left out, in any execution of the search.
    limited: bool,
}

impl SpuriousLimit {
    /// A new execution: none taken yet.
    pub(crate) fn start(&mut self) {
        self.taken = 0;
    }

    /// A choice point replayed from the path: a spurious one answered yes counts.
    pub(crate) fn replayed(&mut self, spurious: bool, yes: bool) {
        self.taken += usize::from(spurious && yes);
    }

    /// Whether a new choice point may offer its spurious answer under `bound` (always with
    /// a bound, where it costs a preemption instead); a refusal is remembered.
    pub(crate) fn allows(&mut self, spurious: bool, bound: usize) -> bool {
        let cut = spurious && bound == usize::MAX && self.taken >= UNBOUNDED_SPURIOUS;
        self.limited |= cut;
        !cut
    }

    pub(crate) fn limited(&self) -> bool {
        self.limited
    }
}

/// A strategy for picking the next thread.
pub trait Scheduler {
    /// Prepares for a new execution run from `seed`. Returns false when the strategy has
    /// nothing left to explore (a replay that already ran, an exhausted search).
    fn new_execution(&mut self, seed: u64) -> bool;

    /// Picks the thread that performs the next operation, from `runnable` (thread indices,
    /// at least two: sorted, except when `next_waiter` passes an object's waiters in the
    /// order they came, so an answer must not rely on the order). `current` is the thread
    /// that reached the scheduling point if it is still runnable; `yielding` is true when it
    /// asked to yield. `None` means the strategy cannot go on (a replayed schedule diverged
    /// from the program).
    fn next_thread(
        &mut self,
        runnable: &[u32],
        current: Option<u32>,
        yielding: bool,
    ) -> Option<u32>;

    /// Picks which of `waiters` (at least two blocked threads, in the order they came) an
    /// object wakes: the one a `notify_one` or a mutex's release wakes. By default the pick
    /// `next_thread` makes among them.
    fn next_waiter(&mut self, waiters: &[u32]) -> Option<u32> {
        self.next_thread(waiters, None, false)
    }

    /// Decides a yes/no nondeterministic choice. `None`: as for `next_thread`.
    fn next_bool(&mut self, kind: ChoiceKind) -> Option<bool>;

    /// Picks which of `stores` stores (at least two) a load reads under the relaxed memory
    /// model: 0 is the newest in modification order, `k` the `k`-th before it. `None`: as
    /// for `next_thread`.
    fn next_read(&mut self, stores: u32) -> Option<u32>;

    /// Draws a word of test data (`Ctx::choose_data`: a property test's input seed), which a
    /// replay must reproduce like any other choice. A sampling strategy draws it from its
    /// seed's stream; a systematic one (DFS, DPOR) answers 0, so it explores the schedules of
    /// one input. `None`: as for `next_thread`.
    fn next_word(&mut self) -> Option<u32>;

    /// Told at every scheduling point which object the thread's next operation acts on: a
    /// number equal for the same object within an execution (0: none, e.g. a spawn). POS
    /// uses it to re-draw the priorities of racing operations.
    #[inline]
    fn pending(&mut self, _thread: u32, _resource: u64) {}

    /// `pending` with the operation's name (`"Mutex::lock"`), for a strategy that needs to
    /// know what the operation does to its object (DPOR's footprints).
    #[inline]
    fn pending_op(&mut self, thread: u32, _op: &'static str, resource: u64) {
        self.pending(thread, resource)
    }

    /// Told when `thread` is created, with the call that spawned it (`None` for the main
    /// thread). PCT over roles ranks by it.
    #[inline]
    fn spawned(&mut self, _thread: u32, _site: Option<&'static Location<'static>>) {}

    /// Told when a thread joins (`true`) or leaves (`false`) the execution's runnable set, so
    /// a strategy can keep its own ordered view of it instead of scanning the set at every
    /// decision (PCT). Only the execution's runnable set: candidate lists (which waiter a
    /// notify wakes, which timer fires) are not tracked.
    #[inline]
    fn runnable_changed(&mut self, _thread: u32, _runnable: bool) {}

    /// Told when the execution passes its step bound (a livelock, a runaway loop, or a long
    /// test): a strategy whose picks are not random (PCT's and roles' priorities, which take
    /// busy threads in turns) picks as with random time slices from here on
    /// (`past_bound_pick`). In turns, the same thread can
    /// be cut off at the same point of its loop every time, and a correct test that waits
    /// for every thread to get somewhere never ends (crossbeam-deque's `no_starvation`
    /// under `pct:3`: 100 million steps), which no OS scheduler's jitter would allow.
    #[inline]
    fn past_bound(&mut self) {}

    /// Told when `thread` ends, just before it leaves the runnable set for good (a thread
    /// that blocks leaves it too, without this call).
    #[inline]
    fn ended(&mut self, _thread: u32) {}

    /// Told when `thread` releases the lock `resource` (a mutex unlocked, or released by a
    /// `Condvar` wait): DPOR knows then that a lock of it must come after this step.
    #[inline]
    fn released(&mut self, _thread: u32, _resource: u64) {}

    /// Told when `thread` takes the lock `resource` (a mutex or rwlock locked, or re-locked
    /// at the end of a `Condvar` wait).
    #[inline]
    fn acquired(&mut self, _thread: u32, _resource: u64) {}

    /// `next_thread` when `runnable` is the execution's whole runnable set (the one
    /// `runnable_changed` describes): a strategy that tracks it may answer without a scan.
    #[inline]
    fn next_runnable(
        &mut self,
        runnable: &[u32],
        current: Option<u32>,
        yielding: bool,
    ) -> Option<u32> {
        self.next_thread(runnable, current, yielding)
    }

    /// The strategy that, run alone from `seed`, makes exactly the choices the next execution
    /// from `seed` makes here: `random`, `pos`, PCT with this execution's `k` (`pct:5:137`),
    /// a portfolio's arm for that seed. `None` for a strategy that has no such spelling
    /// (`dfs`, `dpor`, a replay). Asked before or after `new_execution(seed)`; it is what a
    /// failure records with its seed and what an isolated execution runs under.
    fn strategy_for(&self, _seed: u64) -> Option<Strategy> {
        None
    }

    /// A replay's: the last answer asked for was past the recorded choices' end (not a
    /// choice the program did not offer).
    fn ran_out(&self) -> bool {
        false
    }

    /// Whether an execution's seed alone determines it, so it can run again in a fresh
    /// process. False for a search that carries its position from one execution to the next
    /// (dfs, dpor): in a fresh process an execution runs from that position
    /// (`save_position`).
    fn by_seed(&self) -> bool {
        true
    }

    /// A systematic search saw an execution end before the choices it replayed: the test's
    /// runs in this process differ, and exhausting the search proves nothing.
    fn diverged(&self) -> bool {
        false
    }

    /// A systematic search's position (the path the next execution replays and extends,
    /// with what is left to try along it), so that execution can run in a fresh process (a
    /// test that keeps state in statics) under a scheduler that `resume`s it there, and the
    /// search goes on from the position that one then saves. Saved after an execution, it
    /// first does the bookkeeping that needs the execution's own steps (DPOR's races with
    /// the main thread's end). `None`: a strategy without one (its seed replays an execution).
    fn save_position(&mut self) -> Option<Vec<u8>> {
        None
    }

    /// Takes up a position `save_position` wrote (in this process or a fresh one), keeping
    /// what only the searching process holds (DFS's queue of later rounds).
    fn resume(&mut self, _position: &[u8]) -> Result<(), String> {
        Err("this strategy has no position to resume".to_string())
    }

    /// After `new_execution` returned false: what the strategy covered, if it explored its
    /// whole space within a preemption bound.
    fn exhaustive(&self) -> Option<Covered> {
        None
    }
}

/// A systematic search's position as bytes: bincode with variable-length integers, a few
/// bytes per choice point (a long execution's path has hundreds of thousands).
pub(crate) mod position {
    use bincode::Options;

    pub(crate) fn save<T: serde::Serialize>(value: &T) -> Option<Vec<u8>> {
        bincode::DefaultOptions::new().serialize(value).ok()
    }

    pub(crate) fn read<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
        bincode::DefaultOptions::new()
            .deserialize(bytes)
            .map_err(|e| e.to_string())
    }
}

pub use pulse_protocol::Strategy;

/// Choice points one thread may run in a row while others could run before a strategy makes
/// it give way as if it had yielded: a busy-wait loop without `yield_now` (`loop { if let
/// Ok(x) = q.pop() { .. } }`) under a strict-priority strategy (PCT, POS, DFS's default)
/// would otherwise starve the thread it waits for until the step bound calls it a livelock,
/// which no fair OS scheduler would do.
pub(crate) const FAIR_RUN: u32 = 64;

/// The longest run a seeded `RunLength` allows: its patience is drawn from
/// `FAIR_RUN / 2 .. LONGEST_RUN`, `FAIR_RUN` on average.
pub(crate) const LONGEST_RUN: u32 = FAIR_RUN + FAIR_RUN / 2;

/// Counts the choice points the same thread was picked at in a row.
pub(crate) struct RunLength {
    last: Option<u32>,
    run: u32,
    /// Choice points in a row after which the thread gives way (`FAIR_RUN`).
    patience: u32,
    /// Draws each run's patience when seeded (`reset_seeded`); `None`: always `patience`.
    jitter: Option<u64>,
}

impl Default for RunLength {
    fn default() -> Self {
        RunLength::with_patience(FAIR_RUN)
    }
}

impl RunLength {
    pub(crate) fn with_patience(patience: u32) -> Self {
        RunLength {
            last: None,
            run: 0,
            patience,
            jitter: None,
        }
    }

    /// Every run gives way after the same number of choice points (the minimizer's rule:
    /// it replays a schedule whose give-ways it must not move).
    pub(crate) fn reset(&mut self) {
        *self = RunLength::with_patience(self.patience);
    }

    /// Each run's patience is drawn from `seed`'s own stream (the strategy's generator is
    /// left alone, so its other draws stay as they were). A fixed patience is a period: a
    /// loop of 4 choice points (lock, two loads, unlock) given way after exactly 64 always
    /// gives way holding its lock, and the thread waiting for it never gets it (crossbeam-
    /// channel 0.3.9's `zero::stress_iter` under POS: a false livelock).
    pub(crate) fn reset_seeded(&mut self, seed: u64) {
        *self = RunLength::with_patience(FAIR_RUN);
        self.jitter = Some(seed ^ 0x5eed_f00d_0ffa_1700);
        self.draw_patience();
    }

    fn draw_patience(&mut self) {
        if let Some(state) = &mut self.jitter {
            // splitmix64: the finalizer of the next state in a Weyl sequence.
            let z = pulse_protocol::seed_mix(*state);
            *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            self.patience = FAIR_RUN / 2 + (z % u64::from(LONGEST_RUN - FAIR_RUN / 2)) as u32;
        }
    }

    /// Whether `current` has run its patience's worth of choice points in a row.
    #[inline]
    pub(crate) fn overstayed(&self, current: Option<u32>) -> bool {
        current.is_some() && current == self.last && self.run >= self.patience
    }

    #[inline]
    pub(crate) fn ran(&mut self, t: u32) {
        if self.last == Some(t) {
            self.run += 1;
        } else {
            if self.last.is_some() {
                self.draw_patience();
            }
            self.last = Some(t);
            self.run = 1;
        }
    }
}

/// Probabilities the randomised strategies use for yes/no choices, as "1 in N".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChoiceOdds {
    pub spurious_wakeup: u32,
    pub weak_cas_failure: u32,
    pub writer_preference: u32,
    pub timer_first: u32,
}

impl Default for ChoiceOdds {
    fn default() -> Self {
        // Rare enough not to drown the search in retries, common enough that 1,000
        // schedules see many of them.
        // Writer preference is a platform policy, not a rare event: a fair coin.
        // A competing timer going first is a slow step: common enough that a window of one
        // step is hit in a few schedules, rare enough that a polling loop with a short
        // timeout (`park_timeout(100µs)`) does not wake on nearly every decision and turn a
        // long test into a step-limit hit.
        ChoiceOdds {
            spurious_wakeup: 8,
            weak_cas_failure: 8,
            writer_preference: 2,
            timer_first: 4,
        }
    }
}

impl ChoiceOdds {
    fn one_in(&self, kind: ChoiceKind) -> u32 {
        match kind {
            ChoiceKind::SpuriousWakeup => self.spurious_wakeup,
            ChoiceKind::WeakCasFailure => self.weak_cas_failure,
            ChoiceKind::WriterPreference => self.writer_preference,
            ChoiceKind::TimerFirst => self.timer_first,
        }
    }
}

/// What `runnable_changed` told a strategy that keeps its runnable threads ranked (PCT,
/// POS): which threads are runnable, which of them it has ranked, and which joined since
/// its last decision, ranked lazily then so priorities are drawn when a decision first sees
/// a thread, as a scan of the runnable set draws them.
#[derive(Default)]
pub(crate) struct RunnableNotices {
    runnable: Vec<bool>,
    ranked: Vec<bool>,
    joined: Vec<u32>,
}

impl RunnableNotices {
    /// Records `thread` joining or leaving the runnable set; true when it left while ranked
    /// (the caller takes it out of its ranking).
    pub(crate) fn changed(&mut self, thread: u32, runnable: bool) -> bool {
        let i = thread as usize;
        if self.runnable.len() <= i {
            self.runnable.resize(i + 1, false);
            self.ranked.resize(i + 1, false);
        }
        self.runnable[i] = runnable;
        if runnable {
            self.joined.push(thread);
            false
        } else {
            std::mem::replace(&mut self.ranked[i], false)
        }
    }

    /// Calls `rank` for each thread that joined since the last call, is still runnable and
    /// is not ranked yet, in thread order, and marks it ranked.
    pub(crate) fn rank_joined(&mut self, mut rank: impl FnMut(u32)) {
        self.joined.sort_unstable();
        self.joined.dedup();
        for t in self.joined.drain(..) {
            let i = t as usize;
            if self.runnable[i] && !self.ranked[i] {
                rank(t);
                self.ranked[i] = true;
            }
        }
    }

    pub(crate) fn is_runnable(&self, thread: u32) -> bool {
        self.runnable.get(thread as usize) == Some(&true)
    }

    pub(crate) fn is_ranked(&self, thread: u32) -> bool {
        self.ranked.get(thread as usize) == Some(&true)
    }
}

/// A strict-priority strategy's ranked view of the execution's runnable set (PCT, roles): the
/// runnable threads by (key, thread), kept from `runnable_changed`, so a decision takes the
/// highest in O(log n) whatever the thread count.
pub(crate) struct RankedSet<K> {
    by_key: lazy_rank::LazyRank<K>,
    notices: RunnableNotices,
}

impl<K> Default for RankedSet<K> {
    fn default() -> Self {
        RankedSet {
            by_key: lazy_rank::LazyRank::default(),
            notices: RunnableNotices::default(),
        }
    }
}

impl<K: Ord + Copy> RankedSet<K> {
    /// `runnable_changed`: a thread that leaves leaves the ranking.
    pub(crate) fn changed(&mut self, thread: u32, runnable: bool) {
        if self.notices.changed(thread, runnable) {
            self.by_key.remove(thread);
        }
    }

    /// Ranks the threads that joined since the last decision by `key_of`.
    pub(crate) fn rank_joined(&mut self, mut key_of: impl FnMut(u32) -> K) {
        let by_key = &mut self.by_key;
        self.notices.rank_joined(|t| by_key.set(t, key_of(t)));
    }

    /// A thread's key is `key` now.
    pub(crate) fn rekey(&mut self, thread: u32, key: K) {
        if self.notices.is_ranked(thread) {
            self.by_key.set(thread, key);
        }
    }

    /// The highest-keyed thread, if the view is the whole runnable set of `runnable` threads
    /// (it is not when the strategy missed notices, swapped in mid-execution).
    pub(crate) fn top(&mut self, runnable: usize) -> Option<u32> {
        match self.by_key.top() {
            Some((_, t)) if self.by_key.len() == runnable => Some(t),
            _ => None,
        }
    }
}

/// Builds the scheduler for a strategy; `relaxed_memory`: a systematic search runs the
/// relaxed memory model (`Memory::relaxed_for_systematic_search`).
pub fn for_strategy(
    strategy: &Strategy,
    odds: ChoiceOdds,
    relaxed_memory: bool,
) -> Box<dyn Scheduler> {
    match strategy {
        Strategy::Random => Box::new(RandomScheduler::new(odds)),
        Strategy::Pct { depth, k } => Box::new(PctScheduler::new(*depth, *k, odds)),
        Strategy::Pos => Box::new(PosScheduler::new(odds)),
        Strategy::Roles { depth, roles } => Box::new(RolesScheduler::new(*depth, *roles, odds)),
        Strategy::Dfs { bound } => Box::new(DfsScheduler::new(*bound)),
        Strategy::Dpor { bound } => {
            Box::new(DporScheduler::new(*bound).relaxed_memory(relaxed_memory))
        }
        Strategy::Portfolio => Box::new(PortfolioScheduler::new(odds)),
    }
}

pub(crate) use rng::Rng;

pub(crate) fn rng_from_seed(seed: u64) -> Rng {
    Rng::seed_from_u64(seed)
}

/// A uniform index below `n` (Lemire's multiply-shift; the tiny bias is irrelevant here
/// and the result is deterministic for a seed).
#[inline]
pub(crate) fn below(rng: &mut Rng, n: usize) -> usize {
    ((rng.next_u32() as u64 * n as u64) >> 32) as usize
}

#[inline]
pub(crate) fn one_in(rng: &mut Rng, n: u32) -> bool {
    n != 0 && below(rng, n as usize) == 0
}

/// Whether the execution is past its step bound (`Scheduler::past_bound`), for a strategy
/// whose picks follow priorities (PCT, roles).
#[derive(Default)]
pub(crate) struct PastBound(bool);

impl PastBound {
    pub(crate) fn set(&mut self) {
        self.0 = true;
    }

    pub(crate) fn reset(&mut self) {
        self.0 = false;
    }

    /// `best`, or past the bound a pick as with random time slices (`past_bound_pick`); the
    /// strategy's bookkeeping goes on as for its own pick.
    pub(crate) fn or(
        &self,
        best: u32,
        rng: &mut Rng,
        runnable: &[u32],
        current: Option<u32>,
        yielding: bool,
    ) -> u32 {
        match self.0 {
            true => past_bound_pick(rng, runnable, current, yielding),
            false => best,
        }
    }
}

/// At a choice point past the step bound, one in this many switches threads.
const PAST_BOUND_SWITCH: u32 = 16;

/// A pick past the step bound (`Scheduler::past_bound`), for a strategy whose picks follow
/// priorities (PCT, roles): as an OS scheduler with random time slices, the running thread
/// (`current`, when runnable) goes on, and at one choice point in `PAST_BOUND_SWITCH`, or
/// when it yields, any runnable thread runs, at random. No fixed order, so no thread is cut
/// off at the same point of its loop every time; few switches, so a long test's locks are
/// not handed over at every step (a switch at every step made a spin on a lock 1.6x slower
/// per step).
fn past_bound_pick(rng: &mut Rng, runnable: &[u32], current: Option<u32>, yielding: bool) -> u32 {
    match current {
        Some(c) if !yielding && !one_in(rng, PAST_BOUND_SWITCH) => c,
        _ => runnable[below(rng, runnable.len())],
    }
}

/// Test support: adds or removes up to two random threads (below `threads`) from the sorted
/// `runnable` set, never leaving fewer than two, telling `ranked` each change.
#[cfg(test)]
pub(crate) fn churn_runnable(
    rng: &mut Rng,
    runnable: &mut Vec<u32>,
    ranked: &mut dyn Scheduler,
    threads: usize,
) {
    for _ in 0..below(rng, 3) {
        let t = below(rng, threads) as u32;
        match runnable.binary_search(&t) {
            Ok(i) if runnable.len() > 2 => {
                runnable.remove(i);
                ranked.runnable_changed(t, false);
            }
            Err(i) => {
                runnable.insert(i, t);
                ranked.runnable_changed(t, true);
            }
            _ => {}
        }
    }
}

/// Checks every strict-priority strategy (PCT, roles) must pass, for their unit tests.
#[cfg(test)]
pub(crate) mod priority_checks {
    use super::*;

    /// The ranked pick (`next_runnable`, told of every change to the runnable set) picks what
    /// the scan over the set picks, step for step, through spawns, blocks, yields and change
    /// points. `make(seed)` is a scheduler ready for an execution from `seed`.
    pub(crate) fn ranked_pick_is_the_scans_pick(make: impl Fn(u64) -> Box<dyn Scheduler>) {
        for seed in 0..100 {
            let (mut ranked, mut scanned) = (make(seed), make(seed));
            let mut rng = rng_from_seed(seed + 1000);
            let mut runnable: Vec<u32> = vec![0];
            ranked.runnable_changed(0, true);
            let mut current = 0;
            for _ in 0..500 {
                // Spawn, block or wake a few threads at random.
                churn_runnable(&mut rng, &mut runnable, &mut *ranked, 40);
                if runnable.len() < 2 {
                    continue;
                }
                let cur = runnable.binary_search(&current).ok().map(|_| current);
                let yielding = below(&mut rng, 10) == 0;
                let a = ranked.next_runnable(&runnable, cur, yielding);
                let b = scanned.next_thread(&runnable, cur, yielding);
                assert_eq!(a, b, "seed {seed}");
                current = a.unwrap();
            }
        }
    }

    /// A thread that busy-waits without yielding is demoted after `FAIR_RUN` choice points
    /// in a row, so the thread it waits for runs.
    pub(crate) fn a_busy_waiter_gives_way(make: impl Fn(u64) -> Box<dyn Scheduler>) {
        for seed in 0..200 {
            let mut s = make(seed);
            let (mut current, mut run, mut longest) = (0, 0, 0);
            for _ in 0..1000 {
                let next = s.next_thread(&[0, 1], Some(current), false).unwrap();
                run = if next == current { run + 1 } else { 1 };
                longest = longest.max(run);
                current = next;
            }
            assert!(longest <= LONGEST_RUN, "seed {seed}: {longest}");
        }
    }

    /// A spin-waiting thread (always yielding) must not starve the thread it waits for,
    /// even after a change point demotes that thread (a floor on demoted priorities once
    /// made them tie, and the tie went to the spinner forever).
    pub(crate) fn a_yielding_spinner_never_starves_the_holder(
        make: impl Fn(u64) -> Box<dyn Scheduler>,
    ) {
        for seed in 0..200 {
            let mut s = make(seed);
            let mut current = 0;
            let mut last_holder_step = 0;
            for step in 0..300 {
                // Thread 0 spins (yields), thread 1 holds the lock and never yields.
                current = s.next_thread(&[0, 1], Some(current), current == 0).unwrap();
                if current == 1 {
                    last_holder_step = step;
                }
            }
            assert!(
                last_holder_step >= 290,
                "seed {seed}: the holder stopped running at step {last_holder_step}"
            );
        }
    }
}
