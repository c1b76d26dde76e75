//! `pulse::statem` under the installed `cargo pulse test`, on `examples/statem`: every buggy
//! component is found and shrunk to a small counterexample (a few commands, with a prefix and
//! two branches at most), every fixed twin passes, and the printed case replay line replays
//! the same case. Plus `cargo pulse check-history` on the shared Jepsen data when it is here.

#[allow(dead_code)] // (helpers e2e.rs uses and this file does not)
mod support;

use std::path::Path;

use support::{cargo_pulse, copy_fixture, repo, shell, work_dir};

/// examples/statem and the proc-reg crate it uses, side by side as in the repository, with
/// the dev-dependency on pulse made absolute (the copy is outside the repository).
fn statem_example() -> support::Fixture {
    let root = work_dir().join("statem-examples");
    let _ = std::fs::remove_dir_all(&root);
    copy_fixture(
        &repo().join("examples/proc-reg"),
        "statem-examples/proc-reg",
    );
    let dir = copy_fixture(&repo().join("examples/statem"), "statem-examples/statem");
    let manifest = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let pulse = repo().join("pulse");
    let text = text.replace(
        "\"../../pulse\"",
        &format!("{:?}", pulse.display().to_string()),
    );
    std::fs::write(&manifest, text).unwrap();
    dir
}

fn failure_report(dir: &Path, test: &str) -> String {
    let file = dir.join(format!(
        "target/pulse/failures/statem-examples.test-statem.{test}.json"
    ));
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    record["report"].as_str().unwrap_or_default().to_string()
}

/// `shrunk from N to M command(s)` in a report: M.
fn shrunk_to(report: &str) -> usize {
    let rest = report.split(" to ").nth(1).unwrap_or_default();
    rest.split(' ')
        .next()
        .unwrap_or_default()
        .parse()
        .unwrap_or(usize::MAX)
}

#[test]
fn buggy_components_are_found_and_shrunk_and_fixed_ones_pass() {
    let dir = statem_example();
    let run = cargo_pulse(
        &dir,
        &[
            "test",
            "--seed",
            "5",
            "--color",
            "never",
            "--message-format",
            "json",
        ],
    );
    assert_eq!(run.code, 101, "the buggy components are found");
    let events = run.test_events();
    assert_eq!(events.len(), 9, "{events:?}");
    for (name, event) in &events {
        let expected = if name.ends_with("_fixed") {
            "ok"
        } else {
            "failed"
        };
        assert_eq!(event, expected, "{name}");
    }
    for (test, at_most) in [
        ("registry_names_have_one_live_holder", 3),
        // Its smallest failing case has 3 commands (two inserts in one branch, `ToVec`
        // preempted between shards in the other); 32 seeds per candidate reach it for about
        // half the generation seeds (1-8: 5 before the roles strategy joined the portfolio,
        // 4 after), else 4 (two inserts, then `DeleteAll` beside `ToVec`).
        ("table_to_vec_is_a_snapshot", 4),
        ("queue_pops_in_push_order", 4),
        ("kv_appends_are_never_lost", 4),
    ] {
        let report = failure_report(&dir, test);
        assert!(report.contains("not linearizable"), "{test}: {report}");
        assert!(shrunk_to(&report) <= at_most, "{test}: {report}");
        assert!(report.contains("branch 2:"), "{test}: {report}");
        // The failing execution's trace file, beside the record: each command's interval,
        // from its call to its return on the thread that ran it, with its events between.
        let file = dir.join(format!(
            "target/pulse/failures/statem-examples.test-statem.{test}.trace.json"
        ));
        let trace: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&file).unwrap_or_else(|e| {
                panic!("{test}: {}: {e}", file.display());
            }))
            .unwrap();
        assert_eq!(trace["outcome"], "linearizability", "{test}");
        let events = trace["events"].as_array().unwrap();
        let invokes = events.iter().filter(|e| e["kind"] == "invoke").count();
        let responses = events.iter().filter(|e| e["kind"] == "response").count();
        assert_eq!(
            (invokes, responses),
            (shrunk_to(&report), shrunk_to(&report)),
            "{test}"
        );
        let fail = trace["failing_event"].as_u64().expect("a failing event") as usize;
        assert_eq!(
            events[fail]["kind"], "response",
            "{test}: the op that cannot follow"
        );
        let text = cargo_pulse(&dir, &["trace", file.to_str().unwrap()]);
        assert_eq!(text.code, 0, "{}", text.stderr);
        let rows: Vec<&str> = text
            .stdout
            .lines()
            .skip_while(|l| !l.starts_with("operations (pulse::statem"))
            .skip(1)
            .take_while(|l| !l.is_empty())
            .collect();
        assert_eq!(rows.len(), shrunk_to(&report), "{test}: {}", text.stdout);
        for row in &rows {
            // `v3` and the command as the report prints them, then what it returned.
            let var = row.split_whitespace().nth(1).unwrap();
            let printed = report
                .lines()
                .find(|l| l.trim().starts_with(&format!("{var} = ")))
                .unwrap_or_else(|| panic!("{test}: {var} in {report}"));
            let (cmd, ret) = printed.trim()[var.len() + 3..].split_once(" -> ").unwrap();
            assert!(
                row.contains(cmd) && row.contains(&format!("-> {ret}")),
                "{row} / {printed}"
            );
            assert!(
                row.contains("events ") && !row.contains("never returned"),
                "{row}"
            );
        }
        let html = cargo_pulse(&dir, &["trace", file.to_str().unwrap(), "--format", "html"]);
        assert_eq!(html.code, 0, "{}", html.stderr);
        let data = html
            .stdout
            .split_once(r#""intervals":["#)
            .map(|(_, r)| r.split("]]").next().unwrap())
            .unwrap_or_else(|| panic!("{test}: intervals in the page"));
        assert_eq!(
            data.matches('[').count(),
            shrunk_to(&report),
            "{test}: {data}"
        );
        assert!(
            !data.contains("null"),
            "{test}: every interval closed: {data}"
        );
        if test == "queue_pops_in_push_order" {
            viewer_draws_the_intervals(&dir, &html.stdout, shrunk_to(&report));
        }
    }
    // The case's own replay line replays that case, once.
    let report = failure_report(&dir, "queue_pops_in_push_order");
    let line = report
        .lines()
        .find_map(|l| l.trim().strip_prefix("replay this case: "))
        .expect("a case replay line")
        .to_string();
    let replay = shell(&dir, &format!("{line} --color never"));
    assert_eq!(replay.code, 101, "{}", replay.stderr);
    assert!(
        replay.stderr.contains("pulse statem: replaying s1:5:"),
        "{}",
        replay.stderr
    );
}

