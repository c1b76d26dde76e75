//! The model states one partition's search has reached, each kept once and named by a small
//! id, and the transitions between them.
//!
//! The search reaches the same state by many orders (on `c10-bad` checked whole: 926,000
//! accepted steps, 78,500 distinct states). With ids, a step already taken from a state is a
//! table look-up instead of the model building a new state (ten keys' values cloned, then
//! compared with the cached ones and dropped), and the cache compares and keeps ids, not
//! states. Exact: `Model::step` is a function of the state and the operation, and equal
//! states (`Eq`) share one id.

use std::collections::hash_map::Entry;
use std::hash::Hash;

use crate::check::{hash_of, FastMap};
use crate::{Model, Operation};

/// A state's id.
pub(crate) type StateId = u32;

const END: u32 = u32::MAX;
/// In `memo`: the model refused the operation in that state.
const REFUSED: u32 = u32::MAX;

pub(crate) struct States<S> {
    all: Vec<S>,
    /// Per state, the previous state whose hash is the same (`END`: none).
    next: Vec<u32>,
    /// A state's hash to the newest state with that hash.
    heads: FastMap<u64, u32>,
    /// (state id << 32 | operation index) to the step's result.
    memo: FastMap<u64, u32>,
    /// Whether `memo` is still consulted, and its look-ups and hits in the current window.
    memoize: bool,
    lookups: u32,
    hits: u32,
}

/// The memo is dropped when fewer than a quarter of a window's look-ups hit: then nearly every
/// state is new (a partition of one key, where the order of appends makes the text: on
/// `c50-ok` 151,000 distinct states for 176,000 configurations), and keeping the table costs
/// more than the steps it saves (measured: c50-ok's check took twice as long with it).
const WINDOW: u32 = 4096;

impl<S: Hash + Eq> States<S> {
    pub(crate) fn new(init: S) -> Self {
        let mut states = States {
            all: Vec::new(),
            next: Vec::new(),
            heads: FastMap::default(),
            memo: FastMap::default(),
            memoize: true,
            lookups: 0,
            hits: 0,
        };
        states.intern(init);
        states
    }

    /// The id of `state`, which is added if no equal state has one.
    fn intern(&mut self, state: S) -> StateId {
        let id = u32::try_from(self.all.len())
            .ok()
            .filter(|&k| k != END)
            .expect("fewer than 2^32 - 1 distinct states");
        // One probe of the table whether the hash is new or not.
        let newest = match self.heads.entry(hash_of(&state)) {
            Entry::Vacant(v) => {
                v.insert(id);
                END
            }
            Entry::Occupied(mut o) => {
                let mut i = *o.get();
                while i != END {
                    if self.all[i as usize] == state {
                        return i;
                    }
                    i = self.next[i as usize];
                }
                std::mem::replace(o.get_mut(), id)
            }
        };
        self.all.push(state);
        self.next.push(newest);
        id
    }

    /// The state after operation `op` (its index in the partition, `o` the operation) in
    /// state `from`, `None` when the model refuses it there. `read_only`: the model declared
    /// the operation leaves every state it accepts unchanged (`Model::read_only`), so its
    /// result needs no look-up.
    pub(crate) fn step<M: Model<State = S>>(
        &mut self,
        model: &M,
        from: StateId,
        op: usize,
        o: &Operation<M::Input, M::Output>,
        read_only: bool,
    ) -> Option<StateId> {
        if read_only {
            let state = &self.all[from as usize];
            return model
                .accepts(state, &o.input, o.output.as_ref())
                .then_some(from);
        }
        let run = |all: &[S]| model.step(&all[from as usize], &o.input, o.output.as_ref());
        if !self.memoize {
            return run(&self.all).map(|next| self.intern(next));
        }
        let key = (u64::from(from) << 32) | op as u64;
        self.lookups += 1;
        if let Some(&to) = self.memo.get(&key) {
            self.hits += 1;
            return (to != REFUSED).then_some(to);
        }
        if self.lookups >= WINDOW {
            if self.hits < WINDOW / 4 {
                self.memoize = false;
                self.memo = FastMap::default();
            }
            (self.lookups, self.hits) = (0, 0);
        }
        let to = run(&self.all).map(|next| self.intern(next));
        if self.memoize {
            self.memo.insert(key, to.unwrap_or(REFUSED));
        }
        to
    }
}
