//! The clocks TSC clock crates read raw (quanta's: the CPU's counter, calibrated against
//! `clock_gettime`) read pulse's clock inside an execution: a sleep passes on them as on
//! `Instant`, the counter ticks once per nanosecond, a counter read right after a
//! `clock_gettime` sees the same instant, and a loop polling the counter ends. Outside an
//! execution they are real.

#![cfg(all(unix, target_arch = "x86_64"))]

use std::time::Duration;

use pulse_runtime::Builder;
use pulse_shim_std::arch::x86_64::{__rdtscp, _rdtsc};
use pulse_shim_std::libc::{clock_gettime, timespec, CLOCK_MONOTONIC, CLOCK_REALTIME};
use pulse_shim_std::thread;
use pulse_shim_std::time::{Instant, SystemTime, UNIX_EPOCH};

fn read(clock: pulse_shim_std::libc::clockid_t) -> u64 {
    let mut ts = timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    assert_eq!(unsafe { clock_gettime(clock, &mut ts) }, 0);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[test]
fn the_counter_and_the_os_clock_follow_the_virtual_clock() {
    let report = Builder::new().schedules(20).seed(1).run(|| {
        // Another thread reading the counter: the reads interleave.
        let other = thread::spawn(|| unsafe { _rdtsc() });
        let (tsc0, mono0, instant0) = (unsafe { _rdtsc() }, read(CLOCK_MONOTONIC), Instant::now());
        thread::sleep(Duration::from_secs(5));
        let mono1 = read(CLOCK_MONOTONIC);
        // Read right after: the same instant.
        let tsc1 = unsafe { _rdtsc() };
        let slept = instant0.elapsed();
        assert_eq!(tsc1, mono1);
        let on_counter = Duration::from_nanos(tsc1 - tsc0);
        let on_os_clock = Duration::from_nanos(mono1 - mono0);
        for d in [on_counter, on_os_clock, slept] {
            assert!(
                d >= Duration::from_secs(5) && d < Duration::from_millis(5_001),
                "{d:?}"
            );
        }
        let mut aux = 7;
        assert!(unsafe { __rdtscp(&mut aux) } >= tsc1);
        assert_eq!(aux, 0, "one CPU");
        // The real-time clock reads the execution's date, as `SystemTime::now` does.
        let wall = read(CLOCK_REALTIME);
        let date = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        assert!(date.as_nanos() as u64 - wall < 1_000_000, "{wall} {date:?}");
        // A loop polling the counter lets time pass (each read is a scheduling point).
        let until = unsafe { _rdtsc() } + 100_000;
        while unsafe { _rdtsc() } < until {}
        assert!(other.join().unwrap() > 0);
    });
    assert!(report.passed(), "{}", report.failure.unwrap());
    assert_eq!(report.executions, 20);
}

#[test]
fn outside_an_execution_they_are_real() {
    let (tsc0, mono0) = (unsafe { _rdtsc() }, read(CLOCK_MONOTONIC));
    std::thread::sleep(Duration::from_millis(20));
    let (tsc1, mono1) = (unsafe { _rdtsc() }, read(CLOCK_MONOTONIC));
    assert!(tsc1 - tsc0 >= 20_000_000, "a nanosecond per tick");
    assert!(mono1 - mono0 >= 20_000_000);
    assert!(tsc1 - tsc0 < 20_000_000_000);
}
