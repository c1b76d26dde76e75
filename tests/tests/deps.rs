//! Dependencies that synchronise are scheduled with no flag (`--instrument-deps auto`, the
//! default): a spin lock in two semver-incompatible versions of one registry crate,
//! crossbeam-utils' scoped threads, `AtomicCell` and `Backoff`, and parking_lot's locks
//! (parking in pulse's `parking_lot_core`, 0.2 to 0.10: parking_lot 0.4 to 0.13), and a
//! futex lock on atomic-wait (whose futex system calls pulse schedules), `#[tokio::test]`
//! tests on tokio (whose reactor's epoll waits pulse schedules), smol's executor and timers
//! (whose reactor's wait through rustix pulse schedules), and once_cell in a graph
//! that shares a crate with pulse's own; and quanta's TSC clock reads pulse's clock. Each
//! fixture's only synchronisation is its dependencies'; each race is found, each fixed twin
//! passes.

#[allow(dead_code)] // (helpers e2e.rs uses and this file does not)
mod support;

use support::{cargo_pulse, fixture, Run};

const QUICK: &[&str] = &["--schedules", "300", "--seed", "7", "--color", "never"];

fn args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    extra.iter().copied().chain(QUICK.iter().copied()).collect()
}

/// Each `(test, event)`: the test finished so in the run's JSON (`failed`, `ok`).
fn expect_events(run: &Run, expected: &[(&str, &str)]) {
    for (test, event) in expected {
        assert_eq!(run.event_of(test).as_deref(), Some(*event), "{test}");
    }
}

/// The first `race: ` line of a report.
fn race_line(report: &str) -> &str {
    report
        .lines()
        .map(str::trim_start)
        .find(|l| l.starts_with("race: "))
        .unwrap_or_else(|| panic!("a race line:\n{report}"))
}

#[test]
fn two_versions_of_a_spin_lock_crate_are_each_instrumented_without_a_flag() {
    let dir = fixture("dep-spin-versions", "dep-spin-versions");
    let json = args(&["test", "--message-format", "json"]);
    let run = cargo_pulse(&dir, &json);
    assert_eq!(run.code, 101, "both lost updates are found");
    expect_events(
        &run,
        &[
            ("tests::spin09_counts_every_hit", "failed"),
            ("tests::spin05_counts_every_hit", "failed"),
            ("tests::spin09_counts_every_hit_fixed", "ok"),
            ("tests::spin05_counts_every_hit_fixed", "ok"),
        ],
    );
    assert!(
        run.stderr.contains("spin 0.5.") && run.stderr.contains("spin 0.9."),
        "both versions are named as instrumented"
    );
    let manifest = std::fs::read_to_string(dir.join("target/pulse/mirror/Cargo.toml")).unwrap();
    assert!(
        manifest.contains("package = \"spin\""),
        "the second version is patched under a key of its own:\n{manifest}"
    );

    // A second run resolves, instruments and compiles nothing again.
    let again = cargo_pulse(&dir, &json);
    assert_eq!(again.code, 101);
    assert!(
        again.stderr.contains("from cache") && again.stderr.contains("0 of them compiled"),
        "{}",
        again.stderr
    );
    eprintln!("first run {:.1}s, second run {:.1}s", run.secs, again.secs);

    // By name: every version of the crate.
    let named = cargo_pulse(&dir, &args(&["test", "--instrument-deps", "spin"]));
    assert_eq!(named.code, 101);
    assert!(
        named.stderr.contains("2 instrumented (spin)"),
        "{}",
        named.stderr
    );

    // Without instrumentation the spin locks' atomics are no scheduling points: each thread's
    // two critical sections run back to back and the race stays hidden.
    let none = cargo_pulse(&dir, &args(&["test", "--instrument-deps", "none"]));
    assert_eq!(none.code, 0, "uninstrumented, the race is invisible");
}

#[test]
fn crossbeam_utils_scoped_threads_atomic_cell_and_backoff_are_scheduled_without_a_flag() {
    let dir = fixture("crossbeam-backoff", "crossbeam-backoff");
    let run = cargo_pulse(&dir, &args(&["test", "--message-format", "json"]));
    assert_eq!(run.code, 101, "the duplicate ticket is found");
    assert_eq!(
        run.event_of("tests::tickets_are_unique").as_deref(),
        Some("failed")
    );
    assert_eq!(
        run.event_of("tests::tickets_are_unique_fixed").as_deref(),
        Some("ok")
    );
    assert_eq!(
        run.event_of("tests::a_snoozing_waiter_lets_the_setter_run")
            .as_deref(),
        Some("ok"),
        "Backoff::snooze yields to the scheduler"
    );
    assert!(
        run.stderr.contains("instrumented (auto): crossbeam-utils"),
        "{}",
        run.stderr
    );
}

