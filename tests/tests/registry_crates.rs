//! Issue 13's acceptance test: `cargo pulse test` on published crates, exactly as crates.io
//! serves them (pinned versions, fetched by the test itself, nothing of theirs committed).
//!
//! For each crate the suite must run to a verdict (exit 0 or 101: never a tool error, a build
//! error or a hang; every run has a deadline) and every test that did not pass must be listed
//! below as an expected finding with its reason, so a new false alarm fails this test. The
//! README's "Published crates" table is measured with the same settings.
//!
//! - Network: the crates are fetched with `cargo fetch` (short HTTP timeout, no retries, a
//!   deadline) into cargo's cache (`$CARGO_HOME`, default `~/.cargo`) and copied from its
//!   `registry/src`. The fetch resolves afresh every run, so it is also the reachability check:
//!   if crates.io cannot be reached, each test prints `skipped: crates.io not reachable: ...`
//!   and passes within a second (even with every crate cached: the suite's `cargo install` of
//!   cargo-pulse would retry for many minutes).
//! - Pinning: the crates themselves are pinned (`=x.y.z`); their dev-dependencies are resolved
//!   by cargo to the newest compatible versions when the lock file is first made (kept in the
//!   scratch dir afterwards).
//! - Serial: one `#[test]` per crate (so `cargo test --test registry_crates bus` runs one),
//!   but they take turns through one lock: every crate's instrumented build shares the suite's
//!   mirror target dir, which cargo locks anyway, and two builds side by side on a 2-core
//!   machine are slower than one after the other (and would blur the per-crate deadlines).
//! - Settings: `--seed 1 --schedules 100 --message-format json` (fewer schedules where a
//!   crate's stress tests run long, `Crate::schedules`), plus `--memory MODEL` when
//!   `PULSE_REGISTRY_MEMORY=MODEL` is set (`relaxed`: the no-false-alarm check of a memory
//!   model, ARCHITECTURE decision 27).
//! - Weak-memory findings: a crate's `relaxed` list names tests with a real ordering bug,
//!   which must fail whenever the run is `--memory relaxed`, may fail under the default
//!   memory portfolio (one execution in four relaxed), and must pass (or be listed in
//!   `expected`) under `--memory sc`. `bus_relaxed` runs bus under `--memory relaxed` whatever the
//!   environment says, so `cargo test --test registry_crates bus` checks both sides.

#[allow(dead_code)] // (helpers e2e.rs uses and this file does not)
mod support;

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use support::{installed_bin_dir, scratch, work_dir};

/// A published crate and what pulse is expected to report on its suite.
struct Crate {
    name: &'static str,
    version: &'static str,
    /// Number of tests pulse runs (unit and integration tests; doctests are not run under
    /// pulse). A change means the crate's suite is not the one measured here.
    tests: usize,
    /// Schedules per test (`--schedules`): 100, fewer where stress tests that run to their
    /// end (ARCHITECTURE decision 39) would take the run past its deadline.
    schedules: &'static str,
    /// Tests (`"<binary> <test path>"`, as in pulse's summary) expected not to pass, each with
    /// why. Any other test that does not pass fails this test.
    expected: &'static [(&'static str, &'static str)],
    /// Tests with a real weak-memory bug (each with why and how it was confirmed): under
    /// `--memory relaxed` each must fail (it is then expected, as `expected` is), a pass fails
    /// this test; under the default portfolio they may fail; under `sc` they must pass or be
    /// in `expected`.
    relaxed: &'static [(&'static str, &'static str)],
    /// `cargo update -p <dep> --precise <version>` applied to the copy's lock file when it is
    /// first made (a dependency version pulse cannot build yet; each with a comment).
    precise: &'static [(&'static str, &'static str)],
    /// Deadline of the `cargo pulse test` run, build included (a cold build of pulse and the
    /// crate's dependencies takes most of it on the first run).
    deadline: Duration,
}

const SETTINGS: &[&str] = &[
    "test",
    "--seed",
    "1",
    "--message-format",
    "json",
    "--color",
    "never",
];

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

fn cargo_home() -> PathBuf {
    match std::env::var_os("CARGO_HOME") {
        Some(h) if !h.is_empty() => PathBuf::from(h),
        _ => PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cargo"),
    }
}

struct Output {
    /// `None`: killed at the deadline.
    code: Option<i32>,
    stdout: String,
    stderr: String,
    secs: f64,
}

