//! The installed `cargo pulse` on fixture crates and on the repository's examples. What each
//! test asserts is what a user would check by hand: the exit code, which tests failed, that the
//! report points at their own files, that the replay line replays.

mod support;

use support::{cargo_pulse, copy_fixture, fixture, repo, shell, snapshot};

/// Few schedules where the point is not search depth (the bugs here are shallow).
const QUICK: &[&str] = &["--schedules", "300", "--seed", "7", "--color", "never"];

fn args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    extra.iter().copied().chain(QUICK.iter().copied()).collect()
}

#[test]
fn workspace_members_and_an_outside_path_dependency() {
    let root = fixture("multi", "multi");
    let ws = root.join("ws");
    let before = snapshot(&root);

    let run = cargo_pulse(
        &ws,
        &args(&["test", "--workspace", "--message-format", "json"]),
    );
    assert_eq!(
        run.code, 101,
        "the racy counter in the outside path dependency is found"
    );
    assert_eq!(
        run.event_of("tests::two_threads_count_every_deposit")
            .as_deref(),
        Some("failed")
    );
    assert_eq!(
        run.event_of("tests::one_thread_counts_every_deposit")
            .as_deref(),
        Some("ok")
    );
    assert_eq!(
        run.event_of("tests::totals_are_exact").as_deref(),
        Some("ok"),
        "the other member's test ran and passed"
    );
    assert!(
        run.stderr.contains("a deposit was not counted"),
        "the assertion message is shown"
    );
    assert!(
        run.stderr.contains("ledger/src/lib.rs:"),
        "the panic location is the user's file"
    );
    // The outside path dependency was mirrored and instrumented too.
    let mirrored = ws.join("target/pulse/mirror/shared-counter/src/lib.rs");
    assert!(
        std::fs::read_to_string(&mirrored)
            .unwrap()
            .contains("::pulse::std::sync::atomic"),
        "{}",
        mirrored.display()
    );

    // Package selection: only the correct member.
    let run = cargo_pulse(&ws, &args(&["test", "-p", "audit"]));
    assert_eq!(run.code, 0);
    assert!(
        run.stderr.contains("totals_are_exact")
            && !run.stderr.contains("two_threads_count_every_deposit")
    );

    assert_eq!(
        before,
        snapshot(&root),
        "the user's tree is byte-identical outside target/"
    );
}

#[test]
fn a_workspace_with_a_proc_macro_member_runs() {
    // A proc-macro crate's test binary links std dynamically: started without the toolchain's
    // library path it dies before listing its tests, and the whole run with it.
    let dir = fixture("proc-macro-ws", "proc-macro-ws");
    let run = cargo_pulse(
        &dir,
        &args(&["test", "--workspace", "--message-format", "json"]),
    );
    assert_eq!(run.code, 101, "the race in the other member is found");
    assert_eq!(
        run.event_of("tests::racy_hits_are_all_counted").as_deref(),
        Some("failed")
    );
    assert_eq!(
        run.event_of("tests::finds_the_type_name").as_deref(),
        Some("ok"),
        "the proc-macro member's own test ran"
    );
}

#[test]
fn an_exported_macro_expands_in_a_crate_pulse_does_not_instrument() {
    // `counters` exports `counter!()`, whose body names std's atomics; `app`'s build script
    // (never instrumented, no dependency on pulse) expands it, as chacha20 expands cpufeatures'
    // `new!`. The body must reach the shim through `$crate`, not `::pulse`.
    let dir = fixture("macro-export-ws", "macro-export-ws");
    let run = cargo_pulse(
        &dir,
        &args(&["test", "--workspace", "--message-format", "json"]),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.event_of("tests::two_threads_count_both_hits")
            .as_deref(),
        Some("ok")
    );
    let mirrored = |f: &str| {
        std::fs::read_to_string(dir.join("target/pulse/mirror").join(f)).unwrap_or_default()
    };
    assert!(mirrored("counters/src/lib.rs")
        .contains("$crate::__pulse::std::sync::atomic::AtomicUsize::new(0)"));
    assert!(mirrored("counters/src/lib.rs").contains("pub extern crate pulse as __pulse;"));
}

#[test]
fn a_bug_only_an_integration_test_shows() {
    let dir = fixture("integration-bug", "integration-bug");
    let run = cargo_pulse(&dir, &args(&["test", "--message-format", "json"]));
    assert_eq!(run.code, 101);
    assert_eq!(
        run.event_of("tests::a_name_is_registered_once").as_deref(),
        Some("ok")
    );
    assert_eq!(
        run.event_of("only_one_of_two_racing_registrations_wins")
            .as_deref(),
        Some("failed")
    );
    assert!(run
        .stderr
        .contains("both registrations of `server` succeeded"));
    assert!(
        run.stderr.contains("tests/concurrent.rs:"),
        "location in the integration test file"
    );
    assert!(
        run.stderr.contains("--test concurrent"),
        "the replay line selects the integration test target"
    );
}

