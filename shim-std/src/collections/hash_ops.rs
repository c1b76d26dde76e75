//! The constructors of std's hash collections that pick their own `RandomState`, as traits
//! keyed by the scheduler ([`random_state`]). The instrumenter rewrites the calls it can
//! see to them, every word kept: `HashMap::new()` becomes
//! `<HashMap<_, _> as KeyedMap>::new()`, `RandomState::new()` becomes
//! `<RandomState as KeyedState>::new()`. The values are std's. `HashMap::default()`,
//! `collect()` and `#[derive(Default)]` reach std's `RandomState` through a generic hasher
//! and keep std's keys.

use std::collections::{HashMap, HashSet};
use std::hash::RandomState;

pub use super::keys::random_state;

/// `new`, `with_capacity` and `from([..])` of std's `HashMap` and `HashSet`, keyed by the
/// scheduler. (Called as `<T as KeyedMap>::new()`: std's inherent functions of the same
/// names win a plain `T::new()`.)
pub trait KeyedMap: Sized {
    /// What the collection holds: `(K, V)` for a map, `T` for a set.
    type Element;

    /// `new()`, with keys [`random_state`] chose.
    fn new() -> Self;

    /// `with_capacity(capacity)`, with keys [`random_state`] chose.
    fn with_capacity(capacity: usize) -> Self;

    /// `from([..])`, with keys [`random_state`] chose, filled in the array's order (so
    /// the layout, and the iteration order, follow from the keys alone).
    fn from<const N: usize>(items: [Self::Element; N]) -> Self
    where
        Self: Extend<Self::Element>,
    {
        let mut keyed = <Self as KeyedMap>::with_capacity(N);
        keyed.extend(items);
        keyed
    }
}

impl<K, V> KeyedMap for HashMap<K, V, RandomState> {
    type Element = (K, V);

    fn new() -> Self {
        HashMap::with_hasher(random_state())
    }

    fn with_capacity(capacity: usize) -> Self {
        HashMap::with_capacity_and_hasher(capacity, random_state())
    }
}

impl<T> KeyedMap for HashSet<T, RandomState> {
    type Element = T;

    fn new() -> Self {
        HashSet::with_hasher(random_state())
    }

    fn with_capacity(capacity: usize) -> Self {
        HashSet::with_capacity_and_hasher(capacity, random_state())
    }
}

/// `RandomState::new()` and `default()`, keyed by the scheduler.
pub trait KeyedState {
    /// `new()`: keys [`random_state`] chose.
    fn new() -> Self;

    /// `default()`: keys [`random_state`] chose.
    fn default() -> Self;
}

impl KeyedState for RandomState {
    fn new() -> Self {
        random_state()
    }

    fn default() -> Self {
        random_state()
    }
}
