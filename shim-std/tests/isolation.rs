//! Tests that keep state in statics run many times in one process would fail for that
//! reason alone: pulse notices (a failure after the first schedule that a fresh process
//! does not reproduce) and runs the rest of the search one process per schedule.

use pulse_runtime::{Builder, FailureKind, Isolation, Report, Strategy};
use pulse_shim_std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use pulse_shim_std::sync::{Arc, Mutex};
use pulse_shim_std::thread;

#[test]
fn a_test_counting_in_a_static_is_isolated_not_failed() {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let report = Builder::new().schedules(40).seed(1).run(|| {
        let before = RUNS.fetch_add(1, SeqCst);
        let t = thread::spawn(|| RUNS.load(SeqCst));
        assert!(t.join().unwrap() >= 1);
        assert_eq!(
            before, 0,
            "under cargo test this body runs once per process"
        );
    });
    assert!(report.passed(), "{}", report.failure.unwrap());
    assert_eq!(report.executions, 40);
    // The failure set aside is named, in case it is a real bug that needs the state.
    assert!(
        report.warnings.iter().any(|w| w.contains("fresh process")
            && w.contains("The failure set aside (schedule 2, seed 2): a panic in thread 'main'")
            && w.contains("under cargo test this body runs once per process")),
        "{:?}",
        report.warnings
    );
}

#[test]
fn with_isolation_off_the_same_test_fails_on_its_second_schedule() {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let report = Builder::new()
        .schedules(40)
        .seed(1)
        .isolation(Isolation::Off)
        .run(|| {
            // A second thread, so that there are schedules to run (a test without a choice
            // runs once, and could not fail this way).
            thread::spawn(|| {}).join().unwrap();
            assert_eq!(RUNS.fetch_add(1, SeqCst), 0);
        });
    assert_eq!(report.failure.expect("stale state").execution, 1);
}

/// A race only a process's first run takes part in (a flag set on first use): later runs
/// in the process make no choice. That is no proof the test has none to make: pulse runs
/// the rest of the schedules one process each, and finds the race (a trial found seeds
/// 1-5 calling such a test "exhaustive" after two runs).
#[test]
fn a_later_run_without_choices_moves_the_search_to_fresh_processes() {
    use pulse_shim_std::sync::atomic::AtomicBool;
    static FIRST: AtomicBool = AtomicBool::new(true);
    let report = Builder::new().schedules(100).seed(1).run(|| {
        if !FIRST.swap(false, SeqCst) {
            return;
        }
        unordered_increments();
    });
    assert!(report.exhaustive.is_none());
    let f = report
        .failure
        .expect("the lost update, from a fresh process");
    assert!(f.message.contains("lost update"), "{f}");
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("made no scheduling choice")),
        "{:?}",
        report.warnings
    );
}

/// While a worker runs a long execution, the search tells its driver it is alive (the
/// worker cannot: it has no `PULSE_PROGRESS`): cargo-pulse took a step limit's traced replay
/// in a fresh process, a minute long, for a stall and killed the test.
#[test]
fn a_long_isolated_execution_is_a_sign_of_life_for_the_driver() {
    use std::sync::Mutex as StdMutex;
    use std::time::{Duration, Instant};
    let started = Instant::now();
    let calls = std::sync::Arc::new(StdMutex::new(Vec::new()));
    let seen = calls.clone();
    let report = Builder::new()
        .schedules(1)
        .seed(1)
        .isolation(Isolation::Always)
        .progress(move |_, _| seen.lock().unwrap().push(started.elapsed()))
        .run(|| std::thread::sleep(Duration::from_millis(3_500)));
    assert!(report.passed(), "{}", report.failure.unwrap());
    let calls = calls.lock().unwrap().clone();
    let longest_silence = calls
        .iter()
        .scan(Duration::ZERO, |last, &t| {
            let gap = t - *last;
            *last = t;
            Some(gap)
        })
        .max()
        .unwrap_or_default();
    assert!(
        calls.len() >= 3 && longest_silence < Duration::from_millis(2_500),
        "{calls:?}"
    );
}

