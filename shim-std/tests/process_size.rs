//! The process as a test sees it: pulse's own threads do not change it under the test.

/// The watchdog thread's first allocation (glibc maps it an arena: 64 MiB of address space)
/// happens before the test runs, and its end (its stack and TLS unmapped) before the search
/// returns, so a test that measures its process's size during the search (sharded-slab's
/// `reserved_bits_doesnt_leak`) does not see pulse's own thread in it.
#[cfg(target_os = "linux")]
#[test]
fn the_watchdog_does_not_change_the_process_size_under_the_test() {
    fn vsz() -> u64 {
        let s = std::fs::read_to_string("/proc/self/statm").unwrap();
        s.split_whitespace().next().unwrap().parse().unwrap()
    }
    for seed in 0..20 {
        let report = pulse_runtime::Builder::new()
            .schedules(3)
            .seed(seed)
            .blocking_timeout(std::time::Duration::from_secs(10))
            .run(|| {
                let m = pulse_shim_std::sync::Mutex::new(0u64);
                for n in 0..300 {
                    let before = vsz();
                    *m.lock().unwrap() += 1;
                    assert_eq!(before, vsz(), "iteration {n}");
                }
            });
        assert!(report.passed(), "seed {seed}: {:?}", report.failure);
    }
}