/// Runs `cmd` in its own process group with stdout/stderr to files; at `deadline` the whole
/// group (cargo, rustc, the test processes) is killed.
fn run_with_deadline(mut cmd: Command, deadline: Duration, log: &Path) -> Output {
    let out_path = log.with_extension("out");
    let err_path = log.with_extension("err");
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .process_group(0);
    let t = Instant::now();
    let mut child = cmd.spawn().expect("spawning a command");
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status.code().unwrap_or(-1));
        }
        if t.elapsed() > deadline {
            let _ = Command::new("kill")
                .args(["-KILL", &format!("-{}", child.id())])
                .status();
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    Output {
        code,
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
        secs: t.elapsed().as_secs_f64(),
    }
}

/// Network settings for every cargo command that may reach crates.io: fail fast, never hang.
fn offline_friendly(cmd: &mut Command) {
    cmd.env("CARGO_HTTP_TIMEOUT", "20")
        .env("CARGO_NET_RETRY", "0")
        .env("CARGO_TERM_COLOR", "never")
        .env_remove("CARGO_TARGET_DIR");
}

/// Fetches every crate of `CRATES` into cargo's cache once per test process (a scratch
/// manifest depending on each `=version`, then `cargo fetch`); `Err` says why it could not.
fn fetched() -> &'static Result<PathBuf, String> {
    static FETCHED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FETCHED.get_or_init(|| {
        let dir = scratch().join("registry-fetch");
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/lib.rs"), "").unwrap();
        let mut manifest = String::from(
            "[package]\nname = \"pulse-registry-fetch\"\nversion = \"0.0.0\"\n\
             edition = \"2021\"\npublish = false\n\n[workspace]\n\n[dependencies]\n",
        );
        for c in CRATES {
            manifest += &format!("{} = \"={}\"\n", c.name, c.version);
        }
        std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
        // No lock file: resolving contacts crates.io even when every crate is cached, so this
        // is a real reachability check (the suite's own `cargo install` of cargo-pulse would
        // otherwise retry for many minutes with the registry unreachable).
        let _ = std::fs::remove_file(dir.join("Cargo.lock"));
        let mut cmd = Command::new(cargo());
        cmd.arg("fetch").current_dir(&dir);
        offline_friendly(&mut cmd);
        // The first run downloads every crate (a few MB); later runs only check the index.
        let out = run_with_deadline(cmd, Duration::from_secs(120), &dir.join("fetch.log"));
        match out.code {
            Some(0) => {}
            Some(c) => {
                return Err(format!(
                    "cargo fetch exited {c}: {}",
                    last_lines(&out.stderr)
                ))
            }
            None => return Err(format!("cargo fetch did not finish in {:.0}s", out.secs)),
        }
        // The registry's source dir (`index.crates.io-<hash>`), found by the first crate.
        let src = cargo_home().join("registry/src");
        let first = format!("{}-{}", CRATES[0].name, CRATES[0].version);
        std::fs::read_dir(&src)
            .map_err(|e| format!("{}: {e}", src.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.join(&first).join("Cargo.toml").exists())
            .ok_or_else(|| {
                format!(
                    "{first} not found under {} after cargo fetch",
                    src.display()
                )
            })
    })
}

