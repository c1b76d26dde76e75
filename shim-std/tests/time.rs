//! Time: std's clocks outside an execution; inside one, the virtual clock (monotonic,
//! moved by scheduling points and sleeps, costing no real time, identical across replays).

use pulse_runtime::{Builder, TimeMode};
use pulse_shim_std::sync::{Arc, Mutex};
use pulse_shim_std::thread;
use pulse_shim_std::time::{Duration, Instant, SystemTime, SystemTimeError, UNIX_EPOCH};

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
fn system_time_starts_at_the_runs_real_date_and_replays_identically() {
    let readings = || {
        let before = std::time::SystemTime::now();
        let seen = std::sync::Mutex::new(Vec::new());
        Builder::new().schedules(20).seed(8).check(|| {
            let t = thread::spawn(|| SystemTime::now());
            let mine = SystemTime::now();
            let theirs = t.join().unwrap();
            seen.lock().unwrap().push((mine, theirs));
            // The date the run started (real), not a fixed one.
            let after = std::time::SystemTime::now();
            assert!(before <= mine && mine < after + Duration::from_secs(1));
        });
        let seen = seen.into_inner().unwrap();
        // Every execution starts from the same date: readings differ by virtual time alone.
        let start = seen.iter().map(|(m, t)| *m.min(t)).min().unwrap();
        let since = |t: &SystemTime| t.duration_since(start).unwrap();
        let offsets: Vec<_> = seen.iter().map(|(m, t)| (since(m), since(t))).collect();
        assert!(offsets
            .iter()
            .all(|(m, t)| *m.max(t) < Duration::from_secs(1)));
        offsets
    };
    let first = readings();
    assert_eq!(first.len(), 20);
    assert!(
        first.iter().any(|r| r != &first[0]),
        "readings depend on the schedule"
    );
    assert_eq!(
        first,
        readings(),
        "same seed, same times (from the run's date)"
    );
}

/// A file's time is std's `SystemTime` (`fs::Metadata` is not rewritten): pulse's converts
/// to and from it, compares with it both ways and takes it in `duration_since`, so code
/// mixing them (trybuild's lock-file staleness check) compiles instrumented.
#[test]
fn std_and_pulse_system_times_mix() {
    let file: std::time::SystemTime = std::fs::metadata("Cargo.toml").unwrap().modified().unwrap();
    let now = SystemTime::now();
    // Each direction is its own impl.
    assert!(file < now);
    assert!(now > file);
    assert!(file <= now);
    assert!(now >= file);
    assert!(file != now);
    assert!(now != file);
    let ours: SystemTime = file.into();
    assert!(ours == file);
    assert!(file == ours);
    let back: std::time::SystemTime = ours.into();
    assert_eq!(back, file);
    assert_eq!(SystemTime::from(file), ours);
    assert_eq!(std::time::SystemTime::from(ours), file);

    // `duration_since` takes either; the usual calls still infer.
    let age = now.duration_since(file).unwrap();
    assert_eq!(now.duration_since(ours).unwrap(), age);
    assert_eq!(
        ours.duration_since(UNIX_EPOCH).unwrap(),
        file.duration_since(std::time::UNIX_EPOCH).unwrap()
    );
    let earlier = now - Duration::from_secs(2);
    assert_eq!(now.duration_since(earlier).unwrap(), Duration::from_secs(2));
    let times = [earlier, now];
    let gaps: Vec<Duration> = times
        .iter()
        .map(|t| now.duration_since(*t).unwrap())
        .collect();
    assert_eq!(gaps, [Duration::from_secs(2), Duration::ZERO]);
    let since = |e| now.duration_since(e);
    assert!(since(UNIX_EPOCH).is_ok());
    // std's own method takes only std's type: `file.duration_since(now)` does not compile
    // (`now.into()` does); with `UNIX_EPOCH` the instrumenter handles it (below).
    assert!(file.duration_since(now.into()).is_err());

    // std's error converts to ours (`?` where the code names `SystemTimeError`).
    fn future(file: std::time::SystemTime) -> Result<Duration, SystemTimeError> {
        Ok(std::time::UNIX_EPOCH.duration_since(file)?)
    }
    assert_eq!(
        future(file).unwrap_err().duration(),
        file.duration_since(std::time::UNIX_EPOCH).unwrap()
    );

    // What the instrumenter makes of `file.duration_since(UNIX_EPOCH)` (std's method takes
    // only std's type; `UNIX_EPOCH` is pulse's): the receiver goes through this.
    use pulse_shim_std::time::__pulse_system_time as receiver;
    let (file_ref, ours_ref) = (&file, &&ours);
    let std_epoch = file.duration_since(std::time::UNIX_EPOCH).unwrap();
    assert_eq!(
        receiver(file).duration_since(UNIX_EPOCH).unwrap(),
        std_epoch
    );
    assert_eq!(
        receiver(file_ref).duration_since(UNIX_EPOCH).unwrap(),
        std_epoch
    );
    assert_eq!(
        receiver(ours_ref).duration_since(UNIX_EPOCH).unwrap(),
        std_epoch
    );
    assert_eq!(receiver(now), now);
}

/// Inside an execution `SystemTime::now` is the run's real date plus virtual time:
/// files written before the run are in the past (from a fixed 2024 date every real file was
/// in the future, and freshness checks were false alarms).
#[test]
fn real_files_are_older_than_now_inside_an_execution() {
    let touched = std::time::SystemTime::now();
    let report = Builder::new().schedules(50).seed(3).run(|| {
        let modified = std::fs::metadata("Cargo.toml").unwrap().modified().unwrap();
        let now = SystemTime::now();
        assert!(modified < now, "{modified:?} is after {now:?}");
        assert!(now.duration_since(modified).is_ok());
        // trybuild's lock-file check (src/flock.rs): a file touched as the run started is
        // neither stale nor from the future.
        let stale = now - Duration::from_millis(1500);
        let future = now + Duration::from_millis(1500);
        assert!(
            !(touched < stale || future < touched),
            "{touched:?} vs {now:?}"
        );
    });
    assert!(report.passed(), "{}", report.failure.unwrap());
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
