//! The random number generator every randomised strategy draws from: xoshiro256++ seeded
//! through SplitMix64, the same stream as `rand_xoshiro`'s `Xoshiro256PlusPlus::
//! seed_from_u64`, so a seed means what it meant when pulse used that crate.
//!
//! Written here rather than taken from `rand_core`: pulse's support crates are built into
//! the user's graph, and a `rand_core` shared with it carries the user's features there
//! (`os_rng` pulls in `getrandom`, which on wasm reaches `once_cell`): a crate pulse
//! instruments would then depend on pulse, a cycle cargo refuses (governor 0.10.4).

/// xoshiro256++ (Blackman and Vigna), 256 bits of state.
#[derive(Clone, Debug)]
pub(crate) struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// The state SplitMix64 fills from `seed`.
    pub(crate) fn seed_from_u64(seed: u64) -> Rng {
        let mut x = seed;
        let mut s = [0; 4];
        for word in &mut s {
            *word = split_mix64(&mut x);
        }
        match s == [0; 4] {
            // xoshiro's one bad state, never reached from a u64 in practice.
            true => Rng::seed_from_u64(0),
            false => Rng { s },
        }
    }

    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// The upper half of the next word (the low bits are the weaker ones).
    #[inline]
    pub(crate) fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }
}

/// SplitMix64's next output (`seed_mix` finalises the state one step on), and its step.
fn split_mix64(x: &mut u64) -> u64 {
    let z = pulse_protocol::seed_mix(*x);
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z
}

#[cfg(test)]
mod tests {
    use super::Rng;
    use rand_core::{RngCore, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// Every seed pulse ever printed still replays: the stream is the crate's, word for word.
    #[test]
    fn the_stream_is_rand_xoshiros_for_every_seed() {
        for seed in [0, 1, 2, 42, 1000, u64::MAX, 0x9e37_79b9_7f4a_7c15] {
            let mut ours = Rng::seed_from_u64(seed);
            let mut theirs = Xoshiro256PlusPlus::seed_from_u64(seed);
            for i in 0..1000 {
                match i % 2 {
                    0 => assert_eq!(ours.next_u64(), theirs.next_u64(), "seed {seed}, word {i}"),
                    _ => assert_eq!(ours.next_u32(), theirs.next_u32(), "seed {seed}, word {i}"),
                }
            }
        }
    }
}
