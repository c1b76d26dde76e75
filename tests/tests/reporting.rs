//! What a run says, whichever runner ran it: every status (ok, FAILED, CRASHED, NOT SCHEDULED,
//! ignored) in the table and the JSON, the same JSON from `--runner nextest` as from pulse's
//! own runner, bad option values refused before anything is built, and a failed build's
//! JSON event carrying the compiler's message.

#[allow(dead_code)]
mod support;

use support::{cargo_pulse, fixture, Run};

/// Every option value is checked by the protocol's parsers before the build: exit 2, fast,
/// naming the values it takes.
#[test]
fn bad_option_values_exit_2_at_once_with_the_valid_values() {
    let dir = fixture("failing", "bad-option-values");
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--strategy", "nosuch"],
            &["random", "pct:DEPTH", "dpor:BOUND"],
        ),
        (&["--strategy", "dpor:x"], &["dfs:BOUND", "dpor:BOUND"]),
        (&["--strategy", "pct:0"], &["random", "pct:DEPTH"]),
        (
            &["--time", "sometimes"],
            &["portfolio", "quite-slow=DURATION"],
        ),
        (&["--isolation", "never"], &["auto", "off", "always"]),
        (&["--cleanup", "free"], &["leak", "unwind"]),
        (&["--detached", "ignore"], &["warn", "fail"]),
        (&["--runner", "cargo"], &["pulse", "nextest"]),
        (&["--message-format", "xml"], &["human", "json"]),
        (&["--color", "purple"], &["auto", "always", "never"]),
        (&["--replay", "0.1.2"], &["p1:"]),
    ];
    // Warm the binary up: what is measured is the refusal, not the first load from disk.
    cargo_pulse(&dir, &["--version"]);
    for (flag, valid) in cases {
        let mut args = vec!["test"];
        args.extend_from_slice(flag);
        let run = cargo_pulse(&dir, &args);
        assert_eq!(run.code, 2, "{flag:?}: {}", run.stderr);
        assert!(run.secs < 1.0, "{flag:?} took {:.2}s", run.secs);
        for v in *valid {
            assert!(
                run.stderr.contains(v),
                "{flag:?} should name `{v}`:\n{}",
                run.stderr
            );
        }
        assert!(
            !run.stderr.contains("Compiling"),
            "{flag:?}: nothing is built"
        );
    }
    assert!(
        !dir.join("target").exists(),
        "refused before anything was built"
    );
}

fn test_event<'a>(events: &'a [serde_json::Value], name: &str) -> &'a serde_json::Value {
    events
        .iter()
        .find(|v| v["type"] == "test" && v["name"] == name)
        .unwrap_or_else(|| panic!("no event for {name}"))
}

/// The JSON lines without what differs between two runs of the same thing (timings), in a
/// stable order (tests finish in any order).
fn comparable(run: &Run) -> Vec<serde_json::Value> {
    let mut events = run.json();
    for v in &mut events {
        if let Some(m) = v.as_object_mut() {
            m.remove("time");
        }
    }
    events.sort_by_key(|v| {
        (
            v["type"].to_string(),
            v["event"].to_string(),
            v["name"].to_string(),
        )
    });
    events
}

