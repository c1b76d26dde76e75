//! The watchdog watches executions only: pulse's own work between them (a failure's report
//! for a 100-million-step execution takes seconds, and so may a hook the caller gave it) is
//! never taken for a thread blocked outside pulse, while a test thread that blocks outside
//! pulse inside an execution still is, unless no other thread could run meanwhile.

mod common;

use std::process::Command;
use std::time::Duration;

use pulse_runtime::{Builder, FailureKind, Isolation};
use pulse_shim_std::sync::atomic::{AtomicBool, Ordering};
use pulse_shim_std::sync::Arc;
use pulse_shim_std::thread;

const CHILD: &str = "SHIM_STD_TEST_WATCHDOG_SCOPE_CHILD";
const BLOCKING_TIMEOUT: Duration = Duration::from_millis(200);

#[test]
fn slow_work_between_executions_is_not_a_stall() {
    if std::env::var_os(CHILD).is_some() {
        let report = search()
            // Outside every execution: as long as a huge failure's report.
            .on_found(|_| std::thread::sleep(5 * BLOCKING_TIMEOUT))
            .run(fails);
        let f = report.failure.expect("the failure is found");
        assert_eq!(f.kind, FailureKind::Panic, "{f}");
        println!("reported: {}", f.message);
        return;
    }
    let child = in_child("slow_work_between_executions_is_not_a_stall");
    assert!(child.status.success(), "{}", child.stderr);
    assert!(child.stdout.contains("reported: "), "{}", child.stdout);
}

#[test]
fn a_block_inside_an_execution_is_still_a_stall() {
    if std::env::var_os(CHILD).is_some() {
        // While the spawned thread could run (some schedule runs main on first).
        search().run(|| {
            let t = thread::spawn(|| ());
            std::thread::sleep(5 * BLOCKING_TIMEOUT);
            t.join().unwrap();
        });
        unreachable!("the watchdog ends the process");
    }
    let child = in_child("a_block_inside_an_execution_is_still_a_stall");
    assert!(!child.status.success(), "{}", child.stdout);
    assert!(
        child.stderr.contains("without reaching a pulse operation"),
        "{}",
        child.stderr
    );
}

/// A wait outside pulse while no other thread could run (trybuild's `cargo build`, a child
/// process) is the program's own, as under `cargo test`: waited for, said once, not a stall.
#[test]
fn a_lone_thread_s_wait_outside_pulse_is_waited_for() {
    if std::env::var_os(CHILD).is_some() {
        let report = search().schedules(2).run(|| {
            let t = thread::spawn(|| ());
            t.join().unwrap();
            std::thread::sleep(5 * BLOCKING_TIMEOUT);
        });
        assert!(report.failure.is_none(), "{:?}", report.failure);
        println!("ran: {}", report.executions);
        return;
    }
    let child = in_child("a_lone_thread_s_wait_outside_pulse_is_waited_for");
    assert!(child.status.success(), "{}", child.stderr);
    assert!(child.stdout.contains("ran: 2"), "{}", child.stdout);
    assert!(
        child.stderr.contains("no other thread could run meanwhile"),
        "{}",
        child.stderr
    );
}

/// A wait for a child process while the other threads only sleep on pulse's clock
/// (trybuild's `cargo build`, its lock file's keep-alive thread asleep) is the program's own
/// too; with another thread runnable it is still a stall, said to be a child's.
#[test]
fn a_child_process_is_waited_for_while_the_others_sleep() {
    if std::env::var_os(CHILD).is_some() {
        let report = search().schedules(2).run(|| {
            let done = Arc::new(AtomicBool::new(false));
            let keep_alive = thread::spawn({
                let done = done.clone();
                move || {
                    while !done.load(Ordering::SeqCst) {
                        thread::sleep(Duration::from_millis(100));
                    }
                }
            });
            // Whichever ran first, the keep-alive thread sleeps when this one wakes.
            thread::sleep(Duration::from_millis(10));
            let child = Command::new("sleep").arg("0.6").status().unwrap();
            assert!(child.success());
            done.store(true, Ordering::SeqCst);
            keep_alive.join().unwrap();
        });
        assert!(report.failure.is_none(), "{:?}", report.failure);
        println!("ran: {}", report.executions);
        return;
    }
    let child = in_child("a_child_process_is_waited_for_while_the_others_sleep");
    assert!(child.status.success(), "{}", child.stderr);
    assert!(child.stdout.contains("ran: 2"), "{}", child.stdout);
    assert!(
        child.stderr.contains("only sleep on pulse's clock"),
        "{}",
        child.stderr
    );
}

#[test]
fn a_child_process_is_a_stall_while_another_thread_could_run() {
    if std::env::var_os(CHILD).is_some() {
        // Some schedule runs main on while the spawned thread is runnable.
        search().run(|| {
            let t = thread::spawn(|| ());
            Command::new("sleep").arg("0.6").status().unwrap();
            t.join().unwrap();
        });
        unreachable!("the watchdog ends the process");
    }
    let child = in_child("a_child_process_is_a_stall_while_another_thread_could_run");
    assert!(!child.status.success(), "{}", child.stdout);
    assert!(
        child.stderr.contains("It waits for a child process"),
        "{}",
        child.stderr
    );
}

fn search() -> Builder {
    Builder::new()
        .schedules(50)
        .seed(1)
        .isolation(Isolation::Off)
        .blocking_timeout(BLOCKING_TIMEOUT)
}

fn in_child(test: &str) -> common::Finished {
    common::run_with_deadline(
        Command::new(std::env::current_exe().unwrap())
            .args([test, "--exact", "--nocapture"])
            .env(CHILD, "1"),
        Duration::from_secs(60),
    )
}

/// Fails in every schedule, after a step of two threads.
fn fails() {
    let t = thread::spawn(|| ());
    t.join().unwrap();
    panic!("found");
}