#[test]
fn check_history_gives_every_jepsen_history_its_known_verdict() {
    let data = repo().join("../shared/data/linearizability/jepsen");
    let Ok(verdicts) = std::fs::read_to_string(data.join("VERDICTS.tsv")) else {
        eprintln!("skipped: no linearizability data at {}", data.display());
        return;
    };
    let mut args = vec![
        "check-history".to_string(),
        "--model".into(),
        "register".into(),
    ];
    let mut expected = std::collections::BTreeMap::new();
    for line in verdicts.lines().skip(1).filter(|l| !l.is_empty()) {
        let (file, v) = line.split_once('\t').unwrap();
        let path = data.join(file).display().to_string();
        expected.insert(path.clone(), v.trim() == "true");
        args.push(path);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = cargo_pulse(&repo(), &args);
    assert_eq!(run.code, 1, "79 histories are not linearizable");
    for (file, linearizable) in expected {
        let want = if linearizable {
            "linearizable"
        } else {
            "not linearizable"
        };
        assert!(
            run.stdout.contains(&format!("{file}: {want}\n")),
            "{file}: {}",
            run.stdout
        );
    }
    assert!(run
        .stdout
        .lines()
        .last()
        .unwrap_or_default()
        .starts_with("checked 102 file(s) in "));
}

/// Headless Chromium opens a statem failure's viewer: it draws a bar per operation with no
/// console error (skipped with a message where no browser can be installed).
fn viewer_draws_the_intervals(dir: &Path, page: &str, operations: usize) {
    let bin = match support::chromium() {
        Ok(bin) => bin,
        Err(why) => {
            eprintln!("SKIPPED (the statem viewer in a browser): {why}");
            return;
        }
    };
    let file = dir.join("statem-viewer.html");
    std::fs::write(&file, page).unwrap();
    let url = format!("file://{}", file.display());
    let dom = support::run_with_deadline(
        support::headless(&bin, &support::fresh_profile())
            .arg("--dump-dom")
            .arg(&url),
        std::time::Duration::from_secs(120),
    )
    .expect("chromium --dump-dom finished within its deadline");
    let html = String::from_utf8_lossy(&dom.stdout);
    let log = String::from_utf8_lossy(&dom.stderr);
    assert!(
        html.contains(&format!("data-intervals=\"{operations}\"")),
        "the script ran to its end with {operations} operation bars:\n{log}"
    );
    let errors: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") && (l.contains("ERROR") || l.contains("Uncaught")))
        .collect();
    assert!(errors.is_empty(), "console errors: {errors:#?}");
    let shot = support::scratch().join("statem-viewer.png");
    let _ = std::fs::remove_file(&shot);
    support::run_with_deadline(
        support::headless(&bin, &support::fresh_profile())
            .arg(format!("--screenshot={}", shot.display()))
            .arg(&url),
        std::time::Duration::from_secs(120),
    )
    .expect("chromium --screenshot finished within its deadline");
    assert!(shot.exists(), "a screenshot at {}", shot.display());
}
