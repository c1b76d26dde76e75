//! A test that starts OS threads pulse does not schedule is told so, and one that ran only
//! on such threads is not reported as passing. One test in this binary: under libtest,
//! other tests' threads would count as the test's own.

use std::time::Duration;

use pulse_runtime::Builder;
use pulse_shim_std::sync::Mutex;

/// Starts an OS thread that outlives the execution; returns once it runs (and so has its
/// name: a thread names itself when it starts).
fn rogue(name: &str) {
    let (started, wait) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            started.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(500))
        })
        .unwrap();
    wait.recv().unwrap();
}

#[test]
fn os_threads_outside_pulse_are_named_and_a_test_run_only_there_is_not_scheduled() {
    let only_rogue = Builder::new()
        .schedules(5)
        .seed(1)
        .watch_os_threads(true)
        .run(|| rogue("rogue-only"));
    assert!(only_rogue.passed());
    assert!(only_rogue.not_scheduled(), "{only_rogue:?}");
    assert_eq!(
        only_rogue.os_threads,
        ["rogue-only"],
        "named once, however many started"
    );
    assert!(only_rogue.not_scheduled_message().contains("NOT SCHEDULED"));
    assert!(only_rogue
        .warnings
        .iter()
        .any(|w| w.contains("OS threads pulse does not schedule (rogue-only")));

    let mixed = Builder::new()
        .schedules(5)
        .seed(1)
        .watch_os_threads(true)
        .run(|| {
            *Mutex::new(0).lock().unwrap() += 1;
            rogue("rogue-mixed");
        });
    assert!(
        mixed.passed() && !mixed.not_scheduled(),
        "pulse operations ran: {mixed:?}"
    );
    assert!(
        mixed.warnings.iter().any(|w| w.contains("rogue-mixed")),
        "{:?}",
        mixed.warnings
    );

    let plain = Builder::new()
        .schedules(5)
        .seed(1)
        .watch_os_threads(true)
        .run(|| {
            *Mutex::new(0).lock().unwrap() += 1;
        });
    assert!(
        plain.os_threads.is_empty() && plain.warnings.is_empty(),
        "{plain:?}"
    );

    let checked = std::panic::catch_unwind(|| {
        Builder::new()
            .schedules(2)
            .watch_os_threads(true)
            .check(|| rogue("rogue-check"))
    });
    let message = *checked
        .expect_err("check refuses a test that was not scheduled")
        .downcast::<String>()
        .unwrap();
    assert!(
        message.contains("NOT SCHEDULED") && message.contains("rogue-check"),
        "{message}"
    );
}
