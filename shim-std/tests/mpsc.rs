//! Channels: std's semantics outside and inside an execution (FIFO per sender, bounds,
//! rendezvous, disconnection, timeouts on the virtual clock), message order between
//! senders as a scheduler choice, and the bugs pulse must find in code using them.

use pulse_runtime::{Builder, Detached, FailureKind, Report, TimeMode};
use pulse_shim_std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use pulse_shim_std::sync::mpsc::{
    self, RecvError, RecvTimeoutError, SendError, TryRecvError, TrySendError,
};
use pulse_shim_std::sync::Arc;
use pulse_shim_std::thread;
use pulse_shim_std::time::Instant;
use std::sync::atomic as sa;
use std::time::Duration;

fn run(schedules: u64, f: impl Fn()) -> Report {
    Builder::new().schedules(schedules).seed(21).run(f)
}

fn check(schedules: u64, f: impl Fn()) {
    let report = run(schedules, f);
    assert!(report.passed(), "{}", report.failure.unwrap());
    // A body without a choice (one thread) runs once: every schedule is that one.
    let no_choice = report.exhaustive.is_some_and(|e| e.no_choice);
    assert_eq!(report.executions, if no_choice { 1 } else { schedules });
}

/// The single-threaded contract, run both outside and inside an execution.
fn sequential_semantics() {
    let (tx, rx) = mpsc::channel();
    let tx2 = tx.clone();
    tx.send(1).unwrap();
    tx2.send(2).unwrap();
    assert_eq!(rx.recv(), Ok(1));
    assert_eq!(rx.try_recv(), Ok(2));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    assert_eq!(
        rx.recv_timeout(Duration::from_millis(1)),
        Err(RecvTimeoutError::Timeout)
    );
    tx.send(3).unwrap();
    drop((tx, tx2));
    // Buffered messages outlive the senders; then the channel reports disconnection.
    assert_eq!(rx.try_iter().collect::<Vec<_>>(), [3]);
    assert_eq!(rx.recv(), Err(RecvError));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(1)),
        Err(RecvTimeoutError::Disconnected)
    );

    let (tx, rx) = mpsc::sync_channel(2);
    tx.send('a').unwrap();
    tx.try_send('b').unwrap();
    assert_eq!(tx.try_send('c'), Err(TrySendError::Full('c')));
    assert_eq!(rx.iter().take(2).collect::<String>(), "ab");
    drop(rx);
    assert_eq!(tx.send('d'), Err(SendError('d')));
    assert_eq!(tx.try_send('e'), Err(TrySendError::Disconnected('e')));

    // Rendezvous: nobody is waiting to receive, so there is no room.
    let (tx, rx) = mpsc::sync_channel::<u8>(0);
    assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)));
    drop(tx);
    assert_eq!(rx.into_iter().next(), None);

    let (tx, rx) = mpsc::channel::<String>();
    assert_eq!(
        format!("{tx:?} {rx:?} {:?}", rx.iter()),
        "Sender { .. } Receiver { .. } Iter { rx: Receiver { .. } }"
    );
    drop(rx);
    assert_eq!(tx.send("x".into()).unwrap_err().0, "x");
}

#[test]
fn sequential_semantics_outside_an_execution() {
    sequential_semantics();
}

#[test]
fn sequential_semantics_inside_an_execution() {
    check(20, sequential_semantics);
}

#[test]
fn std_flavour_works_across_os_threads_outside() {
    let (tx, rx) = mpsc::sync_channel(0);
    let t = std::thread::spawn(move || {
        for i in 0..3 {
            tx.send(i).unwrap();
        }
    });
    assert_eq!(rx.iter().collect::<Vec<_>>(), [0, 1, 2]);
    t.join().unwrap();
}

#[test]
fn messages_are_fifo_per_sender() {
    check(300, || {
        let (tx, rx) = mpsc::channel();
        let spawn_sender = |id: u32| {
            let tx = tx.clone();
            thread::spawn(move || (0..3).for_each(|i| tx.send((id, i)).unwrap()))
        };
        let (a, b) = (spawn_sender(0), spawn_sender(1));
        drop(tx);
        let got: Vec<(u32, u32)> = rx.iter().collect();
        assert_eq!(got.len(), 6);
        for id in 0..2 {
            let mine: Vec<u32> = got.iter().filter(|m| m.0 == id).map(|m| m.1).collect();
            assert_eq!(
                mine,
                [0, 1, 2],
                "sender {id}'s messages out of order: {got:?}"
            );
        }
        a.join().unwrap();
        b.join().unwrap();
    });
}

