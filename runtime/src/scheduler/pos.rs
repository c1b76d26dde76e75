//! Partial order sampling (Yuan, Yang and Gu, "Partial Order Aware Concurrency Sampling",
//! CAV 2018; Fray's default). Every thread's next operation has a random priority and the
//! highest-priority runnable thread runs. After it runs, its priority is drawn again, and so
//! is the priority of every thread whose next operation touches the same object (the events
//! that race with the one just run). Independent operations keep their relative order, so
//! the sampling is spread over partial orders rather than over interleavings: a bug that
//! needs two racing operations in one order is found with probability that does not shrink
//! with the number of unrelated steps around them, as it does under uniform random walks.
//!
//! Objects are known by `Scheduler::pending`: the execution says, at each scheduling point,
//! which object the thread's next operation acts on. Without one (spawn, yield) only the
//! thread that ran is re-drawn. Every access to an object counts as racing with every other
//! (no read/read distinction): conservative, and cheap.
//!
//! Many racers re-drawn at once are drawn lazily (`pos_groups`), so that n threads queued
//! on one barrier or lock cost O(1) per step, not O(n).

use super::lazy_rank::LazyRank;
use super::oldest_first::OldestFirst;
use super::pos_groups::{Drawn, Groups, GROUP_FROM};
use super::{
    one_in, rng_from_seed, ChoiceKind, ChoiceOdds, Rng, RunLength, RunnableNotices, Scheduler,
    Strategy,
};
use crate::fast_hash::FastMap;

pub struct PosScheduler {
    rng: Rng,
    odds: ChoiceOdds,
    /// Priority per thread index; 0 = not drawn yet. Drawn priorities are >= `DRAWN`; a
    /// yielding thread goes below every other priority (`next_low`, counting down) until it
    /// runs again, so the last to yield is the last to run and spinners take turns.
    priorities: Vec<u64>,
    next_low: u64,
    /// The object of each thread's next operation (0: none known).
    pending: Vec<u64>,
    /// A thread that runs about `FAIR_RUN` choice points in a row goes last as if it yielded.
    run: RunLength,
    /// Choice points counted over `next_thread` calls.
    step: u64,
    /// Per thread: the step it was last offered at, and since when it has waited (runnable
    /// at every choice point since, and not picked).
    offered: Vec<u64>,
    waiting_since: Vec<u64>,
    /// Per thread: the step it last left the ranked view at. One that leaves and joins
    /// again between two choice points was offered at both, so it keeps its waiting time,
    /// as the scan counts.
    left_at: Vec<u64>,
    /// The ranked view of the execution's runnable set (`runnable_changed`), so a decision
    /// costs O(log n + racers) whatever the thread count: runnable threads by (priority,
    /// thread) and by (waiting since, thread), and the threads whose next operation is on
    /// each object. Kept only while many threads are runnable (`ranking`).
    ranked: Ranked,
    /// The ranked view is in step and decides; otherwise a scan of the runnable set does.
    ranking: bool,
    /// Build the ranked view when more than this many threads are runnable, drop it at this
    /// many or fewer (`RANK_ABOVE`, `SCAN_UP_TO`).
    rank_above: usize,
    scan_up_to: usize,
    /// Racers re-drawn together, their priorities drawn lazily; used from `group_from`
    /// racers on (`GROUP_FROM`), and on an object whose group is still undrawn.
    groups: Groups,
    group_from: usize,
    /// Scratch: the racers of the thread that runs.
    racers: Vec<u32>,
}

/// Below these sizes a scan beats the ranked view: its B-tree updates (every racer's
/// re-draw moves it) made POS 3x slower per execution than random on `wronglock_10`
/// (11 threads on one lock), where the scan is as fast as random. The gap between the two
/// keeps a runnable set that hovers around one size from rebuilding the view at every step.
const RANK_ABOVE: usize = 64;
const SCAN_UP_TO: usize = 32;