#[test]
fn every_import_idiom_is_instrumented_and_correct_code_passes() {
    let dir = fixture("import-idioms", "import-idioms");
    let run = cargo_pulse(&dir, &args(&["test", "--message-format", "json"]));
    assert_eq!(run.code, 0, "correct code passes every schedule");
    let events = run.test_events();
    assert_eq!(events.len(), 8, "{events:?}");
    assert!(events.iter().all(|(_, e)| e == "ok"), "{events:?}");
    let lib = std::fs::read_to_string(dir.join("target/pulse/mirror/src/lib.rs")).unwrap();
    for idiom in [
        "::pulse::std::sync::mpsc",
        "::pulse::std::thread",
        "::pulse::std::sync::Once",
        "__private::run_test",
    ] {
        assert!(
            lib.contains(idiom),
            "instrumented source lacks {idiom}:\n{lib}"
        );
    }
}

#[test]
fn every_edition_builds_instrumented_and_the_race_is_found() {
    // One crate, built as each edition: lib, bin, integration test and example roots, every
    // import idiom. In 2015 `::pulse::..` resolves from the crate root, so each root must
    // declare the facade; a crate written before editions has no `edition` key at all.
    for edition in ["2015", "2018", "2021", "2024"] {
        let dir = fixture("editions", &format!("edition-{edition}"));
        let manifest = dir.join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest).unwrap();
        let line = "edition = \"2021\"\n";
        assert!(text.contains(line));
        let with = if edition == "2015" {
            String::new()
        } else {
            format!("edition = \"{edition}\"\n")
        };
        let mut text = text.replace(line, &with);
        if edition == "2015" {
            // src/edition2015.rs names a method `try`, a keyword in later editions.
            text = text.replace("[features]\n", "[features]\ndefault = [\"edition2015\"]\n");
        }
        std::fs::write(&manifest, text).unwrap();

        let run = cargo_pulse(&dir, &args(&["test", "--message-format", "json"]));
        assert_eq!(
            run.code, 101,
            "edition {edition}: builds and finds the race"
        );
        let events = run.test_events();
        assert_eq!(events.len(), 6, "edition {edition}: {events:?}");
        for (name, event) in &events {
            let expected = if name == "tests::racy_hits_are_all_counted" {
                "failed"
            } else {
                "ok"
            };
            assert_eq!(event, expected, "edition {edition}: {name}");
        }
        assert!(
            run.stderr.contains("lost a hit") && run.stderr.contains("src/lib.rs:"),
            "edition {edition}: message and user location"
        );
        for root in [
            "src/lib.rs",
            "src/main.rs",
            "tests/it.rs",
            "examples/demo.rs",
        ] {
            let user = std::fs::read_to_string(dir.join(root)).unwrap();
            let mirrored =
                std::fs::read_to_string(dir.join("target/pulse/mirror").join(root)).unwrap();
            assert_eq!(
                mirrored.contains("extern crate pulse;"),
                edition == "2015",
                "edition {edition}: {root} declares the facade only in 2015"
            );
            assert_eq!(
                user.lines().count(),
                mirrored.lines().count(),
                "edition {edition}: {root} keeps its lines"
            );
        }
        if edition == "2015" {
            let mirrored =
                std::fs::read_to_string(dir.join("target/pulse/mirror/src/edition2015.rs"))
                    .unwrap();
            assert!(
                mirrored.contains("pub fn try(&self)")
                    && mirrored.contains("use ::pulse::std::sync::Arc;"),
                "a 2015 file naming a method `try` is instrumented: {mirrored}"
            );
        }
    }
}

#[test]
fn a_compile_error_exits_2_and_names_the_users_file() {
    let dir = fixture("compile-error", "compile-error");
    let run = cargo_pulse(&dir, &args(&["test"]));
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("src/lib.rs:5:"),
        "the error points at the user's line"
    );
    assert!(run.stderr.contains("mismatched types"));
    assert!(
        !run.stderr.contains("target/pulse/mirror/"),
        "no mirror paths leak into the report"
    );
    // An error on a line the instrumenter rewrote: the user's column and the user's own text.
    assert!(run.stderr.contains("src/lib.rs:10:58"), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "10 |     let m: std::sync::Mutex<u32> = std::sync::Mutex::new(\"not a number\");"
        ),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("::pulse::"), "{}", run.stderr);
    assert!(
        run.stderr.contains("failed with 2 error(s)"),
        "{}",
        run.stderr
    );
}