/// A failure found in this process whose check in a fresh process cannot finish (there
/// the execution runs on past the time the check gets) stands as found here, with a
/// warning. It was a TOOL ERROR: the check had no time of its own, 25 s of the isolator's
/// grace, and a 30-million-step failing execution of rcu_cell 1.2.4 (trial) ran past it.
#[test]
fn a_failure_a_fresh_process_cannot_check_in_time_is_reported_as_found() {
    use std::sync::atomic::AtomicUsize as StdAtomicUsize;
    use std::time::Instant;
    static RUNS: StdAtomicUsize = StdAtomicUsize::new(0);
    let started = Instant::now();
    let report = Builder::new().schedules(20).seed(1).run(|| {
        if std::env::var_os(pulse_protocol::env::ISOLATED_WORKER).is_some() {
            // The check: longer than it may take (cut at its time, ~10 s).
            return outrun_any_check();
        }
        thread::spawn(|| {}).join().unwrap();
        // The same message in every run: its traced replay here needs no fresh process.
        assert!(
            RUNS.fetch_add(1, SeqCst) == 0,
            "fails from the second run on"
        );
    });
    let f = report.failure.as_ref().expect("the failure stands");
    assert_eq!(f.kind, FailureKind::Panic, "{f}");
    assert_eq!(f.execution, 1, "{f}");
    warned_and_cut(&report, "could not be checked in a fresh process", started);
}

/// A failure confirmed in a fresh process whose traced replay there cannot finish in its
/// time (far longer than the failing execution took) stands, without a trace, and is not
/// said to have failed to reproduce (a 100-million-step failure of crossbeam-channel 0.4.4,
/// trial).
#[test]
fn a_traced_replay_that_cannot_finish_leaves_the_failure_standing() {
    use std::sync::atomic::AtomicUsize as StdAtomicUsize;
    use std::time::Instant;
    static RUNS: StdAtomicUsize = StdAtomicUsize::new(0);
    let started = Instant::now();
    let report = Builder::new().schedules(20).seed(1).run(|| {
        let order = std::env::var(pulse_protocol::env::ISOLATED_WORKER).unwrap_or_default();
        if order.contains(r#""tracing":true"#) {
            return outrun_any_check();
        }
        thread::spawn(|| {}).join().unwrap();
        // From the second run in this process on, and in any fresh one.
        assert!(RUNS.fetch_add(1, SeqCst) == 0 && order.is_empty(), "fails");
    });
    let f = report.failure.as_ref().expect("the failure stands");
    assert_eq!((f.kind, f.execution), (FailureKind::Panic, 1), "{f}");
    assert!(f.reproduced, "not contradicted: {f}");
    warned_and_cut(&report, "traced replay did not finish", started);
}

/// Yields for two minutes: far past the time a fresh process's run gets.
fn outrun_any_check() {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(120) {
        thread::yield_now();
    }
}

/// The run said `warning` and did not wait the worker out.
#[track_caller]
fn warned_and_cut(report: &Report, warning: &str, started: std::time::Instant) {
    assert!(
        report.warnings.iter().any(|w| w.contains(warning)),
        "{:?}",
        report.warnings
    );
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(40), "waited {took:?}");
}

#[test]
fn a_real_race_is_still_found_when_every_schedule_is_isolated() {
    let report = Builder::new()
        .schedules(300)
        .seed(2)
        .isolation(Isolation::Always)
        .run(lost_update);
    let f = report.failure.expect("lost update found");
    assert_eq!(f.kind, FailureKind::Panic);
    assert!(f.reproduced && !f.trace.is_empty(), "{f}");
}

/// dfs and dpor with every schedule in a fresh process (their position goes there and
/// back): the same failure at the same schedule as in one process, replayed with its trace.
#[test]
fn dfs_and_dpor_with_every_schedule_isolated_find_what_they_find_in_one_process() {
    for strategy in [Strategy::Dfs { bound: 2 }, Strategy::Dpor { bound: 2 }] {
        let search = |isolation| {
            Builder::new()
                .schedules(300)
                .strategy(strategy)
                .isolation(isolation)
                .run(lost_update)
        };
        let isolated = search(Isolation::Always);
        let f = isolated.failure.expect("lost update found");
        assert_eq!(f.kind, FailureKind::Panic, "{strategy}: {f}");
        assert!(f.reproduced && !f.trace.is_empty(), "{strategy}: {f}");
        assert!(isolated.warnings.is_empty(), "{:?}", isolated.warnings);
        let in_place = search(Isolation::Off).failure.unwrap();
        assert_eq!(f.execution, in_place.execution, "{strategy}");
        assert_eq!(f.schedule, in_place.schedule, "{strategy}");
    }
}