#[derive(Default)]
struct Ranked {
    by_priority: LazyRank<u64>,
    /// Longest waiting first: (since, thread), lowest on top.
    by_wait: OldestFirst,
    /// Ranked: in the two sets (its priority drawn).
    notices: RunnableNotices,
    /// Object -> the ranked threads (runnable, priority drawn) whose next operation is on it.
    on_object: FastMap<u64, Vec<u32>>,
}

/// The lowest drawn priority; yielded threads' priorities count down from just below it.
pub(super) const DRAWN: u64 = 1 << 40;

impl PosScheduler {
    pub fn new(odds: ChoiceOdds) -> Self {
        PosScheduler {
            rng: rng_from_seed(0),
            odds,
            priorities: Vec::new(),
            next_low: DRAWN,
            pending: Vec::new(),
            run: RunLength::default(),
            step: 0,
            offered: Vec::new(),
            waiting_since: Vec::new(),
            left_at: Vec::new(),
            ranked: Ranked::default(),
            ranking: false,
            rank_above: RANK_ABOVE,
            scan_up_to: SCAN_UP_TO,
            groups: Groups::default(),
            group_from: GROUP_FROM,
            racers: Vec::new(),
        }
    }

    /// Groups re-draws of `racers` or more.
    #[cfg(test)]
    fn grouped_from(mut self, racers: usize) -> Self {
        self.group_from = racers;
        self
    }

    /// Draws every re-drawn racer at once, however many (as before groups).
    #[cfg(test)]
    fn never_grouped(self) -> Self {
        self.grouped_from(usize::MAX)
    }

    /// Decides by the ranked view at every size (its unit tests compare it with the scan).
    #[cfg(test)]
    fn always_ranked(mut self) -> Self {
        self.rank_above = 0;
        self.scan_up_to = 0;
        self
    }

    /// Decides by the scan at every size.
    #[cfg(test)]
    fn never_ranked(mut self) -> Self {
        self.rank_above = usize::MAX;
        self
    }

    /// Switches between the scan and the ranked view by the runnable set's size. Either way
    /// the threads keep their priorities and how long they have waited, so the ranked view
    /// picks what the scan would have.
    fn choose_view(&mut self, runnable: &[u32]) {
        let n = runnable.len();
        if self.ranking && n <= self.scan_up_to {
            self.ranking = false;
            self.ranked.by_priority.clear();
            self.ranked.by_wait.clear();
            self.ranked.on_object.clear();
            for &t in runnable {
                // As if offered at the last choice point: the scan keeps its waiting time
                // (a thread that joined since, not ranked yet, waits from the coming one).
                self.track_waiting(t);
                if self.ranked.notices.is_ranked(t) {
                    self.offered[t as usize] = self.step;
                }
            }
        } else if !self.ranking && n > self.rank_above {
            // Threads that joined count as ranked from here: all are in the view.
            self.ranked.notices.rank_joined(|_| {});
            self.ranking = true;
            for &t in runnable {
                let i = t as usize;
                self.track_waiting(t);
                if self.offered[i] != self.step {
                    // Not offered at the last choice point: it waits from the coming one.
                    self.waiting_since[i] = self.step + 1;
                }
                self.ranked.by_wait.set(t, self.waiting_since[i]);
                if !self.groups.is_undrawn(t) {
                    let p = self.priority(t);
                    self.ranked.by_priority.set(t, p);
                    self.on_object_add(t);
                }
            }
        }
    }

    /// Makes room for thread `t` in the waiting bookkeeping.
    fn track_waiting(&mut self, t: u32) {
        let i = t as usize;
        if self.waiting_since.len() <= i {
            self.offered.resize(i + 1, 0);
            self.waiting_since.resize(i + 1, 0);
            self.left_at.resize(i + 1, u64::MAX);
        }
    }

    /// Sets `t`'s priority, keeping the ranked view in step.
    fn set_priority(&mut self, t: u32, p: u64) {
        let i = t as usize;
        if self.ranking && self.ranked.notices.is_ranked(t) {
            self.ranked.by_priority.set(t, p);
        }
        self.priorities[i] = p;
    }

