//! PCT over roles: threads spawned at the same place (the same `thread::spawn` call site)
//! play the same role, and priorities and change points are given to roles, not threads.
//!
//! PCT's bound, 1/(n k^(d-1)), pays for every thread (n) and every step (k). Many tests spawn
//! many copies of a few kinds of thread (20 writers and a reader, a pool of workers and a
//! monitor), and their bugs are about the kinds: "the reader runs between one writer's two
//! steps, before any other writer finishes" needs the reader above the other 19 writers,
//! which PCT arranges with probability ~1/20 and then needs its change point at one of ~100
//! steps. Here a role's threads share the role's priority (a random rank among roles, drawn
//! when the role first spawns; threads within it ranked at random), and a change point is
//! (role, step of the thread's own): the first thread of the role to take that step demotes
//! the whole role below every other. That bug then needs one order of three roles and one
//! step among a writer's few: a few percent per execution, whatever the writer count.
//!
//! The change point's step is drawn log-uniformly (a power of two, then uniformly below the
//! next), as how long a role's threads run is not known when they start; its role uniformly
//! below `r`, the most roles an execution has shown so far (adaptive, `roles:D`) or given
//! (`roles:D:R`), so, as for PCT, a failing execution is reported as the `roles:D:R` that
//! replays it from its seed alone.

use std::panic::Location;

use super::{
    below, one_in, rng_from_seed, ChoiceKind, ChoiceOdds, PastBound, RankedSet, Rng, RunLength,
    Scheduler, Strategy,
};

/// A thread's place in the order: its role's priority, then its own within the role.
/// Higher runs first.
type Key = (i64, i64);

/// Where a change point is: the first thread of `role` to take its `step`-th step (counted
/// in its own picks) demotes its whole role, or itself alone when `alone`.
#[derive(Clone, Copy, PartialEq, Eq)]
struct ChangePoint {
    role: u32,
    step: u32,
    alone: bool,
}

/// Change points' steps are drawn below `2^STEP_OCTAVES`.
const STEP_OCTAVES: usize = 10;

/// The role count assumed before any execution has shown one: main and two spawn sites, a
/// common test's shape (a search of one execution, as a state-machine case runs, has only
/// this guess to go on).
const FIRST_ROLES: u32 = 3;