/// A crash in an isolated execution keeps the schedule that led to it (the worker's
/// journal): under every strategy it is the schedule of the same execution failing by a
/// panic, replayed in a fresh process it crashes again, and the report traces it up to the
/// crash.
#[test]
fn a_crash_in_an_isolated_random_execution_is_reported_with_its_schedule_and_trace() {
    crash_keeps_its_schedule(Strategy::Random);
}

#[test]
fn a_crash_in_an_isolated_dfs_execution_is_reported_with_its_schedule_and_trace() {
    crash_keeps_its_schedule(Strategy::Dfs { bound: 2 });
}

#[test]
fn a_crash_in_an_isolated_dpor_execution_is_reported_with_its_schedule_and_trace() {
    crash_keeps_its_schedule(Strategy::Dpor { bound: 2 });
}

/// One search per test: a worker re-runs its test's earlier searches in process, and one
/// of a crashing program would end it before it reached its own.
fn crash_keeps_its_schedule(strategy: Strategy) {
    let search = |f: fn()| {
        Builder::new()
            .schedules(300)
            .seed(1)
            .strategy(strategy)
            .isolation(Isolation::Always)
            .run(f)
            .failure
            .unwrap_or_else(|| panic!("{strategy}: the lost update is found"))
    };
    let panic = search(lost_update);
    // The search's schedule (a panic's may be minimized after, in process).
    let found = panic.original_schedule.unwrap_or(panic.schedule);
    let crash = search(crash_on_lost_update);
    assert_eq!(crash.kind, FailureKind::Crash, "{strategy}: {crash}");
    assert_eq!(crash.execution, panic.execution, "{strategy}");
    assert!(!crash.schedule.is_empty(), "{strategy}: {crash}");
    assert_eq!(crash.schedule, found, "{strategy}: {crash}");
    assert!(
        crash.reproduced,
        "{strategy}: replayed, it crashes again: {crash}"
    );
    let last = crash.trace.last().expect("traced up to the crash");
    assert_eq!(last.thread, "main", "{strategy}: {crash}");
    assert_eq!(crash.thread, "main", "{strategy}: {crash}");
    assert!(
        crash
            .to_string()
            .contains("the process died while main ran"),
        "{strategy}: {crash}"
    );
    // The trace file (`--trace-out`, the viewer) too: the rows and the notes the table
    // leaves out, the failing event the crashing thread's last, named after the failure.
    let file = crash.full_trace.as_ref().expect("a crash's trace file");
    let failing = &file.events[file.failing_event.expect("a failing event") as usize];
    assert_eq!(
        file.threads[failing.thread as usize].name, "main",
        "{strategy}: {file:#?}"
    );
    assert!(
        failing.step >= last.step && file.events.len() >= crash.trace.len(),
        "{strategy}: {file:#?}"
    );
    assert_eq!(
        (file.outcome.as_str(), file.schedule.as_str()),
        ("crash", &*found.to_string())
    );
    let replay = format!(
        "{}=always {}='{}'",
        pulse_protocol::env::ISOLATION,
        pulse_protocol::env::REPLAY,
        crash.schedule
    );
    assert!(
        crash.replay_command.contains(&replay),
        "{strategy}: {}",
        crash.replay_command
    );
}

/// A crash's replay line asks for a fresh process: there the replay is caught and reported
/// as the search reported it, schedule and trace, instead of ending the test's process.
#[test]
fn a_crash_replayed_in_a_fresh_process_is_reported_with_its_schedule_and_trace() {
    // The crash's schedule is the panic's (`crash_keeps_its_schedule`); a search of the
    // crashing program itself would end this test's workers before they reached the replay.
    let panic = Builder::new()
        .schedules(300)
        .strategy(Strategy::Dfs { bound: 2 })
        .isolation(Isolation::Off)
        .run(lost_update)
        .failure
        .expect("the lost update is found");
    let schedule = panic
        .original_schedule
        .unwrap_or(panic.schedule)
        .to_string();
    let crash = Builder::new()
        .replay(&schedule)
        .unwrap()
        .isolation(Isolation::Always)
        .run(crash_on_lost_update)
        .failure
        .expect("the replay crashes");
    assert_eq!(crash.kind, FailureKind::Crash, "{crash}");
    assert_eq!(crash.schedule.to_string(), schedule, "{crash}");
    assert!(crash.reproduced, "{crash}");
    assert_eq!(crash.trace.last().map(|e| e.thread.as_str()), Some("main"));
    assert!(
        crash.replay_command.starts_with("PULSE_ISOLATION=always "),
        "{}",
        crash.replay_command
    );
}

