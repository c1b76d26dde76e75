//! Lowe's cache of visited configurations (the operations linearized so far and the state
//! they led to), with the dominance rule for unknown-outcome operations.
//!
//! Laid out for the search's two costs, growing and freeing: the hash table maps a
//! configuration's 64-bit hash to an index (8 + 4 bytes per slot, so growing it moves little),
//! and the configurations live in one vector, those whose hashes collide chained by index. On
//! `c50-ok` the table of whole entries (112 bytes a slot) spent 40% of the check in inserting,
//! rehashing and the page faults of its growth.

use std::collections::hash_map::Entry;

use crate::check::FastMap;

const END: u32 = u32::MAX;

/// A set of operations (by index in the partition), inline up to 256 operations: the cache
/// keeps one per visited configuration, and an allocation each cost more than the search.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Bits {
    Small([u64; 4]),
    Large(Box<[u64]>),
}

impl Bits {
    pub(crate) fn new(n: usize) -> Self {
        if n <= 256 {
            Bits::Small([0; 4])
        } else {
            Bits::Large(vec![0; n.div_ceil(64)].into_boxed_slice())
        }
    }
    fn words(&self) -> &[u64] {
        match self {
            Bits::Small(w) => w,
            Bits::Large(w) => w,
        }
    }
    pub(crate) fn flip(&mut self, i: usize) {
        let words: &mut [u64] = match self {
            Bits::Small(w) => w,
            Bits::Large(w) => w,
        };
        words[i / 64] ^= 1 << (i % 64);
    }
    fn is_subset_of(&self, other: &Bits) -> bool {
        self.words()
            .iter()
            .zip(other.words())
            .all(|(a, b)| a & !b == 0)
    }
}

/// A visited configuration: the returned operations linearized and the state they led to
/// (compared in full; the hash only finds the chain).
struct Seen<S> {
    bits: Bits,
    state: S,
    /// The previous configuration with the same hash (`END`: none).
    next: u32,
}

/// The visited configurations.
///
/// A configuration is dominated by a visited one with the same returned operations and state
/// and a subset of its unknown-outcome ones: those may take effect later or never and
/// constrain no other operation's position (they never returned), so every completion of the
/// dominated one is a completion of the other. Lowe's cache is the case of equal sets.
pub(crate) struct Cache<S> {
    /// A configuration's hash to the newest configuration with that hash.
    heads: FastMap<u64, u32>,
    seen: Vec<Seen<S>>,
    /// Per configuration (same index as `seen`), each set of unknown-outcome operations
    /// linearized with it; empty when the partition has no such operation.
    unknown: Vec<Vec<Bits>>,
}

impl<S> Default for Cache<S> {
    fn default() -> Self {
        Cache {
            heads: FastMap::default(),
            seen: Vec::new(),
            unknown: Vec::new(),
        }
    }
}

impl<S: Clone + Eq> Cache<S> {
    /// Records the configuration (`hash` is its hash: `bits`, the returned operations
    /// linearized; `maybe`, the unknown-outcome ones, `None` when the partition has none;
    /// `state`) and says whether it is new, i.e. not dominated by one visited before.
    pub(crate) fn visit(
        &mut self,
        hash: u64,
        bits: &Bits,
        maybe: Option<&Bits>,
        state: &S,
    ) -> bool {
        let index = u32::try_from(self.seen.len())
            .ok()
            .filter(|&k| k != END)
            .expect("fewer than 2^32 - 1 configurations in the cache");
        // One probe of the table whether the hash is new or not.
        let newest = match self.heads.entry(hash) {
            Entry::Vacant(v) => {
                v.insert(index);
                END
            }
            Entry::Occupied(mut o) => {
                let mut i = *o.get();
                while i != END {
                    let s = &self.seen[i as usize];
                    if s.bits == *bits && s.state == *state {
                        let Some(maybe) = maybe else { return false };
                        let sets = &mut self.unknown[i as usize];
                        if sets.iter().any(|u| u.is_subset_of(maybe)) {
                            return false;
                        }
                        sets.push(maybe.clone());
                        return true;
                    }
                    i = s.next;
                }
                std::mem::replace(o.get_mut(), index)
            }
        };
        self.seen.push(Seen {
            bits: bits.clone(),
            state: state.clone(),
            next: newest,
        });
        if let Some(maybe) = maybe {
            self.unknown.push(vec![maybe.clone()]);
        }
        true
    }
}
