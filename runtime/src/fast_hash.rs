//! A multiply-and-rotate hasher (FxHash's) for the runtime's maps keyed by addresses,
//! object ids and thread indices. SipHash cost a tenth of a CAS loop's time (every atomic
//! operation looks its location up) and a tenth of POS's decision with 1,000 threads at one
//! barrier. Not keyed at random either: a map's iteration order is the same in every run.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Default)]
pub(crate) struct FastHasher(u64);

pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

pub(crate) type FastSet<K> = HashSet<K, BuildHasherDefault<FastHasher>>;

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64)
    }
    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.write_u64(n as u64)
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}
