//! Hash keys as a scheduler choice: one data word per execution, drawn at its first map,
//! and the map's number within the execution.

use std::cell::Cell;
use std::hash::{BuildHasher, DefaultHasher, Hash, Hasher, RandomState};
use std::sync::OnceLock;

use crate::rt;
use pulse_runtime::seed_mix;

thread_local! {
    /// (execution, its drawn seed, maps keyed so far). Virtual threads share their OS
    /// thread, so this is per execution; the execution's number tells a stale entry.
    static STREAM: Cell<Option<(u64, u64, u64)>> = const { Cell::new(None) };
}

/// A `RandomState` for code under test: std's own outside an execution, and inside one
/// keyed by the execution's choices (the same keys on replay; one fixed order per map
/// under `dfs` and `dpor`, whose data choices are 0).
pub fn random_state() -> RandomState {
    let Some(ctx) = rt::current() else {
        return RandomState::new();
    };
    let id = ctx.execution_id();
    let (seed, n) = STREAM.with(|s| {
        let (seed, n) = match s.get() {
            Some((e, seed, n)) if e == id => (seed, n),
            _ => (ctx.choose_data(), 0),
        };
        s.set(Some((id, seed, n + 1)));
        (seed, n)
    });
    // SplitMix64's finaliser: neighbouring inputs give unrelated keys.
    let k0 = seed_mix(seed ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    keyed(k0, seed_mix(k0)).unwrap_or_else(|| {
        ctx.warn(LAYOUT_CHANGED.to_string());
        RandomState::new()
    })
}

const LAYOUT_CHANGED: &str = "this Rust's `RandomState` is not the two hash keys pulse knows, so \
     hash maps keep std's random keys: their order can differ on replay";

/// std's `RandomState` with the keys `k0`, `k1`. std has no constructor for it; its
/// fields are the two `u64` SipHash keys (`std::hash::random`), which
/// [`layout_is_two_keys`] checks once per process, before any is made this way.
fn keyed(k0: u64, k1: u64) -> Option<RandomState> {
    static TWO_KEYS: OnceLock<bool> = OnceLock::new();
    if !*TWO_KEYS.get_or_init(layout_is_two_keys) {
        return None;
    }
    // SAFETY: checked above: a `RandomState` is two `u64`s, any values valid.
    Some(unsafe { std::mem::transmute::<[u64; 2], RandomState>([k0, k1]) })
}

/// Whether `RandomState` is two `u64` keys, read as std documents its behaviour: two made
/// in a row on one thread differ by one in a single key (std counts `k0` up), and zero
/// keys hash as `DefaultHasher::new()` does (SipHash-1-3 keyed with zeros).
fn layout_is_two_keys() -> bool {
    const _: () = assert!(size_of::<RandomState>() == 16);
    let words = |s: &RandomState| {
        // SAFETY: same size (asserted above), read as plain bytes into integers.
        unsafe { std::mem::transmute_copy::<RandomState, [u64; 2]>(s) }
    };
    let (a, b) = (words(&RandomState::new()), words(&RandomState::new()));
    let counts_one = (b[0] == a[0].wrapping_add(1) && b[1] == a[1])
        || (b[1] == a[1].wrapping_add(1) && b[0] == a[0]);
    if !counts_one {
        return false;
    }
    // SAFETY: two integer keys, as the check above shows.
    let zero = unsafe { std::mem::transmute::<[u64; 2], RandomState>([0, 0]) };
    let probe = 0x5eed_cafe_u64;
    let mut h = DefaultHasher::new();
    probe.hash(&mut h);
    zero.hash_one(probe) == h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_rusts_random_state_is_two_keys() {
        assert!(layout_is_two_keys());
    }

    #[test]
    fn the_same_keys_hash_alike_and_other_keys_do_not() {
        let (a, b, c) = (
            keyed(1, 2).unwrap(),
            keyed(1, 2).unwrap(),
            keyed(1, 3).unwrap(),
        );
        assert_eq!(a.hash_one("x"), b.hash_one("x"));
        assert_ne!(a.hash_one("x"), c.hash_one("x"));
    }

    #[test]
    fn outside_an_execution_keys_are_std_s() {
        let (a, b) = (random_state(), random_state());
        assert_ne!(a.hash_one(1u8), b.hash_one(1u8), "std counts its keys up");
    }
}