#[test]
fn senders_messages_arrive_in_both_orders() {
    let a_first = sa::AtomicUsize::new(0);
    let b_first = sa::AtomicUsize::new(0);
    check(200, || {
        let (tx, rx) = mpsc::channel();
        let tx2 = tx.clone();
        let t = thread::spawn(move || tx2.send('b').unwrap());
        tx.send('a').unwrap();
        let first = rx.recv().unwrap();
        assert_eq!(rx.recv().unwrap(), if first == 'a' { 'b' } else { 'a' });
        t.join().unwrap();
        if first == 'a' { &a_first } else { &b_first }.fetch_add(1, SeqCst);
    });
    let (a, b) = (a_first.into_inner(), b_first.into_inner());
    assert!(
        a > 0 && b > 0,
        "both orders must be explored: a first {a}, b first {b}"
    );
}

#[test]
fn dropping_the_last_sender_wakes_a_blocked_receiver() {
    check(200, || {
        let (tx, rx) = mpsc::channel::<u8>();
        let tx2 = tx.clone();
        let t = thread::spawn(move || rx.recv());
        drop(tx);
        drop(tx2);
        assert_eq!(t.join().unwrap(), Err(RecvError));
    });
}

#[test]
fn dropping_the_receiver_wakes_blocked_senders_with_their_message() {
    check(200, || {
        for bound in [0, 1] {
            let (tx, rx) = mpsc::sync_channel(bound);
            let t = thread::spawn(move || {
                // Fills the buffer (if any), then blocks until the receiver goes away.
                (0..=bound).map(|i| tx.send(i)).collect::<Vec<_>>()
            });
            drop(rx);
            let results = t.join().unwrap();
            assert_eq!(
                results.last(),
                Some(&Err(SendError(bound))),
                "bound {bound}: {results:?}"
            );
        }
    });
}

#[test]
fn receiver_drop_drops_buffered_messages() {
    struct Counted<'a>(&'a sa::AtomicUsize);
    impl Drop for Counted<'_> {
        fn drop(&mut self) {
            self.0.fetch_add(1, SeqCst);
        }
    }
    let drops = sa::AtomicUsize::new(0);
    check(1, || {
        let (tx, rx) = mpsc::channel();
        tx.send(Counted(&drops)).unwrap();
        tx.send(Counted(&drops)).unwrap();
        drop(rx);
        assert_eq!(
            drops.load(SeqCst),
            2,
            "dropped with the receiver, not with the last sender"
        );
    });
}

#[test]
fn sync_channel_blocks_the_sender_when_full() {
    // The sender sends two messages into a buffer of `bound`, then says so. Before the
    // first recv, "both sent" is impossible with bound 1 and possible with bound 2.
    let both_sent_before_recv = |bound: usize| {
        let seen = sa::AtomicUsize::new(0);
        check(300, || {
            let (tx, rx) = mpsc::sync_channel(bound);
            let sent = Arc::new(AtomicUsize::new(0));
            let s2 = sent.clone();
            let t = thread::spawn(move || {
                tx.send(1).unwrap();
                s2.store(1, SeqCst);
                tx.send(2).unwrap();
                s2.store(2, SeqCst);
            });
            let before = sent.load(SeqCst);
            assert!(
                bound >= 2 || before < 2,
                "second send completed with a full buffer"
            );
            if before == 2 {
                seen.fetch_add(1, SeqCst);
            }
            assert_eq!((rx.recv(), rx.recv()), (Ok(1), Ok(2)));
            t.join().unwrap();
        });
        seen.into_inner()
    };
    assert_eq!(both_sent_before_recv(1), 0);
    assert!(both_sent_before_recv(2) > 0);
}

#[test]
fn a_full_sync_channel_with_no_receiver_running_deadlocks() {
    let report = run(10, || {
        let (tx, _rx) = mpsc::sync_channel(1);
        tx.send(1).unwrap();
        tx.send(2).unwrap();
    });
    assert_eq!(
        report.failure.expect("must deadlock").kind,
        FailureKind::Deadlock
    );
}