#[test]
fn every_status_is_reported_and_nextest_gives_the_same_json() {
    let dir = fixture("statuses", "statuses");
    let args = [
        "test",
        "--seed",
        "7",
        "--color",
        "never",
        "--message-format",
        "json",
    ];
    let run = cargo_pulse(&dir, &args);
    assert_eq!(run.code, 101, "a failure and a crash were found");
    let events = run.json();

    let expect = [
        ("tests::atomic_bumps_are_all_counted", "ok", "ok"),
        ("tests::racy_bumps_are_all_counted", "failed", "FAILED"),
        (
            "tests::a_lost_bump_ends_the_process",
            "crashed",
            "CRASHED: ",
        ),
        (
            "tests::a_generated_test_is_not_scheduled",
            "not_scheduled",
            "NOT SCHEDULED: ",
        ),
        ("tests::ignored_unless_asked", "ignored", "ignored"),
    ];
    for (name, event, status) in expect {
        let v = test_event(&events, name);
        assert_eq!(v["event"], event, "{name}: {v}");
        assert!(
            v["status"].as_str().unwrap().starts_with(status),
            "{name}: {v}"
        );
        if event != "ok" && event != "ignored" {
            let replay = v["replay"].as_str().unwrap_or("");
            assert!(
                replay.starts_with(&format!(
                    "cargo pulse test {name} --exact -p statuses --lib"
                )),
                "{name}: every test that did not pass has a replay line: {v}"
            );
            assert!(
                run.stderr.contains(replay),
                "{name}: its replay line is in the closing list"
            );
        }
    }
    let crash = test_event(&events, "tests::a_lost_bump_ends_the_process");
    assert!(crash["seed"].is_u64(), "a crash names its seed: {crash}");
    assert!(
        crash["status"].as_str().unwrap().contains("exit status 1"),
        "{crash}"
    );
    let not_scheduled = test_event(&events, "tests::a_generated_test_is_not_scheduled");
    assert!(
        not_scheduled["status"]
            .as_str()
            .unwrap()
            .contains("never reached pulse's harness"),
        "{not_scheduled}"
    );
    let finished = events
        .iter()
        .find(|v| v["type"] == "run" && v["event"] == "finished")
        .expect("a run finished event");
    for (field, n) in [
        ("passed", 1),
        ("failed", 1),
        ("crashed", 1),
        ("not_scheduled", 1),
        ("ignored", 1),
    ] {
        assert_eq!(finished[field], n, "{field}: {finished}");
    }
    assert_eq!(finished["exit_code"], 101);
    // People see the same statuses in the table and the verdict line.
    assert!(
        run.stderr
            .contains("NOT SCHEDULED: the test never reached pulse's harness"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("CRASHED: exit status 1"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(
            "1 passed; 1 failed; 1 crashed; 1 not scheduled; 1 ignored; doctests of statuses not run"
        ),
        "{}",
        run.stderr
    );
    let started = events
        .iter()
        .find(|v| v["type"] == "run" && v["event"] == "started")
        .expect("a run started event");
    assert_eq!(
        started["doctests_not_run"],
        serde_json::json!(["statuses"]),
        "{started}"
    );

    let mut nextest_args = args.to_vec();
    nextest_args.extend(["--runner", "nextest"]);
    let nextest = cargo_pulse(&dir, &nextest_args);
    assert_eq!(nextest.code, 101);
    let (a, b) = (comparable(&run), comparable(&nextest));
    assert_eq!(a.len(), b.len(), "the same events");
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x, y, "pulse's runner and nextest say the same");
    }
    assert!(
        nextest.stderr.contains("NOT SCHEDULED: "),
        "{}",
        nextest.stderr
    );
}

#[test]
fn a_failed_builds_json_event_carries_the_compilers_message() {
    let dir = fixture("compile-error", "compile-error-json");
    let run = cargo_pulse(
        &dir,
        &["test", "--color", "never", "--message-format", "json"],
    );
    assert_eq!(run.code, 2);
    let build = run
        .json()
        .into_iter()
        .find(|v| v["type"] == "build" && v["event"] == "failed")
        .expect("a build failed event");
    let message = build["message"].as_str().unwrap_or("");
    assert!(message.contains("mismatched types"), "{build}");
    assert!(
        message.contains("src/lib.rs:5:"),
        "the user's file and line: {build}"
    );
    assert!(
        !message.contains("::pulse::"),
        "the user's text, not the rewrite: {build}"
    );
    assert!(!message.contains('\u{1b}'), "no colour codes in JSON");
}