/// A number for a spawn's call site: from the location's text, not its address, so the same
/// in every process and in every copy of an inlined call; never 0 (the main thread's).
fn site_number(at: &Location<'_>) -> u64 {
    // FNV-1a: a few dozen bytes per spawn, under this strategy only.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let line_col = (at.line() as u64) << 32 | at.column() as u64;
    for b in at.file().bytes().chain(line_col.to_le_bytes()) {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    h | 1
}

pub struct RolesScheduler {
    depth: usize,
    /// A fixed role count (`roles:D:R`): change points' roles are drawn below it.
    fixed_roles: Option<u32>,
    odds: ChoiceOdds,
    rng: Rng,
    /// Per role, by order of first spawn (the main thread's is 0): its spawn site, its
    /// priority and its threads.
    sites: Vec<u64>,
    role_priority: Vec<i64>,
    members: Vec<Vec<u32>>,
    /// Per thread: its role, its key (role priority, then its own within the role, or a
    /// demoted thread's alone), the picks it had.
    role_of: Vec<u32>,
    keys: Vec<Key>,
    picks: Vec<u32>,
    /// Change points not yet reached.
    change_points: Vec<ChangePoint>,
    /// The next demoted priority, below every one given so far.
    next_low: i64,
    run: RunLength,
    ranked: RankedSet<Key>,
    /// Past the step bound, picks are as with random time slices.
    past_bound: PastBound,
    /// The most roles an execution has shown (`None` before the first ended).
    max_roles_seen: Option<u32>,
}

impl RolesScheduler {
    pub fn new(depth: usize, fixed_roles: Option<u32>, odds: ChoiceOdds) -> Self {
        RolesScheduler {
            depth: depth.max(1),
            fixed_roles: fixed_roles.map(|r| r.max(1)),
            odds,
            rng: rng_from_seed(0),
            sites: Vec::new(),
            role_priority: Vec::new(),
            members: Vec::new(),
            role_of: Vec::new(),
            keys: Vec::new(),
            picks: Vec::new(),
            change_points: Vec::new(),
            next_low: 0,
            run: RunLength::default(),
            ranked: RankedSet::default(),
            past_bound: PastBound::default(),
            max_roles_seen: None,
        }
    }

    /// The role count the next execution draws its change points' roles below.
    fn next_roles(&self) -> u32 {
        self.fixed_roles
            .unwrap_or_else(|| match (self.max_roles_seen, self.sites.len() as u32) {
                (None, 0) => FIRST_ROLES,
                (seen, now) => seen.unwrap_or(0).max(now),
            })
            .max(1)
    }

    fn random_priority(&mut self) -> i64 {
        // Positive, above every demoted priority (those are <= 0).
        1 + (self.rng.next_u64() >> 2) as i64
    }

    /// A step of a thread's own, log-uniform below `2^STEP_OCTAVES`.
    fn draw_step(&mut self) -> u32 {
        let octave = below(&mut self.rng, STEP_OCTAVES) as u32;
        (1 << octave) + below(&mut self.rng, 1 << octave) as u32
    }

    /// Registers `thread` in the role of `site`, making the role if it is new.
    fn join_role(&mut self, thread: u32, site: u64) {
        let role = match self.sites.iter().position(|&s| s == site) {
            Some(r) => r,
            None => {
                let p = self.random_priority();
                self.sites.push(site);
                self.role_priority.push(p);
                self.members.push(Vec::new());
                self.sites.len() - 1
            }
        };
        let t = thread as usize;
        if self.role_of.len() <= t {
            self.role_of.resize(t + 1, 0);
            self.keys.resize(t + 1, (0, 0));
            self.picks.resize(t + 1, 0);
        }
        let own = self.random_priority();
        self.role_of[t] = role as u32;
        self.keys[t] = (self.role_priority[role], own);
        self.members[role].push(thread);
    }

    /// `thread`'s key; a thread nobody announced (the scheduler was swapped in mid-run)
    /// gets a role of its own.
    fn key(&mut self, thread: u32) -> Key {
        if self.keys.len() <= thread as usize || self.keys[thread as usize] == (0, 0) {
            self.join_role(thread, u64::MAX - thread as u64);
        }
        self.keys[thread as usize]
    }

    fn set_key(&mut self, thread: u32, key: Key) {
        let i = thread as usize;
        self.ranked.rekey(thread, key);
        self.keys[i] = key;
    }

    fn lowest(&mut self) -> i64 {
        self.next_low -= 1;
        self.next_low
    }

    /// A yielding or busy-waiting thread goes below everything, alone.
    fn demote_thread(&mut self, thread: u32) {
        self.key(thread);
        let low = self.lowest();
        self.set_key(thread, (low, 0));
    }

    /// A change point: the role goes below everything, and its threads are ranked anew
    /// among themselves, so where the other roles wait (main in a join) the change point
    /// still switches to another thread of the role.
    fn demote_role(&mut self, role: u32) {
        let low = self.lowest();
        let r = role as usize;
        self.role_priority[r] = low;
        for i in 0..self.members[r].len() {
            let t = self.members[r][i];
            let own = self.random_priority();
            self.set_key(t, (low, own));
        }
    }

    fn rank_joined(&mut self) {
        let mut ranked = std::mem::take(&mut self.ranked);
        ranked.rank_joined(|t| self.key(t));
        self.ranked = ranked;
    }

    fn scan(&mut self, runnable: &[u32]) -> u32 {
        let mut best = runnable[0];
        let mut best_key = self.key(best);
        for &t in &runnable[1..] {
            let key = self.key(t);
            if key > best_key {
                best = t;
                best_key = key;
            }
        }
        best
    }

    fn before_pick(&mut self, current: Option<u32>, yielding: bool) {
        if yielding || self.run.overstayed(current) {
            if let Some(c) = current {
                self.demote_thread(c);
            }
        }
    }

    fn after_pick(&mut self, best: u32) -> u32 {
        let t = best as usize;
        self.picks[t] += 1;
        let (role, step) = (self.role_of[t], self.picks[t]);
        let here = |c: &ChangePoint| c.role == role && c.step == step;
        if let Some(i) = self.change_points.iter().position(here) {
            match self.change_points.swap_remove(i).alone {
                true => self.demote_thread(best),
                false => self.demote_role(role),
            }
        }
        self.run.ran(best);
        best
    }
}

impl Scheduler for RolesScheduler {
    fn new_execution(&mut self, seed: u64) -> bool {
        if !self.sites.is_empty() {
            let now = self.sites.len() as u32;
            self.max_roles_seen = Some(self.max_roles_seen.map_or(now, |seen| seen.max(now)));
        }
        let roles = self.next_roles() as usize;
        self.rng = rng_from_seed(seed);
        self.sites.clear();
        self.role_priority.clear();
        self.members.clear();
        self.role_of.clear();
        self.keys.clear();
        self.picks.clear();
        self.next_low = 0;
        self.run.reset_seeded(seed);
        self.ranked = RankedSet::default();
        self.past_bound.reset();
        self.change_points = (1..self.depth)
            .map(|_| ChangePoint {
                role: below(&mut self.rng, roles) as u32,
                step: self.draw_step(),
                alone: one_in(&mut self.rng, 2),
            })
            .collect();
        true
    }

    fn spawned(&mut self, thread: u32, site: Option<&'static Location<'static>>) {
        self.join_role(thread, site.map_or(0, site_number));
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
        Some(below(&mut self.rng, stores as usize) as u32)
    }

    fn next_word(&mut self) -> Option<u32> {
        Some(self.rng.next_u32())
    }

    fn next_bool(&mut self, kind: ChoiceKind) -> Option<bool> {
        Some(one_in(&mut self.rng, self.odds.one_in(kind)))
    }

    fn strategy_for(&self, _seed: u64) -> Option<Strategy> {
        Some(Strategy::Roles {
            depth: self.depth,
            roles: Some(self.next_roles()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::priority_checks;
    use std::collections::BTreeSet;

    /// Thread 0 is main; the others are spawned at one of three sites.
    fn site(t: u32) -> u64 {
        if t == 0 {
            0
        } else {
            1 + t as u64 % 3
        }
    }

    /// A scheduler that knows the four roles, told of `threads` threads.
    fn announced(depth: usize, seed: u64, threads: u32) -> RolesScheduler {
        let mut s = RolesScheduler::new(depth, Some(4), ChoiceOdds::default());
        s.new_execution(seed);
        for t in 0..threads {
            s.join_role(t, site(t));
        }
        s
    }

    fn roles(seed: u64) -> Box<dyn Scheduler> {
        Box::new(announced(4, seed, 40))
    }

    #[test]
    fn the_ranked_pick_is_the_scans_pick() {
        priority_checks::ranked_pick_is_the_scans_pick(roles);
    }

    #[test]
    fn a_busy_waiter_without_yields_gives_way() {
        priority_checks::a_busy_waiter_gives_way(roles);
    }

    #[test]
    fn a_yielding_spinner_never_starves_the_holder() {
        priority_checks::a_yielding_spinner_never_starves_the_holder(roles);
    }

    /// Runs threads `0..threads` (all runnable, each ending after `steps` picks) and returns
    /// the roles in the order their threads were picked.
    fn picked_roles(s: &mut RolesScheduler, threads: u32, steps: u32) -> Vec<u64> {
        let mut runnable: Vec<u32> = (0..threads).collect();
        let mut left = vec![steps; threads as usize];
        let mut order = Vec::new();
        let mut current = None;
        while runnable.len() > 1 {
            let t = s.next_thread(&runnable, current, false).unwrap();
            order.push(site(t));
            left[t as usize] -= 1;
            current = Some(t);
            if left[t as usize] == 0 {
                runnable.retain(|&r| r != t);
                current = None;
            }
        }
        order
    }

    /// Without change points a role's threads run as one block: a role never resumes once
    /// another has run, and every order of the four roles comes up.
    #[test]
    fn a_roles_threads_run_together() {
        let mut orders = BTreeSet::new();
        for seed in 0..400 {
            let mut s = announced(1, seed, 13);
            let mut roles = picked_roles(&mut s, 13, 3);
            roles.dedup();
            let distinct: BTreeSet<u64> = roles.iter().copied().collect();
            assert_eq!(roles.len(), distinct.len(), "seed {seed}: {roles:?}");
            orders.insert(roles);
        }
        assert_eq!(orders.len(), 24, "{orders:?}");
    }

    /// A change point that demotes a role puts every thread of it below the other roles: the
    /// role is interrupted once, and resumes only when no other role can run.
    #[test]
    fn a_change_point_demotes_the_whole_role() {
        let mut interrupted = 0;
        for seed in 0..400 {
            let mut s = announced(2, seed, 13);
            let cp = s.change_points[0];
            let mut roles = picked_roles(&mut s, 13, 3);
            roles.dedup();
            // Main (role 0) is only one thread: a change point there changes nothing visible.
            if roles.len() > 4 {
                interrupted += 1;
                assert!(
                    !cp.alone,
                    "seed {seed}: a thread alone was demoted: {roles:?}"
                );
                assert_eq!(roles.len(), 5, "seed {seed}: {roles:?}");
                // The interrupted role is the last to run, after all the others.
                let last = *roles.last().unwrap();
                assert_eq!(roles.iter().filter(|&&r| r == last).count(), 2, "{roles:?}");
            }
        }
        assert!(interrupted > 10, "{interrupted} of 400 interrupted a role");
    }

    /// The role count change points are drawn below grows with what executions show, and is
    /// what `strategy_for` reports before the execution it applies to.
    #[test]
    fn the_role_count_is_learned_and_reported() {
        let mut s = RolesScheduler::new(3, None, ChoiceOdds::default());
        let roles = |s: &RolesScheduler| match s.strategy_for(0) {
            Some(Strategy::Roles { roles, .. }) => roles.unwrap(),
            other => panic!("{other:?}"),
        };
        assert_eq!(roles(&s), FIRST_ROLES);
        s.new_execution(1);
        for t in 0..7 {
            s.join_role(t, site(t));
        }
        assert_eq!(roles(&s), 4);
        s.new_execution(2);
        assert!(s.change_points.iter().all(|c| c.role < 4));
        s.join_role(0, 0);
        assert_eq!(roles(&s), 4, "a smaller execution does not shrink it");
        // What an execution showed replaces the first guess, below it too.
        let mut s = RolesScheduler::new(3, None, ChoiceOdds::default());
        s.new_execution(1);
        s.join_role(0, 0);
        s.join_role(1, 1);
        s.new_execution(2);
        assert_eq!(roles(&s), 2);
        assert!(s.change_points.iter().all(|c| c.role < 2));
    }
}