    /// Sets since when `t` has waited, keeping the ranked view in step.
    fn set_waiting(&mut self, t: u32, since: u64) {
        let i = t as usize;
        self.track_waiting(t);
        if self.ranking && self.ranked.notices.is_ranked(t) {
            self.ranked.by_wait.set(t, since);
        }
        self.waiting_since[i] = since;
    }

    /// Ranks the threads that joined since the last decision: they wait from now.
    fn rank_joined(&mut self) {
        // Priorities are drawn in thread order, as the scan over the runnable set draws them.
        let mut notices = std::mem::take(&mut self.ranked.notices);
        notices.rank_joined(|t| {
            let p = self.priority(t);
            // It waits from the coming choice point, as the scan counts, unless it was ranked
            // at the last one too.
            let i = t as usize;
            let since = match self.left_at.get(i) == Some(&self.step) {
                true => self.waiting_since[i],
                false => self.step + 1,
            };
            // (`set_waiting` does not rank it: the notices are out of `self` here.)
            self.set_waiting(t, since);
            self.ranked.by_priority.set(t, p);
            self.ranked.by_wait.set(t, since);
            self.on_object_add(t);
        });
        self.ranked.notices = notices;
    }

    /// Ranked view: `t` (ranked, drawn) has its next operation on its pending object.
    fn on_object_add(&mut self, t: u32) {
        let object = self.pending_of(t);
        if object != 0 {
            self.ranked.on_object.entry(object).or_default().push(t);
        }
    }

    fn on_object_remove(&mut self, t: u32, object: u64) {
        if let Some(ts) = self.ranked.on_object.get_mut(&object) {
            if let Some(k) = ts.iter().position(|&x| x == t) {
                ts.swap_remove(k);
            }
        }
    }

    /// Whether `t` is in the ranked view's `by_priority` and `on_object`.
    fn in_view(&self, t: u32) -> bool {
        self.ranking && self.ranked.notices.is_ranked(t) && !self.groups.is_undrawn(t)
    }

    /// Takes the priorities a group change drew, and ranks the threads drawn that are
    /// runnable.
    fn take_drawn(&mut self, drawn: Drawn) {
        for (t, p) in drawn.left.into_iter().chain(drawn.top) {
            // A group's members were racers, so their priorities were drawn before.
            self.priorities[t as usize] = p;
            if self.in_view(t) && self.ranked.notices.is_runnable(t) {
                self.ranked.by_priority.set(t, p);
                self.on_object_add(t);
            }
        }
    }

    /// POS's step after picking `best`: every runnable thread whose next operation races
    /// with `best`'s gets a fresh priority, one by one or, from `group_from` racers on, as
    /// a group drawn lazily (`pos_groups`).
    fn redraw_racers(&mut self, best: u32, runnable: &[u32]) {
        // An undrawn `best` was picked for having waited longest; it is drawn after it runs.
        let was_undrawn = self.groups.is_undrawn(best);
        self.groups.forget(best);
        if was_undrawn && self.ranking {
            self.on_object_add(best);
        }
        let object = self.pending_of(best);
        if object == 0 {
            return;
        }
        let mut racers = std::mem::take(&mut self.racers);
        racers.clear();
        if self.ranking {
            let on = self.ranked.on_object.get(&object).into_iter().flatten();
            racers.extend(on.copied().filter(|&t| t != best));
            // Re-drawn in thread order, as the scan does.
            racers.sort_unstable();
        } else {
            racers.extend(runnable.iter().copied().filter(|&t| {
                t != best && self.pending_of(t) == object && !self.groups.is_undrawn(t)
            }));
        }
        if self.groups.has(object) || racers.len() >= self.group_from {
            if self.ranking {
                for &t in &racers {
                    self.ranked.by_priority.remove(t);
                }
                if let Some(on) = self.ranked.on_object.get_mut(&object) {
                    on.retain(|&t| t == best);
                }
            }
            let drawn = self.groups.redraw(object, &racers, &mut self.rng);
            self.take_drawn(drawn);
        } else {
            for &t in &racers {
                let p = self.draw();
                self.set_priority(t, p);
            }
        }
        self.racers = racers;
    }

