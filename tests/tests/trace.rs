//! `cargo pulse trace` on failures the examples really have: the DOT diagram's lanes,
//! synchronisation edges and exactly the racing dotted edges; the same schedule writes a
//! byte-identical trace file; and headless Chromium renders the HTML viewer without a
//! console error (installed with apt when missing, skipped with a message when it cannot be).

#[allow(dead_code)]
mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use support::{
    apt_installed, cargo_pulse, chromium, copy_fixture, fresh_profile, headless, repo,
    run_with_deadline,
};

/// Runs `example`'s buggy test until it fails and returns the dir and its trace file.
fn failing_trace(example: &str, test: &str, slot: &str) -> (support::Fixture, PathBuf) {
    let dir = copy_fixture(
        &repo().join("examples").join(example),
        &format!("trace-{slot}"),
    );
    let run = cargo_pulse(
        &dir,
        &[
            "test",
            test,
            "--exact",
            "--seed",
            "1",
            "--schedules",
            "2000",
        ],
    );
    assert_eq!(run.code, 101, "{example}: the bug is found\n{}", run.stderr);
    // Two lines, one per file: the viewer to open and the trace file for the other views.
    let line = |label: &str| {
        let found: Vec<&str> = run
            .stderr
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix(label))
            .collect();
        assert_eq!(found.len(), 1, "one {label} line:\n{}", run.stderr);
        found[0].to_string()
    };
    let viewer = line("viewer: ");
    assert!(viewer.ends_with(".html"), "{viewer}");
    assert!(dir.join(&viewer).is_file(), "{viewer}");
    let trace = line("trace: ");
    let (file, how) = trace.split_once(' ').unwrap();
    assert!(file.ends_with(".trace.json"), "{trace}");
    assert_eq!(how, "(cargo pulse trace FILE --format text|dot|svg)");
    assert!(!run.stderr.contains("timeline:"), "{}", run.stderr);
    if example == "lost-update-counter" {
        // The console's failure summary names the racing pair in words.
        let race = run
            .stderr
            .lines()
            .find(|l| l.trim_start().starts_with("race: "))
            .unwrap_or_else(|| panic!("a race line in the report:\n{}", run.stderr));
        assert!(
            race.contains("`Mutex#0` at src/lib.rs:") && race.contains(" between "),
            "{race}"
        );
    }
    if example == "mpsc-pipeline" {
        // The log fails on the order its messages arrived in: the race that explains it is
        // the two unordered sends on the channel, not the ticket counter's hand-overs
        // (which race too).
        let race = run
            .stderr
            .lines()
            .find(|l| l.trim_start().starts_with("race: "))
            .unwrap_or_else(|| panic!("a race line in the report:\n{}", run.stderr));
        assert!(
            race.contains("sent on `Channel#0` at src/lib.rs:") && !race.contains("AtomicU64"),
            "{race}"
        );
        // The senders' drops and the iterator's receives have no user's line of their own:
        // the report's table says "after" the thread's last one, never a path in pulse or std.
        for machinery in ["shim-std/src/", "/rustc/", "library/alloc/"] {
            assert!(
                !run.stderr.contains(machinery),
                "{machinery}:\n{}",
                run.stderr
            );
        }
    }
    let file = trace_file(&dir);
    (dir, file)
}

fn trace_file(dir: &Path) -> PathBuf {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("target/pulse/failures"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".trace.json"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 1, "one trace file: {files:?}");
    files.pop().unwrap()
}

fn read_trace(file: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap()
}

/// The DOT output, parsed into lanes and edges by class.
struct Dot {
    text: String,
    lanes: Vec<String>,
    sync: BTreeSet<(usize, usize)>,
    races: BTreeSet<(usize, usize)>,
    waits: BTreeSet<(usize, usize)>,
}