/// `lost_update`, ending its process instead of panicking.
fn crash_on_lost_update() {
    if std::panic::catch_unwind(lost_update).is_err() {
        std::process::abort();
    }
}

/// Two threads adding one to a shared count, each reading it under the lock and writing
/// it back under the lock again: an update can be lost.
fn lost_update() {
    let n = Arc::new(Mutex::new(0));
    let t = {
        let n = n.clone();
        thread::spawn(move || {
            let v = *n.lock().unwrap();
            *n.lock().unwrap() = v + 1;
        })
    };
    let v = *n.lock().unwrap();
    *n.lock().unwrap() = v + 1;
    t.join().unwrap();
    assert_eq!(*n.lock().unwrap(), 2);
}

#[test]
fn an_execution_that_crashes_its_process_is_reported_with_its_seed() {
    let report = Builder::new()
        .schedules(5)
        .seed(3)
        .isolation(Isolation::Always)
        .run(|| std::process::abort());
    let f = report.failure.expect("crash reported");
    assert_eq!(f.kind, FailureKind::Crash);
    assert!(
        f.message.contains("crashed its process (signal 6: SIGABRT"),
        "{f}"
    );
    assert_eq!(f.seed, Some(3));
    assert!(
        f.reproduced,
        "the seed crashes a second fresh process too: {f}"
    );
    let by_seed = format!(
        "{}=3 {}=1",
        pulse_protocol::env::SEED,
        pulse_protocol::env::SCHEDULES
    );
    assert!(f.replay_command.contains(&by_seed), "{}", f.replay_command);
}

#[test]
fn an_execution_that_exits_its_process_is_a_crash() {
    let report = Builder::new()
        .schedules(5)
        .seed(3)
        .isolation(Isolation::Always)
        .run(|| std::process::exit(7));
    let f = report.failure.expect("exit reported");
    assert_eq!(f.kind, FailureKind::Crash);
    assert!(
        f.message.contains("ended its process with exit status 7"),
        "{f}"
    );
}

#[test]
fn a_worker_that_never_answers_is_killed_at_its_deadline() {
    // A process started to serve an isolated run has this set: here, it hangs before it
    // gets to the run.
    if std::env::var_os(pulse_protocol::env::ISOLATED_WORKER).is_some() {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
    }
    let started = std::time::Instant::now();
    let report = Builder::new()
        .schedules(5)
        .seed(4)
        .isolation(Isolation::Always)
        .blocking_timeout(std::time::Duration::from_millis(100))
        .run(|| {});
    let f = report
        .failure
        .expect("reported as a tool error, not waited for");
    assert_eq!(f.kind, FailureKind::ToolError);
    assert!(
        f.message.contains("seed 4") && f.message.contains("had not reached"),
        "{f}"
    );
    assert!(
        f.to_string().starts_with("pulse could not finish the run"),
        "{f}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_run_the_test_binary_cannot_reach_again_runs_in_process_and_says_so() {
    // Not a libtest test thread: a re-run of the binary never gets to this run.
    let report = std::thread::Builder::new()
        .name("not-a-test".into())
        .spawn(|| {
            Builder::new()
                .schedules(20)
                .seed(5)
                .isolation(Isolation::Always)
                .run(|| {
                    let t = thread::spawn(|| 1);
                    assert_eq!(t.join().unwrap(), 1);
                })
        })
        .unwrap()
        .join()
        .unwrap();
    assert!(report.passed(), "{}", report.failure.unwrap());
    assert_eq!(report.executions, 20);
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("could not run in fresh processes")),
        "{:?}",
        report.warnings
    );
}

