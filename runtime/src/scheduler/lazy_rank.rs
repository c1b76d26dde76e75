//! Threads ranked by a key each, for "which thread has the highest key": a binary heap
//! whose outdated entries are dropped lazily.
//!
//! The strategies' ranked views (PCT's and roles' priorities, POS's priorities) change a
//! thread's key or drop it at nearly every step. In a `BTreeSet` each change is a remove
//! and an insert, O(log n) node work with memmoves; with 1,000 threads at one barrier those
//! updates made POS 5.8x its 2-thread cost per decision. Here a change is a push (O(1)
//! expected for random or growing keys), or a move down from the top when the top is the
//! thread's own entry or an outdated one (the pick re-keyed; POS's group handing its top on);
//! a removal only marks the thread absent (a thread that comes back with its key, as POS's
//! blocked threads do, reuses its entry), and entries whose key is no longer the thread's
//! are popped when they reach the top, or swept when they outnumber the live ones.

use std::collections::BinaryHeap;

pub(crate) struct LazyRank<K> {
    /// (key, thread), live when the thread is present with that key; the others are
    /// outdated.
    heap: BinaryHeap<(K, u32)>,
    /// Per thread: its key while some entry holds it (kept while absent, so a thread that
    /// comes back with it pushes nothing), and whether it is ranked.
    keys: Vec<Option<K>>,
    present: Vec<bool>,
    live: usize,
}

impl<K> Default for LazyRank<K> {
    fn default() -> Self {
        LazyRank {
            heap: BinaryHeap::new(),
            keys: Vec::new(),
            present: Vec::new(),
            live: 0,
        }
    }
}

/// Outdated entries are swept when the heap holds more than twice the live ones and this.
const SLACK: usize = 64;

impl<K: Ord + Copy> LazyRank<K> {
    /// Ranks `thread` by `key` (in place of the key it had, if any).
    pub(crate) fn set(&mut self, thread: u32, key: K) {
        let i = thread as usize;
        if self.keys.len() <= i {
            self.keys.resize(i + 1, None);
            self.present.resize(i + 1, false);
        }
        if !std::mem::replace(&mut self.present[i], true) {
            self.live += 1;
        }
        let old = self.keys[i].replace(key);
        if old == Some(key) {
            return; // its entry is in the heap
        }
        // The top re-keyed (the thread a strategy just picked), or an outdated top (it left):
        // the entry is moved down in place, not pushed and the old one popped later.
        if let Some(&(top_key, top_thread)) = self.heap.peek() {
            let mine = top_thread == thread && Some(top_key) == old;
            if mine || !self.is_live(top_key, top_thread) {
                if !mine {
                    self.forget(top_key, top_thread);
                }
                *self.heap.peek_mut().unwrap() = (key, thread);
                return;
            }
        }
        self.heap.push((key, thread));
        if self.heap.len() > 2 * self.live + SLACK {
            self.sweep();
        }
    }

    /// Takes `thread` out of the ranking; false if it was not in it.
    pub(crate) fn remove(&mut self, thread: u32) -> bool {
        let Some(present) = self.present.get_mut(thread as usize) else {
            return false;
        };
        let taken = std::mem::replace(present, false);
        self.live -= taken as usize;
        taken
    }

    /// The highest (key, thread).
    pub(crate) fn top(&mut self) -> Option<(K, u32)> {
        while let Some(&(key, t)) = self.heap.peek() {
            if self.is_live(key, t) {
                return Some((key, t));
            }
            self.heap.pop();
            self.forget(key, t);
        }
        None
    }

    /// Threads ranked.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    pub(crate) fn clear(&mut self) {
        self.heap.clear();
        self.keys.clear();
        self.present.clear();
        self.live = 0;
    }

    /// Test support: the ranked (key, thread)s, in order.
    #[cfg(test)]
    pub(crate) fn entries(&self) -> std::collections::BTreeSet<(K, u32)> {
        let ranked = (0..self.keys.len()).filter(|&t| self.present[t]);
        ranked.map(|t| (self.keys[t].unwrap(), t as u32)).collect()
    }

    fn is_live(&self, key: K, t: u32) -> bool {
        self.present[t as usize] && self.keys[t as usize] == Some(key)
    }

    /// An outdated entry left the heap: an absent thread's key no longer has one.
    fn forget(&mut self, key: K, t: u32) {
        if self.keys[t as usize] == Some(key) {
            self.keys[t as usize] = None;
        }
    }

    /// Drops the outdated entries, and the duplicates of live ones if many are left (a
    /// thread whose key went back to an earlier one while that entry was still in).
    fn sweep(&mut self) {
        let mut entries = std::mem::take(&mut self.heap).into_vec();
        entries.retain(|&(key, t)| {
            let live = self.is_live(key, t);
            if !live {
                self.forget(key, t);
            }
            live
        });
        if entries.len() > self.live + self.live / 2 + SLACK {
            entries.sort_unstable();
            entries.dedup();
        }
        self.heap = entries.into();
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::scheduler::{below, rng_from_seed};

    /// Against a `BTreeSet` of (key, thread): the same top after every change, over random
    /// sets, removals and keys set back to earlier ones (small key ranges make ties and
    /// repeats common).
    #[test]
    fn it_ranks_as_a_sorted_set_does() {
        for seed in 0..200 {
            let mut rng = rng_from_seed(seed);
            let threads = 1 + below(&mut rng, 40);
            let key_range = 1 + below(&mut rng, 10);
            let mut lazy = LazyRank::default();
            let mut keys: Vec<Option<u8>> = vec![None; threads];
            let mut set = BTreeSet::new();
            for _ in 0..2_000 {
                let t = below(&mut rng, threads) as u32;
                if below(&mut rng, 3) == 0 {
                    let removed = keys[t as usize].take().map(|k| set.remove(&(k, t)));
                    assert_eq!(lazy.remove(t), removed.is_some());
                } else {
                    let key = below(&mut rng, key_range) as u8;
                    if let Some(old) = keys[t as usize].replace(key) {
                        set.remove(&(old, t));
                    }
                    set.insert((key, t));
                    lazy.set(t, key);
                    assert!(lazy.heap.len() <= 2 * threads + SLACK);
                }
                assert_eq!(lazy.top(), set.last().copied(), "seed {seed}");
                assert_eq!(lazy.len(), set.len());
            }
            lazy.clear();
            assert_eq!((lazy.top(), lazy.len()), (None, 0));
        }
    }
}
