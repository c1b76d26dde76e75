//! Exhaustive depth-first search under iterative preemption bounding (Musuvathi and Qadeer's
//! CHESS, PLDI 2007; dejafu's default, `dejafu-systematic-concurrency-testing.txt` §4).
//!
//! The search is stateless: each execution replays a prefix of choices and then extends it
//! with default choices, recording at each new choice point the options not taken. Backtracking
//! takes the deepest untried option. A preemption is switching away from a thread that could
//! go on (not blocked, not yielding); an option that costs one is not explored in this round
//! but queued for the next, so every schedule with 0 preemptions runs first, then those with
//! 1, and so on up to the bound: the first failure found has the fewest preemptions, and no
//! schedule runs twice. A spurious wakeup or a spurious weak-CAS failure costs a preemption
//! too (each is an adversary's move, and a CAS retry loop would otherwise make the tree
//! infinite; without a bound an execution may have `UNBOUNDED_SPURIOUS` of them), and so
//! does a load reading an older store than the newest (relaxed memory).
//!
//! Fair bounding, so spin loops end: a thread that yields (`yield_now`, `spin_loop`) is not
//! offered the next step while another thread can run, and a thread that has run
//! `FAIR_RUN` choice points in a row gives way as if it had yielded. Switching away from a
//! yielding thread costs nothing. Schedules in which a spinning thread keeps the processor
//! are thereby left out; schedules in which it lets the others on are all explored.

use std::rc::Rc;

use super::{position, ChoiceKind, Covered, ReplayCheck, Scheduler, SpuriousLimit, FAIR_RUN};

#[derive(serde::Serialize, serde::Deserialize)]
struct Node {
    /// The option taken (a thread index, or 0/1 for a yes/no choice).
    choice: u32,
    /// Options still to explore at this point within the current bound.
    untried: Vec<u32>,
}

/// Serialized whole as its position (`Scheduler::save_position`), but for the queues of
/// later work, which only the searching process needs (an execution adds to
/// `deferred_here`).
#[derive(serde::Serialize, serde::Deserialize)]
pub struct DfsScheduler {
    bound: usize,
    /// This execution's choice points: the fixed prefix of the work item, then the extension.
    path: Vec<Node>,
    /// Length of the work item's prefix (never backtracked into).
    fixed: usize,
    /// The next choice point of the running execution.
    pos: usize,
    /// The preemption bound being explored (0, 1, .. `bound`).
    round: usize,
    /// Prefixes to explore in this round, and those queued for the next (each ends in the
    /// preemption that puts it there).
    #[serde(skip)]
    queue: Vec<Deferred>,
    #[serde(skip)]
    next_queue: Vec<Deferred>,
    /// This execution's deferred options, as (choice point, option): queued when it ends,
    /// all sharing one copy of its path.
    deferred_here: Vec<(usize, u32)>,
    started: bool,
    exhausted: bool,
    /// Some option was left out because it would exceed the bound.
    pruned: bool,
    /// Without a bound, spurious events against `UNBOUNDED_SPURIOUS`.
    spurious: SpuriousLimit,
    /// The thread that ran at the last choice point, and for how many in a row.
    last: Option<u32>,
    run_length: u32,
    replay_check: ReplayCheck,
}

impl DfsScheduler {
    pub fn new(bound: usize) -> Self {
        DfsScheduler {
            bound,
            path: Vec::new(),
            fixed: 0,
            pos: 0,
            round: 0,
            queue: Vec::new(),
            next_queue: Vec::new(),
            deferred_here: Vec::new(),
            started: false,
            exhausted: false,
            pruned: false,
            spurious: SpuriousLimit::default(),
            last: None,
            run_length: 0,
            replay_check: ReplayCheck::default(),
        }
    }

    /// Whether the last `new_execution` found nothing left to explore.
    pub fn exhausted(&self) -> bool {
        self.exhausted
    }

    /// Whether the bound left options unexplored (false: the space was explored without
    /// bound).
    pub fn pruned(&self) -> bool {
        self.pruned
    }

    fn start(&mut self) {
        self.pos = 0;
        self.spurious.start();
        self.last = None;
        self.run_length = 0;
    }

    /// Queues the current path followed by `option` for the next round.
    fn defer(&mut self, option: u32) {
        if self.round < self.bound {
            self.deferred_here.push((self.path.len(), option));
        } else {
            self.pruned = true;
        }
    }

    /// Queues the options the execution that ended deferred, over one copy of its path: a
    /// copy of the path per option made memory quadratic in the execution's length (3.2 GB
    /// for 40,000 steps).
    fn queue_deferred(&mut self) {
        if self.deferred_here.is_empty() {
            return;
        }
        let path: Rc<[u32]> = self.path.iter().map(|n| n.choice).collect();
        for (len, option) in self.deferred_here.drain(..) {
            self.next_queue.push(Deferred {
                path: path.clone(),
                len,
                option,
            });
        }
    }