#[test]
fn a_panic_in_drop_during_unwinding_is_a_crash_reported_with_both_panics() {
    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("the destructor's panic");
        }
    }
    let report = Builder::new()
        .schedules(3)
        .seed(6)
        .isolation(Isolation::Always)
        .run(|| {
            let _bomb = Bomb;
            panic!("the first panic");
        });
    let f = report.failure.expect("the abort is reported");
    assert_eq!(f.kind, FailureKind::Crash, "{f}");
    for said in [
        "SIGABRT",
        "the first panic",
        "then, while unwinding, panicked",
        "the destructor's panic",
        "isolation.rs:",
    ] {
        assert!(f.message.contains(said), "{said:?} missing from {f}");
    }
    let first = f.message.find("the first panic").unwrap();
    assert!(
        first < f.message.find("the destructor's panic").unwrap(),
        "root cause first: {f}"
    );
}

#[test]
#[cfg(debug_assertions)]
fn an_unsafe_precondition_abort_is_a_crash_with_its_message() {
    let report = Builder::new()
        .schedules(3)
        .seed(7)
        .isolation(Isolation::Always)
        .run(|| {
            let t = thread::spawn(|| unsafe {
                std::hint::assert_unchecked(std::hint::black_box(false))
            });
            t.join().unwrap();
        });
    let f = report.failure.expect("the abort is reported");
    assert_eq!(f.kind, FailureKind::Crash, "{f}");
    assert!(
        f.message.contains("unsafe precondition(s) violated")
            && f.message.contains("cannot unwind"),
        "{f}"
    );
}

/// A failure on the first schedule whose message depends on a static it changed: replayed in
/// the same process, the schedule would start from the changed static and fail differently
/// (once reported as "did not reproduce" on r2d2's `test_max_lifetime`); it is replayed in a
/// fresh process, where it starts as the failing execution did.
#[test]
fn a_failure_that_changes_a_static_is_replayed_in_a_fresh_process() {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let report = Builder::new().schedules(10).seed(1).run(|| {
        let n = RUNS.fetch_add(1, SeqCst);
        let t = thread::spawn(|| ());
        t.join().unwrap();
        panic!("run {n} of this body in this process");
    });
    let f = report.failure.clone().expect("fails at once");
    assert_eq!(f.execution, 0);
    assert!(f.message.contains("run 0 of"), "{f}");
    assert!(f.reproduced && !f.trace.is_empty(), "{f}");
    assert_warns(&report, "replayed in a fresh process");
}

/// The same for a replay (`--replay`): it runs in process, and its traced re-run, which
/// starts from what it left in a static, is made in a fresh process (crossbeam-deque 0.8.0's
/// replay said the failure it had just shown did not reproduce).
#[test]
fn a_replayed_failure_that_changes_a_static_is_traced_in_a_fresh_process() {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let report = Builder::new().replay("p1:").unwrap().run(|| {
        let n = RUNS.fetch_add(1, SeqCst);
        if n == 0 {
            panic!("run {n} of this body in this process");
        }
    });
    let f = report.failure.clone().expect("the replay fails");
    assert!(f.message.contains("run 0 of"), "{f}");
    assert!(f.reproduced && !f.trace.is_empty(), "{f}");
    assert_warns(&report, "replayed in a fresh process");
}

/// A worker runs its execution from the parent run's date, not from its own start: the
/// search and its fresh-process replays read the same `SystemTime`s.
#[test]
fn an_isolated_execution_reads_its_parent_runs_dates() {
    use pulse_shim_std::time::SystemTime;
    // In a worker (a re-run of this test) this is read after the parent's run began.
    let before = std::time::SystemTime::now();
    let report = Builder::new()
        .schedules(3)
        .seed(1)
        .isolation(Isolation::Always)
        .run(move || {
            let now = SystemTime::now();
            assert!(now < before, "{now:?} is not the parent run's date");
        });
    assert!(report.passed(), "{}", report.failure.unwrap());
    assert!(
        !report
            .warnings
            .iter()
            .any(|w| w.contains("ran in this process")),
        "{:?}",
        report.warnings
    );
}

/// dfs and dpor prove something only of runs that start from the same state. A test whose
/// later runs in one process take another path (here only the first run spawns a third
/// thread) is searched again one process per schedule, and the verdict is the clean one: as
/// many schedules as a search of the first run's program alone.
#[test]
fn dfs_on_a_test_whose_runs_differ_starts_over_in_fresh_processes() {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    starts_over(&RUNS, 2, 1);
}