    /// Gives way for a yielding `current`, and counts the choice point.
    fn before_pick(&mut self, current: Option<u32>, yielding: bool) {
        let gives_way = yielding || self.run.overstayed(current);
        if let (Some(c), true) = (current, gives_way) {
            // A yielding thread waits for others: it goes last until it runs again.
            self.priority(c);
            self.next_low = self.next_low.saturating_sub(1).max(1);
            self.set_priority(c, self.next_low);
        }
        self.step += 1;
    }

    fn draw(&mut self) -> u64 {
        (self.rng.next_u64() >> 1) | DRAWN
    }

    #[inline]
    fn priority(&mut self, t: u32) -> u64 {
        match self.priorities.get(t as usize) {
            Some(&p) if p != 0 => p,
            _ => self.first_priority(t),
        }
    }

    /// `t`'s priority, drawn now: it has none yet.
    #[inline(never)]
    fn first_priority(&mut self, t: u32) -> u64 {
        let t = t as usize;
        if self.priorities.len() <= t {
            self.priorities.resize(t + 1, 0);
        }
        self.priorities[t] = self.draw();
        self.priorities[t]
    }

    /// Notes that `t` is offered at this step; returns the step since which it has waited.
    fn waited_since(&mut self, t: u32) -> u64 {
        let i = t as usize;
        self.track_waiting(t);
        if self.offered[i] + 1 != self.step {
            // Not offered at the last choice point: it has waited since now.
            self.waiting_since[i] = self.step;
        }
        self.offered[i] = self.step;
        self.waiting_since[i]
    }

    fn pending_of(&self, t: u32) -> u64 {
        self.pending.get(t as usize).copied().unwrap_or(0)
    }
}

impl Scheduler for PosScheduler {
    fn strategy_for(&self, _seed: u64) -> Option<Strategy> {
        Some(Strategy::Pos)
    }

    fn new_execution(&mut self, seed: u64) -> bool {
        self.rng = rng_from_seed(seed);
        self.priorities.clear();
        self.pending.clear();
        self.next_low = DRAWN;
        self.run.reset_seeded(seed);
        self.step = 0;
        self.offered.clear();
        self.waiting_since.clear();
        self.left_at.clear();
        self.ranked = Ranked::default();
        self.ranking = false;
        self.groups.clear();
        true
    }

    fn runnable_changed(&mut self, thread: u32, runnable: bool) {
        let i = thread as usize;
        let in_view = self.in_view(thread);
        let r = &mut self.ranked;
        if r.notices.changed(thread, runnable) && self.ranking {
            if in_view {
                r.by_priority.remove(thread);
                let object = self.pending_of(thread);
                self.on_object_remove(thread, object);
            }
            self.ranked.by_wait.remove(thread);
            self.track_waiting(thread);
            self.left_at[i] = self.step;
        }
        if !runnable {
            let drawn = self.groups.leave(thread, &mut self.rng);
            self.take_drawn(drawn);
        }
    }