    /// Sets up the next execution's prefix: false when nothing is left to explore.
    fn next_prefix(&mut self) -> bool {
        self.start();
        if !self.started {
            self.started = true;
            return true;
        }
        if self.exhausted {
            return false;
        }
        self.queue_deferred();
        // Backtrack: the deepest choice point with an untried option.
        while self.path.len() > self.fixed {
            let node = self.path.last_mut().expect("longer than the prefix");
            if let Some(option) = node.untried.pop() {
                node.choice = option;
                return true;
            }
            self.path.pop();
        }
        // This prefix's subtree is done: the next work item, or the next round.
        loop {
            if let Some(item) = self.queue.pop() {
                self.fixed = item.len + 1;
                let prefix = item.path[..item.len].iter().copied();
                self.path = (prefix.chain([item.option]))
                    .map(|choice| Node {
                        choice,
                        untried: Vec::new(),
                    })
                    .collect();
                return true;
            }
            if self.next_queue.is_empty() {
                self.exhausted = true;
                return false;
            }
            self.round += 1;
            self.queue = std::mem::take(&mut self.next_queue);
            // Popped from the end: explore in the order they were found.
            self.queue.reverse();
        }
    }

    fn ran(&mut self, t: u32) {
        if self.last == Some(t) {
            self.run_length += 1;
        } else {
            self.last = Some(t);
            self.run_length = 1;
        }
    }
}

/// A prefix queued for a later round: the first `len` choices of a path, then `option`.
struct Deferred {
    path: Rc<[u32]>,
    len: usize,
    option: u32,
}

/// A thread pick under fair preemption bounding (`dfs`, `dpor`): the threads to try, and the
/// one taken without a preemption.
pub(super) struct FairChoice {
    /// The running thread, when it may go on without a preemption.
    pub stay: Option<u32>,
    pub options: Vec<u32>,
    pub default: u32,
}

/// The pick at a scheduling point: a thread that gives way (it yields, or ran `FAIR_RUN`
/// steps in a row) is not among the options and hands over for free, round-robin after
/// itself so spinners take turns; otherwise it goes on by default.
pub(super) fn fair_choice(runnable: &[u32], current: Option<u32>, gives_way: bool) -> FairChoice {
    let gives_way = gives_way && current.is_some();
    let stay = current.filter(|_| !gives_way);
    let options: Vec<u32> = match (gives_way, current) {
        (true, Some(c)) => runnable.iter().copied().filter(|&t| t != c).collect(),
        _ => runnable.to_vec(),
    };
    let default = match (stay, current) {
        (Some(c), _) => c,
        (None, Some(c)) => options
            .iter()
            .copied()
            .find(|&t| t > c)
            .unwrap_or(options[0]),
        (None, None) => options[0],
    };
    FairChoice {
        stay,
        options,
        default,
    }
}

impl Scheduler for DfsScheduler {
    fn new_execution(&mut self, _seed: u64) -> bool {
        let made = self.pos;
        let more = self.next_prefix();
        self.replay_check.next(made, more, self.path.len())
    }

    fn diverged(&self) -> bool {
        self.replay_check.diverged()
    }

    fn by_seed(&self) -> bool {
        false
    }

    fn save_position(&mut self) -> Option<Vec<u8>> {
        position::save(self)
    }

    fn resume(&mut self, at: &[u8]) -> Result<(), String> {
        let mut at: DfsScheduler = position::read(at)?;
        at.queue = std::mem::take(&mut self.queue);
        at.next_queue = std::mem::take(&mut self.next_queue);
        *self = at;
        Ok(())
    }

    fn exhaustive(&self) -> Option<Covered> {
        (self.exhausted && !self.replay_check.diverged()).then_some(Covered {
            bound: self.bound,
            pruned: self.pruned,
            spurious_limited: self.spurious.limited(),
        })
    }

    fn next_thread(
        &mut self,
        runnable: &[u32],
        current: Option<u32>,
        yielding: bool,
    ) -> Option<u32> {
        let pos = self.pos;
        self.pos += 1;
        if let Some(node) = self.path.get(pos) {
            let c = node.choice;
            self.ran(c);
            return runnable.contains(&c).then_some(c);
        }
        let overstayed = self.last == current && self.run_length >= FAIR_RUN;
        let FairChoice {
            stay,
            options,
            default,
        } = fair_choice(runnable, current, yielding || overstayed);
        let mut untried = Vec::new();
        for &o in options.iter().rev() {
            if o == default {
                continue;
            }
            if stay.is_some() {
                self.defer(o);
            } else {
                untried.push(o);
            }
        }
        self.path.push(Node {
            choice: default,
            untried,
        });
        self.ran(default);
        Some(default)
    }

    /// The newest store first; each older one costs a preemption (it is the adversary's
    /// move, and a spin loop re-reading an old value would otherwise make the tree
    /// infinite). A bound of at least the number of old reads explores them all.
    /// One input: the schedules are what this search enumerates.
    fn next_word(&mut self) -> Option<u32> {
        Some(0)
    }