#[test]
fn rendezvous_send_returns_only_once_received() {
    check(300, || {
        let (tx, rx) = mpsc::sync_channel(0);
        let done = Arc::new(AtomicBool::new(false));
        let d2 = done.clone();
        let t = thread::spawn(move || {
            tx.send(7).unwrap();
            d2.store(true, SeqCst);
        });
        assert!(!done.load(SeqCst), "send returned before anyone received");
        assert_eq!(rx.recv(), Ok(7));
        t.join().unwrap();
        assert!(done.load(SeqCst));
    });
    let report = run(10, || {
        let (tx, _rx) = mpsc::sync_channel(0);
        tx.send(1).unwrap();
    });
    assert_eq!(
        report.failure.expect("nobody receives").kind,
        FailureKind::Deadlock
    );
}

#[test]
fn rendezvous_try_send_succeeds_only_with_a_waiting_receiver() {
    let full = sa::AtomicUsize::new(0);
    check(200, || {
        let (tx, rx) = mpsc::sync_channel(0);
        let t = thread::spawn(move || rx.recv());
        let mut v = 5;
        loop {
            match tx.try_send(v) {
                Ok(()) => break,
                Err(TrySendError::Full(back)) => {
                    full.fetch_add(1, SeqCst);
                    v = back;
                    thread::yield_now();
                }
                Err(e) => panic!("{e:?}"),
            }
        }
        assert_eq!(t.join().unwrap(), Ok(5));
    });
    assert!(
        full.into_inner() > 0,
        "some schedule must try before the receiver waits"
    );
}

#[test]
fn recv_timeout_times_out_on_the_virtual_clock() {
    let started = std::time::Instant::now();
    check(100, || {
        let (tx, rx) = mpsc::channel::<u8>();
        let t0 = Instant::now();
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5)),
            Err(RecvTimeoutError::Timeout)
        );
        assert!(t0.elapsed() >= Duration::from_secs(5));
        drop(tx);
    });
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "timeouts must not take real time"
    );
}

#[test]
fn recv_timeout_receives_what_arrives_before_the_deadline() {
    // Exact timing: under a slow-machine mode the 2 s sleeper may start late enough to
    // miss the 3 s timeout, as it could on a loaded machine.
    let report = Builder::new()
        .schedules(200)
        .seed(21)
        .time(TimeMode::INFINITELY_FAST)
        .run(|| {
            let (tx, rx) = mpsc::channel();
            let tx2 = tx.clone();
            let quick = thread::spawn(move || tx.send(1).unwrap());
            let slow = thread::spawn(move || {
                thread::sleep(Duration::from_secs(2));
                tx2.send(2).unwrap();
            });
            assert_eq!(rx.recv_timeout(Duration::from_secs(1)), Ok(1));
            assert_eq!(
                rx.recv_timeout(Duration::from_millis(500)),
                Err(RecvTimeoutError::Timeout)
            );
            assert_eq!(rx.recv_timeout(Duration::from_secs(3)), Ok(2));
            quick.join().unwrap();
            slow.join().unwrap();
        });
    assert!(report.passed(), "{}", report.failure.unwrap());
}

/// A consumer that stops when the producer says "done", draining only what it saw before.
fn consumer(drain_after_done: bool) -> Report {
    run(1000, move || {
        let (tx, rx) = mpsc::channel();
        let done = Arc::new(AtomicBool::new(false));
        let d2 = done.clone();
        let producer = thread::spawn(move || {
            tx.send(1).unwrap();
            tx.send(2).unwrap();
            d2.store(true, SeqCst);
        });
        let mut got = Vec::new();
        while !done.load(SeqCst) {
            match rx.try_recv() {
                Ok(v) => got.push(v),
                Err(_) => thread::yield_now(),
            }
        }
        if drain_after_done {
            got.extend(rx.try_iter());
        }
        producer.join().unwrap();
        assert_eq!(got, [1, 2], "consumer lost messages");
    })
}

#[test]
fn producer_consumer_bug_is_found_and_fix_passes() {
    let failure = consumer(false)
        .failure
        .expect("the lost message must be found");
    assert_eq!(failure.kind, FailureKind::Panic);
    assert!(
        failure.message.contains("consumer lost messages"),
        "{}",
        failure.message
    );
    let fixed = consumer(true);
    assert!(fixed.passed(), "{}", fixed.failure.unwrap());
}