fn last_lines(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

/// `cargo <args>` in `dir` with the fail-fast network settings and a 2-minute deadline.
fn cargo_in(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(cargo());
    cmd.args(args).current_dir(dir);
    offline_friendly(&mut cmd);
    run_with_deadline(cmd, Duration::from_secs(120), &dir.join("cargo.log"))
}

/// The crates take turns (see the module doc).
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `name`'s suite under `--memory MODEL` when `memory` is `Some(MODEL)`, else under
/// `PULSE_REGISTRY_MEMORY`'s model if that is set, else pulse's default (`portfolio`).
fn check(name: &str, memory: Option<&str>) {
    let c = CRATES.iter().find(|c| c.name == name).unwrap();
    let _turn = serial();
    let registry = match fetched() {
        Ok(r) => r,
        Err(why) => {
            eprintln!("skipped: crates.io not reachable: {why}");
            return;
        }
    };
    let full = format!("{}-{}", c.name, c.version);
    let dir = support::copy_fixture(&registry.join(&full), &format!("registry-{full}"));
    // The copy's own dev-dependencies, with the same fail-fast network settings; the lock
    // file is kept in the scratch dir so later runs resolve the same versions.
    // (Named by the `precise` pins too, so a changed pin resolves afresh.)
    let pins: String = c.precise.iter().map(|(d, v)| format!("-{d}={v}")).collect();
    let lock = scratch()
        .join("registry-locks")
        .join(format!("{full}{pins}.lock"));
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    if lock.exists() {
        std::fs::copy(&lock, dir.join("Cargo.lock")).unwrap();
    }
    let mut out = cargo_in(&dir, &["fetch"]);
    for (dep, version) in c.precise.iter().filter(|_| !lock.exists()) {
        if out.code == Some(0) {
            out = cargo_in(&dir, &["update", "-p", dep, "--precise", version]);
        }
    }
    if out.code != Some(0) {
        eprintln!(
            "skipped: crates.io not reachable: cargo fetch/update in {full}: {}",
            match out.code {
                Some(c) => format!("exit {c}: {}", last_lines(&out.stderr)),
                None => "timed out".into(),
            }
        );
        return;
    }
    std::fs::copy(dir.join("Cargo.lock"), &lock).unwrap();

    let bin = installed_bin_dir();
    let mut cmd = Command::new(cargo());
    cmd.arg("pulse")
        .args(SETTINGS)
        .args(["--schedules", c.schedules])
        .current_dir(&dir);
    let memory = memory
        .map(str::to_string)
        .or_else(|| std::env::var("PULSE_REGISTRY_MEMORY").ok());
    if let Some(model) = &memory {
        cmd.args(["--memory", model]);
    }
    let relaxed = memory.as_deref() == Some("relaxed");
    // The default memory portfolio runs one execution in four relaxed: a weak-memory finding
    // may show (it is then expected) but need not within 100 schedules.
    let may_show_relaxed = memory.as_deref() != Some("sc");
    configure(&mut cmd, bin);
    let suffix = memory
        .as_deref()
        .map(|m| format!("-{m}"))
        .unwrap_or_default();
    let log = work_dir().join(format!("registry-{full}{suffix}.pulse"));
    let run = run_with_deadline(cmd, c.deadline, &log);
    eprintln!(
        "$ cargo pulse {} (in {}) -> {} in {:.1}s\n{}",
        SETTINGS.join(" ")
            + &format!(" --schedules {}", c.schedules)
            + &memory.map(|m| format!(" --memory {m}")).unwrap_or_default(),
        dir.display(),
        run.code
            .map_or("killed at the deadline".into(), |c| format!("exit {c}")),
        run.secs,
        run.stderr
    );
    let code = run
        .code
        .unwrap_or_else(|| panic!("{full}: no verdict within {:?}", c.deadline));
    assert!(
        code == 0 || code == 101,
        "{full}: exit {code}, not a verdict (0 or 101)"
    );
    // Every instrumented copy is in the graph cargo builds (the mirror's lock keeps the
    // user's resolution, `deps::lock_for_mirror`).
    assert!(
        !run.stderr.contains("was not used in the crate graph"),
        "{full}: an instrumented copy was left out of the graph"
    );
    let json: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        !json
            .iter()
            .any(|v| v["type"] == "build" || v["type"] == "error"),
        "{full}: build or tool error"
    );
    let finished = json
        .iter()
        .find(|v| v["type"] == "run" && v["event"] == "finished")
        .unwrap_or_else(|| panic!("{full}: no `finished` record"));
    assert_eq!(finished["tool_errors"], 0, "{full}: tool errors");

    let mut results = BTreeMap::new();
    for v in json.iter().filter(|v| v["type"] == "test") {
        let key = format!(
            "{} {}",
            v["binary_display"].as_str().unwrap_or(""),
            v["name"].as_str().unwrap_or("")
        );
        let what = format!(
            "{}{}",
            v["status"].as_str().unwrap_or(""),
            v["reason"]
                .as_str()
                .map(|r| format!(": {}", r.lines().next().unwrap_or("")))
                .unwrap_or_default()
        );
        results.insert(key, (v["event"].as_str().unwrap_or("").to_string(), what));
    }
    let mut unexpected = Vec::new();
    let mut missed = Vec::new();
    let relaxed_findings = c.relaxed.iter().filter(|_| may_show_relaxed);
    let expected: Vec<_> = c.expected.iter().chain(relaxed_findings).collect();
    for (test, (event, what)) in &results {
        if event == "ok" || event == "ignored" {
            if relaxed && c.relaxed.iter().any(|(t, _)| t == test) {
                missed.push(test.clone());
            } else if expected.iter().any(|(t, _)| t == test) {
                eprintln!("note: {full}: expected finding `{test}` passed this time");
            }
            continue;
        }
        assert_ne!(event, "tool_error", "{full}: {test}: {what}");
        match expected.iter().find(|(t, _)| t == test) {
            Some((_, why)) => eprintln!("expected: {full}: {test}: {what} ({why})"),
            None => unexpected.push(format!("{test}: {what}")),
        }
    }
    assert!(
        unexpected.is_empty(),
        "{full}: tests that did not pass and are not expected findings:\n  {}",
        unexpected.join("\n  ")
    );
    assert!(
        missed.is_empty(),
        "{full}: weak-memory findings not found under --memory relaxed (seed 1, 100 \
         schedules):\n  {}",
        missed.join("\n  ")
    );
    assert_eq!(
        results.len(),
        c.tests,
        "{full}: number of tests run: {:?}",
        results.keys().collect::<Vec<_>>()
    );
    // (The JSON output holds every failure's full schedule: tens of MB for the stress tests.)
    let _ = std::fs::remove_file(log.with_extension("out"));
    eprintln!(
        "{full}: {} tests, {} passed, verdict exit {code}, {:.1}s",
        results.len(),
        results.values().filter(|(e, _)| e == "ok").count(),
        run.secs
    );
}