    fn next_runnable(
        &mut self,
        runnable: &[u32],
        current: Option<u32>,
        yielding: bool,
    ) -> Option<u32> {
        self.choose_view(runnable);
        if !self.ranking {
            // Threads that joined count as ranked, so the view can be built from `runnable`.
            self.ranked.notices.rank_joined(|_| {});
            return self.next_thread(runnable, current, yielding);
        }
        self.rank_joined();
        if self.ranked.by_priority.len() + self.groups.undrawn() != runnable.len() {
            // Notices were missed (swapped in mid-execution): the scan decides.
            return self.next_thread(runnable, current, yielding);
        }
        self.before_pick(current, yielding);
        let (oldest_since, oldest) = self.ranked.by_wait.top()?;
        // Undrawn threads are below their group's top, which is in `by_priority`.
        let mut best = self.ranked.by_priority.top().map_or(oldest, |(_, t)| t);
        let patience = super::FAIR_RUN as u64 * runnable.len() as u64;
        if self.step - oldest_since > patience {
            best = oldest;
        }
        // Out of the ranking while its racers are re-drawn: the top it leaves takes their
        // new top in place (usually the highest), not a push up the whole heap.
        self.ranked.by_priority.remove(best);
        self.redraw_racers(best, runnable);
        let p = self.draw();
        self.set_priority(best, p);
        self.run.ran(best);
        self.set_waiting(best, self.step);
        Some(best)
    }

    fn pending(&mut self, thread: u32, resource: u64) {
        let t = thread as usize;
        if self.pending.len() <= t {
            self.pending.resize(t + 1, 0);
        }
        let old = std::mem::replace(&mut self.pending[t], resource);
        if old == resource {
            return;
        }
        // The scan reads `pending` alone; `on_object` is kept with the ranked view.
        if self.in_view(thread) {
            self.on_object_remove(thread, old);
            self.on_object_add(thread);
        }
        // It no longer races with its group.
        let drawn = self.groups.leave(thread, &mut self.rng);
        self.take_drawn(drawn);
    }

    fn next_thread(
        &mut self,
        runnable: &[u32],
        current: Option<u32>,
        yielding: bool,
    ) -> Option<u32> {
        let gives_way = yielding || self.run.overstayed(current);
        if let (Some(c), true) = (current, gives_way) {
            // A yielding thread waits for others: it goes last until it runs again.
            self.priority(c);
            self.next_low = self.next_low.saturating_sub(1).max(1);
            self.priorities[c as usize] = self.next_low;
        }
        self.step += 1;
        let mut best = None;
        let mut best_p = 0;
        // The thread that has waited longest while runnable: if it has waited `FAIR_RUN`
        // choice points per runnable thread, it runs (a thread whose next operation races with
        // nobody is never re-drawn, and many spinners re-drawing each other can leave it below
        // all of them for ever).
        let mut oldest = runnable[0];
        let mut oldest_since = u64::MAX;
        for &t in runnable {
            // Undrawn threads are below their group's top.
            if !self.groups.is_undrawn(t) {
                let p = self.priority(t);
                if p > best_p {
                    best = Some(t);
                    best_p = p;
                }
            }
            let since = self.waited_since(t);
            if since < oldest_since {
                oldest = t;
                oldest_since = since;
            }
        }
        let patience = super::FAIR_RUN as u64 * runnable.len() as u64;
        let mut best = best.unwrap_or(oldest);
        if self.step - oldest_since > patience {
            best = oldest;
        }
        self.redraw_racers(best, runnable);
        let p = self.draw();
        self.priorities[best as usize] = p;
        self.run.ran(best);
        self.waiting_since[best as usize] = self.step;
        Some(best)
    }

    /// The waiter of highest priority: being woken starts its next operation (taking the
    /// lock, leaving the wait). Not a step: nothing is re-drawn or counted as waiting, so
    /// a lock with k waiters costs a scan of their priorities, not k re-draws.
    fn next_waiter(&mut self, waiters: &[u32]) -> Option<u32> {
        waiters.iter().copied().max_by_key(|&t| self.priority(t))
    }

    fn next_read(&mut self, stores: u32) -> Option<u32> {
        Some(super::below(&mut self.rng, stores as usize) as u32)
    }

    fn next_word(&mut self) -> Option<u32> {
        Some(self.rng.next_u32())
    }