fn dot(dir: &Path, file: &Path) -> Dot {
    let run = cargo_pulse(dir, &["trace", file.to_str().unwrap(), "--format", "dot"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = run.stdout;
    let edge = |class: &str| -> BTreeSet<(usize, usize)> {
        text.lines()
            .filter(|l| l.contains(&format!("class={class}")))
            .map(|l| {
                let (a, rest) = l.trim().split_once(" -> ").unwrap();
                let b = rest.split_whitespace().next().unwrap();
                (a[1..].parse().unwrap(), b[1..].parse().unwrap())
            })
            .collect()
    };
    let lanes = text
        .lines()
        .filter(|l| l.trim_start().starts_with("label=\"") && l.contains("color="))
        .map(|l| {
            l.split('"')
                .nth(1)
                .unwrap()
                .split("\\n")
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    Dot {
        lanes,
        sync: edge("sync"),
        races: edge("race"),
        waits: edge("waits"),
        text,
    }
}

/// An independent oracle for PULSE's dotted edges: consecutive conflicting accesses to one
/// object from different threads that nothing but that object's own synchronisation orders
/// (the spawn, the join, or another object's: a `SeqCst` counter's hand-off orders the
/// channel sends around it). It once knew only the spawn and the join, which held until a
/// schedule put an atomic hand-off between two sends.
fn expected_races(trace: &serde_json::Value) -> BTreeSet<(usize, usize)> {
    let events = trace["events"].as_array().unwrap();
    let kind = |i: usize| events[i]["kind"].as_str().unwrap().to_string();
    let access = |i: usize| -> Option<&'static str> {
        match kind(i).as_str() {
            "acquire" | "store" | "rmw" => Some("w"),
            "load" => Some("r"),
            "send" => Some("send"),
            "recv"
                if events[i]["value"]
                    .as_str()
                    .is_some_and(|v| v.starts_with("Ok")) =>
            {
                Some("recv")
            }
            _ => None,
        }
    };
    let mut last: std::collections::BTreeMap<String, usize> = Default::default();
    // Each object's clocks, computed once: they leave out only that object's own edges.
    let mut clocks: std::collections::BTreeMap<String, Vec<Vec<u64>>> = Default::default();
    let thread_of = |i: usize| events[i]["thread"].as_u64().unwrap() as usize;
    let mut out = BTreeSet::new();
    for i in 0..events.len() {
        let (Some(a), Some(obj)) = (access(i), events[i]["object"].as_str()) else {
            continue;
        };
        if let Some(&p) = last.get(obj) {
            let b = access(p).unwrap();
            let conflict = match (a, b) {
                ("r", "r") => false,
                ("r" | "w", "r" | "w") => true,
                (x, y) => x == y,
            };
            let (tp, ti) = (&events[p]["thread"], &events[i]["thread"]);
            let clocks = clocks
                .entry(obj.to_string())
                .or_insert_with(|| clocks_without(trace, obj));
            let ordered = clocks[p][thread_of(p)] <= clocks[i][thread_of(p)];
            if tp != ti && conflict && !ordered {
                out.insert((p, i));
            }
        }
        last.insert(obj.to_string(), i);
    }
    out
}

/// Each event's vector clock through the trace's recorded synchronisation (each event's
/// `sync`, the event it synchronises with, and each thread's spawn) other than `object`'s
/// own: computed here, not the renderer's.
fn clocks_without(trace: &serde_json::Value, object: &str) -> Vec<Vec<u64>> {
    let events = trace["events"].as_array().unwrap();
    let threads = trace["threads"].as_array().unwrap();
    let n = threads.len();
    let thread_of = |i: usize| events[i]["thread"].as_u64().unwrap() as usize;
    let mut now: Vec<Option<Vec<u64>>> = vec![None; n];
    let mut clocks: Vec<Vec<u64>> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let t = thread_of(i);
        let mut c = now[t].take().unwrap_or_else(|| {
            let mut c = vec![0; n];
            if let Some(s) = threads[t]["spawned_by"].as_u64() {
                join_clock(&mut c, &clocks[s as usize]);
            }
            c
        });
        c[t] += 1;
        if let Some(s) = e["sync"].as_u64() {
            if e["object"].as_str() != Some(object) {
                join_clock(&mut c, &clocks[s as usize]);
            }
        }
        clocks.push(c.clone());
        now[t] = Some(c);
    }
    clocks
}

fn join_clock(into: &mut [u64], other: &[u64]) {
    for (x, y) in into.iter_mut().zip(other) {
        *x = (*x).max(*y);
    }
}

#[test]
fn lost_update_diagram_shows_the_handoffs_of_the_counter_as_races() {
    let (dir, file) = failing_trace(
        "lost-update-counter",
        "concurrent_increments_are_not_lost",
        "lost-update",
    );
    let trace = read_trace(&file);
    let d = dot(&dir, &file);
    assert_eq!(d.lanes, ["main", "thread-1"], "{}", d.text);
    let events = trace["events"].as_array().unwrap();
    let spawn = events.iter().position(|e| e["kind"] == "spawn").unwrap();
    let first_child = events.iter().position(|e| e["thread"] == 1).unwrap();
    assert!(d.sync.contains(&(spawn, first_child)), "spawn edge");
    let exit = events
        .iter()
        .position(|e| e["kind"] == "exit" && e["thread"] == 1)
        .unwrap();
    let join = events.iter().position(|e| e["kind"] == "join").unwrap();
    assert!(d.sync.contains(&(exit, join)), "exit -> join edge");
    assert!(
        d.sync
            .iter()
            .any(|&(a, b)| events[a]["kind"] == "release" && events[b]["kind"] == "acquire"),
        "unlock -> lock edges"
    );
    assert!(!d.races.is_empty());
    assert_eq!(d.races, expected_races(&trace), "exactly the racing edges");
    assert!(d.waits.is_empty());
    // The summary names the increment that landed in between.
    let text = cargo_pulse(&dir, &["trace", file.to_str().unwrap()]).stdout;
    let race = text
        .lines()
        .find(|l| l.starts_with("race: "))
        .expect("a race line");
    assert!(
        race.contains("`Mutex#0`") && race.contains(" between ") && race.contains("src/lib.rs:"),
        "{race}"
    );
    assert!(text.contains("schedule: S0"), "{text}");
}

#[test]
fn ab_ba_deadlock_diagram_has_the_waits_for_cycle_and_no_race() {
    let (dir, file) = failing_trace(
        "lock-order-deadlock",
        "opposite_transfers_complete",
        "deadlock",
    );
    let trace = read_trace(&file);
    let d = dot(&dir, &file);
    assert_eq!(d.lanes.len(), 2, "{}", d.text);
    assert_eq!(trace["outcome"], "deadlock");
    let events = trace["events"].as_array().unwrap();
    assert_eq!(
        d.waits.len(),
        2,
        "two threads each wait for the other's lock: {}",
        d.text
    );
    let threads: BTreeSet<_> = d
        .waits
        .iter()
        .map(|&(a, _)| events[a]["thread"].as_u64())
        .collect();
    assert_eq!(threads.len(), 2);
    for &(block, held) in &d.waits {
        assert_eq!(events[block]["kind"], "block");
        assert_eq!(events[held]["kind"], "acquire");
        assert_eq!(events[block]["object"], events[held]["object"]);
        assert_ne!(events[block]["thread"], events[held]["thread"]);
    }
    assert_eq!(d.races, expected_races(&trace), "exactly the racing edges");
}

#[test]
fn message_overtaking_diagram_has_the_racing_sends() {
    let (dir, file) = failing_trace(
        "mpsc-pipeline",
        "log_is_written_in_ticket_order",
        "overtaking",
    );
    let trace = read_trace(&file);
    let d = dot(&dir, &file);
    assert_eq!(d.lanes, ["main", "thread-1"], "{}", d.text);
    let events = trace["events"].as_array().unwrap();
    assert!(
        d.sync
            .iter()
            .any(|&(a, b)| events[a]["kind"] == "send" && events[b]["kind"] == "recv"),
        "send -> recv edges"
    );
    assert!(
        d.races
            .iter()
            .any(|&(a, b)| events[a]["kind"] == "send" && events[b]["kind"] == "send"),
        "two unordered sends: {:?}",
        d.races
    );
    assert_eq!(d.races, expected_races(&trace), "exactly the racing edges");
    // Events in a drop (`Sender::drop`) or called by std (the writer's `rx.into_iter()`
    // receiving) carry their thread's last user line, marked, never pulse's or std's path.
    for e in events {
        let loc = e["location"].as_str().unwrap_or("");
        assert!(
            loc.is_empty() || loc.starts_with("src/"),
            "a user's location: {e}"
        );
    }
    let inferred = |op: &str| {
        events
            .iter()
            .filter(|e| e["op"] == op)
            .all(|e| e["location_inferred"] == true && e["location"].as_str().is_some())
    };
    assert!(
        inferred("Sender::drop") && inferred("Receiver::recv"),
        "{events:?}"
    );
    assert!(
        events.iter().any(|e| e["op"] == "Receiver::recv"),
        "the writer receives"
    );
    let text = cargo_pulse(&dir, &["trace", file.to_str().unwrap()]).stdout;
    let drop_row = text
        .lines()
        .find(|l| l.contains("Sender::drop"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(drop_row.contains(" after src/lib.rs:"), "{drop_row}");
}

#[test]
fn lost_wakeup_diagram_has_notify_to_wake_and_races_on_the_queue_only() {
    let (dir, file) = failing_trace("lost-wakeup", "two_consumers_each_pop_a_job", "lost-wakeup");
    let trace = read_trace(&file);
    let d = dot(&dir, &file);
    assert!(
        d.lanes.len() >= 3,
        "a producer and two consumers: {:?}",
        d.lanes
    );
    let events = trace["events"].as_array().unwrap();
    // The woken consumer was woken by a notify (an edge), or woke spuriously (said so).
    let notified = d
        .sync
        .iter()
        .any(|&(a, b)| events[a]["kind"] == "notify" && events[b]["kind"] == "wake");
    let spurious = events
        .iter()
        .any(|e| e["kind"] == "wake" && e["value"] == "spurious");
    assert!(
        notified || spurious,
        "notify -> wake edge or a spurious wake: {}",
        d.text
    );
    assert!(!d.races.is_empty());
    for &(a, b) in &d.races {
        assert_ne!(events[a]["thread"], events[b]["thread"]);
        assert_eq!(events[a]["object"], events[b]["object"]);
        assert!(
            events[a]["object"].as_str().unwrap().starts_with("Mutex#"),
            "{:?}",
            events[a]
        );
    }
}

#[test]
fn the_same_schedule_writes_a_byte_identical_trace() {
    let (dir, file) = failing_trace(
        "lost-update-counter",
        "concurrent_increments_are_not_lost",
        "same-schedule",
    );
    let record: serde_json::Value = serde_json::from_slice(
        &std::fs::read(file.to_string_lossy().replace(".trace.json", ".json")).unwrap(),
    )
    .unwrap();
    let schedule = record["schedule"].as_str().unwrap().to_string();
    let searched = read_trace(&file);
    let replay = |slot: &str| {
        let failures = dir.join("target/pulse/failures");
        let _ = std::fs::remove_dir_all(&failures);
        let run = cargo_pulse(
            &dir,
            &[
                "test",
                "concurrent_increments_are_not_lost",
                "--exact",
                "--replay",
                &schedule,
            ],
        );
        assert_eq!(run.code, 101, "{}", run.stderr);
        let saved = dir.join(format!("{slot}.trace.json"));
        std::fs::copy(trace_file(&dir), &saved).unwrap();
        std::fs::read(saved).unwrap()
    };
    let (first, second) = (replay("first"), replay("second"));
    assert!(first.len() > 1000);
    assert!(
        first == second,
        "two replays of one schedule wrote different traces"
    );
    // And the search's own traced replay wrote the same events.
    let replayed: serde_json::Value = serde_json::from_slice(&first).unwrap();
    assert_eq!(searched["events"], replayed["events"]);
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = copy_fixture(
        &repo().join("examples/lost-update-counter"),
        "trace-bad-input",
    );
    let missing = cargo_pulse(&dir, &["trace", "no-such.trace.json"]);
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("no-such.trace.json"),
        "{}",
        missing.stderr
    );
    std::fs::write(dir.join("old.trace.json"), r#"{"version":99,"events":[]}"#).unwrap();
    let old = cargo_pulse(&dir, &["trace", "old.trace.json"]);
    assert_eq!(old.code, 2);
    assert!(old.stderr.contains("version 99"), "{}", old.stderr);
    let format = cargo_pulse(&dir, &["trace", "old.trace.json", "--format", "png"]);
    assert_eq!(format.code, 2);
    // SVG needs Graphviz: drawn when `dot` is installed, said plainly (exit 2) when not.
    std::fs::write(
        dir.join("tiny.trace.json"),
        r#"{"version":1,"threads":[{"id":0,"name":"main"}],"events":[{"thread":0,"kind":"exit","op":"thread exits"}]}"#,
    )
    .unwrap();
    let svg = cargo_pulse(&dir, &["trace", "tiny.trace.json", "--format", "svg"]);
    let has_dot = Command::new("dot").arg("-V").output().is_ok();
    if has_dot {
        assert_eq!(svg.code, 0, "{}", svg.stderr);
        assert!(svg.stdout.contains("<svg"), "{}", svg.stdout);
    } else {
        assert_eq!(svg.code, 2);
        assert!(svg.stderr.contains("Graphviz"), "{}", svg.stderr);
    }
}

#[test]
fn headless_chromium_renders_the_viewer_without_console_errors() {
    let bin = match chromium() {
        Ok(bin) => bin,
        Err(why) => {
            eprintln!("SKIPPED: {why}");
            return;
        }
    };
    let (dir, file) = failing_trace(
        "lost-update-counter",
        "concurrent_increments_are_not_lost",
        "browser",
    );
    let page = dir.join("viewer.html");
    let run = cargo_pulse(
        &dir,
        &[
            "trace",
            file.to_str().unwrap(),
            "--format",
            "html",
            "-o",
            page.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let url = format!("file://{}", page.display());
    let profile = fresh_profile();
    let dom = run_with_deadline(
        headless(&bin, &profile).arg("--dump-dom").arg(&url),
        Duration::from_secs(120),
    )
    .expect("chromium --dump-dom finished within its deadline");
    let html = String::from_utf8_lossy(&dom.stdout);
    let log = String::from_utf8_lossy(&dom.stderr);
    assert!(
        html.contains("data-rendered=\"2\""),
        "the script ran to its end and drew two swimlanes:\n{log}"
    );
    let errors: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") && (l.contains("ERROR") || l.contains("Uncaught")))
        .collect();
    assert!(errors.is_empty(), "console errors: {errors:#?}");
    let shot = support::scratch().join("trace-viewer.png");
    let _ = std::fs::remove_file(&shot);
    let profile = fresh_profile();
    let out = run_with_deadline(
        headless(&bin, &profile)
            .arg(format!("--screenshot={}", shot.display()))
            .arg(&url),
        Duration::from_secs(120),
    )
    .expect("chromium --screenshot finished within its deadline");
    let png = std::fs::read(&shot)
        .unwrap_or_else(|_| panic!("no screenshot: {}", String::from_utf8_lossy(&out.stderr)));
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 5_000,
        "a real picture"
    );
    eprintln!("screenshot: {}", shot.display());
}

/// A 100,000-event trace: the viewer and the analysis stay usable (measured, bounded).
#[test]
fn a_hundred_thousand_events_stay_usable() {
    let n = 100_000;
    let mut events = Vec::with_capacity(n);
    events.push(serde_json::json!({"step":0,"thread":0,"kind":"spawn","op":"thread::spawn","object":"Thread#1"}));
    for i in 1..n {
        let thread = (i % 2) as u32;
        let kind = if i % 4 < 2 { "acquire" } else { "release" };
        events.push(serde_json::json!({"step":i,"thread":thread,"kind":kind,"op":"Mutex::lock","object":"Mutex#0","location":"src/lib.rs:1:1"}));
    }
    let trace = serde_json::json!({"version":1,"test":"big","outcome":"panic","threads":[
        {"id":0,"name":"main"},{"id":1,"name":"thread-1","spawned_by":0}],
        "events":events,"failing_event":n-1});
    let dir = support::work_dir().join("trace-big");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("big.trace.json");
    std::fs::write(&file, trace.to_string()).unwrap();
    // The binary itself, timed without cargo in front of it.
    let t = Instant::now();
    let run = Command::new(support::installed_bin_dir().join("cargo-pulse"))
        .args(["pulse", "trace"])
        .arg(&file)
        .args(["--format", "html", "-o"])
        .arg(dir.join("big.html"))
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let secs = t.elapsed().as_secs_f64();
    eprintln!("html for {n} events in {secs:.1}s");
    assert!(secs < 60.0, "took {secs:.1}s");
    a_reader_gone_ends_the_output_quietly(&file);
    if let Ok(bin) = chromium() {
        let profile = fresh_profile();
        let t = Instant::now();
        let dom = run_with_deadline(
            headless(&bin, &profile)
                .arg("--dump-dom")
                .arg(format!("file://{}", dir.join("big.html").display())),
            Duration::from_secs(120),
        )
        .expect("chromium finished within its deadline");
        eprintln!(
            "chromium loaded and drew it in {:.1}s",
            t.elapsed().as_secs_f64()
        );
        assert!(String::from_utf8_lossy(&dom.stdout).contains("data-rendered=\"2\""));
    }
}

/// `cargo pulse trace FILE | head`: the reader leaves after a few lines, and the rest of
/// the output is not written, as with other Unix tools; it panicked (`failed printing to
/// stdout: Broken pipe`).
fn a_reader_gone_ends_the_output_quietly(file: &Path) {
    let mut child = Command::new(support::installed_bin_dir().join("cargo-pulse"))
        .args(["pulse", "trace"])
        .arg(file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Megabytes of text to come: the reader is gone before most of it.
    drop(child.stdout.take());
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "still writing after 60 s");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
    use std::os::unix::process::ExitStatusExt;
    assert!(
        // (13: SIGPIPE, the default action of a write to a pipe nobody reads.)
        status.success() || status.signal() == Some(13),
        "{status:?}: {stderr}"
    );
}

#[test]
fn trace_out_writes_the_passing_run_s_last_execution() {
    let dir = copy_fixture(
        &repo().join("examples/lost-update-counter"),
        "trace-trace-out",
    );
    let test = "concurrent_increments_are_not_lost_fixed";
    let run = cargo_pulse(
        &dir,
        &[
            "test",
            test,
            "--exact",
            "--seed",
            "1",
            "--schedules",
            "20",
            "--trace-out",
            "traces",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let file = dir.join(format!("traces/{test}.trace.json"));
    let trace = read_trace(&file);
    assert_eq!(trace["outcome"], "passed");
    assert!(trace["failing_event"].is_null(), "no event failed");
    assert!(!trace["schedule"].as_str().unwrap().is_empty());
    let events = trace["events"].as_array().unwrap();
    assert!(events.iter().any(|e| e["kind"] == "acquire"));
    assert!(
        events
            .iter()
            .filter_map(|e| e["location"].as_str())
            .all(|l| !l.contains("target/pulse/mirror")),
        "locations are the user's files"
    );
    assert!(events.iter().any(|e| e["location"]
        .as_str()
        .is_some_and(|l| l.starts_with("src/lib.rs:"))));
    // A dir that cannot be created is a bad flag: exit 2 before anything is built.
    std::fs::write(dir.join("a-file"), "").unwrap();
    let bad = cargo_pulse(&dir, &["test", "--trace-out", "a-file/traces"]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("--trace-out"), "{}", bad.stderr);
}

/// Graphviz's `dot`, installing Debian's `graphviz` package when it is missing.
fn graphviz() -> Result<PathBuf, String> {
    apt_installed("graphviz", "/usr/bin/dot").map_err(|why| format!("no Graphviz: {why}"))
}

/// One `<g class="...">` element of Graphviz's SVG: its classes, `<title>` and the rest of
/// its text (up to the next element of the same depth).
struct SvgGroup {
    classes: Vec<String>,
    title: String,
    body: String,
}

fn unescape(s: &str) -> String {
    s.replace("&#45;", "-")
        .replace("&gt;", ">")
        .replace("&lt;", "<")
        .replace("&amp;", "&")
}

/// The value of the first `name="..."` attribute in `text`.
fn attr(text: &str, name: &str) -> String {
    let key = format!(" {name}=\"");
    let rest = text
        .split_once(&key)
        .unwrap_or_else(|| panic!("{name} in {text}"))
        .1;
    rest.split('"').next().unwrap().to_string()
}

/// The bounding box of an SVG polygon's `points`.
fn bounds(points: &str) -> (f64, f64, f64, f64) {
    let mut b = (f64::MAX, f64::MAX, f64::MIN, f64::MIN);
    for p in points.split_whitespace() {
        let (x, y) = p.split_once(',').unwrap();
        let (x, y): (f64, f64) = (x.parse().unwrap(), y.parse().unwrap());
        b = (b.0.min(x), b.1.min(y), b.2.max(x), b.3.max(y));
    }
    b
}

fn svg_groups(svg: &str) -> Vec<SvgGroup> {
    svg.split("<g id=\"")
        .skip(1)
        .map(|g| {
            let classes = g
                .split_once("class=\"")
                .map(|(_, r)| r.split('"').next().unwrap().to_string())
                .unwrap_or_default();
            let title = g
                .split_once("<title>")
                .and_then(|(_, r)| r.split_once("</title>"))
                .map(|(t, _)| unescape(t))
                .unwrap_or_default();
            SvgGroup {
                classes: classes.split_whitespace().map(str::to_string).collect(),
                title,
                body: g.to_string(),
            }
        })
        .collect()
}

#[test]
fn svg_of_a_real_failure_has_a_lane_per_thread_and_the_dotted_races() {
    let dot_bin = match graphviz() {
        Ok(bin) => bin,
        Err(why) => {
            eprintln!("SKIPPED: {why}");
            return;
        }
    };
    let (dir, file) = failing_trace(
        "lost-update-counter",
        "concurrent_increments_are_not_lost",
        "svg",
    );
    let trace = read_trace(&file);
    let d = dot(&dir, &file);
    let run = cargo_pulse(&dir, &["trace", file.to_str().unwrap(), "--format", "svg"]);
    assert_eq!(run.code, 0, "{} ({})", run.stderr, dot_bin.display());
    let svg = run.stdout;
    assert!(
        svg.contains("<svg") && svg.trim_end().ends_with("</svg>"),
        "{svg}"
    );
    let groups = svg_groups(&svg);
    // One lane (Graphviz cluster) per thread, labelled with the thread's name, holding
    // exactly that thread's events.
    let lanes: Vec<&SvgGroup> = groups
        .iter()
        .filter(|g| g.classes.iter().any(|c| c == "cluster"))
        .collect();
    let threads = trace["threads"].as_array().unwrap();
    assert_eq!(lanes.len(), threads.len(), "a lane per thread");
    let events = trace["events"].as_array().unwrap();
    for th in threads {
        let id = th["id"].as_u64().unwrap();
        let lane = lanes
            .iter()
            .find(|g| g.title == format!("cluster_t{id}"))
            .unwrap_or_else(|| panic!("a lane for thread {id}"));
        let name = th["name"].as_str().unwrap();
        assert!(
            unescape(&lane.body).contains(&format!(">{name}</text>")),
            "lane label {name}"
        );
        // Every event of the thread is drawn inside its lane's box, and no other's is.
        let (x0, y0, x1, y1) = bounds(&attr(&lane.body, "points"));
        for (i, e) in events.iter().enumerate() {
            let node = groups
                .iter()
                .find(|g| g.classes.iter().any(|c| c == "node") && g.title == format!("e{i}"))
                .unwrap_or_else(|| panic!("event {i} is drawn"));
            let text = node.body.split_once("<text").unwrap().1;
            let (x, y): (f64, f64) = (
                attr(text, "x").parse().unwrap(),
                attr(text, "y").parse().unwrap(),
            );
            let inside = (x0..=x1).contains(&x) && (y0..=y1).contains(&y);
            assert_eq!(
                inside,
                e["thread"].as_u64() == Some(id),
                "event {i} (thread {}) and lane {id}",
                e["thread"]
            );
        }
    }
    // The dotted edges are exactly the races (and the races are exactly the oracle's).
    let dotted: BTreeSet<(usize, usize)> = groups
        .iter()
        .filter(|g| g.classes.iter().any(|c| c == "edge"))
        .filter(|g| g.body.contains("stroke-dasharray=\"1,5\""))
        .map(|g| {
            let (a, b) = g.title.split_once("->").unwrap();
            (a[1..].parse().unwrap(), b[1..].parse().unwrap())
        })
        .collect();
    assert!(!dotted.is_empty(), "the lost update's races are drawn");
    assert_eq!(dotted, d.races, "dotted edges are the DOT's races");
    assert_eq!(
        dotted,
        expected_races(&trace),
        "and exactly the racing pairs"
    );
    let race_class = groups
        .iter()
        .filter(|g| g.classes.iter().any(|c| c == "race"))
        .count();
    assert_eq!(
        race_class,
        dotted.len(),
        "each race keeps its class for styling"
    );
    // Synchronisation edges are drawn solid.
    let solid_sync = groups
        .iter()
        .filter(|g| g.classes.iter().any(|c| c == "sync"))
        .filter(|g| !g.body.contains("stroke-dasharray"))
        .count();
    assert_eq!(solid_sync, d.sync.len());
    std::fs::write(dir.join("lost-update.svg"), &svg).unwrap();
}

/// r2d2's `test::events` race, cut down: its event log is a parking_lot mutex, so every
/// access to it is inside the registry's parking_lot. `cargo pulse trace --format text`
/// says the race is inside parking_lot with the user's lines it ran on behalf of, shows
/// dependency paths from the crate on, and sizes its columns to thread names longer than
/// ten characters.
#[test]
fn a_race_inside_a_dependency_is_named_with_the_user_s_lines() {
    let reg = "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/parking_lot-0.13.0/src/raw_mutex.rs";
    let user = |t: u32, line: u32| serde_json::json!({"thread":t,"kind":"request","op":"Instant::now","location":format!("src/lib.rs:{line}:9")});
    let dep = |t: u32, line: u32| serde_json::json!({"thread":t,"kind":"rmw","op":"AtomicU8::compare_exchange_weak","object":"AtomicU8#1","location":format!("{reg}:{line}:14")});
    let mut events = vec![
        serde_json::json!({"thread":0,"kind":"spawn","op":"thread::spawn","object":"Thread#1","location":"src/lib.rs:1:1"}),
        user(0, 492),
        dep(0, 62),
        dep(0, 161),
        user(1, 257),
        dep(1, 62),
        dep(1, 192),
        user(0, 199),
        dep(0, 62),
    ];
    for (i, e) in events.iter_mut().enumerate() {
        e["step"] = i.into();
    }
    let trace = serde_json::json!({"version":2,"test":"test::events","outcome":"panic","threads":[
        {"id":0,"name":"main"},{"id":1,"name":"r2d2-worker-0","spawned_by":0,"spawn_site":format!("{reg}:375:16")}],
        "events":events,"failing_event":8});
    let dir = support::work_dir().join("trace-dependency");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("events.trace.json");
    std::fs::write(&file, trace.to_string()).unwrap();
    let run = Command::new(support::installed_bin_dir().join("cargo-pulse"))
        .args(["pulse", "trace"])
        .arg(&file)
        .args(["--format", "text"])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = String::from_utf8(run.stdout).unwrap();
    let race = text.lines().find(|l| l.starts_with("race: ")).expect(&text);
    assert_eq!(
        race,
        "race: inside parking_lot-0.13.0: r2d2-worker-0 updated `AtomicU8#1` at \
         parking_lot-0.13.0/src/raw_mutex.rs:62:14 (after src/lib.rs:257:9) between \
         main's update at :161 (after src/lib.rs:492:9) and update at :62 (after src/lib.rs:199:9)"
    );
    assert!(
        !text.contains("/registry/"),
        "no registry prefix in the tables:\n{text}"
    );
    // The steps table: every row's object column starts at the same place, the worker's
    // long name included.
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("steps"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(rows.len(), 9, "{text}");
    let at: BTreeSet<usize> = rows.iter().filter_map(|r| r.find("AtomicU8#1")).collect();
    assert_eq!(
        at.len(),
        1,
        "one column for the object:\n{}",
        rows.join("\n")
    );
    let loc: BTreeSet<usize> = rows
        .iter()
        .filter_map(|r| r.find("parking_lot-0.13.0/src/raw_mutex.rs"))
        .collect();
    assert_eq!(
        loc.len(),
        1,
        "one column for the location:\n{}",
        rows.join("\n")
    );
    assert!(rows.iter().any(|r| r.contains("r2d2-worker-0 ")), "{text}");
}