    fn next_read(&mut self, stores: u32) -> Option<u32> {
        let pos = self.pos;
        self.pos += 1;
        if let Some(node) = self.path.get(pos) {
            return (node.choice < stores).then_some(node.choice);
        }
        for back in 1..stores {
            self.defer(back);
        }
        self.path.push(Node {
            choice: 0,
            untried: Vec::new(),
        });
        Some(0)
    }

    fn next_bool(&mut self, kind: ChoiceKind) -> Option<bool> {
        let pos = self.pos;
        self.pos += 1;
        if let Some(node) = self.path.get(pos) {
            self.spurious.replayed(kind.is_spurious(), node.choice == 1);
            return match node.choice {
                0 => Some(false),
                1 => Some(true),
                _ => None,
            };
        }
        let mut untried = Vec::new();
        match kind {
            _ if !self.spurious.allows(kind.is_spurious(), self.bound) => {}
            // Rare events an adversary causes: each costs a preemption (a timer firing before
            // a runnable step, too: the bound keeps timed loops finite).
            ChoiceKind::SpuriousWakeup | ChoiceKind::WeakCasFailure | ChoiceKind::TimerFirst => {
                self.defer(1)
            }
            // A platform policy: both ways are free.
            ChoiceKind::WriterPreference => untried.push(1),
        }
        self.path.push(Node { choice: 0, untried });
        Some(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two threads, each taking `steps` choice points; counts the schedules DFS explores.
    fn explore(bound: usize, steps: [u32; 2]) -> (u64, Vec<Vec<u32>>) {
        let mut dfs = DfsScheduler::new(bound);
        let mut runs = 0;
        let mut seen = Vec::new();
        while dfs.new_execution(0) {
            runs += 1;
            assert!(runs < 10_000, "did not terminate");
            let mut left = steps;
            let mut current = 0;
            let mut order = Vec::new();
            while left.iter().any(|&l| l > 0) {
                let runnable: Vec<u32> = (0..2).filter(|&t| left[t as usize] > 0).collect();
                let t = if runnable.len() == 1 {
                    runnable[0]
                } else {
                    let cur = runnable.contains(&current).then_some(current);
                    dfs.next_thread(&runnable, cur, false).unwrap()
                };
                left[t as usize] -= 1;
                order.push(t);
                current = t;
            }
            assert!(!seen.contains(&order), "schedule {order:?} ran twice");
            seen.push(order);
        }
        assert!(dfs.exhausted());
        (runs, seen)
    }

    #[test]
    fn each_bound_adds_the_schedules_with_one_more_preemption() {
        // Thread 0 runs first: without a preemption it runs to its end.
        let (runs, seen) = explore(0, [2, 2]);
        assert_eq!(seen, [[0, 0, 1, 1]]);
        assert_eq!(runs, 1);
        // One preemption: thread 1 before thread 0's first or second step.
        let (runs, seen) = explore(1, [2, 2]);
        assert_eq!(runs, 3, "{seen:?}");
    }

    #[test]
    fn a_high_bound_explores_every_interleaving_once() {
        // C(6, 3) = 20 interleavings of two threads of three steps.
        let (runs, _) = explore(10, [3, 3]);
        assert_eq!(runs, 20);
    }

    #[test]
    fn schedules_come_in_order_of_preemptions() {
        let (_, seen) = explore(3, [3, 3]);
        let preemptions = |order: &Vec<u32>| {
            let mut left = [3, 3];
            let mut n = 0;
            for w in order.windows(2) {
                left[w[0] as usize] -= 1;
                if w[0] != w[1] && left[w[0] as usize] > 0 {
                    n += 1;
                }
            }
            n
        };
        let counts: Vec<u32> = seen.iter().map(preemptions).collect();
        assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
        assert!(counts.iter().all(|&c| c <= 3));
    }

    /// A long execution defers a preemption at every choice point: the queue holds one copy
    /// of its path, not one per deferred option (40,000 steps took 3.2 GB that way).
    #[test]
    fn deferred_options_share_their_execution_s_path() {
        let mut dfs = DfsScheduler::new(2);
        assert!(dfs.new_execution(0));
        for _ in 0..10_000 {
            dfs.next_thread(&[0, 1], Some(0), false);
        }
        assert!(dfs.new_execution(0));
        let queued = dfs.queue.iter().chain(&dfs.next_queue).collect::<Vec<_>>();
        // A preemption deferred at nearly every choice point (not where fairness hands over).
        assert!(queued.len() > 9_000, "{}", queued.len());
        assert!(queued.iter().all(|d| Rc::ptr_eq(&d.path, &queued[0].path)));
        // The prefix taken first is the path up to the deferred choice, then that option.
        assert_eq!(dfs.path.len(), dfs.fixed);
        assert_eq!(dfs.path.last().map(|n| n.choice), Some(1));
    }
}