#[test]
fn std_channel_inside_an_execution_is_refused() {
    let (tx, rx) = mpsc::channel::<u8>();
    let report = run(1, || {
        let _ = tx.send(1);
    });
    let failure = report.failure.expect("must be refused");
    assert!(
        failure.message.contains("created outside pulse::check"),
        "{}",
        failure.message
    );
    // Still a working std channel outside.
    tx.send(2).unwrap();
    assert_eq!(rx.recv(), Ok(2));
}

#[test]
fn pulse_channel_outlives_its_execution() {
    let kept = std::sync::Mutex::new(None);
    check(1, || {
        let (tx, rx) = mpsc::sync_channel(1);
        tx.send(9).unwrap();
        *kept.lock().unwrap() = Some((tx, rx));
    });
    let (tx, rx) = kept.into_inner().unwrap().unwrap();
    assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)));
    assert_eq!(rx.recv(), Ok(9), "a recv that need not wait works");
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    let blocked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rx.recv()));
    let msg = pulse_runtime::payload_message(&*blocked.unwrap_err());
    assert!(msg.contains("would block"), "{msg}");
    drop(tx);
    assert_eq!(rx.recv(), Err(RecvError));
}

#[test]
fn each_visible_operation_is_one_scheduling_point() {
    // Steps of a one-thread execution; the difference between two programs is the points
    // the extra operations reached.
    let steps = |f: fn()| Builder::new().schedules(1).seed(1).run(f).decisions;
    let base = steps(|| drop(mpsc::sync_channel::<u8>(1)));
    assert_eq!(
        base,
        steps(|| drop(mpsc::channel::<u8>())),
        "creating a channel is invisible"
    );
    let (send, try_send, recv, try_recv) = (
        steps(|| {
            let (tx, rx) = mpsc::sync_channel(1);
            tx.send(1).unwrap();
            drop((tx, rx));
        }),
        steps(|| {
            let (tx, rx) = mpsc::sync_channel(1);
            tx.try_send(1).unwrap();
            drop((tx, rx));
        }),
        steps(|| {
            let (tx, rx) = mpsc::sync_channel(1);
            tx.send(1).unwrap();
            rx.recv().unwrap();
            drop((tx, rx));
        }),
        steps(|| {
            let (tx, rx) = mpsc::sync_channel::<u8>(1);
            let _ = rx.try_recv();
            drop((tx, rx));
        }),
    );
    assert_eq!(
        (send - base, try_send - base, recv - send, try_recv - base),
        (1, 1, 1, 1)
    );
    // Dropping a sender that is not the last one, or cloning one, is invisible; dropping
    // the last sender and the receiver (`base` drops both) are two points.
    let clone_drop = steps(|| {
        let (tx, rx) = mpsc::sync_channel::<u8>(1);
        drop(tx.clone());
        drop((tx, rx));
    });
    assert_eq!(clone_drop, base);
    let no_drops = steps(|| std::mem::forget(mpsc::sync_channel::<u8>(1)));
    assert_eq!(base - no_drops, 2);
}

#[test]
fn threads_left_blocked_on_a_channel_are_reported_and_cleaned_up() {
    for rendezvous in [false, true] {
        let report = Builder::new()
            .schedules(20)
            .seed(21)
            .detached(Detached::Fail)
            .run(move || {
                if rendezvous {
                    let (tx, rx) = mpsc::sync_channel(0);
                    std::mem::forget(rx);
                    thread::spawn(move || tx.send(1));
                } else {
                    let (tx, rx) = mpsc::channel::<u8>();
                    std::mem::forget(tx);
                    thread::spawn(move || rx.recv());
                }
            });
        let failure = report.failure.expect("the blocked thread must be reported");
        assert_eq!(failure.kind, FailureKind::LeakedThread, "{failure}");
    }
}

#[test]
fn auto_traits_match_std() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<mpsc::Sender<u8>>();
    send_sync::<mpsc::SyncSender<u8>>();
    send::<mpsc::Receiver<u8>>();
    send::<mpsc::IntoIter<u8>>();
}
