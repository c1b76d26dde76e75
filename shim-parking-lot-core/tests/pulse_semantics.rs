//! parking_lot_core's contract inside a pulse execution: FIFO wakeups with their tokens,
//! `Invalid`, `unpark_all`, every `RequeueOp`, `unpark_filter`, timeouts on the virtual
//! clock (and their race with an unpark), and `SpinWait` yielding to the scheduler.
//! Threads are queued in a known order: each waits until the one before it has run
//! `before_sleep`.

use pulse_shim_std::time::Instant;
use std::sync::atomic::{AtomicBool as StdBool, Ordering::SeqCst as Std};
use std::time::Duration;

use parking_lot_core::*;
use pulse_runtime::{Builder, TimeMode};
use pulse_shim_std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use pulse_shim_std::sync::Arc;
use pulse_shim_std::thread::{self, JoinHandle};

const A: usize = 0x1000;
const B: usize = 0x2000;

/// Runs `f` under `schedules` schedules and fails the test with pulse's report if any fails.
fn check(schedules: u64, f: impl Fn()) {
    let report = Builder::new().schedules(schedules).seed(1).run(f);
    assert!(report.failure.is_none(), "{}", report.failure.unwrap());
}

/// Parks one thread per token on `key`, in order, without a timeout.
fn park_in_order(key: usize, tokens: &[usize]) -> Vec<JoinHandle<ParkResult>> {
    let queued = Arc::new(AtomicUsize::new(0));
    let mut handles = Vec::new();
    for (i, &token) in tokens.iter().enumerate() {
        let q = queued.clone();
        handles.push(thread::spawn(move || unsafe {
            park(
                key,
                || true,
                || {
                    q.fetch_add(1, SeqCst);
                },
                |_, _| panic!("no timeout"),
                ParkToken(token),
                None,
            )
        }));
        while queued.load(SeqCst) <= i {
            thread::yield_now();
        }
    }
    handles
}