/// The same with later runs that are shorter (a flag set on first use): they never reach
/// the choices dfs and dpor replay in them, which is how pulse sees the runs differ.
#[test]
fn dfs_on_a_test_whose_later_runs_are_shorter_starts_over_in_fresh_processes() {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    starts_over(&RUNS, 1, 0);
}

fn starts_over(runs: &'static AtomicUsize, first: usize, later: usize) {
    let searched = under_dfs_and_dpor(runs, first, later, Isolation::Auto);
    // Last: an isolated execution re-runs this test up to its own search, in process.
    for (strategy, report) in searched {
        assert!(report.passed(), "{strategy}: {}", report.failure.unwrap());
        assert_started_over(&report, "do not start from the same state", strategy);
        let clean = Builder::new()
            .schedules(SCHEDULES)
            .strategy(strategy)
            .run(|| racing(first));
        let schedules = |r: &Report| r.exhaustive.map(|e| e.schedules);
        assert!(schedules(&clean).is_some(), "{strategy}");
        assert_eq!(schedules(&report), schedules(&clean), "{strategy}");
        assert_eq!(report.executions, clean.executions, "{strategy}");
    }
}

/// A failure after the first schedule that its schedule, replayed in a fresh process, does
/// not reproduce came from state earlier runs left (here a counter pulse cannot see): the
/// search starts over one process per schedule, and the test passes. (One search per test:
/// an isolated execution re-runs its test up to its search, and an earlier search there
/// would fail the same way, in process.)
#[test]
fn dfs_on_a_test_that_fails_only_after_earlier_runs_starts_over() {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    fails_only_after_earlier_runs(Strategy::Dfs { bound: 2 }, &RUNS);
}

#[test]
fn dpor_on_a_test_that_fails_only_after_earlier_runs_starts_over() {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    fails_only_after_earlier_runs(Strategy::Dpor { bound: 2 }, &RUNS);
}

fn fails_only_after_earlier_runs(
    strategy: Strategy,
    runs: &'static std::sync::atomic::AtomicUsize,
) {
    let report = Builder::new().schedules(50).strategy(strategy).run(|| {
        assert_ne!(runs.fetch_add(1, SeqCst), 3, "the fourth run in a process");
        racing(1);
    });
    assert!(report.passed(), "{strategy}: {}", report.failure.unwrap());
    assert_started_over(&report, "does not reproduce", strategy);
    assert!(report.exhaustive.is_some(), "{strategy}");
}

/// Asserts that a search started over one process per schedule, for a reason that says
/// `why`.
fn assert_started_over(report: &Report, why: &str, context: impl std::fmt::Display) {
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains(why) && w.contains("started over")),
        "{context}: {:?}",
        report.warnings
    );
}

/// A `static` lock the test takes carries its state from run to run: dfs and dpor start
/// over one process per schedule rather than call the search a proof.
#[test]
fn dpor_on_a_test_that_shares_a_static_lock_starts_over() {
    static LOCK: Mutex<u32> = Mutex::new(0);
    let report = Builder::new()
        .schedules(50)
        .strategy(Strategy::Dpor { bound: 2 })
        .run(|| {
            *LOCK.lock().unwrap() += 1;
            racing(1);
        });
    assert!(report.passed(), "{}", report.failure.unwrap());
    assert_started_over(&report, "shared between its runs", "dpor:2");
    assert_eq!(report.exhaustive.map(|e| e.schedules), Some(5));
}

/// A real race found after the first schedule of a test that keeps state: its schedule
/// fails in a fresh process too, so it is reported, replayed there, and the search does not
/// start over.
#[test]
fn dfs_finds_a_real_race_in_a_test_that_keeps_state() {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    for strategy in [Strategy::Dfs { bound: 2 }, Strategy::Dpor { bound: 2 }] {
        let report = Builder::new().schedules(50).strategy(strategy).run(|| {
            RUNS.fetch_add(1, SeqCst);
            unordered_increments();
        });
        let f = report.failure.expect("the lost update");
        assert!(f.message.contains("lost update"), "{strategy}: {f}");
        assert!(f.execution > 0 && f.reproduced, "{strategy}: {f}");
        assert!(
            !report.warnings.iter().any(|w| w.contains("started over")),
            "{strategy}: {:?}",
            report.warnings
        );
    }
}

