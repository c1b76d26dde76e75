//! std::thread under pulse: spawn/join, names, scoped threads, park, sleep, panics.

mod common;

use pulse_runtime::{Builder, Detached, FailureKind};
use pulse_shim_std::sync::{Arc, Mutex};
use pulse_shim_std::thread;
use std::time::Duration;

fn check(f: impl Fn()) {
    Builder::new().schedules(300).seed(4).check(f)
}

#[test]
fn join_returns_the_value_and_panics_as_err() {
    check(|| {
        assert_eq!(thread::spawn(|| 40 + 2).join().unwrap(), 42);
        let err = thread::spawn(|| panic!("boom")).join().unwrap_err();
        assert_eq!(err.downcast_ref::<&str>(), Some(&"boom"));
    });
    assert_eq!(thread::spawn(|| 7).join().unwrap(), 7);
}

#[test]
fn names_ids_and_current() {
    check(|| {
        let h = thread::Builder::new()
            .name("worker".into())
            .spawn(|| {
                (
                    thread::current().name().map(str::to_string),
                    thread::current().id(),
                )
            })
            .unwrap();
        assert_eq!(h.thread().name(), Some("worker"));
        let id = h.thread().id();
        let (name, inner_id) = h.join().unwrap();
        assert_eq!(name.as_deref(), Some("worker"));
        assert_eq!(inner_id, id);
        assert_ne!(id, thread::current().id());
        assert_eq!(
            thread::spawn(|| thread::current().name().map(str::to_string))
                .join()
                .unwrap(),
            None
        );
    });
}

#[test]
fn scoped_threads_borrow_locals() {
    check(|| {
        let mut data = vec![1, 2, 3];
        let total = Mutex::new(0);
        thread::scope(|s| {
            s.spawn(|| *total.lock().unwrap() += data.iter().sum::<i32>());
            s.spawn(|| *total.lock().unwrap() += 10);
        });
        data.push(4);
        assert_eq!(*total.lock().unwrap(), 16);
        assert_eq!(data.len(), 4);
    });
    let mut n = 0;
    thread::scope(|s| {
        s.spawn(|| n += 1);
    });
    assert_eq!(n, 1);
}

#[test]
fn scope_panics_when_an_unjoined_scoped_thread_panicked() {
    check(|| {
        let r = std::panic::catch_unwind(|| {
            thread::scope(|s| {
                s.spawn(|| panic!("inner"));
            })
        });
        assert!(r.is_err());
        // A manually joined panic is the caller's business: no scope panic.
        thread::scope(|s| {
            assert!(s.spawn(|| panic!("joined")).join().is_err());
        });
    });
}

#[test]
fn park_unpark_and_park_timeout() {
    check(|| {
        let flag = Arc::new(Mutex::new(false));
        let f2 = flag.clone();
        let t = thread::spawn(move || {
            while !*f2.lock().unwrap() {
                thread::park();
            }
        });
        *flag.lock().unwrap() = true;
        t.thread().unpark();
        t.join().unwrap();
        // Nobody unparks: park_timeout returns (timeout or spurious), no hang.
        thread::park_timeout(Duration::from_secs(5));
    });
}