fn results(handles: Vec<JoinHandle<ParkResult>>) -> Vec<ParkResult> {
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

fn unparked(token: usize) -> ParkResult {
    ParkResult::Unparked(UnparkToken(token))
}

#[test]
fn unpark_one_wakes_the_first_parked_with_its_token() {
    check(300, || {
        let hs = park_in_order(A, &[0, 0, 0]);
        for (i, more) in [true, true, false].into_iter().enumerate() {
            let r = unsafe {
                unpark_one(A, |r| {
                    assert_eq!(
                        (r.unparked_threads, r.requeued_threads, r.have_more_threads),
                        (1, 0, more)
                    );
                    UnparkToken(100 + i)
                })
            };
            assert_eq!((r.unparked_threads, r.have_more_threads), (1, more));
        }
        assert_eq!(results(hs), [unparked(100), unparked(101), unparked(102)]);
        // An empty queue: the callback still runs, with nothing unparked.
        let r = unsafe {
            unpark_one(A, |r| {
                assert_eq!(r, UnparkResult::default());
                DEFAULT_UNPARK_TOKEN
            })
        };
        assert_eq!(r.unparked_threads, 0);
    });
}

#[test]
fn invalid_park_returns_at_once_without_sleeping() {
    check(50, || {
        let r = unsafe {
            park(
                A,
                || false,
                || panic!("before_sleep"),
                |_, _| panic!("timed_out"),
                DEFAULT_PARK_TOKEN,
                None,
            )
        };
        assert_eq!(r, ParkResult::Invalid);
        assert_eq!(
            unsafe { unpark_all(A, DEFAULT_UNPARK_TOKEN) },
            0,
            "nothing was queued"
        );
    });
}

#[test]
fn unpark_all_wakes_every_thread_of_its_key_only() {
    check(300, || {
        let on_a = park_in_order(A, &[0, 0]);
        let on_b = park_in_order(B, &[0]);
        assert_eq!(unsafe { unpark_all(A, UnparkToken(7)) }, 2);
        assert_eq!(results(on_a), [unparked(7), unparked(7)]);
        assert!(!on_b[0].is_finished());
        assert_eq!(unsafe { unpark_all(B, UnparkToken(8)) }, 1);
        assert_eq!(results(on_b), [unparked(8)]);
    });
}

/// Parks three threads on A, runs `op` from A to B, then checks what happened by draining
/// A and B in turn. Returns the result, and each thread's wakeup token (1 = by the requeue's
/// callback, 2 = drained from A, 3 = drained from B).
fn requeue(op: RequeueOp) -> (UnparkResult, Vec<ParkResult>) {
    let hs = park_in_order(A, &[0, 0, 0]);
    let called = AtomicBool::new(false);
    let r = unsafe {
        unpark_requeue(
            A,
            B,
            || op,
            |seen, r| {
                assert_eq!(seen, op);
                called.store(true, SeqCst);
                assert!(!r.be_fair || r.unparked_threads == 1);
                UnparkToken(1)
            },
        )
    };
    assert_eq!(
        called.load(SeqCst),
        op != RequeueOp::Abort,
        "callback runs unless aborted"
    );
    // Drain one at a time so the order within each queue shows in the tokens.
    let drain = |key, token| {
        while unsafe { unpark_one(key, |_| UnparkToken(token)) }.unparked_threads == 1 {}
    };
    drain(A, 2);
    drain(B, 3);
    (r, results(hs))
}

#[test]
fn unpark_requeue_does_what_each_op_says() {
    check(200, || {
        let (r, got) = requeue(RequeueOp::UnparkOneRequeueRest);
        assert_eq!((r.unparked_threads, r.requeued_threads), (1, 2));
        assert_eq!(got, [unparked(1), unparked(3), unparked(3)]);

        let (r, got) = requeue(RequeueOp::RequeueAll);
        assert_eq!((r.unparked_threads, r.requeued_threads), (0, 3));
        assert_eq!(got, [unparked(3), unparked(3), unparked(3)]);

        let (r, got) = requeue(RequeueOp::UnparkOne);
        assert_eq!(
            (r.unparked_threads, r.requeued_threads, r.have_more_threads),
            (1, 0, true)
        );
        assert_eq!(got, [unparked(1), unparked(2), unparked(2)]);

        let (r, got) = requeue(RequeueOp::RequeueOne);
        assert_eq!(
            (r.unparked_threads, r.requeued_threads, r.have_more_threads),
            (0, 1, true)
        );
        assert_eq!(got, [unparked(3), unparked(2), unparked(2)]);

        let (r, got) = requeue(RequeueOp::Abort);
        assert_eq!(r, UnparkResult::default());
        assert_eq!(got, [unparked(2), unparked(2), unparked(2)]);
    });
}

#[test]
fn requeued_threads_join_the_tail_of_the_target_queue() {
    check(200, || {
        let on_b = park_in_order(B, &[0]);
        let on_a = park_in_order(A, &[0, 0]);
        unsafe { unpark_requeue(A, B, || RequeueOp::RequeueAll, |_, _| DEFAULT_UNPARK_TOKEN) };
        for token in [10, 11, 12] {
            assert_eq!(
                unsafe { unpark_one(B, |_| UnparkToken(token)) }.unparked_threads,
                1
            );
        }
        assert_eq!(results(on_b), [unparked(10)]);
        assert_eq!(results(on_a), [unparked(11), unparked(12)]);
    });
}

#[test]
fn unpark_filter_sees_park_tokens_in_queue_order() {
    check(200, || {
        let hs = park_in_order(A, &[1, 2, 3, 4, 5, 6]);
        let seen = std::cell::RefCell::new(Vec::new());
        let r = unsafe {
            unpark_filter(
                A,
                |t| {
                    seen.borrow_mut().push(t.0);
                    match t.0 {
                        5 => FilterOp::Stop,
                        n if n % 2 == 0 => FilterOp::Unpark,
                        _ => FilterOp::Skip,
                    }
                },
                |r| {
                    assert_eq!((r.unparked_threads, r.have_more_threads), (2, true));
                    UnparkToken(9)
                },
            )
        };
        assert_eq!(*seen.borrow(), [1, 2, 3, 4, 5], "stops at 5, never sees 6");
        assert_eq!(
            (r.unparked_threads, r.requeued_threads, r.have_more_threads),
            (2, 0, true)
        );
        // 1, 3, 5, 6 are still parked, in order.
        for token in [20, 21, 22, 23] {
            assert_eq!(
                unsafe { unpark_one(A, |_| UnparkToken(token)) }.unparked_threads,
                1
            );
        }
        assert_eq!(
            results(hs),
            [
                unparked(20),
                unparked(9),
                unparked(21),
                unparked(9),
                unparked(22),
                unparked(23)
            ]
        );
    });
}

#[test]
fn timeouts_expire_on_the_virtual_clock() {
    let started = Instant::now();
    check(100, || {
        let ctx = pulse_runtime::current().unwrap();
        let before = ctx.now();
        let timed_out = AtomicBool::new(false);
        let r = unsafe {
            park(
                A,
                || true,
                || {},
                |key, last| {
                    assert_eq!((key, last), (A, true));
                    timed_out.store(true, SeqCst);
                },
                DEFAULT_PARK_TOKEN,
                Some(Instant::now() + Duration::from_secs(3600)),
            )
        };
        assert_eq!(r, ParkResult::TimedOut);
        assert!(timed_out.load(SeqCst));
        assert!(
            ctx.now() - before >= Duration::from_secs(3600),
            "virtual time passed: {:?}",
            ctx.now() - before
        );
        assert_eq!(
            unsafe { unpark_all(A, DEFAULT_UNPARK_TOKEN) },
            0,
            "the timed-out thread left the queue"
        );
    });
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "100 hours of virtual waiting took {:?}",
        started.elapsed()
    );
}

