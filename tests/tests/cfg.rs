//! `#[cfg]`s evaluated as the build compiles the crate, and one per-file instrumentation shared
//! by `cargo pulse test` and `cargo pulse instrument`.

#[allow(dead_code)]
mod support;

use support::{cargo_pulse, fixture, work_dir};

const QUICK: &[&str] = &["--schedules", "300", "--seed", "7", "--color", "never"];

fn args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    extra.iter().copied().chain(QUICK.iter().copied()).collect()
}

#[test]
fn a_crate_that_supports_loom_and_shuttle_is_scheduled_as_this_build_compiles_it() {
    // `mod std` (shuttle's modules) exists only under the `shuttle` feature, which is off:
    // its `std::thread::spawn` is std's and must run under pulse. Before cfgs were evaluated the
    // shadow hid `std` for the whole module and the test ran on OS threads.
    let dir = fixture("cfg-loom", "cfg-loom");
    let run = cargo_pulse(&dir, &args(&["test", "--message-format", "json"]));
    assert_eq!(run.code, 101, "the lost update is found");
    assert_eq!(
        run.event_of("counter::tests::racy_bumps_are_all_counted")
            .as_deref(),
        Some("failed")
    );
    assert_eq!(
        run.event_of("counter::tests::fixed_bumps_are_all_counted")
            .as_deref(),
        Some("ok")
    );
    let counter = std::fs::read_to_string(dir.join("target/pulse/mirror/src/counter.rs")).unwrap();
    assert!(
        counter.contains("::pulse::std::thread::spawn(move || bump(&count))"),
        "{counter}"
    );
    assert!(
        counter.contains("pub use ::shuttle::{sync, thread};"),
        "the shadow left out of the build is left alone:\n{counter}"
    );
    let sync = std::fs::read_to_string(dir.join("target/pulse/mirror/src/sync.rs")).unwrap();
    assert!(
        sync.contains("pub(crate) use ::pulse::std::sync::{Arc, Mutex};"),
        "{sync}"
    );

    // The report says which predicates were decided and which were not.
    let report: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("target/pulse/instrument-report.json")).unwrap(),
    )
    .unwrap();
    let cfgs: Vec<(String, serde_json::Value)> = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["cfgs"].as_array().cloned().unwrap_or_default())
        .map(|c| {
            (
                c["predicate"].as_str().unwrap().to_owned(),
                c["value"].clone(),
            )
        })
        .collect();
    for (predicate, value) in [
        ("feature = \"shuttle\"", serde_json::json!(false)),
        ("loom", serde_json::Value::Null),
        ("not(loom)", serde_json::Value::Null),
        ("test", serde_json::Value::Null),
    ] {
        assert!(
            cfgs.contains(&(predicate.to_owned(), value.clone())),
            "{predicate} = {value} in {cfgs:?}"
        );
    }

    // `cargo pulse instrument` shows the same to people.
    let out = work_dir().join("cfg-loom-out");
    let _ = std::fs::remove_dir_all(&out);
    let run = cargo_pulse(
        &dir,
        &[
            "instrument",
            "--crate",
            "cfg-loom",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 0);
    assert!(
        run.stdout
            .contains("cfg predicates decided for this build: feature = \"shuttle\" = false"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("cfg predicates undecided (every branch rewritten): loom, not(loom), test"),
        "{}",
        run.stdout
    );
}

#[test]
fn both_commands_instrument_each_file_with_the_crate_context() {
    // `extern crate std as s;` in the crate root makes `s::thread` std's in every module.
    let dir = fixture("std-alias", "std-alias");
    let run = cargo_pulse(&dir, &args(&["test", "--message-format", "json"]));
    assert_eq!(run.code, 101, "the race behind the alias is found");
    assert_eq!(
        run.event_of("worker::tests::racy_counts_both").as_deref(),
        Some("failed")
    );
    let out = work_dir().join("std-alias-out");
    let _ = std::fs::remove_dir_all(&out);
    let run = cargo_pulse(
        &dir,
        &[
            "instrument",
            "--crate",
            "std-alias",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 0);
    for file in ["src/lib.rs", "src/worker.rs"] {
        let tested = std::fs::read_to_string(dir.join("target/pulse/mirror").join(file)).unwrap();
        let written = std::fs::read_to_string(out.join(file)).unwrap();
        assert_eq!(tested, written, "{file}: the two commands agree");
    }
    let worker = std::fs::read_to_string(out.join("src/worker.rs")).unwrap();
    assert!(
        worker.contains("::pulse::std::thread::spawn(move || {"),
        "{worker}"
    );
    assert!(worker.contains("use ::pulse::std::sync::atomic::{AtomicUsize, Ordering};"));
}