#[test]
fn sleep_is_virtual_and_orders_by_time_when_idle() {
    let start = std::time::Instant::now();
    check(|| {
        let t0 = pulse_shim_std::time::Instant::now();
        thread::sleep(Duration::from_secs(10));
        assert!(t0.elapsed() >= Duration::from_secs(10));
    });
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn an_unjoined_threads_panic_is_a_warning_as_under_std_or_a_failure_when_asked() {
    let body = || {
        thread::spawn(|| panic!("nobody joins me"));
    };
    let report = Builder::new().schedules(10).seed(1).run(body);
    assert!(
        report.passed(),
        "std lets this test pass: {}",
        report.failure.unwrap()
    );
    assert!(
        report.warnings.iter().any(|w| w.contains("panicked at")
            && w.contains("tests/thread.rs:")
            && w.contains("nobody joins me")),
        "{:?}",
        report.warnings
    );
    let f = Builder::new()
        .schedules(10)
        .seed(1)
        .detached(Detached::Fail)
        .run(body)
        .failure
        .expect("found");
    assert_eq!(f.kind, FailureKind::Panic);
    assert_eq!(f.message, "nobody joins me");
    assert!(f.location.as_deref().unwrap().contains("tests/thread.rs:"));
}

#[test]
fn a_thread_left_blocked_at_the_end_is_a_warning_or_a_failure_when_asked() {
    let body = || {
        let m = Arc::new(Mutex::new(()));
        let g = m.lock().unwrap();
        let m2 = m.clone();
        thread::spawn(move || drop(m2.lock().unwrap()));
        std::mem::forget(g);
    };
    let report = Builder::new().schedules(10).seed(1).run(body);
    assert!(
        report.passed() && report.warnings.iter().any(|w| w.contains("never joined")),
        "{report:?}"
    );
    let strict = Builder::new()
        .schedules(10)
        .seed(1)
        .detached(Detached::Fail)
        .run(body);
    assert_eq!(
        strict.failure.expect("found").kind,
        FailureKind::LeakedThread
    );
}

/// threadpool's `test_active_count`: workers that never end. std passes the test and kills
/// them at exit; pulse lets them run a while after the test returns, then lets them go.
#[test]
fn a_thread_still_running_when_the_test_returns_is_let_go_after_a_while() {
    let body = || {
        thread::spawn(|| loop {
            thread::sleep(Duration::from_secs(10));
        });
    };
    let started = std::time::Instant::now();
    let report = Builder::new().schedules(100).seed(1).run(body);
    assert!(report.passed(), "{}", report.failure.unwrap());
    assert!(
        report.warnings.iter().any(|w| w.contains("never joined")),
        "{:?}",
        report.warnings
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "a bounded number of steps each: {:?}",
        started.elapsed()
    );
    let strict = Builder::new()
        .schedules(1)
        .max_steps(50_000)
        .detached(Detached::Fail)
        .run(body);
    // It sleeps and wakes forever: a livelock in virtual time, not a runaway loop.
    let f = strict.failure.expect("runs to the step limit");
    assert_eq!(f.kind, FailureKind::Livelock);
    assert!(f.message.contains("of virtual time passed"), "{f}");
}

#[test]
fn spin_loop_without_progress_hits_the_step_limit() {
    let report = Builder::new().schedules(1).max_steps(2_000).run(|| {
        let flag = Arc::new(Mutex::new(false));
        loop {
            if *flag.lock().unwrap() {
                break;
            }
        }
    });
    let f = report.failure.expect("found");
    assert_eq!(f.kind, FailureKind::StepLimit);
    assert!(f.details[0].contains("tests/thread.rs:"), "{f}");
}

fn depth(n: u64) -> u64 {
    // ~1.5 KiB of stack per frame in a debug build, kept alive across the recursive call.
    let pad = std::hint::black_box([n; 64]);
    let below = if n == 0 { 0 } else { 1 + depth(n - 1) };
    std::hint::black_box(&pad);
    below
}

#[test]
fn stacks_are_as_deep_as_std_and_configurable() {
    // What a std thread's default 2 MiB holds, a virtual thread's holds too.
    assert_eq!(std::thread::spawn(|| depth(1_000)).join().unwrap(), 1_000);
    check(|| {
        assert_eq!(thread::spawn(|| depth(1_000)).join().unwrap(), 1_000);
        let big = thread::Builder::new()
            .stack_size(16 << 20)
            .spawn(|| depth(5_000))
            .unwrap();
        assert_eq!(big.join().unwrap(), 5_000);
    });
}

#[test]
fn a_tiny_stack_size_is_rounded_up_as_std_does() {
    // std raises a request below the platform's minimum to it (crossbeam-utils' tests ask
    // for 20 bytes); a virtual thread also needs room for pulse's own frames, a panic's
    // among them.
    assert_eq!(
        std::thread::Builder::new()
            .stack_size(20)
            .spawn(|| depth(5))
            .unwrap()
            .join()
            .unwrap(),
        5
    );
    check(|| {
        let tiny = |f: fn() -> u64| thread::Builder::new().stack_size(20).spawn(f).unwrap();
        assert_eq!(tiny(|| depth(5)).join().unwrap(), 5);
        assert!(tiny(|| panic!("a panic on a tiny stack")).join().is_err());
    });
}

#[test]
fn a_stack_overflow_in_a_virtual_thread_is_reported_like_std() {
    if std::env::var_os("SHIM_STD_TEST_OVERFLOW_CHILD").is_some() {
        Builder::new()
            .schedules(1)
            .check(|| drop(thread::spawn(|| depth(u64::MAX)).join()));
        return;
    }
    // The overflow aborts the process, so it happens in a child: this test, re-run.
    let out = common::run_with_deadline(
        std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "a_stack_overflow_in_a_virtual_thread_is_reported_like_std",
                "--exact",
                "--nocapture",
            ])
            .env("SHIM_STD_TEST_OVERFLOW_CHILD", "1"),
        Duration::from_secs(120),
    );
    assert!(!out.status.success());
    let stderr = out.stderr;
    assert!(
        stderr.contains("pulse: a virtual thread has overflowed its stack"),
        "{stderr}"
    );
}

