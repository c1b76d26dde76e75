//! The futex system call as instrumented code makes it (`__pulse_futex!`, which the
//! instrumenter puts in place of `libc::syscall` when its first argument is `SYS_futex`):
//! the system call outside an execution; inside one a wait blocks in the scheduler, and a
//! futex lock's lost wakeup is found while its fixed twin passes.

use std::os::raw::c_long;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use pulse_runtime::{Builder, FailureKind};
use pulse_shim_std::sync::atomic::{AtomicBool, AtomicU32};
use pulse_shim_std::thread;
use pulse_shim_std::time::Instant;

fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) -> c_long {
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a live, aligned 32-bit word (a shim atomic is std's).
    unsafe {
        pulse_shim_std::__pulse_futex!(
            libc::syscall,
            libc::SYS_futex,
            word,
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            ts_ptr,
        )
    }
}

fn wake(word: *const AtomicU32, count: i32) -> c_long {
    // SAFETY: a wake only names the address.
    unsafe {
        pulse_shim_std::__pulse_futex!(
            libc::syscall,
            libc::SYS_futex,
            word,
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            count
        )
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

#[test]
fn outside_an_execution_it_is_the_system_call() {
    let word = AtomicU32::new(7);
    assert_eq!(wait(&word, 8, None), -1);
    assert_eq!(errno(), libc::EAGAIN, "the word is not the expected value");
    assert_eq!(wait(&word, 7, Some(Duration::from_millis(1))), -1);
    assert_eq!(errno(), libc::ETIMEDOUT);
    assert_eq!(wake(&word, 1), 0, "nobody waits");
    assert_eq!(
        wake(std::ptr::null(), 1),
        0,
        "a wake only names the address"
    );

    let word = Arc::new(AtomicU32::new(0));
    let w = word.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        w.store(1, SeqCst);
        wake(&*w, i32::MAX);
    });
    while word.load(SeqCst) == 0 {
        wait(&word, 0, None);
    }
    t.join().unwrap();
}

/// A "ready" flag with a wake-up counter beside it: reading the counter after checking the
/// flag waits on a value the notifier may already have moved past, and sleeps for ever.
fn ready_flag(read_counter_first: bool) -> pulse_runtime::Report {
    Builder::new().schedules(1000).seed(3).run(move || {
        let ready = Arc::new(AtomicBool::new(false));
        let counter = Arc::new(AtomicU32::new(0));
        let (r, c) = (ready.clone(), counter.clone());
        let t = thread::spawn(move || {
            r.store(true, SeqCst);
            c.fetch_add(1, SeqCst);
            wake(&*c, 1);
        });
        loop {
            let seen = counter.load(SeqCst);
            let early = read_counter_first.then_some(seen);
            if ready.load(SeqCst) {
                break;
            }
            let expected = early.unwrap_or_else(|| counter.load(SeqCst));
            wait(&counter, expected, None);
        }
        t.join().unwrap();
    })
}

#[test]
fn a_lost_wakeup_is_found_and_its_fixed_twin_passes() {
    let failure = ready_flag(false).failure.expect("the lost wakeup is found");
    assert_eq!(failure.kind, FailureKind::Deadlock, "{}", failure.message);
    assert!(
        failure.details.iter().any(|d| d.contains("futex::wait")),
        "{:?}",
        failure.details
    );
    let fixed = ready_flag(true);
    assert!(fixed.failure.is_none(), "{:?}", fixed.failure);
    assert_eq!(fixed.executions, 1000);
}

/// Relative (`FUTEX_WAIT`) and absolute (`FUTEX_WAIT_BITSET`, against the real monotonic
/// clock) timeouts both end on the virtual clock.
#[test]
fn a_timed_wait_times_out_on_the_virtual_clock() {
    let report = Builder::new().schedules(20).seed(4).run(|| {
        let word = AtomicU32::new(0);
        let start = Instant::now();
        // (A wait may return 0 spuriously, before it sleeps.)
        while wait(&word, 0, Some(Duration::from_millis(50))) == 0 {}
        assert_eq!(errno(), libc::ETIMEDOUT);
        assert!(start.elapsed() >= Duration::from_millis(50));

        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid out-parameter.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
        let deadline = libc::timespec {
            tv_sec: now.tv_sec + 1,
            tv_nsec: now.tv_nsec,
        };
        let start = Instant::now();
        // SAFETY: as in `wait`.
        let wait_until = || unsafe {
            pulse_shim_std::__pulse_futex!(
                libc::syscall,
                libc::SYS_futex,
                &word,
                libc::FUTEX_WAIT_BITSET | libc::FUTEX_PRIVATE_FLAG,
                0u32,
                &deadline,
                std::ptr::null::<u32>(),
                libc::FUTEX_BITSET_MATCH_ANY,
            )
        };
        while wait_until() == 0 {}
        assert_eq!(errno(), libc::ETIMEDOUT);
        let waited = start.elapsed();
        assert!(
            waited > Duration::from_millis(900) && waited < Duration::from_millis(1010),
            "{waited:?}"
        );
    });
    assert!(report.failure.is_none(), "{:?}", report.failure);
}

/// `FUTEX_WAKE` wakes at most its count and returns how many it woke; across schedules
/// both waiters are sometimes asleep when the wakes come.
#[test]
fn a_wake_returns_how_many_it_woke() {
    static BOTH_ASLEEP: AtomicUsize = AtomicUsize::new(0);
    let report = Builder::new().schedules(300).seed(5).run(|| {
        let word = Arc::new(AtomicU32::new(0));
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let w = word.clone();
                thread::spawn(move || {
                    while w.load(SeqCst) == 0 {
                        wait(&w, 0, None);
                    }
                })
            })
            .collect();
        word.store(1, SeqCst);
        let one = wake(&*word, 1);
        let rest = wake(&*word, i32::MAX);
        assert!(one <= 1 && one + rest <= 2, "woke {one} then {rest}");
        if one + rest == 2 {
            BOTH_ASLEEP.fetch_add(1, SeqCst);
        }
        for w in waiters {
            w.join().unwrap();
        }
    });
    assert!(report.failure.is_none(), "{:?}", report.failure);
    assert!(BOTH_ASLEEP.load(SeqCst) > 0);
}

#[test]
fn an_operation_pulse_does_not_model_is_named() {
    let report = Builder::new().schedules(1).run(|| {
        let word = AtomicU32::new(0);
        // SAFETY: as in `wait`.
        unsafe {
            pulse_shim_std::__pulse_futex!(
                libc::syscall,
                libc::SYS_futex,
                &word,
                libc::FUTEX_REQUEUE,
                1,
                2,
                &word
            );
        }
    });
    let failure = report.failure.expect("the operation is refused");
    assert!(
        failure.message.contains("futex operation 3") && failure.message.contains("not modelled"),
        "{}",
        failure.message
    );
}
