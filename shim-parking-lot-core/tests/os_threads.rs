//! Outside a pulse execution the crate is a real parking lot on OS threads: mutual
//! exclusion under contention, FIFO wakeups, requeue and filter, real timeouts, and an
//! unpark racing a timeout. Every test body runs under a deadline, so a lost wakeup fails
//! the test instead of hanging it.

mod common;

use pulse_shim_std::time::Instant;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use common::ParkLock;
use parking_lot_core::*;

/// Runs `f` on a thread of its own and fails if it has not finished after `secs` seconds.
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || tx.send(f()).unwrap());
    rx.recv_timeout(Duration::from_secs(secs))
        .expect("the test hung (a lost wakeup?)")
}

/// Each test parks on keys of its own (tests run in parallel in one process).
fn keys() -> (usize, usize) {
    static NEXT: AtomicUsize = AtomicUsize::new(0x10_000);
    let k = NEXT.fetch_add(16, SeqCst);
    (k, k + 8)
}

const LONG: Duration = Duration::from_secs(20);

/// Parks one OS thread per token on `key`, in order (each after the previous one's
/// `before_sleep`), each with a generous timeout so nothing waits forever.
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
                |_, _| {},
                ParkToken(token),
                Some(Instant::now() + LONG),
            )
        }));
        while queued.load(SeqCst) <= i {
            thread::sleep(Duration::from_micros(100));
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
fn the_park_lock_counts_exactly_under_os_contention() {
    let total = within(60, || {
        let shared = Arc::new((ParkLock::new(), AtomicUsize::new(0)));
        let ts: Vec<_> = (0..4)
            .map(|_| {
                let s = shared.clone();
                thread::spawn(move || {
                    for _ in 0..5_000 {
                        s.0.lock();
                        s.1.store(s.1.load(SeqCst) + 1, SeqCst);
                        s.0.unlock();
                    }
                })
            })
            .collect();
        ts.into_iter().for_each(|t| t.join().unwrap());
        shared.1.load(SeqCst)
    });
    assert_eq!(total, 20_000);
}

#[test]
fn fifo_tokens_requeue_and_filter_on_os_threads() {
    within(60, || {
        let (a, b) = keys();
        let hs = park_in_order(a, &[1, 2, 3, 4]);
        // Filter: unpark the even tokens, stop at 3 (4 is never looked at).
        let r = unsafe {
            unpark_filter(
                a,
                |t| match t.0 {
                    3 => FilterOp::Stop,
                    n if n % 2 == 0 => FilterOp::Unpark,
                    _ => FilterOp::Skip,
                },
                |_| UnparkToken(9),
            )
        };
        assert_eq!((r.unparked_threads, r.have_more_threads), (1, true));
        // Requeue: unpark the first left (1), move 3 and 4 to b's tail.
        let r = unsafe {
            unpark_requeue(
                a,
                b,
                || RequeueOp::UnparkOneRequeueRest,
                |_, _| UnparkToken(5),
            )
        };
        assert_eq!((r.unparked_threads, r.requeued_threads), (1, 2));
        for token in [6, 7] {
            let r = unsafe { unpark_one(b, |_| UnparkToken(token)) };
            assert_eq!(r.unparked_threads, 1);
        }
        assert_eq!(
            unsafe { unpark_all(a, DEFAULT_UNPARK_TOKEN) }
                + unsafe { unpark_all(b, DEFAULT_UNPARK_TOKEN) },
            0
        );
        assert_eq!(
            results(hs),
            [unparked(5), unparked(9), unparked(6), unparked(7)]
        );
    });
}

#[test]
fn invalid_and_timed_out_parks_on_os_threads() {
    within(30, || {
        let (a, _) = keys();
        let r = unsafe {
            park(
                a,
                || false,
                || panic!("before_sleep"),
                |_, _| panic!("timed_out"),
                DEFAULT_PARK_TOKEN,
                None,
            )
        };
        assert_eq!(r, ParkResult::Invalid);
        let start = Instant::now();
        let mut seen = None;
        let r = unsafe {
            park(
                a,
                || true,
                || {},
                |k, last| seen = Some((k, last)),
                DEFAULT_PARK_TOKEN,
                Some(start + Duration::from_millis(50)),
            )
        };
        assert_eq!(r, ParkResult::TimedOut);
        assert!(start.elapsed() >= Duration::from_millis(50));
        assert_eq!(seen, Some((a, true)));
        assert_eq!(
            unsafe { unpark_all(a, DEFAULT_UNPARK_TOKEN) },
            0,
            "the timed-out thread left the queue"
        );
    });
}

#[test]
fn an_unpark_racing_a_timeout_is_seen_the_same_way_by_both_os_threads() {
    within(60, || {
        let (a, _) = keys();
        for i in 0..300 {
            let queued = Arc::new(AtomicUsize::new(0));
            let q = queued.clone();
            let t = thread::spawn(move || unsafe {
                park(
                    a,
                    || true,
                    || {
                        q.fetch_add(1, SeqCst);
                    },
                    |_, _| {},
                    DEFAULT_PARK_TOKEN,
                    Some(Instant::now() + Duration::from_micros(200)),
                )
            });
            while queued.load(SeqCst) == 0 {
                std::hint::spin_loop();
            }
            thread::sleep(Duration::from_micros(i % 400));
            let r = unsafe { unpark_one(a, |_| UnparkToken(1)) };
            match t.join().unwrap() {
                ParkResult::Unparked(UnparkToken(1)) => assert_eq!(r.unparked_threads, 1),
                ParkResult::TimedOut => assert_eq!(r.unparked_threads, 0),
                other => panic!("{other:?}"),
            }
        }
    });
}
