//! pulse_time's parameters at work: untimed steps let time pass, timers compete within the
//! interval, jitter reorders close timers and `max_wait` bounds it, a sleeping livelock is
//! called one, and every schedule replays under the mode it was found in.

use std::collections::BTreeSet;
use std::time::Duration;

use pulse_runtime::{current, Builder, FailureKind, TimeMode};
use pulse_shim_std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use pulse_shim_std::sync::mpsc;
use pulse_shim_std::sync::Arc;
use pulse_shim_std::thread;

fn mode(text: &str) -> TimeMode {
    text.parse().unwrap()
}

/// A spin `Once` waiting out an initialiser that sleeps 50 ms (once_cell's suite does
/// this): the clock must move while the spinner spins, in every mode.
#[test]
fn a_spinner_waits_out_a_sleeping_initialiser_in_every_mode() {
    for m in [
        "portfolio",
        "infinitely-fast",
        "infinitely-slow",
        "time-random",
        "quite-slow=5ms",
        "quite-slow-random=1s",
    ] {
        let report = Builder::new().schedules(300).seed(5).time(mode(m)).run(|| {
            let ready = Arc::new(AtomicBool::new(false));
            let r = ready.clone();
            let init = thread::spawn(move || {
                thread::sleep(Duration::from_millis(50));
                r.store(true, SeqCst);
            });
            while !ready.load(SeqCst) {
                std::hint::spin_loop();
                thread::yield_now();
            }
            init.join().unwrap();
        });
        assert!(report.passed(), "{m}: {}", report.failure.unwrap());
    }
}

/// Every value `body` returned over 300 schedules under `time` (each must pass).
fn outcomes<T: Ord + Send>(time: &str, body: impl Fn() -> T) -> BTreeSet<T> {
    let seen = std::sync::Mutex::new(BTreeSet::new());
    Builder::new()
        .schedules(300)
        .seed(9)
        .time(mode(time))
        .check(|| {
            let value = body();
            seen.lock().unwrap().insert(value);
        });
    seen.into_inner().unwrap()
}

/// The paper's jitter example: A waits 10 ms for a message, B sends one after 20 ms.
/// What A saw.
fn jitter_outcomes(time: &str, max_wait: Option<Duration>) -> BTreeSet<char> {
    outcomes(time, || {
        let (tx, rx) = mpsc::channel();
        let a = thread::spawn(move || {
            if let Some(w) = max_wait {
                pulse::max_wait_here(w);
            }
            rx.recv_timeout(Duration::from_millis(10)).unwrap_or('a')
        });
        let b = thread::spawn(move || {
            thread::sleep(Duration::from_millis(20));
            let _ = tx.send('b');
        });
        b.join().unwrap();
        a.join().unwrap()
    })
}

/// `pulse::max_wait` lives in the `pulse` crate; the runtime's own call is the same.
mod pulse {
    pub fn max_wait_here(d: std::time::Duration) {
        if let Some(ctx) = super::current() {
            ctx.max_wait(d);
        }
    }
}

#[test]
fn jitter_lets_a_later_timer_fire_first_and_max_wait_bounds_it() {
    assert_eq!(
        jitter_outcomes("infinitely-fast", None),
        BTreeSet::from(['a'])
    );
    assert_eq!(
        jitter_outcomes("infinitely-fast,jitter=15ms", None),
        BTreeSet::from(['a', 'b'])
    );
    // A must time out by 15 ms, before B's timer (20 ms) can fire.
    assert_eq!(
        jitter_outcomes(
            "infinitely-fast,jitter=15ms",
            Some(Duration::from_millis(15))
        ),
        BTreeSet::from(['a'])
    );
}

/// Untimed steps go first under `infinitely-fast`; a timer within the interval may go first
/// under `quite-slow-random`, and must under `quite-slow`.
#[test]
fn the_interval_decides_whether_a_timer_overtakes_a_runnable_thread() {
    // Whether the receiver got the message in time.
    let outcomes = |time: &str| {
        outcomes(time, || {
            let (tx, rx) = mpsc::channel();
            let sender = thread::spawn(move || {
                // By then the receiver waits with its timer set.
                thread::sleep(Duration::from_millis(1));
                tx.send(1).unwrap()
            });
            let in_time = rx.recv_timeout(Duration::from_millis(100)).is_ok();
            sender.join().unwrap();
            in_time
        })
    };
    assert_eq!(outcomes("infinitely-fast"), BTreeSet::from([true]));
    assert_eq!(outcomes("quite-slow-random=50ms"), BTreeSet::from([true]));
    assert_eq!(
        outcomes("quite-slow-random=1s"),
        BTreeSet::from([false, true])
    );
    // With precedence the sender's own timer also goes first, so it may send before the
    // receiver has even started waiting: both outcomes, the timeout among them.
    assert!(outcomes("quite-slow=1s").contains(&false));
    assert!(outcomes("infinitely-slow").contains(&false));
}