/// The suite's environment for `cargo pulse` (as support's `cargo_pulse`, which has no
/// deadline): the installed binary first on PATH, the shared mirror target and support dirs,
/// nothing of the outer `cargo test`'s own build leaking in.
fn configure(cmd: &mut Command, bin: &Path) {
    cmd.env(
        "PATH",
        format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        ),
    )
    .env("CARGO_PULSE_TARGET_DIR", scratch().join("mirror-target"))
    .env("CARGO_PULSE_SUPPORT_DIR", scratch().join("support"));
    support::lean_debug_info(cmd);
    offline_friendly(cmd);
    for k in [
        "RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_MAKEFLAGS",
        "RUST_BACKTRACE",
    ] {
        cmd.env_remove(k);
    }
    for (k, _) in std::env::vars() {
        if k.starts_with("CARGO_PKG_")
            || k == "CARGO_MANIFEST_DIR"
            || k == "CARGO_PRIMARY_PACKAGE"
            || k.starts_with("PULSE_")
        {
            cmd.env_remove(k);
        }
    }
}

/// crossbeam-queue's multi-threaded tests are stress tests (`COUNT` = 100,000 and more items
/// through one queue per execution, with Backoff spinning): one execution passes the
/// 1,000,000-step bound.
const CB_STRESS: &str = "a stress test (100,000+ items per execution) that may still be \
     progressing at the step bound's cap under a schedule whose threads spin (mpmc under POS, \
     seed 8); `drops` draws its sizes from an OS-seeded `rand::thread_rng`";

/// bus 2.4.1's close protocol under `--memory relaxed`, confirmed with loom
/// (`bench/tests/bus_recv_disconnected.rs`).
const BUS_CLOSED: &str = "a real ordering bug: recv loads tail (Acquire), then closed \
     (Relaxed), then tail again before it returns Disconnected (src/lib.rs:678-696); Bus::drop \
     stores closed Relaxed, so a reader that reads closed == true is not synchronised with the \
     writer's last tail store and may read the old tail twice: Disconnected with an item \
     queued (the AcqRel fetch_add(0) on tail in drop does not help a reader that never reads \
     its value; closed stored Release / loaded Acquire fixes it)";

const MIN: Duration = Duration::from_secs(60);