    fn next_bool(&mut self, kind: ChoiceKind) -> Option<bool> {
        Some(one_in(&mut self.rng, self.odds.one_in(kind)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::below;
    use crate::scheduler::churn_runnable;

    /// Without yields and within the fairness patience, the ranked pick (`next_runnable`)
    /// is the scan's, step for step, racing re-draws included.
    #[test]
    fn the_ranked_pick_is_the_scans_pick() {
        for seed in 0..100 {
            // Groups need every runnable notice, which `scanned` is not given here.
            let mut ranked = PosScheduler::new(ChoiceOdds::default())
                .always_ranked()
                .never_grouped();
            let mut scanned = PosScheduler::new(ChoiceOdds::default()).never_grouped();
            ranked.new_execution(seed);
            scanned.new_execution(seed);
            let mut rng = rng_from_seed(seed + 1000);
            let mut runnable: Vec<u32> = vec![0];
            ranked.runnable_changed(0, true);
            let mut current = 0;
            for _ in 0..60 {
                // Spawn, block or wake a few threads at random.
                churn_runnable(&mut rng, &mut runnable, &mut ranked, 30);
                for &t in &runnable {
                    let object = below(&mut rng, 4) as u64;
                    ranked.pending(t, object);
                    scanned.pending(t, object);
                }
                if runnable.len() < 2 {
                    continue;
                }
                let cur = runnable.binary_search(&current).ok().map(|_| current);
                let a = ranked.next_runnable(&runnable, cur, false);
                let b = scanned.next_thread(&runnable, cur, false);
                assert_eq!(a, b, "seed {seed}");
                current = a.unwrap();
            }
        }
    }

    /// The fairness of the scan holds for the ranked pick: yielding spinners take turns, and
    /// ten spinners racing each other do not starve a bystander.
    #[test]
    fn the_ranked_pick_is_fair() {
        for pos in [
            PosScheduler::new(ChoiceOdds::default()).always_ranked(),
            PosScheduler::new(ChoiceOdds::default()),
        ] {
            is_fair(pos);
        }
    }

    fn is_fair(mut pos: PosScheduler) {
        for seed in 0..50 {
            pos.new_execution(seed);
            pos.runnable_changed(0, true);
            pos.runnable_changed(1, true);
            let mut current = 0;
            let mut ran = [0u32; 2];
            for _ in 0..300 {
                current = pos.next_runnable(&[0, 1], Some(current), true).unwrap();
                ran[current as usize] += 1;
            }
            assert!(ran[0] >= 100 && ran[1] >= 100, "seed {seed}: {ran:?}");
        }
        let runnable: Vec<u32> = (0..11).collect();
        for seed in 0..50 {
            pos.new_execution(seed);
            for t in 0..11 {
                pos.runnable_changed(t, true);
                pos.pending(t, if t == 0 { 0 } else { 7 });
            }
            let mut current = 1;
            let mut main_ran = 0;
            for _ in 0..10_000 {
                current = pos.next_runnable(&runnable, Some(current), false).unwrap();
                main_ran += (current == 0) as u32;
            }
            assert!(main_ran >= 10, "seed {seed}: thread 0 ran {main_ran} times");
        }
    }

    /// Switching between the scan and the ranked view as the runnable set grows past
    /// `RANK_ABOVE` and shrinks to `SCAN_UP_TO` keeps every pick the scan's: priorities,
    /// waiting times and groups of undrawn racers carry over.
    #[test]
    fn switching_views_keeps_the_scans_pick() {
        for seed in 0..40 {
            // Groups from 8 racers: 100 threads on 4 objects form them.
            let mut hybrid = PosScheduler::new(ChoiceOdds::default()).grouped_from(8);
            let mut scanned = PosScheduler::new(ChoiceOdds::default())
                .never_ranked()
                .grouped_from(8);
            hybrid.new_execution(seed);
            scanned.new_execution(seed);
            let mut rng = rng_from_seed(seed + 1000);
            let mut runnable: Vec<u32> = Vec::new();
            let mut current = None;
            let (mut switched_up, mut switched_down) = (false, false);
            let mut grouped = 0;
            // Grow to 100 runnable threads, shrink to 10, grow to 80.
            for target in [100usize, 10, 80] {
                while runnable.len() != target {
                    let grow = runnable.len() < target;
                    for _ in 0..2 {
                        let t = below(&mut rng, 150) as u32;
                        match runnable.binary_search(&t) {
                            Ok(i) if !grow && runnable.len() > target => {
                                runnable.remove(i);
                                hybrid.runnable_changed(t, false);
                                scanned.runnable_changed(t, false);
                            }
                            Err(i) if grow && runnable.len() < target => {
                                runnable.insert(i, t);
                                hybrid.runnable_changed(t, true);
                                scanned.runnable_changed(t, true);
                            }
                            _ => {}
                        }
                    }
                    // And one thread leaves while another joins, so threads also join as
                    // the set shrinks past `SCAN_UP_TO`.
                    let (out, join) = (below(&mut rng, 150) as u32, below(&mut rng, 150) as u32);
                    if let (Ok(i), Err(_)) =
                        (runnable.binary_search(&out), runnable.binary_search(&join))
                    {
                        runnable.remove(i);
                        let j = runnable.binary_search(&join).unwrap_err();
                        runnable.insert(j, join);
                        for (t, now) in [(out, false), (join, true)] {
                            hybrid.runnable_changed(t, now);
                            scanned.runnable_changed(t, now);
                        }
                    }
                    for &t in &runnable {
                        let object = below(&mut rng, 4) as u64;
                        hybrid.pending(t, object);
                        scanned.pending(t, object);
                    }
                    if runnable.is_empty() {
                        continue;
                    }
                    let cur = current.filter(|c| runnable.binary_search(c).is_ok());
                    let a = hybrid.next_runnable(&runnable, cur, false);
                    let b = scanned.next_runnable(&runnable, cur, false);
                    assert_eq!(a, b, "seed {seed} at {} runnable", runnable.len());
                    // The same priorities and waiting times, and the ranked view holds them.
                    let of = |pos: &PosScheduler, t: u32| {
                        (pos.priorities[t as usize], pos.waiting_since[t as usize])
                    };
                    for &t in &runnable {
                        assert_eq!(of(&hybrid, t), of(&scanned, t), "seed {seed}, thread {t}");
                    }
                    hybrid.groups.check();
                    grouped = grouped.max(hybrid.groups.undrawn());
                    for &t in &runnable {
                        assert_eq!(hybrid.groups.is_undrawn(t), scanned.groups.is_undrawn(t));
                    }
                    if hybrid.ranking {
                        let r = &hybrid.ranked;
                        let drawn = runnable.iter().filter(|&&t| !hybrid.groups.is_undrawn(t));
                        let by_priority = drawn.clone().map(|&t| (of(&scanned, t).0, t));
                        let by_wait = runnable.iter().map(|&t| (of(&scanned, t).1, t));
                        assert_eq!(r.by_priority.entries(), by_priority.collect());
                        assert_eq!(r.by_wait.entries(), by_wait.collect());
                        for (&object, on) in &r.on_object {
                            let mut on = on.clone();
                            on.sort_unstable();
                            let expected: Vec<u32> = drawn
                                .clone()
                                .copied()
                                .filter(|&t| hybrid.pending_of(t) == object)
                                .collect();
                            assert_eq!(on, expected, "seed {seed}, object {object}");
                        }
                    }
                    switched_up |= hybrid.ranking;
                    switched_down |= switched_up && !hybrid.ranking;
                    current = a;
                }
            }
            assert!(
                switched_up && switched_down,
                "seed {seed}: the views never switched"
            );
            assert!(grouped >= 8, "seed {seed}: no group formed");
        }
    }

    /// Racers drawn as a group pick as racers drawn one by one do, in distribution: ten
    /// threads on one object (re-drawn at every step, one of them blocking and coming back,
    /// one moving to another object) and two bystanders, the pick at each of 30 steps over
    /// 4,000 seeds. The two differ by no more than sampling does.
    #[test]
    fn grouped_racers_pick_as_racers_drawn_one_by_one() {
        const SEEDS: u64 = 4000;
        const STEPS: usize = 30;
        let picks = |mut pos: PosScheduler| {
            let mut counts = vec![[0u32; 12]; STEPS];
            for seed in 0..SEEDS {
                pos.new_execution(seed);
                let mut runnable: Vec<u32> = (0..12).collect();
                for &t in &runnable {
                    pos.runnable_changed(t, true);
                    pos.pending(
                        t,
                        if (1..=10).contains(&t) {
                            7
                        } else {
                            t as u64 * 100
                        },
                    );
                }
                let mut current = None;
                for (step, count) in counts.iter_mut().enumerate() {
                    match step {
                        10 => {
                            runnable.retain(|&t| t != 3);
                            pos.runnable_changed(3, false);
                        }
                        15 => pos.pending(5, 9),
                        20 => {
                            runnable.insert(3, 3);
                            pos.runnable_changed(3, true);
                        }
                        _ => {}
                    }
                    let t = pos.next_thread(&runnable, current, false).unwrap();
                    pos.groups.check();
                    count[t as usize] += 1;
                    current = Some(t);
                }
            }
            counts
        };
        let grouped = picks(PosScheduler::new(ChoiceOdds::default()).grouped_from(2));
        let one_by_one = picks(PosScheduler::new(ChoiceOdds::default()).never_grouped());
        for (step, (a, b)) in grouped.iter().zip(&one_by_one).enumerate() {
            let distance: u32 = a.iter().zip(b).map(|(x, y)| x.abs_diff(*y)).sum();
            let distance = distance as f64 / 2.0 / SEEDS as f64;
            assert!(distance < 0.05, "step {step}: {a:?} against {b:?}");
        }
    }

    /// Two threads that both spin with `yield_now` take turns: the one that yielded last
    /// runs last (a tie between yielders once let the lower index run forever).
    #[test]
    fn yielding_spinners_take_turns() {
        let mut pos = PosScheduler::new(ChoiceOdds::default());
        for seed in 0..200 {
            pos.new_execution(seed);
            let mut current = 0;
            let mut ran = [0u32; 2];
            for _ in 0..300 {
                current = pos.next_thread(&[0, 1], Some(current), true).unwrap();
                ran[current as usize] += 1;
            }
            assert!(ran[0] >= 100 && ran[1] >= 100, "seed {seed}: {ran:?}");
        }
    }

    /// Ten busy-waiters on one object (re-drawing each other's priorities at every step) and
    /// a thread that touches nothing they touch: it still runs regularly.
    #[test]
    fn spinners_racing_each_other_do_not_starve_a_bystander() {
        let mut pos = PosScheduler::new(ChoiceOdds::default());
        let runnable: Vec<u32> = (0..11).collect();
        for seed in 0..50 {
            pos.new_execution(seed);
            for t in 1..11 {
                pos.pending(t, 7);
            }
            pos.pending(0, 0);
            let mut current = 1;
            let mut main_ran = 0;
            for _ in 0..10_000 {
                current = pos.next_thread(&runnable, Some(current), false).unwrap();
                main_ran += (current == 0) as u32;
            }
            assert!(main_ran >= 10, "seed {seed}: thread 0 ran {main_ran} times");
        }
    }

    /// The same with a thread that never yields: the spinner does not starve it.
    #[test]
    fn a_yielding_spinner_never_starves_the_holder() {
        let mut pos = PosScheduler::new(ChoiceOdds::default());
        for seed in 0..200 {
            pos.new_execution(seed);
            let mut current = 0;
            let mut holder = 0;
            for _ in 0..300 {
                current = pos
                    .next_thread(&[0, 1], Some(current), current == 0)
                    .unwrap();
                holder += (current == 1) as u32;
            }
            assert!(holder >= 100, "seed {seed}: the holder ran {holder} times");
        }
    }
}