#[test]
fn parking_lot_deadlock_and_lost_update_are_found_without_a_flag() {
    let dir = fixture("parking-lot-dep", "parking-lot-dep");
    let run = cargo_pulse(&dir, &args(&["test", "--message-format", "json"]));
    assert_eq!(run.code, 101);
    expect_events(
        &run,
        &[
            ("tests::opposite_transfers_complete", "failed"),
            ("tests::deposits_all_count", "failed"),
            ("tests::opposite_transfers_complete_fixed", "ok"),
            ("tests::deposits_all_count_fixed", "ok"),
            // Builds only if the user's Instant, parking_lot's and parking_lot_core's agree.
            ("tests::an_item_returned_in_time_is_taken", "ok"),
        ],
    );
    let deadlock = run
        .json()
        .into_iter()
        .find(|v| v["name"] == "tests::opposite_transfers_complete")
        .unwrap();
    assert!(
        deadlock.to_string().contains("deadlock"),
        "reported as a deadlock: {deadlock}"
    );
    assert!(
        run.stderr.contains("parking_lot_core replaced by pulse's")
            && run.stderr.contains("parking_lot 0.12"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("was not used in the crate graph"),
        "every patch is used"
    );
    // The lost update's accesses are all inside parking_lot (its lock word): the race line
    // says so and names the user's lines they ran after; dependency paths are shown from
    // the crate on, never the registry's or pulse's copy's prefix.
    let race = race_line(&run.stderr);
    assert!(
        race.starts_with("race: inside parking_lot-0.12.")
            && race.contains(" at parking_lot-0.12.")
            && race.contains("(after src/lib.rs:"),
        "{race}"
    );
    for line in run.stderr.lines().filter(|l| l.contains("raw_mutex.rs")) {
        assert!(
            !line.contains("/registry/") && !line.contains("/pulse/deps/"),
            "{line}"
        );
    }

    // Left as it is, parking_lot takes std's `Instant` where the user's code passes pulse's:
    // the build fails in the user's file, and the error says the flag did it.
    let none = cargo_pulse(&dir, &args(&["test", "--instrument-deps", "none"]));
    assert_eq!(none.code, 2, "{}", none.stderr);
    assert!(
        none.stderr
            .contains("in your own files. With `--instrument-deps none`")
            && none
                .stderr
                .contains("the default, `--instrument-deps auto`"),
        "{}",
        none.stderr
    );
}

#[test]
fn parking_lot_0_13_and_0_12_in_one_graph_are_both_scheduled() {
    let dir = fixture("parking-lot-versions", "parking-lot-versions");
    let run = cargo_pulse(&dir, &args(&["test", "--message-format", "json"]));
    assert_eq!(run.code, 101, "{}", run.stderr);
    expect_events(
        &run,
        &[
            ("tests::opposite_transfers_complete", "failed"),
            ("tests::deposits_all_count", "failed"),
            ("tests::deposits_all_count_fixed", "ok"),
            ("tests::a_waiter_is_woken_in_time", "ok"),
            ("tests::both_versions_in_one_test", "ok"),
        ],
    );
    assert!(
        run.stderr
            .contains("parking_lot_core replaced by pulse's (0.9, 0.10)")
            && run.stderr.contains("parking_lot 0.13."),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("was not used in the crate graph"),
        "every patch is used"
    );
}

#[test]
fn old_parking_lots_0_11_0_6_and_0_4_in_one_graph_are_all_scheduled() {
    // parking_lot_core 0.8 (0.9's API), 0.3 and 0.2 (their own `UnparkResult`, `RequeueOp`):
    // before pulse replaced them, their waiters parked on the OS, outside the scheduler.
    let dir = fixture("parking-lot-old", "parking-lot-old");
    let run = cargo_pulse(&dir, &args(&["test", "--message-format", "json"]));
    assert_eq!(run.code, 101, "{}", run.stderr);
    expect_events(
        &run,
        &[
            ("tests::opposite_transfers_complete", "failed"),
            ("tests::deposits_all_count", "failed"),
            ("tests::deposits_all_count_fixed", "ok"),
            ("tests::a_waiter_is_woken_in_time", "ok"),
            ("tests::a_signal_is_never_lost", "failed"),
            ("tests::a_signal_is_never_lost_fixed", "ok"),
            ("tests::an_unanswered_wait_times_out", "ok"),
            ("tests::versions_in_one_test", "ok"),
        ],
    );
    assert!(
        run.stderr
            .contains("parking_lot_core replaced by pulse's (0.2, 0.3, 0.8)")
            && ["parking_lot 0.11.", "parking_lot 0.6.", "parking_lot 0.4."]
                .iter()
                .all(|p| run.stderr.contains(p)),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("was not used in the crate graph"),
        "every patch is used"
    );
    let manifest = std::fs::read_to_string(dir.join("target/pulse/mirror/Cargo.toml")).unwrap();
    assert!(
        manifest.contains("parking_lot_core-pulse-v0_8"),
        "each core under a key of its own:\n{manifest}"
    );
}

#[test]
fn a_2015_dependency_in_its_own_forms_is_instrumented() {
    let dir = fixture("dep-2015", "dep-2015");
    let run = cargo_pulse(&dir, &args(&["test"]));
    assert_eq!(
        run.code, 0,
        "it builds and the test passes:\n{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("instrumented (auto): rand 0.4.6")
            && !run.stderr.contains("does not parse"),
        "{}",
        run.stderr
    );
    let copy = |file: &str| {
        std::fs::read_to_string(dir.join("target/pulse/deps/rand-0.4.6/src").join(file)).unwrap()
    };
    assert!(
        copy("lib.rs").contains("extern crate pulse;"),
        "the facade is declared"
    );
    let os = copy("os.rs");
    assert!(
        os.contains("use ::pulse::std::sync::{Once, ONCE_INIT};"),
        "its Once is scheduled"
    );
    // The file with the anonymous parameter is copied in its own spelling.
    assert!(
        copy("distributions/mod.rs").contains("fn ind_sample<R: Rng>(&self, &mut R) -> Support;")
    );
}

/// A futex lock on atomic-wait: atomic-wait is instrumented with no flag (it names atomics),
/// its `libc::syscall(libc::SYS_futex, ..)` waits block in the scheduler, and the twin whose
/// waiters forget to mark the lock contended is found asleep for ever, while the lock passes.
#[test]
fn a_futex_lock_on_atomic_wait_is_scheduled() {
    let dir = fixture("dep-atomic-wait", "dep-atomic-wait");
    let run = cargo_pulse(&dir, &args(&["test", "--message-format", "json"]));
    assert_eq!(run.code, 101, "the lost wakeup is found");
    expect_events(
        &run,
        &[
            ("tests::every_hit_is_counted", "ok"),
            ("tests::every_hit_is_counted_forgetting_waiters", "failed"),
        ],
    );
    assert!(
        run.stderr.contains("atomic-wait 1."),
        "named as instrumented:\n{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("blocked in futex::wait on Futex#0"),
        "the sleeper is named:\n{}",
        run.stderr
    );
}

/// smol's timers and reactor wait on pulse's clock: async-io's reactor waits in polling 3's
/// `Poller::wait` (rustix's raw `epoll_wait`, its timeout in a timerfd), where pulse waits in
/// the scheduler. A lost update between two tasks is found with its race at the user's
/// line, the fixed twin passes, and a minute of timers passes at once (before, every test
/// was reported blocked inside rustix after 10 s).
#[test]
fn smol_tests_run_under_the_scheduler() {
    let dir = fixture("dep-smol", "dep-smol");
    let run = cargo_pulse(&dir, &args(&["test", "--message-format", "json"]));
    assert_eq!(run.code, 101, "the lost update is found");
    expect_events(
        &run,
        &[
            ("tests::every_hit_is_counted", "failed"),
            ("tests::every_hit_is_counted_fixed", "ok"),
            ("tests::a_minute_passes_at_once", "ok"),
        ],
    );
    assert!(
        run.stderr.contains("polling 3.") && run.stderr.contains("async-io 2."),
        "named as instrumented:\n{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("blocked outside pulse"),
        "no wait is left to the kernel:\n{}",
        run.stderr
    );
    let race = race_line(&run.stderr);
    assert!(race.contains("src/lib.rs:15:"), "{race}");
    assert!(run.secs < 600.0, "no real waits: {:.0}s", run.secs);
    // async-io's statics (its reactor, its driver thread's lock) are one warning, not five.
    assert!(
        run.stderr.contains("objects of async-io-2.")
            && !run
                .stderr
                .contains("used at async-io-2.6.0/src/reactor.rs:195"),
        "{}",
        run.stderr
    );
}

/// `#[tokio::test]` tests under the scheduler: tokio is instrumented with no flag, its
/// workers are pulse threads and its reactor's `epoll_wait` waits in the scheduler. A race
/// between two tasks on two workers is found, and so is a `Notify` wakeup sent before anyone
/// waits (the test sleeps for ever, the reactor among the sleepers); the fixed twins pass,
/// a minute of tokio's time passes at once on the virtual clock, and a task spawned from
/// another thread wakes its runtime's reactor under the relaxed memory model too.
#[test]
fn tokio_tests_run_under_the_scheduler() {
    let dir = fixture("dep-tokio", "dep-tokio");
    let run = cargo_pulse(&dir, &args(&["test", "--message-format", "json"]));
    assert_eq!(run.code, 101, "the race and the lost wakeup are found");
    expect_events(
        &run,
        &[
            ("tests::every_hit_is_counted", "failed"),
            ("tests::every_hit_is_counted_fixed", "ok"),
            ("tests::the_handshake_arrives", "failed"),
            ("tests::the_handshake_arrives_fixed", "ok"),
            ("tests::a_minute_passes_at_once", "ok"),
            ("tests::a_task_spawned_from_another_thread_runs", "ok"),
        ],
    );
    // Under the relaxed model the reactor's return from `epoll_wait` orders the wakeup's
    // write before it: the runtime's thread sees the task queued (before, it could read the
    // queue's length from before the push and sleep again: a false deadlock at schedule 3).
    let relaxed = cargo_pulse(
        &dir,
        &args(&[
            "test",
            "a_task_spawned_from_another_thread_runs",
            "--memory",
            "relaxed",
        ]),
    );
    assert_eq!(relaxed.code, 0, "{}", relaxed.stderr);
    assert!(
        relaxed.stderr.contains("300/300"),
        "every schedule ran:\n{}",
        relaxed.stderr
    );
    assert!(
        run.stderr.contains("tokio 1.") && run.stderr.contains("mio 1."),
        "named as instrumented:\n{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("blocked in epoll_wait on Epoll#"),
        "the reactor is named among the sleepers:\n{}",
        run.stderr
    );
    // tokio's queues order every access to the counter, so no race is at the user's lines;
    // the race line names the user's interleaved read-then-write (two tasks on one worker,
    // or one on each), not a race inside tokio.
    let lost_update = run
        .stderr
        .split("--- FAIL: ")
        .find(|block| block.starts_with("tests::every_hit_is_counted "))
        .unwrap_or_else(|| panic!("the lost update's report:\n{}", run.stderr));
    let race = race_line(lost_update);
    assert!(
        race.contains("src/lib.rs:11:") && race.contains(":13") && !race.contains("tokio-1."),
        "{race}"
    );
}

/// A graph that switches features on a crate pulse's own support crates share with it
/// builds, and the crates it reaches stay instrumented: governor 0.10.4's features made
/// pulse-runtime's rand_core reach once_cell (through getrandom and a wasm-only js-sys), so
/// the instrumented once_cell and pulse depended on each other and cargo refused the graph.
/// The check-then-set race on once_cell's `OnceCell` is found (its only scheduling points
/// are once_cell's atomics), and its fixed twin passes.
#[test]
fn a_dependency_pulse_shares_with_the_graph_makes_no_package_cycle() {
    let dir = fixture("dep-rand-os-rng", "dep-rand-os-rng");
    let run = cargo_pulse(&dir, &args(&["test", "--message-format", "json"]));
    assert!(
        !run.stderr.contains("cyclic package dependency"),
        "{}",
        run.stderr
    );
    assert_eq!(run.code, 101, "the race is found:\n{}", run.stderr);
    assert_eq!(
        run.event_of("tests::configured_once").as_deref(),
        Some("failed")
    );
    assert_eq!(
        run.event_of("tests::configured_once_fixed").as_deref(),
        Some("ok")
    );
    let instrumented = run
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("Dependencies "))
        .and_then(|l| l.split("; ").next())
        .unwrap_or_default();
    assert!(
        instrumented.contains("once_cell 1."),
        "once_cell is instrumented, not held back:\n{}",
        run.stderr
    );
}

/// Time read through quanta, a TSC clock (governor's and moka's): its counter (`_rdtsc`)
/// and the OS clock it calibrates against (`clock_gettime`) read pulse's clock, so a sleep
/// on std's clock passes on quanta's too. Both tests are correct; reading the real counter,
/// quanta saw microseconds pass during a virtual 5 s sleep and both failed at schedule 1.
#[test]
fn quantas_clock_is_pulses_clock() {
    let dir = fixture("dep-quanta", "dep-quanta");
    let run = cargo_pulse(&dir, &args(&["test", "--message-format", "json"]));
    assert_eq!(run.code, 0, "{}", run.stderr);
    for test in [
        "tests::quanta_sees_a_sleep_pass",
        "tests::two_threads_agree_on_quantas_instant",
    ] {
        assert_eq!(run.event_of(test).as_deref(), Some("ok"), "{test}");
    }
    assert!(
        run.stderr.contains("quanta 0."),
        "quanta is instrumented:\n{}",
        run.stderr
    );
}