const CRATES: &[Crate] = &[
    // CRATES_BEGIN
    // Edition 2015; a counting semaphore on Mutex + Condvar.
    Crate {
        name: "std-semaphore",
        version: "0.1.0",
        tests: 6,
        schedules: "100",
        expected: &[],
        relaxed: &[],
        precise: &[],
        deadline: MIN.saturating_mul(5),
    },
    // Edition 2021; per-object thread-local storage (its thread-id registry is a static Mutex:
    // pulse warns that it is shared between executions, and every test passes).
    Crate {
        name: "thread_local",
        version: "1.1.10",
        tests: 9,
        schedules: "100",
        expected: &[],
        relaxed: &[],
        precise: &[],
        deadline: MIN.saturating_mul(5),
    },
    // Edition 2015; a thread pool on mpsc + Mutex + Condvar + atomics.
    Crate {
        name: "threadpool",
        version: "1.8.1",
        tests: 21,
        schedules: "100",
        expected: &[
            (
                "threadpool test::test_recovery_from_subtask_panic",
                "a real race in the library: a panicking worker's Sentinel::drop decrements \
                 active_count before it increments panic_count, so join() can return while \
                 panic_count() is still 3 of 4 (src/lib.rs:123-125)",
            ),
            (
                "threadpool test::test_multi_join",
                "a real race in the test: the 8 pool0 jobs can all finish before main's \
                 `rx.try_recv() == Err(Empty)`, so a pool1 job's join() returns and sends \
                 (found by the baseline trial; not by every seed)",
            ),
            (
                "threadpool test::test_massive_task_creation",
                "step limit: 4.2 million tasks are far beyond the 1,000,000-step bound of one \
                 execution, and still progressing at its cap (a stress test, not a race)",
            ),
            (
                "threadpool test::test_shrink",
                "a real race in the test: after b1 the two workers the shrink retires may not \
                 have run their active_count.fetch_sub yet when main, past b2, asserts \
                 active_count() == TEST_TASKS (src/lib.rs:986; found by the portfolio's PCT/POS \
                 arms, not by random in 100 schedules)",
            ),
        ],
        relaxed: &[],
        precise: &[],
        deadline: MIN.saturating_mul(5),
    },
    // Edition 2015; a scoped thread pool.
    Crate {
        name: "scoped_threadpool",
        version: "0.1.9",
        tests: 9,
        schedules: "100",
        expected: &[
            (
                "scoped_threadpool::test/threads-living-too-long-demo demo_heap_allocated",
                "step limit: the demo does about 20 million atomic operations in one execution, \
                 past the step bound's cap",
            ),
            (
                "scoped_threadpool::test/threads-living-too-long-demo demo_stack_allocated",
                "step limit: the demo does about 20 million atomic operations in one execution, \
                 past the step bound's cap",
            ),
        ],
        relaxed: &[],
        precise: &[],
        deadline: MIN.saturating_mul(5),
    },
    // Edition 2018; a scheduled thread pool on parking_lot 0.13 (parking_lot_core 0.10; Mutex +
    // Condvar::wait_until with the crate's own deadline).
    Crate {
        name: "scheduled-thread-pool",
        version: "0.2.8",
        tests: 13,
        schedules: "100",
        expected: &[],
        relaxed: &[],
        precise: &[],
        deadline: MIN.saturating_mul(5),
    },
    // Edition 2018; a lock-free broadcast channel built on crossbeam-channel (its unparking
    // thread), parking_lot_core and crossbeam-utils' Backoff, all instrumented automatically.
    Crate {
        name: "bus",
        version: "2.4.1",
        tests: 16,
        schedules: "100",
        expected: &[(
            "bus::test/lib aggressive_iteration",
            "step limit: 1,000 rounds of 1,000 broadcasts each in one execution (a stress \
             test, not a race; under --memory relaxed a round can also lose its last item to the \
             ordering bug of it_iterates)",
        )],
        relaxed: &[
            ("bus::test/lib it_iterates", BUS_CLOSED),
            ("bus::test/lib it_can_count_to_10000", BUS_CLOSED),
        ],
        precise: &[],
        deadline: MIN.saturating_mul(6),
    },
    // Edition 2015; spin locks (Mutex, RwLock, Once); src/once.rs names a method `try`.
    Crate {
        name: "spin",
        version: "0.5.2",
        tests: 28,
        schedules: "100",
        expected: &[(
            "spin once::tests::try_no_wait",
            "a thread spinning in `loop {}` (no synchronising operation) cannot be preempted: \
             the test spawns `call_once(|| loop {})` and returns, std abandons the thread at \
             exit, pulse's watchdog stops it after 10 s (README, known limits)",
        )],
        relaxed: &[],
        precise: &[],
        deadline: MIN.saturating_mul(5),
    },
    // Edition 2018; a connection pool on parking_lot 0.12 and scheduled-thread-pool.
    Crate {
        name: "r2d2",
        version: "0.8.10",
        tests: 18,
        schedules: "100",
        expected: &[
            (
                "r2d2 test::events",
                "a real race in the test's event order: drop_conns asks a worker for a new \
                 connection while locked, then unlocks and records Release; the worker's \
                 Acquire can come first (src/lib.rs:193-201), so events[4] is not Release \
                 (plain cargo test hits it too under load)",
            ),
            (
                "r2d2 test::test_idle_timeout",
                "timing assumption: sleep(2 s) as synchronisation with a 1 s reaper over 1 s \
                 idle timeouts; with no timer latency (virtual clock) connections made just \
                 after t=0 are not yet idle 1 s at the reaper's first pass, and its second \
                 pass races main's wake-up",
            ),
            (
                "r2d2 test::get_timeout",
                "timing assumption with a 50 ms margin: a thread returns the connection after \
                 sleep(50 ms) and main's get_timeout(100 ms) must get it; found in the default \
                 time portfolio's loaded-machine half (quite-slow-random=50ms), where the \
                 returning thread can be 50 ms late (README, Time)",
            ),
            (
                "r2d2 test::idle_timeout_partial_use",
                "timing assumption: exactly 4 connections reaped by a 1 s reaper while main \
                 sleeps 8 x 250 ms; a 50 ms late step moves a reaper pass across a get \
                 (found in the loaded-machine half of the default time portfolio)",
            ),
            (
                "r2d2 test::test_max_lifetime",
                "timing assumption, as test_idle_timeout, with max_lifetime (the test counts \
                 drops in a static: its failing schedule is replayed in a fresh process)",
            ),
        ],
        // (Its lock resolves scheduled-thread-pool 0.2.8, on parking_lot 0.13, beside its own
        // parking_lot 0.12: both parking_lot_core versions are pulse's.)
        relaxed: &[],
        precise: &[],
        deadline: MIN.saturating_mul(5),
    },
    // Edition 2021; lock-free ArrayQueue/SegQueue, whose tests run on crossbeam-utils' scoped
    // threads (instrumented automatically, so the scoped threads are scheduled). Its stress
    // tests (100,000+ items per execution) run past the step bound while they progress
    // (ARCHITECTURE decision 39), 5-15 s per schedule in a debug build: 5 schedules keep the
    // suite near 3 minutes (at 10 schedules, seed 1: 22 of 23 pass in 314 s; `mpmc` hit the
    // cap at schedule 8).
    Crate {
        name: "crossbeam-queue",
        version: "0.3.14",
        tests: 23,
        schedules: "5",
        expected: &[
            ("crossbeam-queue::test/array_queue mpmc", CB_STRESS),
            ("crossbeam-queue::test/array_queue drops", CB_STRESS),
            ("crossbeam-queue::test/seg_queue drops", CB_STRESS),
        ],
        relaxed: &[],
        precise: &[],
        deadline: MIN.saturating_mul(10),
    },
    // Edition 2021; lazy and once cells (its sync::OnceCell on std's Once/atomics + park).
    Crate {
        name: "once_cell",
        version: "1.21.4",
        tests: 75,
        schedules: "100",
        expected: &[(
            "once_cell::test/it sync_once_cell::get_or_init_stress",
            "a stress test: 1,000 threads meeting at 1,000-thread barriers; under POS each \
             arrival re-draws every waiting racer's priority, and one execution can outlast \
             the 60 s no-progress backstop or the step bound",
        )],
        relaxed: &[],
        precise: &[],
        deadline: MIN.saturating_mul(5),
    },
    // Edition 2021; a notification primitive (its tests are single-threaded). Its
    // dev-dependency try-lock has `#![deny(warnings)]` and is instrumented: it builds only
    // because the mirror's cargo caps the lints of instrumented crates as cargo caps every
    // registry crate's (cargo-pulse/src/rustc_wrapper.rs).
    Crate {
        name: "event-listener",
        version: "5.4.2",
        tests: 11,
        schedules: "100",
        expected: &[],
        relaxed: &[],
        precise: &[],
        deadline: MIN.saturating_mul(5),
    },
    // CRATES_END
];