#[test]
fn a_requeued_thread_times_out_on_its_new_key_and_knows_if_it_was_last() {
    check(200, || {
        let queued = Arc::new(AtomicUsize::new(0));
        let q = queued.clone();
        let t = thread::spawn(move || {
            let mut seen = None;
            let r = unsafe {
                park(
                    A,
                    || true,
                    || {
                        q.fetch_add(1, SeqCst);
                    },
                    |k, last| seen = Some((k, last)),
                    DEFAULT_PARK_TOKEN,
                    Some(Instant::now() + Duration::from_secs(10)),
                )
            };
            (r, seen)
        });
        while queued.load(SeqCst) == 0 {
            thread::yield_now();
        }
        let on_b = park_in_order(B, &[0]);
        unsafe { unpark_requeue(A, B, || RequeueOp::RequeueAll, |_, _| DEFAULT_UNPARK_TOKEN) };
        // B's queue: the untimed thread, then the requeued one, which times out when the
        // main thread blocks in join: not the last one on B.
        assert_eq!(t.join().unwrap(), (ParkResult::TimedOut, Some((B, false))));
        assert_eq!(unsafe { unpark_all(B, UnparkToken(4)) }, 1);
        assert_eq!(results(on_b), [unparked(4)]);
    });
}

/// With expiry a scheduler choice, an unpark and a timeout race: the parked thread and the
/// unparker always agree on who won, and both outcomes happen.
#[test]
fn an_unpark_racing_a_timeout_is_seen_the_same_way_by_both_threads() {
    let (won, lost) = (StdBool::new(false), StdBool::new(false));
    let report = Builder::new()
        .schedules(1_000)
        .seed(2)
        .time(TimeMode::TIME_RANDOM)
        .run(|| {
            let queued = Arc::new(AtomicBool::new(false));
            let q = queued.clone();
            let t = thread::spawn(move || unsafe {
                park(
                    A,
                    || true,
                    || q.store(true, SeqCst),
                    |_, _| {},
                    DEFAULT_PARK_TOKEN,
                    Some(Instant::now() + Duration::from_millis(5)),
                )
            });
            while !queued.load(SeqCst) {
                thread::yield_now();
            }
            let r = unsafe { unpark_one(A, |_| UnparkToken(1)) };
            match t.join().unwrap() {
                ParkResult::Unparked(UnparkToken(1)) => {
                    assert_eq!(r.unparked_threads, 1);
                    won.store(true, Std);
                }
                ParkResult::TimedOut => {
                    assert_eq!(r.unparked_threads, 0);
                    lost.store(true, Std);
                }
                other => panic!("{other:?}"),
            }
        });
    assert!(report.failure.is_none(), "{}", report.failure.unwrap());
    assert!(
        won.load(Std) && lost.load(Std),
        "both outcomes explored: unparked {won:?}, timed out {lost:?}"
    );
}

