//! Threads ranked by how long they have waited, for "which thread has waited longest":
//! a queue whose outdated entries are dropped lazily.
//!
//! POS's fairness check asks for the thread waiting since the earliest step. A thread's
//! waiting time restarts at the step it runs or joins, so new keys nearly always come in
//! order: a queue takes them at its back in O(1), where a heap (`LazyRank`) sifted each one
//! in and out, O(log n) with cache misses at 1,000 threads. A key that comes out of order (a
//! thread back with the waiting time it had, the picked thread tied with the joiners of its
//! step) is inserted in place.

use std::collections::VecDeque;

#[derive(Default)]
pub(crate) struct OldestFirst {
    /// (since, thread) in ascending order; live when the thread is present with that key.
    queue: VecDeque<(u64, u32)>,
    /// Per thread: the step it has waited since, while it is ranked.
    since: Vec<Option<u64>>,
    live: usize,
    /// The most threads ranked at once since the last sweep.
    peak: usize,
}

/// Outdated entries are swept when the queue holds more than twice the most live ones since
/// the last sweep, and this. Against the live count alone, a barrier's round (every thread
/// leaving one by one) swept again and again; outdated entries at the front go anyway.
const SLACK: usize = 64;

impl OldestFirst {
    /// Ranks `thread` as waiting since `since` (in place of its earlier key, if any).
    pub(crate) fn set(&mut self, thread: u32, since: u64) {
        let i = thread as usize;
        if self.since.len() <= i {
            self.since.resize(i + 1, None);
        }
        match self.since[i].replace(since) {
            Some(old) if old == since => return,
            Some(_) => {}
            None => {
                self.live += 1;
                self.peak = self.peak.max(self.live);
            }
        }
        let key = (since, thread);
        if self.queue.back().is_none_or(|&last| last < key) {
            self.queue.push_back(key);
        } else {
            let at = self.queue.partition_point(|&e| e < key);
            self.queue.insert(at, key);
        }
        if self.queue.len() > 2 * self.peak + SLACK {
            let since = &self.since;
            self.queue.retain(|&(s, t)| since[t as usize] == Some(s));
            self.peak = self.live;
        }
    }

    /// Takes `thread` out of the ranking.
    pub(crate) fn remove(&mut self, thread: u32) {
        if let Some(since) = self.since.get_mut(thread as usize) {
            self.live -= since.take().is_some() as usize;
        }
    }

    /// The thread that has waited longest (the lowest thread among equals), and since when.
    pub(crate) fn top(&mut self) -> Option<(u64, u32)> {
        while let Some(&(s, t)) = self.queue.front() {
            if self.since[t as usize] == Some(s) {
                return Some((s, t));
            }
            self.queue.pop_front();
        }
        None
    }

    pub(crate) fn clear(&mut self) {
        self.queue.clear();
        self.since.clear();
        self.live = 0;
        self.peak = 0;
    }

    /// Test support: the ranked (since, thread)s, in order.
    #[cfg(test)]
    pub(crate) fn entries(&self) -> std::collections::BTreeSet<(u64, u32)> {
        let ranked = self.since.iter().enumerate();
        ranked
            .filter_map(|(t, s)| s.map(|s| (s, t as u32)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::scheduler::{below, rng_from_seed};

    /// Against a `BTreeSet` of (since, thread): the same top after every change, with keys
    /// mostly growing as POS's do, some set back to earlier ones, and removals.
    #[test]
    fn it_ranks_as_a_sorted_set_does() {
        for seed in 0..200 {
            let mut rng = rng_from_seed(seed);
            let threads = 1 + below(&mut rng, 40);
            let mut queue = OldestFirst::default();
            let mut keys: Vec<Option<u64>> = vec![None; threads];
            let mut set = BTreeSet::new();
            let mut step = 0u64;
            for _ in 0..2_000 {
                step += below(&mut rng, 2) as u64;
                let t = below(&mut rng, threads) as u32;
                match below(&mut rng, 6) {
                    0 | 1 => {
                        if let Some(k) = keys[t as usize].take() {
                            set.remove(&(k, t));
                        }
                        queue.remove(t);
                    }
                    k => {
                        // Now, or (one time in four) an earlier step.
                        let since = match k {
                            2 => step.saturating_sub(below(&mut rng, 50) as u64),
                            _ => step,
                        };
                        if let Some(old) = keys[t as usize].replace(since) {
                            set.remove(&(old, t));
                        }
                        set.insert((since, t));
                        queue.set(t, since);
                        assert!(queue.queue.len() <= 2 * threads + SLACK + 1);
                    }
                }
                assert_eq!(queue.top(), set.first().copied(), "seed {seed}");
                assert_eq!(queue.entries(), set, "seed {seed}");
            }
            queue.clear();
            assert_eq!(queue.top(), None);
        }
    }
}