#[test]
fn std_semaphore() {
    check("std-semaphore", None);
}

#[test]
fn thread_local() {
    check("thread_local", None);
}

#[test]
fn threadpool() {
    check("threadpool", None);
}

#[test]
fn scoped_threadpool() {
    check("scoped_threadpool", None);
}

#[test]
fn scheduled_thread_pool() {
    check("scheduled-thread-pool", None);
}

#[test]
fn bus() {
    check("bus", None);
}

/// bus under `--memory relaxed`: `it_iterates` and `it_can_count_to_10000` must fail (the
/// ordering bug in its close protocol), every other test pass or be an expected finding.
#[test]
fn bus_relaxed() {
    check("bus", Some("relaxed"));
}

#[test]
fn spin() {
    check("spin", None);
}

#[test]
fn r2d2() {
    check("r2d2", None);
}

#[test]
fn crossbeam_queue() {
    check("crossbeam-queue", None);
}

#[test]
fn once_cell() {
    check("once_cell", None);
}

#[test]
fn event_listener() {
    check("event-listener", None);
}

/// RUSTSEC-2021-0093, a known bug found through a published crate's public API: in
/// crossbeam-deque 0.8.0 a LIFO batch steal reads a task from a buffer the worker has since
/// shrunk, so one task is taken twice and another lost. The fixture's test, written against
/// plain std (`tests/fixtures/rustsec-2021-0093`), must fail that way under the default
/// strategy (seed 100000 finds it at schedule 57), and pass against 0.8.1, which fixed it.
#[test]
fn crossbeam_deque_rustsec_2021_0093_is_found_and_its_fix_passes() {
    known_bug_is_found_and_its_fix_passes(KnownBug {
        fixture: "rustsec-2021-0093",
        dependency: "crossbeam-deque",
        versions: ["0.8.0", "0.8.1"],
        seed: "100000",
        test: "steal_batch_during_shrink",
        found: ("failed", "was taken 2 times"),
    });
}