/// A waiter spinning with `SpinWait` lets the thread it waits for run: each spin is a
/// scheduling point, so the loop ends instead of spinning the one OS thread forever.
#[test]
fn spin_wait_yields_to_the_scheduler() {
    let report = Builder::new()
        .schedules(300)
        .seed(4)
        .max_steps(10_000)
        .run(|| {
            let flag = Arc::new(StdFlag::default());
            let f = flag.clone();
            let t = thread::spawn(move || f.0.store(true, Std));
            let mut spin = SpinWait::new();
            let mut spins = 0;
            // Reads a flag pulse does not see: only SpinWait's own yields let the setter run.
            while !flag.0.load(Std) {
                if !spin.spin() {
                    spin.reset();
                }
                spin.spin_no_yield();
                spins += 1;
                assert!(spins < 1_000, "the setter never ran");
            }
            t.join().unwrap();
        });
    assert!(report.failure.is_none(), "{}", report.failure.unwrap());
}

#[derive(Default)]
struct StdFlag(StdBool);

#[test]
fn spin_wait_says_park_after_ten_spins_inside_and_outside_an_execution() {
    let count = || {
        let mut s = SpinWait::new();
        let n = std::iter::from_fn(|| s.spin().then_some(())).count();
        s.reset();
        (n, s.spin())
    };
    assert_eq!(count(), (10, true));
    check(10, || assert_eq!(count(), (10, true)));
}

/// Under the relaxed memory model an unpark carries happens-before to the thread it wakes:
/// a relaxed store made before `unpark_one` is seen once `park` returns (no false alarm).
#[test]
fn unpark_carries_happens_before_under_relaxed_memory() {
    let report = Builder::new()
        .memory(pulse_runtime::Memory::Relaxed)
        .schedules(500)
        .seed(1)
        .run(|| {
            use pulse_shim_std::sync::atomic::Ordering::Relaxed;
            let data = Arc::new(AtomicUsize::new(0));
            let queued = Arc::new(AtomicBool::new(false));
            let (d, q) = (data.clone(), queued.clone());
            let parked = thread::spawn(move || {
                // SAFETY: parking_lot_core's contract: callbacks neither panic nor park.
                let r = unsafe {
                    park(
                        A,
                        || true,
                        || q.store(true, SeqCst),
                        |_, _| panic!("no timeout"),
                        ParkToken(0),
                        None,
                    )
                };
                (r, d.load(Relaxed))
            });
            while !queued.load(SeqCst) {
                thread::yield_now();
            }
            data.store(7, Relaxed);
            // SAFETY: as above.
            unsafe { unpark_one(A, |_| UnparkToken(9)) };
            assert_eq!(parked.join().unwrap(), (unparked(9), 7));
        });
    assert!(report.failure.is_none(), "{}", report.failure.unwrap());
}
