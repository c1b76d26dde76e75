//! Time: std's clocks outside an execution; inside one, the virtual clock (monotonic,
//! moved by scheduling points and sleeps, costing no real time, identical across replays).

use pulse_runtime::{Builder, TimeMode};
use pulse_shim_std::sync::{Arc, Mutex};
use pulse_shim_std::thread;
use pulse_shim_std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// 2024-01-01T00:00:00Z, where every execution's `SystemTime` starts.
const VIRTUAL_DATE: Duration = Duration::from_secs(1_704_067_200);

#[test]
fn outside_an_execution_the_clocks_are_std() {
    let t0 = Instant::now();
    thread::sleep(Duration::from_millis(20));
    let t1 = Instant::now();
    assert!(t1 >= t0 && t1 - t0 >= Duration::from_millis(20));
    assert!(t0.elapsed() >= Duration::from_millis(20));
    let ours = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let std = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    assert!(
        std.abs_diff(ours) < Duration::from_secs(5),
        "real wall clock: {ours:?} vs {std:?}"
    );
    assert!(SystemTime::now().elapsed().is_ok());
}

#[test]
fn arithmetic_and_errors_match_std() {
    let t = Instant::now();
    let later = t + Duration::from_secs(3);
    assert_eq!(later - t, Duration::from_secs(3));
    assert_eq!(t - later, Duration::ZERO, "Instant subtraction saturates");
    assert_eq!(t.checked_duration_since(later), None);
    assert_eq!(t.saturating_duration_since(later), Duration::ZERO);
    assert_eq!(later.duration_since(t), Duration::from_secs(3));
    assert_eq!(later.checked_sub(Duration::from_secs(3)), Some(t));
    assert_eq!(t.checked_add(Duration::MAX), None);
    let mut u = t;
    u += Duration::from_millis(5);
    u -= Duration::from_millis(2);
    assert_eq!(u - t, Duration::from_millis(3));
    assert!(!format!("{t:?}").is_empty());

    let epoch = SystemTime::UNIX_EPOCH;
    assert_eq!(epoch, UNIX_EPOCH);
    let s = epoch + Duration::from_secs(10);
    assert_eq!(s.duration_since(epoch).unwrap(), Duration::from_secs(10));
    let err = epoch.duration_since(s).unwrap_err();
    assert_eq!(err.duration(), Duration::from_secs(10));
    assert_eq!(err.to_string(), "second time provided was later than self");
    assert_eq!(format!("{err:?}"), "SystemTimeError(10s)");
    let e: Box<dyn std::error::Error> = Box::new(err.clone());
    assert_eq!(e.to_string(), err.to_string());
    assert_eq!(s.checked_sub(Duration::from_secs(10)), Some(epoch));
    let mut m = s;
    m -= Duration::from_secs(4);
    m += Duration::from_secs(1);
    assert_eq!(m - Duration::from_secs(7), epoch);
    assert_eq!(format!("{epoch:?}"), format!("{:?}", std::time::UNIX_EPOCH));
}

#[test]
fn instant_is_monotonic_within_and_across_threads() {
    Builder::new().schedules(300).seed(4).check(|| {
        let last = Arc::new(Mutex::new(Instant::now()));
        let tick = |last: &Mutex<Instant>| {
            for _ in 0..3 {
                let now = Instant::now();
                let mut prev = last.lock().unwrap();
                // A reading taken before the lock is never later than one taken after.
                assert!(*prev <= Instant::now());
                assert!(now <= Instant::now());
                *prev = now.max(*prev);
            }
        };
        let l2 = last.clone();
        let t = thread::spawn(move || tick(&l2));
        tick(&last);
        t.join().unwrap();
    });
}

#[test]
fn sleeping_advances_the_virtual_clock_without_real_time() {
    let started = std::time::Instant::now();
    // Exact timing: in a slow-machine mode main may start its sleep a second late.
    Builder::new()
        .schedules(200)
        .seed(6)
        .time(TimeMode::INFINITELY_FAST)
        .check(|| {
            let t0 = Instant::now();
            let s0 = SystemTime::now();
            let sleeper = thread::spawn(|| {
                let t = Instant::now();
                thread::sleep(Duration::from_secs(1));
                t.elapsed()
            });
            thread::sleep(Duration::from_secs(60));
            assert!(sleeper.join().unwrap() >= Duration::from_secs(1));
            assert!(t0.elapsed() >= Duration::from_secs(60));
            // Nothing else waits this long: time jumps to the deadline and barely beyond.
            assert!(t0.elapsed() < Duration::from_secs(61));
            assert!(s0.elapsed().unwrap() >= Duration::from_secs(60));
        });
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "sleeps must be virtual: {:?}",
        started.elapsed()
    );
}

#[test]
fn system_time_starts_at_a_fixed_date_and_replays_identically() {
    let readings = || {
        let seen = std::sync::Mutex::new(Vec::new());
        Builder::new().schedules(20).seed(8).check(|| {
            let t = thread::spawn(|| SystemTime::now());
            let mine = SystemTime::now();
            let theirs = t.join().unwrap();
            seen.lock().unwrap().push(format!("{mine:?} {theirs:?}"));
            let since = mine.duration_since(UNIX_EPOCH).unwrap();
            assert!(
                since >= VIRTUAL_DATE && since < VIRTUAL_DATE + Duration::from_secs(1),
                "{since:?}"
            );
        });
        seen.into_inner().unwrap()
    };
    let first = readings();
    assert_eq!(first.len(), 20);
    assert!(
        first.iter().any(|r| r != &first[0]),
        "readings depend on the schedule"
    );
    assert_eq!(first, readings(), "same seed, same times");
}

#[test]
fn reading_the_clock_is_a_scheduling_point() {
    let steps = |f: fn()| Builder::new().schedules(1).seed(1).run(f).decisions;
    let base = steps(|| {});
    assert_eq!(
        steps(|| {
            let _ = Instant::now();
        }) - base,
        1
    );
    assert_eq!(
        steps(|| {
            let _ = SystemTime::now();
        }) - base,
        1
    );
    assert_eq!(steps(|| drop(UNIX_EPOCH.elapsed())) - base, 1);
    assert_eq!(
        steps(|| {
            let _ = Instant::now() + Duration::from_secs(1);
        }) - base,
        1,
        "arithmetic is not a scheduling point"
    );
}

/// A spin `Once`-style wait on an initialiser that sleeps: untimed steps take virtual time,
/// so the sleeper's deadline passes while the spinner spins, and it wakes. (Before, the clock
/// jumped only when nobody could run: the sleeper never woke, and a correct program was
/// reported as a livelock after 1,000,000 steps; a published crate's suite failed that way.)
#[test]
fn a_sleeper_wakes_while_another_thread_spins_waiting_for_it() {
    use pulse_shim_std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    for spin in [thread::yield_now as fn(), pulse_shim_std::hint::spin_loop] {
        let report = Builder::new().schedules(50).seed(8).run(move || {
            let ready = Arc::new(AtomicBool::new(false));
            let init = {
                let ready = ready.clone();
                thread::spawn(move || {
                    thread::sleep(Duration::from_millis(50));
                    ready.store(true, SeqCst);
                })
            };
            while !ready.load(SeqCst) {
                spin();
            }
            init.join().unwrap();
        });
        assert!(report.passed(), "{}", report.failure.unwrap());
    }
}