/// RUSTSEC-2025-0024: in crossbeam-channel 0.5.12 to 0.5.14, dropping the last receiver of
/// an unbounded channel while two senders make its first sends can free the channel's first
/// block twice. The fixture's test (`tests/fixtures/rustsec-2025-0024`) must crash that way
/// under the default strategy (glibc's double-free abort; seed 1 finds it at schedule 28),
/// reported with its schedule, and pass against 0.5.15, which fixed it.
#[test]
fn crossbeam_channel_rustsec_2025_0024_is_found_and_its_fix_passes() {
    known_bug_is_found_and_its_fix_passes(KnownBug {
        fixture: "rustsec-2025-0024",
        dependency: "crossbeam-channel",
        versions: ["0.5.14", "0.5.15"],
        seed: "1",
        test: "drop_receiver_during_first_sends",
        found: ("crashed", "double free"),
    });
}

/// parking_lot 0.12.3: a writer whose `try_write_for` times out while the last reader lets
/// go subtracts a parked bit the reader's unlock already cleared, and the lock's state wraps
/// to "many readers": the lock is never free again (raw_rwlock.rs:1040; fixed in 0.12.4).
/// Plain `cargo test` passed it 200 times of 200.
#[test]
fn parking_lot_0_12_3_timed_out_writer_is_found_and_its_fix_passes() {
    known_bug_is_found_and_its_fix_passes(KnownBug {
        fixture: "parking-lot-0.12.3-rwlock",
        dependency: "parking_lot",
        versions: ["0.12.3", "0.12.4"],
        seed: "1",
        test: "timed_out_writer_leaves_lock_free",
        found: ("failed", "the lock is not free"),
    });
}

/// event-listener 5.3.0: `Event::notify` skips its list's lock when its loads of the list
/// pointer or the notified count read values older than a listener's registration, which
/// C++20's model allows (store buffering: no SeqCst fence on the listener's side); the
/// notification is lost and the listener waits for ever (fixed in 5.3.1, "notifications
/// dropped", #139). Found under the default memory portfolio's relaxed executions.
#[test]
fn event_listener_5_3_0_lost_notification_is_found_and_its_fix_passes() {
    known_bug_is_found_and_its_fix_passes(KnownBug {
        fixture: "event-listener-5.3.0-notify",
        dependency: "event-listener",
        versions: ["5.3.0", "5.3.1"],
        seed: "1",
        test: "notify_first_listener",
        found: ("failed", "deadlock"),
    });
}

/// spin 0.9.2: `Once::call_once`'s compare-exchange wrapper turns a failure into `Ok`, so the
/// thread that loses the race to initialise runs its closure too (once.rs:102-110; fixed in
/// 0.9.3).
#[test]
fn spin_0_9_2_once_running_twice_is_found_and_its_fix_passes() {
    known_bug_is_found_and_its_fix_passes(KnownBug {
        fixture: "spin-0.9.2-once",
        dependency: "spin",
        versions: ["0.9.2", "0.9.3"],
        seed: "1",
        test: "call_once_runs_once",
        found: ("failed", "the closure ran more than once"),
    });
}

/// crossfire 3.1.19: `try_recv` polls the queue, finds it empty, then checks for closed
/// senders; a sender that sends its one message and drops in between makes it return
/// `Disconnected` with the message still queued (shared.rs:43-53; fixed in 3.1.20, issue #70).
#[test]
fn crossfire_3_1_19_lost_last_message_is_found_and_its_fix_passes() {
    known_bug_is_found_and_its_fix_passes(KnownBug {
        fixture: "crossfire-3.1.19-try-recv",
        dependency: "crossfire",
        versions: ["3.1.19", "3.1.20"],
        seed: "1",
        test: "try_recv_does_not_lose_last_message",
        found: ("failed", "Disconnected with a message still queued"),
    });
}