#[test]
fn available_parallelism_is_fixed_inside() {
    check(|| assert_eq!(thread::available_parallelism().unwrap().get(), 4));
    assert!(thread::available_parallelism().unwrap().get() >= 1);
}

#[test]
fn a_joined_threads_panic_leads_the_report_not_the_unwrap_it_caused() {
    let report = Builder::new().schedules(10).seed(1).run(|| {
        let t = thread::Builder::new()
            .name("indexer".into())
            .spawn(|| {
                let empty: Vec<u32> = Vec::new();
                empty[std::hint::black_box(0)]
            })
            .unwrap();
        t.join().unwrap();
    });
    let f = report
        .failure
        .expect("the panic propagates through join().unwrap()");
    assert_eq!(f.kind, FailureKind::Panic);
    assert_eq!(f.thread, "indexer", "{f}");
    assert!(f.message.contains("index out of bounds"), "{f}");
    assert!(
        f.location
            .as_deref()
            .is_some_and(|l| l.contains("thread.rs")),
        "{f}"
    );
    assert!(
        f.details
            .iter()
            .any(|d| d.contains("which made thread 'main' panic") && d.contains("Any { .. }")),
        "{f}"
    );
}

/// A consumer panics before it sets the flag its producer spins on: the step limit's report
/// says so first (session 24's trial: the spin was all it showed).
#[test]
fn a_panic_nobody_joined_leads_a_step_limit_report() {
    use pulse_shim_std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    let report = Builder::new().schedules(1).max_steps(20_000).run(|| {
        let done = Arc::new(AtomicBool::new(false));
        let d2 = done.clone();
        let spinner = thread::spawn(move || {
            while !d2.load(SeqCst) {
                thread::yield_now();
            }
        });
        let consumer = thread::Builder::new()
            .name("consumer".into())
            .spawn(move || {
                if std::hint::black_box(true) {
                    panic!("the real cause");
                }
                done.store(true, SeqCst);
            })
            .unwrap();
        spinner.join().unwrap();
        consumer.join().unwrap();
    });
    let f = report.failure.expect("a step limit");
    assert_eq!(f.kind, FailureKind::StepLimit, "{f}");
    assert!(
        f.details[0].starts_with("thread 'consumer' panicked at ")
            && f.details[0].contains(": the real cause (no thread joined it"),
        "{f}"
    );
}

/// easy-parallel's `finish` catches the main closure's panic, joins the workers and resumes
/// the last panic it saw: a worker's send that failed because main's unwinding dropped the
/// receiver. The report led with that `SendError` (async-broadcast's `open_channel`).
#[test]
fn a_caught_panic_leads_the_report_of_the_consequence_resumed_after_it() {
    use pulse_shim_std::sync::mpsc;
    use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
    let report = Builder::new().schedules(10).seed(1).run(|| {
        let (tx, rx) = mpsc::sync_channel::<u32>(0);
        thread::scope(|s| {
            let sender = s.spawn(move || (0..3).for_each(|i| tx.send(i).unwrap()));
            let main = catch_unwind(AssertUnwindSafe(move || {
                let got = rx.recv().unwrap();
                assert_eq!(got, 1, "the first message");
            }));
            let mut last = main.err();
            if let Err(worker) = sender.join() {
                last = Some(worker);
            }
            if let Some(panic) = last {
                resume_unwind(panic);
            }
        });
    });
    let f = report.failure.expect("main's assertion fails");
    assert_eq!(f.kind, FailureKind::Panic);
    assert_eq!(f.thread, "main", "{f}");
    assert!(f.message.contains("the first message"), "{f}");
    assert!(
        f.details
            .iter()
            .any(|d| d.contains("which made thread '") && d.contains("SendError")),
        "{f}"
    );
    assert!(
        f.details
            .iter()
            .any(|d| d.contains("resumed in thread 'main' by `resume_unwind`")),
        "{f}"
    );
}

