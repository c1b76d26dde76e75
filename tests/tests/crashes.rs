//! Crashes are findings: a test process that dies (a null dereference, a double free, an
//! `unsafe` precondition abort, `process::exit` in a spawned thread, an `abort` after a
//! caught panic) is reported as CRASHED with its seed, schedule, trace and a replay line,
//! found with default settings and by `dfs`, and the replay line reproduces the crash.

#[allow(dead_code)]
mod support;

use support::{cargo_pulse, fixture, shell};

#[test]
fn every_crash_is_found_with_default_settings_and_its_replay_reproduces_it() {
    let dir = fixture("crashes", "crashes");
    // Default settings: 1000 schedules from a random seed.
    let run = cargo_pulse(
        &dir,
        &["test", "--color", "never", "--message-format", "json"],
    );
    assert_eq!(run.code, 101, "crashes fail the run");
    // What each crash must say of itself (the signal, glibc's or std's words, the exit).
    let expect = [
        (
            "list::tests::a_sender_may_push_while_the_receiver_goes_away",
            "SIG",
        ),
        ("slot::tests::only_one_taker_gets_the_buffer", "double free"),
        (
            "publish::tests::a_reader_sees_nothing_or_everything",
            "unsafe precondition",
        ),
        (
            "audit::tests::the_auditor_finds_the_books_balanced",
            "exit status 1",
        ),
        // The cause the test's own output leaves out ("a job failed"): the caught panic.
        (
            "tickets::tests::every_worker_gets_its_own_ticket",
            "handed out twice",
        ),
    ];
    let events = run.json();
    for (name, says) in expect {
        let v = events
            .iter()
            .find(|v| v["type"] == "test" && v["name"] == name)
            .unwrap_or_else(|| panic!("no event for {name}"));
        assert_eq!(v["event"], "crashed", "{name}: {v}");
        let seed = v["seed"]
            .as_u64()
            .unwrap_or_else(|| panic!("{name}: a seed: {v}"));
        assert!(
            v["report"].as_str().unwrap_or("").contains(says),
            "{name}: {v}"
        );
        assert_eq!(v["record"]["kind"], "crash", "{name}: the runtime's record");
        // The worker's journal kept the schedule that led to the crash, and the trace of its
        // replay up to it.
        let schedule = v["record"]["schedule"].as_str().unwrap_or("");
        assert!(schedule.len() > "p1:".len(), "{name}: a schedule: {v}");
        assert!(
            v["record"]["trace"]
                .as_array()
                .is_some_and(|t| !t.is_empty()),
            "{name}: a trace: {v}"
        );
        let replay = v["replay"].as_str().unwrap().to_string();
        assert!(replay.contains(&format!("--seed {seed}")), "{replay}");
        assert!(run.stderr.contains(&replay), "the replay line is printed");

        for _ in 0..2 {
            let again = shell(
                &dir,
                &format!("{replay} --color never --message-format json"),
            );
            assert_eq!(again.code, 101, "{name}: the replay crashes again");
            let r = again
                .json()
                .into_iter()
                .find(|r| r["type"] == "test" && r["name"] == name)
                .expect("the replayed test");
            assert_eq!(r["event"], "crashed", "{name}: {r}");
            assert_eq!(r["seed"], seed, "{name}: the same seed");
            assert!(
                r["report"].as_str().unwrap_or("").contains(says),
                "{name}: {r}"
            );
        }
    }
}

/// `dfs` has no seed to replay: its crash report's line replays the schedule the worker's
/// journal kept, in a fresh process, where the crash is reported again as it was found.
#[test]
fn a_crash_found_by_dfs_replays_by_its_schedule() {
    let dir = fixture("crashes", "crashes-dfs");
    let run = cargo_pulse(
        &dir,
        &[
            "test",
            "tickets::",
            "--strategy",
            "dfs",
            "--color",
            "never",
            "--message-format",
            "json",
        ],
    );
    assert_eq!(run.code, 101, "the crash fails the run: {}", run.stderr);
    let name = "tickets::tests::every_worker_gets_its_own_ticket";
    let found = |events: Vec<serde_json::Value>| {
        events
            .into_iter()
            .find(|v| v["type"] == "test" && v["name"] == name)
            .unwrap_or_else(|| panic!("no event for {name}"))
    };
    let v = found(run.json());
    assert_eq!(v["event"], "crashed", "{v}");
    assert!(v["seed"].is_null(), "dfs has no seed: {v}");
    assert!(
        v["report"].as_str().unwrap_or("").contains("found by: dfs"),
        "the report names the search that found it: {v}"
    );
    let schedule = v["record"]["schedule"]
        .as_str()
        .expect("a schedule")
        .to_string();
    let replay = v["replay"].as_str().unwrap().to_string();
    assert!(
        replay.contains(&format!("--replay '{schedule}'"))
            && replay.ends_with("--isolation always"),
        "{replay}"
    );
    let traces = dir.join("traces");
    let again = shell(
        &dir,
        &format!(
            "{replay} --color never --message-format json --trace-out {}",
            traces.display()
        ),
    );
    assert_eq!(
        again.code, 101,
        "the replay crashes again: {}",
        again.stderr
    );
    // `--trace-out` writes a crash's trace file as any failure's.
    let file = traces.join(format!("{}.trace.json", name.replace("::", "__")));
    let trace: serde_json::Value = serde_json::from_slice(
        &std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display())),
    )
    .unwrap();
    assert_eq!(trace["outcome"], "crash", "{trace}");
    assert!(
        trace["events"].as_array().is_some_and(|e| !e.is_empty()),
        "{trace}"
    );
    let r = found(again.json());
    assert_eq!(r["event"], "crashed", "{r}");
    assert_eq!(r["record"]["schedule"], schedule.as_str(), "{r}");
    assert!(
        r["report"]
            .as_str()
            .unwrap_or("")
            .contains("handed out twice"),
        "the replay reports the crash's cause: {r}"
    );
    assert!(
        r["record"]["trace"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "{r}"
    );
}