/// kanal 0.1.0-pre1: dropping the last `Sender` only decrements the sender count, so a
/// receiver already parked in `recv` is never woken: a deadlock (lib.rs:92-98; fixed in
/// 0.1.0-pre2, issue #8).
#[test]
fn kanal_0_1_0_pre1_hung_receiver_is_found_and_its_fix_passes() {
    known_bug_is_found_and_its_fix_passes(KnownBug {
        fixture: "kanal-0.1.0-pre1-recv",
        dependency: "kanal",
        versions: ["0.1.0-pre1", "0.1.0-pre2"],
        seed: "1",
        test: "recv_returns_err_when_last_sender_dropped",
        found: ("failed", "deadlock"),
    });
}

/// piper 0.2.4: a reader that finds the pipe empty and then closed reports the end of the
/// stream, losing the bytes a writer wrote before it closed the pipe in between (lib.rs:604-615;
/// fixed in 0.2.5, #31).
#[test]
fn piper_0_2_4_lost_bytes_is_found_and_its_fix_passes() {
    known_bug_is_found_and_its_fix_passes(KnownBug {
        fixture: "piper-0.2.4-close",
        dependency: "piper",
        versions: ["0.2.4", "0.2.5"],
        seed: "100000",
        test: "close_after_write_loses_no_bytes",
        found: ("failed", "lost the bytes written before the close"),
    });
}

/// async-channel 1.8.0: `WeakSender::upgrade` increments the sender count and puts 0 back if
/// it saw 0; a second upgrade in between sees 1 and returns a `Sender` of a channel the last
/// sender's drop is closing (lib.rs:838-856; fixed in 1.9.0, #60).
#[test]
fn async_channel_1_8_0_weak_upgrade_is_found_and_its_fix_passes() {
    known_bug_is_found_and_its_fix_passes(KnownBug {
        fixture: "async-channel-1.8.0-upgrade",
        dependency: "async-channel",
        versions: ["1.8.0", "1.9.0"],
        seed: "100",
        test: "upgrade_racing_last_drop",
        found: ("failed", "upgrade returned a Sender of a closed channel"),
    });
}

/// A published bug, a fixture whose lock file pins the version that has it, and its fix.
struct KnownBug {
    fixture: &'static str,
    dependency: &'static str,
    /// The version with the bug (the lock file's) and the one that fixed it.
    versions: [&'static str; 2],
    seed: &'static str,
    test: &'static str,
    /// The test's event against the buggy version, and words of its report.
    found: (&'static str, &'static str),
}

/// Runs `bug.test` against both versions (300 schedules from `bug.seed`): the bug is found
/// against the first, and the second passes.
fn known_bug_is_found_and_its_fix_passes(bug: KnownBug) {
    let _turn = serial();
    if let Err(why) = fetched() {
        eprintln!("skipped: crates.io not reachable: {why}");
        return;
    }
    for (version, buggy) in [(bug.versions[0], true), (bug.versions[1], false)] {
        let slot = format!("{}-{version}", bug.fixture);
        let dir = support::fixture(bug.fixture, &slot);
        // The lock file pins the buggy version (yanked: only a lock file can name it);
        // `cargo fetch` is the reachability check for the rest.
        let args: &[&str] = match buggy {
            true => &["fetch"],
            false => &["update", "-p", bug.dependency, "--precise", version],
        };
        let out = cargo_in(&dir, args);
        if out.code != Some(0) {
            eprintln!(
                "skipped: crates.io not reachable: cargo {} in {slot}: {}",
                args[0],
                last_lines(&out.stderr)
            );
            return;
        }
        let mut cmd = Command::new(cargo());
        cmd.args(["pulse", "test", "--seed", bug.seed, "--schedules", "300"])
            .args(["--message-format", "json", "--color", "never"])
            .current_dir(&dir);
        configure(&mut cmd, installed_bin_dir());
        let log = work_dir().join(format!("{slot}.pulse"));
        let run = run_with_deadline(cmd, Duration::from_secs(900), &log);
        let event = run
            .stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|v| v["type"] == "test" && v["name"] == bug.test)
            .unwrap_or_else(|| panic!("{slot}: no result for the test\n{}", run.stderr));
        if buggy {
            let (outcome, words) = bug.found;
            assert_eq!(event["event"], outcome, "{slot}: {event}");
            let report = event["report"].as_str().unwrap_or_default();
            assert!(report.contains(words), "{slot}: {report}");
            assert!(
                event["record"]["schedule"]
                    .as_str()
                    .is_some_and(|s| s.len() > 3),
                "{slot}: a schedule that replays it: {event}"
            );
        } else {
            assert_eq!(event["event"], "ok", "{slot}: {event}\n{}", run.stderr);
        }
    }
}
