//! The search for a linearization: Wing & Gong's backtracking with Lowe's cache of visited
//! configurations (the set of operations linearized so far and the model state they lead to),
//! run per partition when the model splits its history (Horn & Kroening's P-compositionality).
//!
//! The history is a doubly linked list of call and return entries in time order. The search
//! walks it from the front: at a call it tries to linearize that operation now (the model
//! accepts its observed output and the resulting configuration is new), removing its call and
//! return from the list; at a return, the operation it closes was never linearized before it
//! returned, so the last choice is undone. An operation with an unknown outcome (`:info`, a
//! timeout) has no return entry: it may take effect anywhere after its call, or never, so the
//! search succeeds as soon as every operation that did return is linearized.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::cache::{Bits, Cache};
use crate::states::{StateId, States};
use crate::{Explanation, Model, Operation, Verdict};

/// How often (in search steps) the deadline is read.
const DEADLINE_EVERY: u64 = 16 * 1024;

/// A multiply-xorshift hash over the words a `Hash` impl writes: deterministic and cheap for
/// the states hashed here (std's SipHash costs more than the search step it guards).
#[derive(Default)]
pub(crate) struct WordHash(u64);

impl Hasher for WordHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Eight bytes per round (states are often strings of a few hundred bytes).
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_le_bytes(c.try_into().unwrap_or([0; 8])));
        }
        let mut tail = [0u8; 8];
        let rest = chunks.remainder();
        tail[..rest.len()].copy_from_slice(rest);
        self.write_u64(u64::from_le_bytes(tail) ^ ((rest.len() as u64) << 59));
    }
    fn write_u64(&mut self, n: u64) {
        // One multiply-xorshift per word instead of eight FNV rounds.
        let mut h = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^= h >> 32;
        self.0 = h;
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<WordHash>>;

pub(crate) fn hash_of<T: Hash>(value: &T) -> u64 {
    let mut h = WordHash::default();
    value.hash(&mut h);
    h.finish()
}

/// splitmix64: the per-operation words whose xor is the linearized set's hash (Zobrist hashing,
/// so adding or removing an operation updates the hash in one xor).
fn zobrist(i: usize) -> u64 {
    let mut z = (i as u64)
        .wrapping_add(1)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const NONE: usize = usize::MAX;

/// One call or return entry of the linked list.
#[derive(Clone, Copy)]
struct Entry {
    /// Index of the operation in the partition.
    op: usize,
    is_call: bool,
    /// For a call: the index of its return entry (`NONE` for an operation with no return).
    matching: usize,
    prev: usize,
    next: usize,
}

/// What one partition's search found.
pub(crate) enum PartOutcome {
    Ok,
    Illegal {
        /// Operation indices (into the partition) of the longest linearizable prefix found.
        longest: Vec<usize>,
        /// The operation whose return was reached with no linearization of it before.
        stuck: usize,
    },
}

/// One partition's search, resumable: `run` takes a step budget, so several partitions can
/// share the time fairly and the first illegal one ends the check (a partition that is
/// exponential to refute or accept does not hide a cheap violation elsewhere).
struct Search<'a, M: Model> {
    model: &'a M,
    history: &'a [Operation<M::Input, M::Output>],
    ops: &'a [usize],
    list: Vec<Entry>,
    returns: Vec<bool>,
    must_return: usize,
    cache: Cache<StateId>,
    states: States<M::State>,
    /// The returned operations linearized so far.
    bits: Bits,
    /// The unknown-outcome operations linearized so far.
    maybe: Bits,
    bits_hash: u64,
    state: StateId,
    /// The choices made: (call entry, state before it, the pass it was made in, whether it
    /// was forced).
    calls: Vec<(usize, StateId, bool, bool)>,
    /// Per operation: whether it changes no state wherever the model accepts it.
    read_only: Vec<bool>,
    /// Whether some operation has an unknown outcome.
    has_unknown: bool,
    /// Which pass over the pending calls the scan is in. With operations of unknown outcome
    /// in the list, each position is scanned twice: first trying only operations that
    /// returned, then every one. Every choice is still tried (the second pass finds the
    /// first's choices in the cache), but a linearizable history is usually accepted without
    /// placing an unknown operation early, and each placed one multiplies the configurations.
    all_ops: bool,
    returned_done: usize,
    best: Vec<usize>,
    stuck: usize,
    entry: usize,
}

fn lift(list: &mut [Entry], e: usize) {
    let Entry { prev, next, .. } = list[e];
    list[prev].next = next;
    if next != NONE {
        list[next].prev = prev;
    }
    let m = list[e].matching;
    if m != NONE {
        let Entry { prev, next, .. } = list[m];
        list[prev].next = next;
        if next != NONE {
            list[next].prev = prev;
        }
    }
}

fn unlift(list: &mut [Entry], e: usize) {
    let m = list[e].matching;
    if m != NONE {
        let Entry { prev, next, .. } = list[m];
        list[prev].next = m;
        if next != NONE {
            list[next].prev = m;
        }
    }
    let Entry { prev, next, .. } = list[e];
    list[prev].next = e;
    if next != NONE {
        list[next].prev = e;
    }
}

impl<'a, M: Model> Search<'a, M> {
    fn new(model: &'a M, history: &'a [Operation<M::Input, M::Output>], ops: &'a [usize]) -> Self {
        let n = ops.len();
        // Entries sorted by time; a call sorts before a return at the same time (the two
        // overlap, the conservative reading).
        let mut events: Vec<(u64, bool, usize)> = Vec::with_capacity(2 * n);
        let mut must_return = 0usize;
        for (local, &i) in ops.iter().enumerate() {
            let op = &history[i];
            events.push((op.call, true, local));
            if let Some(ret) = op.ret {
                events.push((ret, false, local));
                must_return += 1;
            }
        }
        events.sort_by_key(|&(t, is_call, op)| (t, !is_call, op));
        // Entry 0 is the list head (a sentinel).
        let mut list: Vec<Entry> = Vec::with_capacity(events.len() + 1);
        list.push(Entry {
            op: NONE,
            is_call: false,
            matching: NONE,
            prev: NONE,
            next: if events.is_empty() { NONE } else { 1 },
        });
        let mut call_entry = vec![NONE; n];
        for (k, &(_, is_call, op)) in events.iter().enumerate() {
            let idx = k + 1;
            list.push(Entry {
                op,
                is_call,
                matching: NONE,
                prev: idx - 1,
                next: if k + 1 < events.len() { idx + 1 } else { NONE },
            });
            if is_call {
                call_entry[op] = idx;
            } else {
                list[call_entry[op]].matching = idx;
            }
        }
        let entry = list[0].next;
        Search {
            model,
            history,
            ops,
            list,
            returns: ops.iter().map(|&i| history[i].ret.is_some()).collect(),
            read_only: ops
                .iter()
                .map(|&i| model.read_only(&history[i].input, history[i].output.as_ref()))
                .collect(),
            must_return,
            cache: Cache::default(),
            bits: Bits::new(n),
            maybe: Bits::new(n),
            bits_hash: 0,
            states: States::new(model.init()),
            // `States::new` gives the initial state the first id.
            state: 0,
            calls: Vec::new(),
            returned_done: 0,
            best: Vec::new(),
            stuck: NONE,
            entry,
            has_unknown: must_return < n,
            all_ops: must_return == n,
        }
    }

    /// Undoes the last choice; `false` when there is none left (not linearizable).
    /// A forced choice (a read-only operation placed as soon as it could be) is the only
    /// one tried at its level: undoing it undoes the level above too.
    fn backtrack(&mut self) -> bool {
        loop {
            let Some((e, prev_state, all_ops, forced)) = self.calls.pop() else {
                return false;
            };
            self.undo(e, prev_state, all_ops);
            if !forced {
                return true;
            }
        }
    }

    fn undo(&mut self, e: usize, prev_state: StateId, all_ops: bool) {
        self.all_ops = all_ops;
        let op = self.list[e].op;
        if self.returns[op] {
            self.bits.flip(op);
            self.bits_hash ^= zobrist(op);
            self.returned_done -= 1;
        } else {
            self.maybe.flip(op);
        }
        self.state = prev_state;
        unlift(&mut self.list, e);
        self.entry = self.list[e].next;
    }

    /// Runs at most `budget` steps; `None` when undecided.
    fn run(&mut self, budget: u64) -> Option<PartOutcome> {
        for _ in 0..budget {
            if self.returned_done == self.must_return {
                return Some(PartOutcome::Ok);
            }
            if self.entry == NONE {
                // Only calls of operations without a return are left and the model refused
                // each here: a dead end.
                if !self.all_ops {
                    self.all_ops = true;
                    self.entry = self.list[0].next;
                    continue;
                }
                if !self.backtrack() {
                    return Some(self.illegal());
                }
                continue;
            }
            let Entry { op, is_call, .. } = self.list[self.entry];
            if is_call && !self.all_ops && !self.returns[op] {
                self.entry = self.list[self.entry].next;
            } else if is_call {
                let o = &self.history[self.ops[op]];
                if let Some(next_state) =
                    self.states
                        .step(self.model, self.state, op, o, self.read_only[op])
                {
                    let returned = self.returns[op];
                    let new_bits_hash = if returned {
                        self.bits.flip(op);
                        self.bits_hash ^ zobrist(op)
                    } else {
                        self.maybe.flip(op);
                        self.bits_hash
                    };
                    let key = new_bits_hash ^ zobrist(next_state as usize).rotate_left(17);
                    let maybe = self.has_unknown.then_some(&self.maybe);
                    let fresh = self.cache.visit(key, &self.bits, maybe, &next_state);
                    if fresh {
                        self.bits_hash = new_bits_hash;
                        let prev_state = std::mem::replace(&mut self.state, next_state);
                        // Placing an enabled read-only operation now loses nothing: it
                        // changes no state, and any linearization that places it later
                        // stays one when it moves here (everything that returned before
                        // its call is already placed). So no alternative is tried here.
                        let forced = self.read_only[op];
                        self.calls
                            .push((self.entry, prev_state, self.all_ops, forced));
                        self.all_ops = !self.has_unknown;
                        if returned {
                            self.returned_done += 1;
                        }
                        lift(&mut self.list, self.entry);
                        self.entry = self.list[0].next;
                        continue;
                    }
                    if returned {
                        self.bits.flip(op);
                    } else {
                        self.maybe.flip(op);
                    }
                }
                self.entry = self.list[self.entry].next;
            } else if !self.all_ops {
                self.all_ops = true;
                self.entry = self.list[0].next;
            } else {
                // A return whose call was not linearized before it: backtrack.
                if self.calls.len() > self.best.len() || self.stuck == NONE {
                    self.best = self.calls.iter().map(|&(e, ..)| self.list[e].op).collect();
                    self.stuck = op;
                }
                if !self.backtrack() {
                    return Some(self.illegal());
                }
            }
        }
        None
    }

    fn illegal(&self) -> PartOutcome {
        PartOutcome::Illegal {
            longest: self.best.clone(),
            stuck: self.stuck,
        }
    }
}

/// Steps each undecided partition gets per round before the next one's turn (doubling every
/// round, so a hard partition soon runs in long stretches).
const FIRST_SLICE: u64 = 4096;

/// Checks a whole history: partitions it as the model says and searches the partitions in
/// turns, the first illegal one deciding. `deadline` bounds the whole check.
pub(crate) fn check<M: Model>(
    model: &M,
    history: &[Operation<M::Input, M::Output>],
    deadline: Option<Instant>,
) -> Verdict {
    let parts = model
        .partition(history)
        .unwrap_or_else(|| vec![(0..history.len()).collect()]);
    let all: Vec<usize> = (0..parts.len()).collect();
    search_in_turns(model, history, &parts, &all, deadline, None)
}

/// As `check`, with the partitions dealt over `threads` OS threads (each searching its share
/// in turns); the first illegal partition stops the others.
pub(crate) fn check_parallel<M>(
    model: &M,
    history: &[Operation<M::Input, M::Output>],
    deadline: Option<Instant>,
    threads: usize,
) -> Verdict
where
    M: Model + Sync,
    M::Input: Sync,
    M::Output: Sync,
    M::State: Send,
{
    let parts = model
        .partition(history)
        .unwrap_or_else(|| vec![(0..history.len()).collect()]);
    let threads = threads.clamp(1, parts.len().max(1));
    if threads == 1 {
        let all: Vec<usize> = (0..parts.len()).collect();
        return search_in_turns(model, history, &parts, &all, deadline, None);
    }
    let stop = AtomicBool::new(false);
    let verdicts: Vec<Verdict> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let mine: Vec<usize> = (t..parts.len()).step_by(threads).collect();
                let (parts, stop) = (&parts, &stop);
                s.spawn(move || search_in_turns(model, history, parts, &mine, deadline, Some(stop)))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let mut verdict = Verdict::Linearizable;
    for v in verdicts {
        match v {
            Verdict::NotLinearizable(_) => return v,
            Verdict::Unknown(_) => verdict = v,
            Verdict::Linearizable => {}
        }
    }
    verdict
}

/// Searches the partitions `which` in turns with doubling step budgets. With `stop`, gives
/// up (as linearizable so far: the caller has the other thread's illegal verdict) when it is
/// set, and sets it on finding an illegal partition.
fn search_in_turns<M: Model>(
    model: &M,
    history: &[Operation<M::Input, M::Output>],
    parts: &[Vec<usize>],
    which: &[usize],
    deadline: Option<Instant>,
    stop: Option<&AtomicBool>,
) -> Verdict {
    let mut open: Vec<(usize, Search<'_, M>)> = which
        .iter()
        .map(|&k| (k, Search::new(model, history, &parts[k])))
        .collect();
    let mut slice = FIRST_SLICE;
    while !open.is_empty() {
        let mut still = Vec::with_capacity(open.len());
        for (k, mut search) in open {
            // The deadline is read once per slice, at most every `DEADLINE_EVERY` steps.
            let mut left = slice;
            let mut decided = None;
            while left > 0 {
                let step = left.min(DEADLINE_EVERY);
                left -= step;
                if let Some(outcome) = search.run(step) {
                    decided = Some(outcome);
                    break;
                }
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Verdict::Unknown("timed out".into());
                }
                if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                    return Verdict::Linearizable;
                }
            }
            match decided {
                None => still.push((k, search)),
                Some(PartOutcome::Ok) => {}
                Some(PartOutcome::Illegal { longest, stuck }) => {
                    if let Some(s) = stop {
                        s.store(true, Ordering::Relaxed);
                    }
                    let part = &parts[k];
                    return Verdict::NotLinearizable(Explanation {
                        partition: part.clone(),
                        longest_prefix: longest.iter().map(|&l| part[l]).collect(),
                        cannot_follow: (stuck != NONE).then(|| part[stuck]),
                    });
                }
            }
        }
        open = still;
        slice = slice.saturating_mul(2);
    }
    Verdict::Linearizable
}