#[test]
fn bad_flags_exit_2() {
    let dir = fixture("failing", "bad-flags");
    assert_eq!(cargo_pulse(&dir, &["test", "--no-such-flag"]).code, 2);
    assert_eq!(cargo_pulse(&dir, &["test", "--seeds", "9..3"]).code, 2);
    let run = cargo_pulse(&dir, &["test", "--schedules", "0"]);
    assert_eq!(run.code, 2, "zero schedules would test nothing");
    assert!(run.stderr.contains("--schedules"), "{}", run.stderr);
    let run = cargo_pulse(&dir, &["test", "--test-steps", "lots"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("not a number of steps"),
        "{}",
        run.stderr
    );
    assert!(!dir.join("target").exists(), "refused before building");
}

/// Each test process has a temporary directory of its own, removed after it: names drawn
/// from a per-process counter (distinct in `cargo test`'s one process) do not collide across
/// pulse's processes, and nothing is left in the system's.
#[test]
fn each_test_process_has_its_own_temporary_directory() {
    let dir = fixture("tmp-counter", "tmp-counter");
    let system_tmp = dir.join("system-tmp");
    std::fs::create_dir_all(&system_tmp).unwrap();
    let run = shell(
        &dir,
        &format!(
            "TMPDIR={} cargo pulse test --schedules 5 --seed 1 --color never \
             --message-format json",
            system_tmp.display()
        ),
    );
    for test in ["tests::first", "tests::second"] {
        assert_eq!(run.event_of(test).as_deref(), Some("ok"), "{test}");
    }
    assert_eq!(run.code, 0);
    let left: Vec<_> = std::fs::read_dir(&system_tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("pulse-") || name == "tmp-counter")
        .collect();
    assert!(left.is_empty(), "left in the system's TMPDIR: {left:?}");
}

#[test]
fn a_failing_test_exits_101_and_its_replay_line_reproduces_it() {
    let dir = fixture("failing", "failing");
    let before = snapshot(&dir);
    let run = cargo_pulse(&dir, &args(&["test", "--message-format", "json"]));
    assert_eq!(run.code, 101);
    assert_eq!(
        run.event_of("tests::racy_hits_are_all_counted").as_deref(),
        Some("failed")
    );
    for ok in [
        "tests::atomic_hits_are_all_counted",
        "tests::should_panic_is_honoured",
        "tests::result_tests_work",
    ] {
        assert_eq!(run.event_of(ok).as_deref(), Some("ok"), "{ok}");
    }
    assert_eq!(
        run.event_of("tests::ignored_unless_asked").as_deref(),
        Some("ignored")
    );
    assert!(
        run.stderr.contains("lost a hit") && run.stderr.contains("src/lib.rs:"),
        "message and user location"
    );
    assert!(run.stderr.contains("seed"), "the seed is reported");
    let failures: Vec<_> = std::fs::read_dir(dir.join("target/pulse/failures"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter(|e| !e.path().to_string_lossy().ends_with(".trace.json"))
        .collect();
    assert_eq!(failures.len(), 1, "one failure file");
    assert!(
        failures[0].path().with_extension("html").is_file(),
        "the failure's viewer is written beside it"
    );
    assert!(
        failures[0].path().with_extension("trace.json").is_file(),
        "and its trace file"
    );
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(failures[0].path()).unwrap()).unwrap();
    assert!(record["schedule"].as_str().is_some_and(|s| !s.is_empty()));

    // pulse itself came from the installed binary (unpacked into the support dir), not from
    // this repository's sources.
    let manifest = std::fs::read_to_string(dir.join("target/pulse/mirror/Cargo.toml")).unwrap();
    let support = support::scratch().join("support");
    let line = manifest
        .lines()
        .find(|l| l.starts_with("pulse ="))
        .expect("a pulse dependency");
    assert!(
        line.contains(&format!("{}/support-", support.display())),
        "{line}"
    );
    assert!(
        !line.contains(&format!("{}/pulse", repo().display())),
        "{line}"
    );

    // The replay line, as printed, reproduces the same failure, twice.
    let line = run.replay_line().expect("a replay line");
    assert!(line.contains("--replay"), "{line}");
    let mut seen = Vec::new();
    for _ in 0..2 {
        let r = shell(&dir, &format!("{line} --color never --message-format json"));
        assert_eq!(r.code, 101, "the replay fails again");
        let failed: Vec<_> = r
            .test_events()
            .into_iter()
            .filter(|(_, e)| e == "failed")
            .collect();
        assert_eq!(failed.len(), 1, "only the replayed test ran: {failed:?}");
        let rec = r.json().into_iter().find(|v| v["type"] == "test").unwrap();
        seen.push((
            rec["record"]["message"].clone(),
            rec["record"]["location"].clone(),
            rec["record"]["schedule"].clone(),
        ));
    }
    assert_eq!(seen[0], seen[1], "the replay is deterministic");
    assert!(seen[0].0.as_str().unwrap_or("").contains("lost a hit"));
    // The replays wrote their own record; the search's still knows its seed.
    let after: serde_json::Value =
        serde_json::from_slice(&std::fs::read(failures[0].path()).unwrap()).unwrap();
    assert_eq!(
        after["seed"], record["seed"],
        "the search's failure file is kept"
    );
    assert!(record["seed"].is_u64(), "{record}");
    assert!(
        failures[0].path().with_extension("replay.json").is_file(),
        "the replay's record is beside it"
    );

    // A failure file replays too.
    let r = cargo_pulse(
        &dir,
        &[
            "test",
            "--replay",
            failures[0].path().to_str().unwrap(),
            "--color",
            "never",
        ],
    );
    assert_eq!(r.code, 101);

    // --include-ignored runs the ignored test; filters and --exact select.
    let r = cargo_pulse(
        &dir,
        &args(&["test", "ignored_unless_asked", "--include-ignored"]),
    );
    assert_eq!(r.code, 0);
    assert!(r.stderr.contains("1 passed"));

    assert_eq!(
        before,
        snapshot(&dir),
        "the user's tree is byte-identical outside target/"
    );
}

#[test]
fn a_hash_maps_order_is_a_scheduler_choice_its_failure_replays() {
    let dir = fixture("hash-order", "hash-order");
    let run = cargo_pulse(&dir, &args(&["test", "--message-format", "json"]));
    assert_eq!(run.code, 101, "{}", run.stderr);
    assert_eq!(
        run.event_of("tests::flush_starts_after_write").as_deref(),
        Some("failed")
    );
    assert_eq!(
        run.event_of("tests::flush_starts_after_write_ranked")
            .as_deref(),
        Some("ok"),
        "the twin that ranks the services passes every order"
    );
    assert!(
        run.stderr.contains("flush started before write")
            && !run.stderr.contains("did not reproduce"),
        "the search's own replay orders the map as the search did:\n{}",
        run.stderr
    );
    // In a fresh process, twice: the same order, the same message.
    let line = run.replay_line().expect("a replay line");
    let message = |r: &support::Run| {
        let rec = r
            .json()
            .into_iter()
            .find(|v| v["type"] == "test" && v["event"] == "failed");
        rec.expect("a failed test's record")["record"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let first = message(&run);
    assert!(first.contains("flush started before write"), "{first}");
    for _ in 0..2 {
        let r = shell(&dir, &format!("{line} --color never --message-format json"));
        assert_eq!(r.code, 101, "the replay fails again: {}", r.stderr);
        assert_eq!(message(&r), first, "in the same order");
    }
}

#[test]
fn tests_written_in_proptest_run_under_the_scheduler_one_case_per_schedule() {
    // `proptest! { #[test] fn f(n in 0..4u32) { .. } }` generates the #[test] fn: pulse puts
    // an attribute on it that runs proptest's loop under the scheduler, one case per
    // schedule, its input drawn by the schedule. The race needs an input (n > 0) and an
    // interleaving; its fixed twin and a #[should_panic] property pass.
    let dir = fixture("proptest-dep", "proptest-dep");
    let before = snapshot(&dir);
    let run = cargo_pulse(&dir, &args(&["test", "--message-format", "json"]));
    assert_eq!(run.code, 0);
    for ok in [
        "tests::counts_every_bump",
        "tests::should_panic_is_honoured",
    ] {
        assert_eq!(run.event_of(ok).as_deref(), Some("ok"), "{ok}");
    }
    assert!(
        run.stderr.contains("300/300 schedules") && !run.stderr.contains("NOT SCHEDULED"),
        "every schedule ran under pulse"
    );
    assert!(
        !run.stderr.contains("shared between executions"),
        "proptest's own config static is not reported"
    );

    let run = cargo_pulse(&dir, &args(&["test", "racy", "--include-ignored"]));
    assert_eq!(run.code, 101, "the lost bump is found");
    assert!(
        run.stderr.contains("lost a bump") && run.stderr.contains("minimal failing input: n = "),
        "proptest's own report of the failing input"
    );
    assert!(
        run.stderr.contains("race: ") && run.stderr.contains("src/lib.rs:23:11"),
        "the racing store in the user's file"
    );
    let line = run.replay_line().expect("a replay line");
    assert!(line.contains("--include-ignored"), "{line}");
    let input = |r: &support::Run| {
        r.stderr
            .lines()
            .find(|l| l.contains("minimal failing input"))
            .map(str::to_string)
    };
    let found = input(&run);
    for _ in 0..2 {
        let r = shell(&dir, &format!("{line} --color never"));
        assert_eq!(r.code, 101, "the replay fails again");
        assert_eq!(input(&r), found, "with the same input");
    }
    assert_eq!(
        before,
        snapshot(&dir),
        "the user's tree is byte-identical outside target/ (no proptest-regressions written)"
    );
}

#[test]
fn a_registry_dependency_is_tested_through_with_instrument_dep() {
    let dir = fixture("registry-dep", "registry-dep");
    let run = cargo_pulse(&dir, &args(&["test", "--instrument-dep", "once_cell"]));
    assert_eq!(run.code, 0, "once_cell's park/unpark now run under pulse");
    assert!(
        run.stderr.contains("once_cell"),
        "the instrumented dependency is named"
    );
    let mirrored = std::fs::read_dir(dir.join("target/pulse/deps"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let imp = std::fs::read_to_string(mirrored.join("src/imp_std.rs")).unwrap();
    assert!(
        imp.contains("::pulse::std::"),
        "once_cell's std::sync/thread uses were rewritten"
    );

    // The same through [package.metadata.pulse].
    let manifest = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        format!("{text}\n[package.metadata.pulse]\ninstrument = [\"once_cell\"]\n"),
    )
    .unwrap();
    let run = cargo_pulse(&dir, &args(&["test"]));
    assert_eq!(run.code, 0);
}

#[test]
fn a_deadlock_inside_crossbeam_channel_is_found_and_reported() {
    // crossbeam-channel synchronises with std atomics, park/unpark and its own locks: once
    // instrumented (metadata in the fixture), pulse schedules its internals, passes the
    // correct use and reports the stranded producer as a deadlock, never aborting.
    let dir = fixture("crossbeam-dep", "crossbeam-dep");
    let run = cargo_pulse(&dir, &args(&["test"]));
    assert_eq!(run.code, 0, "correct use passes");
    let run = cargo_pulse(
        &dir,
        &args(&["test", "stopping_early_strands_a_producer", "--ignored"]),
    );
    assert_eq!(run.code, 101, "the stranded producer is found");
    assert!(run.stderr.contains("deadlock"), "reported as a deadlock");
    assert!(
        run.stderr.contains("crossbeam-channel") && run.stderr.contains("thread::park"),
        "the report shows the producer parked inside crossbeam"
    );
}

#[test]
fn uninstrumented_blocking_is_reported_not_hung() {
    // Uninstrumented (`--instrument-deps none`), once_cell parks a real OS thread while another
    // virtual thread holds the initialisation: the run must end, name the problem and suggest the fix.
    let dir = fixture("registry-dep", "registry-dep-blocked");
    let run = cargo_pulse(
        &dir,
        &args(&[
            "test",
            "--instrument-deps",
            "none",
            "--blocking-timeout",
            "2",
        ]),
    );
    assert_eq!(run.code, 101);
    assert!(
        run.stderr.contains("--instrument-dep") || run.stderr.contains("pulse::atomic"),
        "a fix is suggested"
    );
    assert!(
        run.stderr.contains("where it is blocked") && run.stderr.contains("once_cell"),
        "the stalled thread's own backtrace shows it blocked inside once_cell:\n{}",
        run.stderr
    );
}

#[test]
fn a_thread_blocked_in_the_packages_own_library_is_not_advised_to_instrument_it() {
    // jobserver 0.1.35's integration tests: the advice was `--instrument-dep jobserver`,
    // which exits 2 (the library is the user's, instrumented already).
    let dir = fixture("lib-blocking-read", "lib-blocking-read");
    // Full debug info, cargo's default (the suite's line tables name the library's frame
    // `read_one` alone, and the thread's crate is then the test's own).
    let run = shell(
        &dir,
        "CARGO_PROFILE_TEST_DEBUG=true cargo pulse test --blocking-timeout 1 --seed 7 --color never",
    );
    assert_eq!(run.code, 101, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("It blocks inside `lib_blocking_read`, which pulse instrumented")
            && !run.stderr.contains("--instrument-dep lib_blocking_read"),
        "{}",
        run.stderr
    );
}

#[test]
fn seed_ranges_split_a_search_and_nextest_runs_it() {
    let dir = fixture("failing", "nextest");
    // Two shards of one search; the bug is shallow enough that each finds it.
    for range in ["0..150", "150..300"] {
        let run = cargo_pulse(
            &dir,
            &["test", "racy_hits", "--seeds", range, "--color", "never"],
        );
        assert_eq!(run.code, 101, "{range}");
        assert!(run.stderr.contains(&format!("seeds {range}")));
    }
    let run = cargo_pulse(
        &dir,
        &[
            "test", "--runner", "nextest", "--seeds", "0..300", "--color", "never",
        ],
    );
    assert_eq!(run.code, 101, "nextest finds the bug too");
    let run = cargo_pulse(
        &dir,
        &[
            "test",
            "--runner",
            "nextest",
            "--seeds",
            "0..100",
            "atomic_hits",
            "--color",
            "never",
        ],
    );
    assert_eq!(run.code, 0);
}

#[test]
fn the_examples_are_found_with_default_settings() {
    for example in [
        "bank-account",
        "lock-order-deadlock",
        "lost-wakeup",
        "proc-reg",
    ] {
        let src = repo().join("examples").join(example);
        if !src.exists() {
            panic!("examples/{example} is missing");
        }
        let dir = copy_fixture(&src, &format!("example-{example}"));
        let run = cargo_pulse(
            &dir,
            &["test", "--color", "never", "--message-format", "json"],
        );
        assert_eq!(run.code, 101, "{example}: the bug is found");
        let events = run.test_events();
        assert!(!events.is_empty(), "{example}: tests ran");
        for (name, event) in events {
            let expected = if name.ends_with("_fixed") {
                "ok"
            } else {
                "failed"
            };
            assert_eq!(event, expected, "{example}: {name}");
        }
    }
}

/// The weak-memory examples: their buggy twins pass under `--memory sc` (every ordering is
/// `SeqCst`) and fail with the default settings (the memory portfolio, whose failing
/// schedule names the relaxed model) and under `--memory relaxed` (whose replay line repeats
/// the flag); a bad model is refused before anything is built.
#[test]
fn the_memory_examples_are_found_by_default_and_pass_under_sc() {
    for example in ["relaxed-flag-mp", "peterson-lock", "seqlock"] {
        let src = repo().join("examples").join(example);
        let dir = copy_fixture(&src, &format!("example-{example}"));
        let run = cargo_pulse(&dir, &["test", "--memory", "sc", "--color", "never"]);
        assert_eq!(run.code, 0, "{example}: passes under sc\n{}", run.stdout);
        for (args, model_in_replay) in [
            (&[][..], "@relaxed"),
            (&["--memory", "relaxed"][..], "--memory relaxed"),
        ] {
            // A fixed seed: the portfolio runs one execution in four relaxed, so a random
            // seed could miss a bug that needs a rare relaxed schedule (peterson-lock's came
            // at execution 428 for one seed) within 1,000 schedules.
            let mut all = vec![
                "test",
                "--seed",
                "20261124",
                "--color",
                "never",
                "--message-format",
                "json",
            ];
            all.extend_from_slice(args);
            let run = cargo_pulse(&dir, &all);
            assert_eq!(run.code, 101, "{example} {args:?}: the bug is found");
            for (name, event) in run.test_events() {
                let expected = if name.ends_with("_fixed") {
                    "ok"
                } else {
                    "failed"
                };
                assert_eq!(event, expected, "{example} {args:?}: {name}");
            }
            assert!(
                run.stdout.contains(model_in_replay),
                "{example} {args:?}: the replay line names the model\n{}",
                run.stdout
            );
        }
        if example == "relaxed-flag-mp" {
            let run = cargo_pulse(&dir, &["test", "--memory", "tso"]);
            assert_eq!(run.code, 2, "{}", run.stderr);
            assert!(run.stderr.contains("`sc`, `relaxed`"), "{}", run.stderr);
        }
    }
}

/// A `Drop` that loads its own atomics `Relaxed`, run by the last of std's `Arc`s to go, is
/// not a stale read (the false alarm behind atom 0.3.6's double free), while a real missing
/// acquire in the same crate is still found and its twin passes.
#[test]
fn a_drop_by_the_last_arc_sees_every_owner_and_a_missing_acquire_is_found() {
    let dir = fixture("arc-drop-relaxed", "arc-drop-relaxed");
    let run = cargo_pulse(
        &dir,
        &[
            "test",
            "--memory",
            "relaxed",
            "--seed",
            "1",
            "--color",
            "never",
            "--message-format",
            "json",
        ],
    );
    assert_eq!(run.code, 101, "{}\n{}", run.stdout, run.stderr);
    let events = run.test_events();
    assert_eq!(events.len(), 3, "{events:?}");
    for (name, event) in events {
        let expected = if name.ends_with("_fixed") {
            "ok"
        } else {
            "failed"
        };
        assert_eq!(event, expected, "{name}\n{}", run.stdout);
    }
}

#[test]
fn instrument_subcommand_writes_a_buildable_crate_and_a_report() {
    let dir = fixture("registry-dep", "instrument-cmd");
    for (krate, slot) in [("registry-dep", "out-member"), ("once_cell", "out-dep")] {
        let out = support::work_dir().join(slot);
        let _ = std::fs::remove_dir_all(&out);
        let run = cargo_pulse(
            &dir,
            &[
                "instrument",
                "--crate",
                krate,
                "--out",
                out.to_str().unwrap(),
                "--json",
            ],
        );
        assert_eq!(run.code, 0, "{krate}");
        let report: serde_json::Value = serde_json::from_str(&run.stdout).expect("a JSON report");
        let rewrites: usize = report["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["rewrites"].as_array().unwrap().len())
            .sum();
        assert!(rewrites > 0, "{krate}: {report}");
        // The dependency decisions `cargo pulse test` makes, with their reasons; a use of a
        // crate it instruments is not a finding.
        let deps = &report["dependencies"];
        assert_eq!(deps["mode"], "auto", "{krate}: {report}");
        assert!(
            deps["instrumented"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d.as_str().unwrap().starts_with("once_cell ")),
            "{krate}: {deps}"
        );
        assert!(
            !report["files"].to_string().contains("once_cell::"),
            "{krate}: no finding about once_cell: {report}"
        );
        // It builds on its own (sharing the suite's target dir, so pulse is not rebuilt).
        let status = support::lean_debug_info(&mut std::process::Command::new(
            std::env::var("CARGO").unwrap_or("cargo".into()),
        ))
        .args(["build", "--quiet", "--manifest-path"])
        .arg(out.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", support::scratch().join("mirror-target"))
        .status()
        .unwrap();
        assert!(status.success(), "{krate}: the instrumented copy builds");
    }
    assert_eq!(
        snapshot(&dir).len(),
        2,
        "the fixture itself is untouched (Cargo.toml and src/lib.rs only)"
    );

    // --out never overwrites what cargo pulse did not write there.
    let before = snapshot(&dir);
    let foreign = support::work_dir().join("out-foreign");
    let _ = std::fs::remove_dir_all(&foreign);
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("Cargo.toml"), "not ours").unwrap();
    for out in [&*dir, &foreign] {
        let run = cargo_pulse(
            &dir,
            &[
                "instrument",
                "--crate",
                "once_cell",
                "--out",
                out.to_str().unwrap(),
            ],
        );
        assert_eq!(run.code, 2, "{}: refused", out.display());
        assert!(run.stderr.contains("--force"), "{}", run.stderr);
    }
    assert_eq!(before, snapshot(&dir), "the workspace is untouched");
    assert_eq!(
        std::fs::read_to_string(foreign.join("Cargo.toml")).unwrap(),
        "not ours"
    );
    // Its own earlier output may be written again; --force writes anyway.
    let own = support::work_dir().join("out-dep");
    for out in [&own, &foreign] {
        let mut argv = vec![
            "instrument",
            "--crate",
            "once_cell",
            "--out",
            out.to_str().unwrap(),
        ];
        if out == &foreign {
            argv.push("--force");
        }
        assert_eq!(cargo_pulse(&dir, &argv).code, 0, "{}", out.display());
    }
}

#[test]
fn cargo_test_habits_select_build_and_place_as_cargo_test_does() {
    let dir = fixture("integration-bug", "habits");
    let out = "elsewhere";
    // --no-run: instrumented and built, nothing run; --target-dir holds pulse's files.
    let run = cargo_pulse(
        &dir,
        &args(&["test", "--no-run", "--target-dir", out, "-j", "1"]),
    );
    assert_eq!(run.code, 0);
    assert!(run.stderr.contains("Executable"), "{}", run.stderr);
    assert!(
        !run.stderr.contains("Running"),
        "nothing ran: {}",
        run.stderr
    );
    assert!(dir.join(out).join("pulse/mirror/src/lib.rs").is_file());
    assert!(
        !dir.join("target").exists(),
        "nothing in the default target dir"
    );

    // Target selection, with feature flags and --no-fail-fast accepted.
    let events = |extra: &[&str]| {
        let mut argv = vec!["test", "--target-dir", out, "--message-format", "json"];
        argv.extend(extra);
        let run = cargo_pulse(&dir, &args(&argv));
        let mut names: Vec<String> = run.test_events().into_iter().map(|(n, _)| n).collect();
        names.sort();
        (run.code, names)
    };
    let unit = "tests::a_name_is_registered_once".to_string();
    let integration = "only_one_of_two_racing_registrations_wins".to_string();
    assert_eq!(
        events(&["--lib", "--no-fail-fast", "--no-default-features"]),
        (0, vec![unit.clone()])
    );
    assert_eq!(
        events(&["--test", "concurrent", "--all-features"]),
        (101, vec![integration.clone()])
    );
    assert_eq!(events(&["--tests"]), (101, vec![integration, unit]));

    // No test selected is no verdict: exit 4 with the reason, as cargo-nextest, unless asked.
    let none = |extra: &[&str]| {
        let mut argv = vec!["test", "--target-dir", out, "--lib", "no_such_test"];
        argv.extend(extra);
        cargo_pulse(&dir, &args(&argv))
    };
    let run = none(&[]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("error: no test ran: no test matches `no_such_test`")
            && run.stderr.contains("test result: NO TESTS."),
        "{}",
        run.stderr
    );
    let run = none(&["--no-tests", "warn"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("warning: no test ran"),
        "{}",
        run.stderr
    );
    assert_eq!(none(&["--no-tests", "pass"]).code, 0);
    assert!(!dir.join("target").exists());
}

#[test]
fn a_rerun_without_edits_rebuilds_nothing_and_an_edit_rebuilds_one_crate() {
    let dir = fixture("integration-bug", "rerun");
    let first = cargo_pulse(&dir, &args(&["test"]));
    assert_eq!(first.code, 101);
    let second = cargo_pulse(&dir, &args(&["test"]));
    assert_eq!(second.code, 101);
    assert!(
        !second.stderr.contains("Compiling"),
        "a no-op rerun compiles nothing"
    );
    assert!(
        second.stderr.contains("(0 updated)"),
        "and rewrites no mirrored file"
    );
    eprintln!(
        "first run {:.2}s, no-op rerun {:.2}s",
        first.secs, second.secs
    );

    // An edit re-instruments that one file and rebuilds only the user's crate.
    let lib = dir.join("src/lib.rs");
    let text = std::fs::read_to_string(&lib).unwrap();
    std::fs::write(&lib, format!("{text}\n// edited\n")).unwrap();
    let third = cargo_pulse(&dir, &args(&["test"]));
    assert_eq!(third.code, 101);
    assert!(
        third.stderr.contains("(1 updated)"),
        "one mirrored file rewritten"
    );
    let compiled: Vec<&str> = third
        .stderr
        .lines()
        .filter(|l| l.trim_start().starts_with("Compiling"))
        .collect();
    assert_eq!(compiled.len(), 1, "{compiled:?}");
    assert!(compiled[0].contains("integration-bug"));
}

/// A failure file keeps the exact schedule and the failing execution's strategy and seed.
/// After an edit that adds steps before the racy code (here: the spawned thread locks and
/// unlocks a mutex three times before its hit), the schedule no longer fits; `--replay FILE`
/// says so and replays from the seed instead, which still finds the lost hit. (The seed and
/// strategy are fixed; a change to how strategies draw can move which edit the seed survives.)
#[test]
fn a_failure_file_replays_from_its_seed_after_an_edit() {
    let dir = fixture("failing", "replay-after-edit");
    let run = cargo_pulse(
        &dir,
        &args(&[
            "test",
            "tests::racy_hits_are_all_counted",
            "--exact",
            "--message-format",
            "json",
        ]),
    );
    assert_eq!(run.code, 101);
    let file = std::fs::read_dir(dir.join("target/pulse/failures"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.extension().is_some_and(|x| x == "json")
                && !p.to_string_lossy().ends_with(".trace.json")
        })
        .expect("a failure file");
    let record: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let (seed, strategy) = (
        record["seed"].as_u64().unwrap(),
        record["strategy"].as_str().unwrap().to_string(),
    );
    assert_ne!(
        strategy, "portfolio",
        "the execution's own strategy is recorded"
    );
    // The seed line, as printed, reproduces the search's schedule.
    let seed_line = run
        .stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("replay by seed:"))
        .expect("a seed replay line")
        .trim()
        .to_string();
    assert!(
        seed_line.contains(&format!("--strategy {strategy}"))
            && seed_line.contains(&format!("--seed {seed}")),
        "{seed_line}"
    );
    let searched_bytes = std::fs::read(&file).unwrap();
    let again = shell(
        &dir,
        &format!("{seed_line} --color never --message-format json"),
    );
    assert_eq!(again.code, 101, "the seed line fails again");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        searched_bytes,
        "a seed's replay leaves the search's failure file as it was"
    );
    assert!(
        file.with_extension("replay.json").is_file(),
        "and writes its own beside it"
    );
    let rec = again
        .json()
        .into_iter()
        .find(|v| v["type"] == "test")
        .unwrap();
    let searched = record["original_schedule"]
        .as_str()
        .or(record["schedule"].as_str())
        .unwrap();
    let replayed = rec["record"]["original_schedule"]
        .as_str()
        .or(rec["record"]["schedule"].as_str())
        .unwrap();
    assert_eq!(
        replayed, searched,
        "the seed line replays the search's schedule"
    );

    // The edit: steps in the spawned thread before its hit (a mutex locked and unlocked
    // three times), so the recorded choices run out while both threads can still run.
    let lib = dir.join("src/lib.rs");
    let text = std::fs::read_to_string(&lib).unwrap();
    let edited = text.replace(
        "    let t = thread::spawn(move || f(&h2));\n",
        "    let t = thread::spawn(move || {\n        let extra = std::sync::Mutex::new(0);\n        for _ in 0..3 {\n            *extra.lock().unwrap() += 1;\n        }\n        f(&h2)\n    });\n",
    );
    assert_ne!(edited, text);
    std::fs::write(&lib, edited).unwrap();

    let r = cargo_pulse(
        &dir,
        &[
            "test",
            "--replay",
            file.to_str().unwrap(),
            "--color",
            "never",
            "--message-format",
            "json",
        ],
    );
    assert!(
        r.stderr
            .contains("the schedule no longer fits the program (its ")
            && r.stderr
                .contains("choices ran out before the program ended"),
        "the exact schedule diverged after the edit"
    );
    assert!(
        r.stderr.contains(&format!(
            "replayed from its recorded seed {seed} under {strategy} instead"
        )),
        "it says it fell back to the seed"
    );
    assert_eq!(r.code, 101, "the failure is still reported");
    let rec = r.json().into_iter().find(|v| v["type"] == "test").unwrap();
    assert_eq!(rec["event"], "failed");
    assert!(
        rec["record"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("lost a hit"),
        "{rec}"
    );
    assert_eq!(rec["record"]["seed"].as_u64(), Some(seed));
    assert!(
        r.stderr.contains("the recorded failure reproduced"),
        "and that it reproduced the recorded failure"
    );
}

/// Rust files that no target compiles (trybuild's and compiletest's `tests/ui/*.rs`, which a
/// test compiles with rustc itself or reads as text) are copied as written; a module a test
/// target declares (`tests/common/mod.rs`) is instrumented, so its race is found. (A trial's
/// fixture was rewritten to `::pulse::std`, and the test that compiled it with plain rustc
/// failed.)
#[test]
fn files_no_target_compiles_are_copied_as_written() {
    let dir = fixture("ui-fixtures", "ui-fixtures");
    let before = snapshot(&dir);
    let run = cargo_pulse(&dir, &args(&["test", "--message-format", "json"]));
    assert_eq!(run.code, 101, "the race in tests/common is found");
    assert_eq!(
        run.event_of("two_bumps_count_two").as_deref(),
        Some("failed"),
        "{}",
        run.stderr
    );
    for test in [
        "the_fixture_is_as_written",
        "the_fixture_compiles_with_plain_rustc",
    ] {
        assert_eq!(
            run.event_of(test).as_deref(),
            Some("ok"),
            "{test}: {}",
            run.stderr
        );
    }
    let mirror = dir.join("target/pulse/mirror");
    let copied =
        |rel: &str| walk_find(&mirror, rel).unwrap_or_else(|| panic!("{rel} not mirrored"));
    assert_eq!(
        std::fs::read_to_string(copied("tests/ui/spawn.rs")).unwrap(),
        std::fs::read_to_string(dir.join("tests/ui/spawn.rs")).unwrap()
    );
    assert!(std::fs::read_to_string(copied("tests/common/mod.rs"))
        .unwrap()
        .contains("::pulse::std::thread"));
    // `cargo pulse instrument` shows the same decision.
    let out = dir.with_file_name("ui-fixtures-instrumented");
    let out_arg = out.to_string_lossy().to_string();
    let shown = cargo_pulse(
        &dir,
        &["instrument", "--crate", "ui-fixtures", "--out", &out_arg],
    );
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(
        shown
            .stdout
            .contains("tests/ui/spawn.rs: copied as written: no target compiles it"),
        "{}",
        shown.stdout
    );
    assert!(
        !shown.stdout.contains("tests/ui/spawn.rs:3"),
        "{}",
        shown.stdout
    );
    assert_eq!(snapshot(&dir), before, "the user's tree is untouched");
}

/// The file under `root` whose path ends with `rel`.
fn walk_find(root: &std::path::Path, rel: &str) -> Option<std::path::PathBuf> {
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).ok()?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.ends_with(rel) {
                return Some(p);
            }
        }
    }
    None
}