/// `loop { sleep; poll }` for a flag nobody sets: a livelock in virtual time, reported as
/// such with the time that passed, not as a step-limit hit.
#[test]
fn a_polling_loop_that_never_succeeds_is_a_livelock() {
    let report = Builder::new().schedules(1).max_steps(30_000).run(|| {
        let flag = AtomicBool::new(false);
        while !flag.load(SeqCst) {
            thread::sleep(Duration::from_millis(10));
        }
    });
    let f = report.failure.expect("never finishes");
    assert_eq!(f.kind, FailureKind::Livelock, "{f}");
    assert!(f.message.contains("s of virtual time passed"), "{f}");
}

/// A schedule found under the portfolio names its mode and replays from that alone.
#[test]
fn a_failure_found_in_a_slow_mode_replays_from_its_schedule() {
    let body = || {
        let (tx, rx) = mpsc::channel();
        let sender = thread::spawn(move || {
            thread::sleep(Duration::from_millis(5));
            tx.send(()).unwrap();
        });
        rx.recv_timeout(Duration::from_millis(50))
            .expect("the reply comes in 5 ms");
        sender.join().unwrap();
    };
    let found = Builder::new().schedules(1000).seed(1).run(body);
    let failure = found
        .failure
        .expect("found by the slow-machine half of the portfolio");
    let text = failure.schedule.to_string();
    assert!(text.starts_with("p1@quite-slow-random=50ms:"), "{text}");
    for _ in 0..2 {
        let again = Builder::new()
            .time(TimeMode::INFINITELY_FAST) // the schedule's own mode wins
            .replay(&text)
            .unwrap()
            .run(body);
        let f = again.failure.expect("replays");
        assert_eq!(f.message, failure.message);
        assert_eq!(f.trace, failure.trace);
    }
}

/// A clock read whose thread waited at its scheduling point while a timer fired reads the
/// later time; the trace shows the read at that time (parking 2.2.1's
/// `park_then_wake_from_other_thread` takes its start after spawning a 10 ms sleeper, and
/// without this row the trace showed `Instant::now` at 3µs and the assertion "waited 2µs").
#[test]
fn a_clock_read_after_a_timer_fired_is_traced_at_the_time_it_read() {
    let report = Builder::new()
        .schedules(1_000)
        .seed(1)
        .time(mode("quite-slow-random=50ms"))
        .run(|| {
            let t = thread::spawn(|| thread::sleep(Duration::from_millis(10)));
            let start = pulse_shim_std::time::Instant::now();
            t.join().unwrap();
            let waited = start.elapsed();
            assert!(waited >= Duration::from_millis(10), "waited {waited:?}");
        });
    let f = report
        .failure
        .expect("a timer firing before the start is read");
    let read = f
        .trace
        .iter()
        .find(|e| e.op.starts_with("Instant::now (reads "))
        .unwrap_or_else(|| panic!("no clock-read row:\n{f}"));
    assert_eq!(read.thread, "main");
    let timeout = f.trace.iter().position(|e| e.op.ends_with("(times out)"));
    let read_at = f.trace.iter().position(|e| std::ptr::eq(e, read));
    assert!(
        timeout < read_at,
        "the read comes after the timer fired:\n{f}"
    );
}

/// A receive with a 10 ms timeout while the sender is ready to send: on a loaded machine
/// (`quite-slow-random`) the timeout can fire first, and the report says that this is what
/// the failure needed; `infinitely-fast` runs ready threads first, and it passes.
#[test]
fn a_failure_a_timer_ahead_of_ready_threads_needed_says_so() {
    let body = || {
        let (tx, rx) = mpsc::channel();
        let receiver = thread::spawn(move || {
            rx.recv_timeout(Duration::from_millis(10))
                .expect("the value, sent at once, arrives within 10 ms")
        });
        tx.send(1).unwrap();
        receiver.join().unwrap();
    };
    let fast = Builder::new()
        .schedules(200)
        .seed(1)
        .time(mode("infinitely-fast"))
        .run(body);
    assert!(fast.passed(), "{}", fast.failure.unwrap());
    let f = Builder::new()
        .schedules(200)
        .seed(1)
        .time(mode("quite-slow-random=50ms"))
        .run(body)
        .failure
        .expect("the timeout fires first under a loaded machine");
    // The receiver's own panic leads; main's `send` failed because its unwinding dropped
    // the receiving end.
    assert!(f.message.contains("arrives within 10 ms"), "{f}");
    assert!(
        f.details
            .iter()
            .any(|d| d.contains("which made thread 'main' panic") && d.contains("SendError")),
        "{f}"
    );
    assert!(
        f.notes.iter().any(|n| n.contains(
            "under the time mode `quite-slow-random=50ms` (a loaded machine: a timer due within \
             50ms may fire before a ready thread's next step) a timer fired ahead of ready threads"
        )),
        "{f}"
    );
    assert!(f.to_string().contains("--time infinitely-fast"), "{f}");
}
