//! The vector-clock join's inner loop. A 1,000-thread test's clocks have 1,000 entries and
//! every acquire joins one: baseline x86-64 (SSE2) has no unsigned 32-bit max, so the loop
//! compiled to a compare-and-blend four lanes at a time. With AVX2, where the CPU has it,
//! it is `vpmaxud` eight lanes at a time.
//!
//! Only long clocks ask whether the CPU has it: the process's first question runs `cpuid`
//! a dozen times, 40 µs on a VM where each one exits to the hypervisor, the whole cost of a
//! small test's cold first execution again (ARCHITECTURE.md decision 52).

/// Clocks shorter than this take the baseline loop and never ask for AVX2.
const AVX2_FROM: usize = 64;

/// `a[i] = max(a[i], b[i])` over the common length.
#[inline]
pub(super) fn max_into(a: &mut [u32], b: &[u32]) {
    #[cfg(target_arch = "x86_64")]
    if a.len().min(b.len()) >= AVX2_FROM && std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        unsafe { max_into_avx2(a, b) };
        return;
    }
    max_into_portable(a, b);
}

#[inline(always)]
fn max_into_portable(a: &mut [u32], b: &[u32]) {
    for (x, &y) in a.iter_mut().zip(b) {
        *x = (*x).max(y);
    }
}

/// The same loop, compiled for AVX2.
///
/// # Safety
/// Only on a CPU with AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn max_into_avx2(a: &mut [u32], b: &[u32]) {
    max_into_portable(a, b);
}

#[cfg(test)]
mod tests {
    #[test]
    fn it_takes_the_larger_of_each_pair_over_the_common_length() {
        for n in [0, 1, 7, 8, 9, 33, 63, 64, 65, 1000] {
            let mut a: Vec<u32> = (0..n).map(|i| (i * 7919 % 13) as u32).collect();
            let b: Vec<u32> = (0..n + 3)
                .map(|i| (i * 104_729 % 11) as u32 + (1 << 31))
                .collect();
            let want: Vec<u32> = a.iter().zip(&b).map(|(&x, &y)| x.max(y)).collect();
            let c: Vec<u32> = (0..n).map(|i| i as u32 % 5).collect();
            super::max_into(&mut a, &b);
            assert_eq!(a, want);
            let mut d = a.clone();
            super::max_into(&mut d, &c);
            assert_eq!(d, a);
        }
    }
}