/// `--time-budget` ends a long search cleanly: what finished keeps its verdict, the rest is
/// STOPPED with the schedules it passed, the summary and the JSON `finished` event still come,
/// and the run ends near the budget.
#[test]
fn a_time_budget_stops_the_search_and_still_reports_what_ran() {
    let dir = fixture("failing", "time-budget");
    // Built first, so the budget goes to the search.
    let warm = cargo_pulse(&dir, &["test", "--no-run", "--color", "never"]);
    assert_eq!(warm.code, 0, "{}", warm.stderr);
    let run = cargo_pulse(
        &dir,
        &[
            "test",
            "--schedules",
            "100000000",
            "--seed",
            "1",
            "--time-budget",
            "6s",
            // (One thread keeps the first passing test, the other reaches the race.)
            "--test-threads",
            "2",
            "--message-format",
            "json",
        ],
    );
    assert_eq!(
        run.code, 101,
        "the race found before the budget ran out still counts"
    );
    assert!(run.secs < 60.0, "stopped near the budget: {:.1}s", run.secs);
    let events = run.json();
    let finished = events
        .iter()
        .find(|v| v["type"] == "run" && v["event"] == "finished")
        .expect("a finished event");
    assert!(finished["stopped"].as_u64().unwrap() >= 1, "{finished}");
    assert_eq!(
        test_event(&events, "tests::racy_hits_are_all_counted")["event"],
        "failed"
    );
    let stopped: Vec<&serde_json::Value> = events
        .iter()
        .filter(|v| v["type"] == "test" && v["event"] == "stopped")
        .collect();
    assert!(!stopped.is_empty());
    for s in stopped {
        assert!(
            s["reason"]
                .as_str()
                .unwrap()
                .starts_with("the --time-budget of 6s ran out"),
            "{s}"
        );
    }
    // And for people: the table and the line saying why it ended.
    let human = cargo_pulse(
        &dir,
        &[
            "test",
            "--schedules",
            "100000000",
            "--time-budget",
            "3s",
            "--color",
            "never",
        ],
    );
    assert!(
        human
            .stderr
            .contains("run stopped: the --time-budget of 3s ran out")
            && human.stderr.contains("STOPPED"),
        "{}",
        human.stderr
    );
    // A test's own time limit (`--test-time`): it passes with what it ran, and says so.
    let limited = cargo_pulse(
        &dir,
        &[
            "test",
            "--schedules",
            "100000000",
            "--test-time",
            "2s",
            "--color",
            "never",
            "atomic_hits_are_all_counted",
        ],
    );
    assert_eq!(limited.code, 0, "{}", limited.stderr);
    assert!(
        limited.stderr.contains("PASS")
            && limited
                .stderr
                .contains("time limit: the test's 2s ran out after")
            && limited
                .stderr
                .contains("of its 100000000 schedules, all passing"),
        "{}",
        limited.stderr
    );
    assert!(limited.secs < 60.0, "{:.1}s", limited.secs);
    // The table and the closing line say it too, for a reader of `-q` or the last lines.
    assert!(
        limited.stderr.contains("ok (time limit)")
            && limited
                .stderr
                .contains("1 passed (1 at the time limit, short of their schedules)"),
        "{}",
        limited.stderr
    );
    // Its step budget (`--test-steps`) the same way, after the same schedules on every run.
    let budgeted = |steps: &str| {
        let run = cargo_pulse(
            &dir,
            &[
                "test",
                "--schedules",
                "100000000",
                "--test-steps",
                steps,
                "--seed",
                "7",
                "--color",
                "never",
                "atomic_hits_are_all_counted",
            ],
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(
            run.stderr
                .contains("step budget: the test's 50000 steps ran out after")
                && run.stderr.contains("ok (step budget)")
                && run
                    .stderr
                    .contains("1 passed (1 at the step budget, short of their schedules)"),
            "{}",
            run.stderr
        );
        let ran = run.stderr.split("ran out after ").nth(1).unwrap();
        ran.split(' ').next().unwrap().to_string()
    };
    assert_eq!(budgeted("50k"), budgeted("50_000"), "the same schedules");
}