/// Where the schedules cannot move to fresh processes (`PULSE_ISOLATION=off`), a search
/// whose runs differ says so, and not "was the code changed since the schedule was
/// recorded?".
#[test]
fn dfs_in_one_process_on_a_test_whose_runs_differ_names_the_state_kept_between_them() {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    for (strategy, report) in under_dfs_and_dpor(&RUNS, 2, 1, Isolation::Off) {
        let f = report.failure.expect("the runs diverge");
        assert_eq!(f.kind, FailureKind::ReplayDiverged, "{strategy}: {f}");
        assert!(
            f.message.contains("do not start from the same state"),
            "{strategy}: {f}"
        );
    }
}

/// Later runs that are shorter never reach the choices replayed in them: nothing diverges,
/// but running out of schedules proves nothing, and the report must not say "exhaustive".
#[test]
fn dfs_in_one_process_on_a_test_whose_later_runs_are_shorter_is_no_proof() {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    for (strategy, report) in under_dfs_and_dpor(&RUNS, 1, 0, Isolation::Off) {
        assert!(report.passed(), "{strategy}");
        assert!(report.exhaustive.is_none(), "{strategy}");
        assert!(
            report.warnings.iter().any(|w| w.starts_with("not a proof")),
            "{strategy}: {:?}",
            report.warnings
        );
    }
}

/// Enough for `dfs:2` to exhaust `racing(2)` (171 schedules).
const SCHEDULES: u64 = 200;

/// `racing` under `dfs:2` and under `dpor:2`, with `first` threads beside the main one in
/// the first run of a process and `later` in the others (`runs` counts them).
fn under_dfs_and_dpor(
    runs: &'static AtomicUsize,
    first: usize,
    later: usize,
    isolation: Isolation,
) -> Vec<(Strategy, Report)> {
    [Strategy::Dfs { bound: 2 }, Strategy::Dpor { bound: 2 }]
        .into_iter()
        .map(|strategy| {
            runs.store(0, SeqCst);
            let report = Builder::new()
                .schedules(SCHEDULES)
                .strategy(strategy)
                .isolation(isolation)
                .run(|| {
                    racing(match runs.fetch_add(1, SeqCst) {
                        0 => first,
                        _ => later,
                    })
                });
            (strategy, report)
        })
        .collect()
}

/// Two threads each adding one to an atomic by a load and a store: an update can be lost.
fn unordered_increments() {
    let n = Arc::new(AtomicUsize::new(0));
    let m = n.clone();
    let t = thread::spawn(move || m.store(m.load(SeqCst) + 1, SeqCst));
    n.store(n.load(SeqCst) + 1, SeqCst);
    t.join().unwrap();
    assert_eq!(n.load(SeqCst), 2, "lost update");
}

/// `threads` threads and the main one bumping a counter twice each.
fn racing(threads: usize) {
    let n = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..threads)
        .map(|_| {
            let m = n.clone();
            thread::spawn(move || {
                m.fetch_add(1, SeqCst);
                m.fetch_add(1, SeqCst);
            })
        })
        .collect();
    n.fetch_add(1, SeqCst);
    n.fetch_add(1, SeqCst);
    for h in hs {
        h.join().unwrap();
    }
}

/// A passing run's trace is its last schedule replayed with tracing on; where the replay
/// does not pass (the runs alternate between two paths), no trace is written, and the
/// report says why instead of saying nothing.
#[test]
fn a_trace_the_replay_could_not_make_is_explained() {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let mut builder = Builder::new()
        .schedules(5)
        .seed(2)
        .isolation(Isolation::Off);
    builder.config.trace_passing = true;
    // Runs 0, 2, 4 race three threads; 1, 3 and the replay of run 4's schedule, 5, two. With
    // seed 2 that schedule picks the third thread at a choice the replay reaches.
    let report = builder.run(|| racing(2 - RUNS.fetch_add(1, SeqCst) % 2));
    assert!(report.passed(), "{}", report.failure.unwrap());
    assert!(report.trace.is_none());
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("no trace of the passing run was written")),
        "{:?}",
        report.warnings
    );
}