/// A panic caught on one thread and resumed on another (`resume_unwind`: easy-parallel,
/// crossbeam's scope, rayon's join) never reaches the panic hook a second time; the report
/// named thread 'main' and said only `panicked`.
#[test]
fn a_panic_resumed_on_another_thread_is_reported_where_it_was_raised() {
    let resumed = |caught_inside: bool| {
        Builder::new().schedules(10).seed(1).run(move || {
            // main's own panic, caught before: not what ends the test.
            assert!(std::panic::catch_unwind(|| panic!("an old one")).is_err());
            let t = thread::Builder::new()
                .name("worker".into())
                .spawn(move || {
                    let work = || assert_eq!(1 + 1, 3, "arith");
                    match caught_inside {
                        true => std::panic::catch_unwind(work),
                        false => {
                            work();
                            Ok(())
                        }
                    }
                })
                .unwrap();
            let payload = match t.join() {
                Ok(Err(p)) | Err(p) => p,
                Ok(Ok(())) => return,
            };
            std::panic::resume_unwind(payload);
        })
    };
    for caught_inside in [true, false] {
        let f = resumed(caught_inside).failure.expect("the resumed panic");
        assert_eq!(f.kind, FailureKind::Panic);
        assert_eq!(f.thread, "worker", "{f}");
        assert!(f.message.contains("failed: arith"), "{f}");
        assert!(
            f.location
                .as_deref()
                .is_some_and(|l| l.contains("thread.rs")),
            "{f}"
        );
        assert!(
            f.details
                .iter()
                .any(|d| d.contains("resumed in thread 'main' by `resume_unwind`")),
            "{f}"
        );
    }
    // A payload nobody raised as a panic is reported as it is.
    let f = Builder::new()
        .schedules(1)
        .run(|| std::panic::resume_unwind(Box::new("raw payload")))
        .failure
        .expect("a panic");
    assert_eq!(
        (f.thread.as_str(), f.message.as_str()),
        ("main", "raw payload")
    );
}

#[test]
fn a_main_thread_panic_of_its_own_is_not_blamed_on_a_joined_thread() {
    let report = Builder::new().schedules(10).seed(1).run(|| {
        let t = thread::spawn(|| panic!("handled"));
        assert!(t.join().is_err());
        panic!("the test's own assertion");
    });
    let f = report.failure.unwrap();
    assert_eq!(
        (f.thread.as_str(), f.message.as_str()),
        ("main", "the test's own assertion")
    );
}

#[test]
fn a_stack_that_cannot_be_mapped_is_an_err_from_spawn_as_in_std() {
    // rayon-core's `failed_thread_stack` builds a pool with `isize::MAX`-byte stacks and
    // expects the error.
    let huge = isize::MAX as usize;
    assert!(std::thread::Builder::new()
        .stack_size(huge)
        .spawn(|| ())
        .is_err());
    check(|| {
        assert!(thread::Builder::new()
            .stack_size(huge)
            .spawn(|| ())
            .is_err());
        thread::scope(|s| {
            assert!(thread::Builder::new()
                .stack_size(huge)
                .spawn_scoped(s, || ())
                .is_err());
        });
        // A large one that can be mapped still spawns.
        let big = thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(|| 1)
            .unwrap();
        assert_eq!(big.join().unwrap(), 1);
    });
}

/// A `Thread` is one pointer, as std's: crates assert the size of structs holding one at
/// compile time (saa 5.6's wait-queue entry must fit half a cache line), and such a crate
/// did not build instrumented while pulse's was 32 bytes.
#[test]
fn a_thread_handle_is_the_size_of_std_s() {
    use std::mem::size_of;
    assert_eq!(
        size_of::<thread::Thread>(),
        size_of::<std::thread::Thread>()
    );
    assert_eq!(
        size_of::<Option<thread::Thread>>(),
        size_of::<Option<std::thread::Thread>>()
    );
}
