//! Isolation while other threads of the process hold std's locks (issue 15): isolated
//! executions used to run in processes forked from the multi-threaded test process, and a
//! lock another thread held at the fork (std's backtrace lock, taken by a concurrent
//! `Backtrace::force_capture`) stayed locked forever in the child, which hung.
//!
//! The scenarios run in a child test process with several test threads and backtraces on,
//! under a deadline: on the old code this test fails by timing out, it never hangs.

use std::backtrace::Backtrace;
mod common;

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pulse_runtime::{Builder, FailureKind, Isolation};

/// Far above what the scenarios take (seconds), far below CI's limit.
const DEADLINE: Duration = Duration::from_secs(180);
const ROUNDS: u64 = 8;

#[test]
fn isolation_from_concurrent_tests_capturing_backtraces_never_hangs() {
    let run = common::run_with_deadline(
        Command::new(std::env::current_exe().unwrap())
            .args(["scenario_", "--ignored", "--test-threads=4"])
            .env("RUST_BACKTRACE", "1"),
        DEADLINE,
    );
    assert!(
        run.status.success(),
        "{}\n{}\n{}",
        run.status,
        run.stdout,
        run.stderr
    );
    assert!(
        run.stdout.contains("4 passed"),
        "every scenario ran:\n{}",
        run.stdout
    );
}

/// Isolated runs of a failing test (its traced replay captures a backtrace in the child)
/// while a thread of this process captures backtraces without pause.
fn scenario() {
    let stop = Arc::new(AtomicBool::new(false));
    let hammer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                drop(Backtrace::force_capture());
            }
        })
    };
    for round in 0..ROUNDS {
        let report = Builder::new()
            .schedules(2)
            .seed(round)
            .isolation(Isolation::Always)
            .run(|| {
                let t = pulse_shim_std::thread::spawn(|| 1);
                assert_eq!(t.join().unwrap(), 2, "boom");
            });
        let f = report
            .failure
            .expect("the assertion fails on every schedule");
        assert_eq!(f.kind, FailureKind::Panic);
        assert!(f.message.contains("boom"), "{f}");
        assert!(f.reproduced, "{f}");
        assert!(f.backtrace.is_some(), "the child captured a backtrace: {f}");
    }
    stop.store(true, Ordering::Relaxed);
    hammer.join().unwrap();
}

#[test]
#[ignore = "run by isolation_from_concurrent_tests_capturing_backtraces_never_hangs"]
fn scenario_a() {
    scenario()
}

#[test]
#[ignore = "run by isolation_from_concurrent_tests_capturing_backtraces_never_hangs"]
fn scenario_b() {
    scenario()
}

#[test]
#[ignore = "run by isolation_from_concurrent_tests_capturing_backtraces_never_hangs"]
fn scenario_c() {
    scenario()
}

#[test]
#[ignore = "run by isolation_from_concurrent_tests_capturing_backtraces_never_hangs"]
fn scenario_d() {
    scenario()
}