fn assert_warns(report: &Report, text: &str) {
    assert!(
        report.warnings.iter().any(|w| w.contains(text)),
        "no warning says {text:?}: {:?}",
        report.warnings
    );
}

/// The minimizer runs its tries in this process: a test whose shape depends on a static its
/// runs bump (r2d2's drop counter) gets a minimized schedule that only fits that state. A
/// fresh process shows it does not fail there, so the search's own schedule is reported,
/// as a fresh process runs it, not the minimized one with the statics' later values
/// (session 29's trial: `left: 4, right: 344`, where the search had seen `right: 0`).
#[test]
fn a_minimized_schedule_found_on_state_left_in_statics_is_not_reported() {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let report = Builder::new().schedules(10).seed(1).run(|| {
        let run = RUNS.fetch_add(1, SeqCst);
        let count = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..3)
            .map(|i| {
                let c = count.clone();
                // From the process's third run on (the minimizer's tries; its first run
                // replays the search's schedule), more steps: another program.
                let steps = 3 + i + if run >= 2 { 4 } else { 0 };
                thread::spawn(move || {
                    for _ in 0..steps {
                        c.fetch_add(1, SeqCst);
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        panic!("run {run} of this process");
    });
    let f = report.failure.expect("every schedule fails");
    assert_eq!(f.execution, 0, "{f}");
    assert_eq!(f.message, "run 0 of this process", "{f}");
    assert!(f.reproduced, "{f}");
    assert!(f.minimized.is_none(), "{f}");
    assert!(
        f.warnings
            .iter()
            .chain(&report.warnings)
            .any(|w| w.contains("the minimized schedule did not fail the same way")),
        "{:?} {:?}",
        f.warnings,
        report.warnings
    );
}

/// A schedule that no longer fits ran in this process before its seed's fallback, and may
/// have changed the test's statics: the fallback runs in a fresh process, as the search's
/// execution did (session 29's trial: r2d2's drop counter read 9 for 4 in the fallback).
#[test]
fn a_replay_falls_back_to_its_seed_in_a_fresh_process() {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let report = Builder::new()
        .replay("p1:7.7.7")
        .unwrap()
        .replay_fallback(pulse_runtime::SeedReplay {
            strategy: Strategy::Random,
            seed: 1,
        })
        .run(|| {
            let run = RUNS.fetch_add(1, SeqCst);
            thread::spawn(|| {}).join().unwrap();
            panic!("run {run} of this process");
        });
    let f = report.failure.expect("the fallback fails");
    assert_eq!(f.message, "run 0 of this process", "{f}");
    assert!(
        report.warnings.iter().any(|w| w.contains("no longer fits")),
        "{:?}",
        report.warnings
    );
}

/// A seed that failed in the search's process is run again in a fresh one, which may find
/// taken what the failing execution's threads still hold there (never resumed): async-io's
/// `abstract_socket` was reported as `AddrInUse`. The report still shows the fresh process's
/// failure, and says the first went otherwise and why the second may be ours.
#[test]
fn a_fresh_process_that_fails_otherwise_is_said_to() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    // One name for the search's process and the fresh ones it starts.
    let owner = match std::env::var_os(pulse_protocol::env::ISOLATED_WORKER) {
        Some(_) => std::os::unix::process::parent_id(),
        None => std::process::id(),
    };
    let name = format!("pulse-held-by-{owner}");
    let report = Builder::new().schedules(40).seed(1).run(move || {
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let listener = UnixListener::bind_addr(&addr).expect("the name is free");
        thread::spawn(|| {}).join().unwrap();
        if RUNS.fetch_add(1, SeqCst) > 0 {
            // A later run in this process: blocked for good, holding the listener.
            let m = Mutex::new(());
            let _held = m.lock().unwrap();
            let _again = m.lock().unwrap();
        }
        drop(listener);
    });
    let f = report.failure.expect("the fresh process fails");
    assert_eq!(f.kind, FailureKind::Panic, "{f}");
    assert!(f.message.contains("the name is free"), "{f}");
    assert!(
        f.warnings.iter().any(|w| w
            .contains("this seed failed otherwise in the search's process (deadlock: all")
            && w.contains("`--isolation always`")),
        "{f}"
    );
}
