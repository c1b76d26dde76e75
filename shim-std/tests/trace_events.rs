//! What the trace file says happened (`Failure::full_trace`, `pulse_protocol::trace`): a lock
//! requested, then blocked, woken by the unlock and acquired; a failed `try_lock`; a message
//! sent and received; a `pulse::atomic` call as one event; happens-before from them.

use pulse_protocol::trace::{EventKind, Trace};
use pulse_runtime::{Builder, Ctx};
use pulse_shim_std::sync::atomic::{AtomicU32, Ordering};
use pulse_shim_std::sync::{mpsc, Arc, Mutex};
use pulse_shim_std::thread;

/// The traced failing execution of `f` (searched from a fixed seed).
fn failing_trace(f: impl Fn() + Sync) -> Trace {
    let report = Builder::new().schedules(2000).seed(3).run(f);
    let failure = report.failure.expect("the bug is found");
    failure.full_trace.expect("a failure's replay is traced")
}

fn kinds_of(t: &Trace, thread: u32, object: &str) -> Vec<(EventKind, Option<String>)> {
    t.events
        .iter()
        .filter(|e| e.thread == thread && e.object.as_deref() == Some(object))
        .map(|e| (e.kind, e.value.clone()))
        .collect()
}

#[test]
fn a_contended_lock_is_requested_blocked_woken_by_the_unlock_and_acquired() {
    // Every execution fails at its end; the first seed whose schedule made a thread wait
    // for the lock is the one read.
    let t = (0..200)
        .map(|seed| {
            let report = Builder::new().schedules(1).seed(seed).run(|| {
                let m = Arc::new(Mutex::new(0));
                let m2 = m.clone();
                let h = thread::spawn(move || {
                    let mut g = m2.lock().unwrap();
                    *g += 1;
                    thread::yield_now();
                });
                let g = m.lock().unwrap();
                thread::yield_now();
                drop(g);
                h.join().unwrap();
                panic!("the end");
            });
            report.failure.unwrap().full_trace.unwrap()
        })
        .find(|t| t.events.iter().any(|e| e.kind == EventKind::Block))
        .expect("some schedule makes a thread wait for the lock");
    // Somebody blocked on the lock, and the block says who held it; the same thread then
    // woke (because of the unlock) and acquired it, in that order.
    let block = t
        .events
        .iter()
        .position(|e| e.kind == EventKind::Block && e.object.as_deref() == Some("Mutex#0"))
        .expect("a block on the lock");
    let who = t.events[block].thread;
    assert!(t.events[block]
        .value
        .as_deref()
        .is_some_and(|v| v.starts_with("held by ")));
    let after: Vec<_> = kinds_of(&t, who, "Mutex#0")
        .into_iter()
        .skip_while(|(k, _)| *k != EventKind::Block)
        .take(3)
        .collect();
    assert_eq!(
        after,
        vec![
            (EventKind::Block, t.events[block].value.clone()),
            (EventKind::Wake, Some("unlock".into())),
            (EventKind::Acquire, None)
        ]
    );
    // The acquire synchronises with the other thread's release: happens-before holds.
    let acquire = (block..t.events.len())
        .find(|&i| t.events[i].kind == EventKind::Acquire && t.events[i].thread == who)
        .unwrap();
    let release = t.events[acquire].sync.expect("acquire names its release") as usize;
    assert_eq!(t.events[release].kind, EventKind::Release);
    assert_ne!(t.events[release].thread, who);
    assert!(t.happens_before(release, acquire));
    assert!(!t.happens_before(acquire, release));
}

#[test]
fn a_failed_try_lock_and_a_receive_say_what_they_returned() {
    let t = failing_trace(|| {
        let m = Arc::new(Mutex::new(()));
        let (tx, rx) = mpsc::channel::<u32>();
        let m2 = m.clone();
        let h = thread::spawn(move || {
            let _g = m2.lock().unwrap();
            tx.send(7).unwrap();
        });
        let got = m.try_lock().is_ok();
        let v = rx.recv().unwrap();
        h.join().unwrap();
        assert!(got && v == 7, "try_lock failed");
    });
    assert!(t
        .events
        .iter()
        .any(|e| e.thread == 0 && e.value.as_deref() == Some("WouldBlock")));
    let recv = t
        .events
        .iter()
        .position(|e| e.kind == EventKind::Recv)
        .expect("the receive");
    assert_eq!(t.events[recv].value.as_deref(), Some("Ok"));
    let send = t.events[recv].sync.expect("a receive names its send") as usize;
    assert_eq!(t.events[send].kind, EventKind::Send);
    assert_eq!(t.events[send].thread, 1);
}

#[test]
fn a_pulse_atomic_call_is_one_event() {
    let t = failing_trace(|| {
        let n = Arc::new(AtomicU32::new(0));
        let n2 = n.clone();
        let h = thread::spawn(move || {
            let ctx: Ctx = pulse_runtime::current().expect("inside the execution");
            ctx.atomic(|| {
                n2.store(1, Ordering::SeqCst);
                n2.store(2, Ordering::SeqCst);
            });
        });
        let seen = n.load(Ordering::SeqCst);
        h.join().unwrap();
        assert_ne!(seen, 2, "saw the atomic block's end");
    });
    let worker: Vec<EventKind> = t
        .events
        .iter()
        .filter(|e| e.thread == 1)
        .map(|e| e.kind)
        .collect();
    // (Its first row is the decision that started it: `thread starts`.)
    assert_eq!(
        worker,
        vec![EventKind::Other, EventKind::Atomic, EventKind::Exit],
        "{t:#?}"
    );
    // The race PULSE would draw: main's load and the worker's block are unordered, but the
    // block's stores are inside it, so nothing else of the worker shows.
    assert!(!t.events.iter().any(|e| e.kind == EventKind::Store));
}

/// Atomic rows carry what they read and wrote: a load's value, a store's, an RMW's old and
/// new, and a compare-exchange's outcome (`failed, read V` when it lost).
#[test]
fn atomic_rows_say_what_they_read_and_wrote() {
    let report = Builder::new().schedules(1).seed(1).run(|| {
        let a = AtomicU32::new(5);
        a.store(7, Ordering::SeqCst);
        let _ = a.load(Ordering::SeqCst);
        let _ = a.fetch_add(2, Ordering::SeqCst);
        let _ = a.compare_exchange(9, 10, Ordering::SeqCst, Ordering::SeqCst);
        let _ = a.compare_exchange(9, 11, Ordering::SeqCst, Ordering::SeqCst);
        panic!("the end");
    });
    let t = report.failure.unwrap().full_trace.unwrap();
    let values: Vec<Option<String>> = kinds_of(&t, 0, "AtomicU32#0")
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    let want = [
        "wrote 7",
        "read 7",
        "read 7, wrote 9",
        "read 9, wrote 10",
        "failed, read 10",
    ];
    assert_eq!(
        values,
        want.iter().map(|v| Some(v.to_string())).collect::<Vec<_>>(),
        "{t:#?}"
    );
}

/// A row is written when its operation runs, not when its thread reached the scheduling
/// point before it: a load that waited there while another thread stored comes after the
/// store, with the value it read. (Written at the scheduling point, a `SeqCst` load that read
/// 1 sat two steps before the store of 1, crossbeam-deque 0.8.0 trial.)
#[test]
fn rows_come_in_the_order_their_operations_ran() {
    let mut seen = [false; 2];
    for seed in 0..200 {
        // Not minimized: every execution fails the same way, and the minimizer would report
        // the one without a preemption each time.
        let searched = Builder::new()
            .schedules(1)
            .seed(seed)
            .minimize(std::time::Duration::ZERO);
        let report = searched.run(|| {
            let x = Arc::new(AtomicU32::new(0));
            let x2 = x.clone();
            let h = thread::spawn(move || x2.store(1, Ordering::SeqCst));
            let _ = x.load(Ordering::SeqCst);
            h.join().unwrap();
            panic!("the end");
        });
        let t = report.failure.unwrap().full_trace.unwrap();
        let steps: Vec<u64> = t.events.iter().map(|e| e.step).collect();
        assert!(steps.windows(2).all(|w| w[0] <= w[1]), "{t:#?}");
        // Numbered by decision, none left out (the one that starts a thread has its row),
        // and a thread's exit is in the step of its last operation, not the next one's.
        assert!(steps.windows(2).all(|w| w[1] <= w[0] + 1), "{t:#?}");
        for (i, e) in t
            .events
            .iter()
            .enumerate()
            .filter(|(_, e)| e.kind == EventKind::Exit)
        {
            let before = t.events[..i].iter().rev().find(|b| b.thread == e.thread);
            assert_eq!(before.map(|b| b.step), Some(e.step), "seed {seed}: {t:#?}");
        }
        // A spawn's thread exists before the spawn's scheduling point: its row comes first
        // (crossbeam-channel 0.5.14 trial: a thread's rows, then its spawn six steps later).
        let spawn = t.events.iter().position(|e| e.op == "thread::spawn");
        let child = t.events.iter().position(|e| e.thread == 1);
        assert!(spawn.is_some() && spawn < child, "seed {seed}: {t:#?}");
        let rows: Vec<(u32, Option<String>)> = t
            .events
            .iter()
            .filter(|e| e.object.as_deref() == Some("AtomicU32#0"))
            .map(|e| (e.thread, e.value.clone()))
            .collect();
        let (load, store) = (
            (0, Some("read 1".to_string())),
            (1, Some("wrote 1".to_string())),
        );
        if rows == [store.clone(), load] {
            seen[1] = true;
        } else {
            assert_eq!(
                rows,
                [(0, Some("read 0".to_string())), store],
                "seed {seed}: {t:#?}"
            );
            seen[0] = true;
        }
    }
    assert_eq!(seen, [true, true], "both orders show up");
}

/// A report shows the end of the trace (its last 30 rows); when the race it names came
/// earlier, it shows the rows around that race too (crossbeam-deque 0.8.0 trial: the last 30
/// of 763 steps were an epoch unpin and thread exits, the race 60 steps before).
#[test]
fn a_report_shows_the_rows_around_an_earlier_race() {
    let report = Builder::new().schedules(1000).seed(1).run(|| {
        let n = Arc::new(AtomicU32::new(0));
        let n2 = n.clone();
        let t = thread::spawn(move || {
            let v = n2.load(Ordering::SeqCst);
            n2.store(v + 1, Ordering::SeqCst);
        });
        let v = n.load(Ordering::SeqCst);
        n.store(v + 1, Ordering::SeqCst);
        t.join().unwrap();
        // Steps after the race: the tail of the trace is all this.
        let busy = AtomicU32::new(0);
        for _ in 0..100 {
            busy.fetch_add(1, Ordering::SeqCst);
        }
        assert_eq!(n.load(Ordering::SeqCst), 2, "an update was lost");
    });
    let f = report.failure.expect("the lost update is found");
    let (first, last) = f.race_steps.expect("a race is named");
    let text = f.to_string();
    let (tail, around) = text
        .split_once("trace around the race above:")
        .unwrap_or_else(|| panic!("no rows around the race: {text}"));
    assert!(!tail.contains("AtomicU32::store"), "{text}");
    assert!(around.contains("AtomicU32::store"), "{text}");
    assert!(
        around.contains(&format!(" {first} ")) && around.contains(&format!(" {last} ")),
        "steps {first} and {last} shown: {text}"
    );
}

/// A compare-exchange that found another value says so in the report's table, as a spurious
/// failure does: spin 0.9.2's `Once` bug is a failed exchange taken for a success, and its
/// row read as a plain `compare_exchange`.
#[test]
fn a_failed_compare_exchange_says_so_in_the_table() {
    use pulse_shim_std::sync::atomic::AtomicBool;
    let report = Builder::new().schedules(1).seed(1).run(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let f2 = flag.clone();
        let t = thread::spawn(move || {
            f2.compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
        });
        let mine = flag.compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst);
        let theirs = t.join().unwrap();
        assert!(mine.is_ok() != theirs.is_ok());
        panic!("the end");
    });
    let f = report.failure.expect("the panic");
    let ops: Vec<&str> = f
        .trace
        .iter()
        .filter(|e| e.op.starts_with("AtomicBool::compare_exchange"))
        .map(|e| e.op.as_str())
        .collect();
    assert_eq!(
        ops,
        [
            "AtomicBool::compare_exchange",
            "AtomicBool::compare_exchange (fails)"
        ],
        "{f}"
    );
}

/// Happens-before in the trace follows Rust's orderings: a lost update on a counter whose
/// hand-over is a `Relaxed` flag is named on the counter (the flag orders nothing), while
/// fences around the flag (`Release` before its store, `Acquire` after its load) make it
/// the synchronisation, so the counter's write and rewrite are ordered and the flag is what
/// raced. (Every relaxed read
/// used to synchronise with the store it read: multiqueue 0.3.2 trial, where the `race:`
/// line named a lock pair instead of the cached tail read `Relaxed`.)
#[test]
fn a_relaxed_flag_does_not_order_the_race_it_hands_over() {
    use pulse_protocol::trace::Order;
    use pulse_shim_std::sync::atomic::{fence, AtomicBool};
    let lost_update = |fenced: bool| {
        failing_trace(move || {
            let count = Arc::new(AtomicU32::new(0));
            let ready = Arc::new(AtomicBool::new(false));
            let (c2, r2) = (count.clone(), ready.clone());
            let t = thread::spawn(move || {
                let v = c2.load(Ordering::Relaxed);
                c2.store(v + 1, Ordering::Relaxed);
                if fenced {
                    fence(Ordering::Release);
                }
                r2.store(true, Ordering::Relaxed);
            });
            let v = count.load(Ordering::Relaxed);
            while !ready.load(Ordering::Relaxed) {
                thread::yield_now();
            }
            if fenced {
                fence(Ordering::Acquire);
            }
            count.store(v + 1, Ordering::Relaxed);
            t.join().unwrap();
            assert_eq!(count.load(Ordering::Relaxed), 2, "an update was lost");
        })
    };
    let t = lost_update(false);
    let orders: Vec<Option<Order>> = (t.events.iter())
        .filter(|e| e.object.as_deref() == Some("AtomicBool#0"))
        .map(|e| e.order)
        .collect();
    assert!(
        !orders.is_empty() && orders.iter().all(|&o| o == Some(Order::Relaxed)),
        "{orders:?}"
    );
    let race = t.race_summary().expect("a race is named");
    assert!(race.contains("`AtomicU32#0`"), "{race}");

    let t = lost_update(true);
    let fences: Vec<_> = t
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Fence)
        .collect();
    let orders: Vec<_> = fences.iter().map(|e| (e.thread, e.order)).collect();
    assert_eq!(
        orders,
        [(1, Some(Order::Release)), (0, Some(Order::Acquire))]
    );
    let fence_row = fences[1];
    assert!(fence_row.sync.is_some(), "the fence synchronises: {t:#?}");
    let race = t.race_summary().expect("a race is named");
    assert!(!race.contains("`AtomicU32#0`"), "{race}");
}

/// A stale load's `reads_from` names the store whose value it read, counted back past the
/// newer stores it missed; a compare-exchange that failed in between wrote nothing and is
/// not counted (it was, and the load named a newer store than the one it read).
#[test]
fn a_stale_load_names_the_store_it_read_past_a_failed_exchange() {
    use pulse_runtime::Memory;
    let mut found = 0;
    for seed in 0..300 {
        let report = Builder::new()
            .memory(Memory::Relaxed)
            .schedules(1)
            .seed(seed)
            .minimize(std::time::Duration::ZERO)
            .run(|| {
                let x = Arc::new(AtomicU32::new(0));
                let x2 = x.clone();
                let t = thread::spawn(move || {
                    x2.store(1, Ordering::Relaxed);
                    x2.store(2, Ordering::Relaxed);
                    let _ = x2.compare_exchange(7, 8, Ordering::Relaxed, Ordering::Relaxed);
                });
                thread::yield_now();
                let _ = x.load(Ordering::Relaxed);
                t.join().unwrap();
                panic!("the end");
            });
        let t = report.failure.unwrap().full_trace.unwrap();
        let Some(load) = t.events.iter().find(|e| e.thread == 0 && e.stale.is_some()) else {
            continue;
        };
        let failed_before = t.events.iter().any(|e| {
            e.step < load.step && e.value.as_deref().is_some_and(|v| v.starts_with("failed"))
        });
        let read = load.value.as_deref().unwrap_or("");
        let store = load.reads_from.map(|r| &t.events[r as usize]);
        match store {
            Some(s) => {
                let wrote = s.value.as_deref().unwrap_or("").replace("wrote ", "");
                assert!(
                    read.contains(&format!("old value {wrote} ")),
                    "{read}: {s:#?}"
                );
            }
            None => assert!(read.contains("old value 0 "), "{read}"),
        }
        found += failed_before as usize;
    }
    assert!(found > 0, "no stale load came after the failed exchange");
}

/// Where a panic shows is the panicking thread's last event before the panic, not a load
/// a `Drop` made while the panic unwound: the race named is the one the assertion saw,
/// not the destructor's (session 28 trial: a queue's guard read an unrelated counter during
/// the unwinding, and the `race:` line named that read).
#[test]
fn the_race_named_is_before_the_panic_not_in_its_unwinding() {
    use pulse_shim_std::sync::atomic::{AtomicBool, AtomicUsize};
    struct Guard(Arc<AtomicUsize>);
    impl Drop for Guard {
        fn drop(&mut self) {
            let _ = self.0.load(Ordering::Relaxed);
        }
    }
    let t = failing_trace(|| {
        let data = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let unrelated = Arc::new(AtomicUsize::new(0));
        let (d1, f1, u1) = (data.clone(), done.clone(), unrelated.clone());
        let producer = thread::spawn(move || {
            u1.store(1, Ordering::Relaxed);
            d1.store(42, Ordering::Relaxed);
            f1.store(true, Ordering::Relaxed);
            u1.store(2, Ordering::Relaxed);
        });
        let (d2, f2, u2) = (data.clone(), done.clone(), unrelated.clone());
        let consumer = thread::spawn(move || {
            let _g = Guard(u2);
            let v = d2.load(Ordering::Relaxed);
            if f2.load(Ordering::Relaxed) {
                assert_eq!(v, 42, "done was set but the data was missed");
            }
        });
        producer.join().unwrap();
        consumer.join().unwrap();
    });
    let failing = t.failing_event.expect("a failing event") as usize;
    let e = &t.events[failing];
    assert_eq!(e.object.as_deref(), Some("AtomicBool#0"), "{e:?}");
    let race = t.race_summary().expect("a race is named");
    assert!(!race.contains("AtomicUsize#1"), "{race}");
}

/// Threads of a pool share a name: the failing event is the panicking thread's own, found
/// by its id, not the first thread of that name's; the report names the second `worker#2`.
#[test]
fn the_failing_event_is_the_panicking_threads_among_threads_of_one_name() {
    let t = failing_trace(|| {
        let flag = Arc::new(AtomicU32::new(0));
        let worker = || thread::Builder::new().name("worker".into());
        let f1 = flag.clone();
        let first = worker()
            .spawn(move || f1.store(1, Ordering::Relaxed))
            .unwrap();
        let f2 = flag.clone();
        let second = worker()
            .spawn(move || assert_ne!(f2.load(Ordering::Relaxed), 1, "saw the store"))
            .unwrap();
        first.join().unwrap();
        second.join().unwrap();
    });
    // Reports tell the two apart: the second of a name is shown with its index.
    let names: Vec<&str> = t.threads.iter().map(|th| th.name.as_str()).collect();
    assert_eq!(names, ["main", "worker", "worker#2"]);
    let second = t.threads[2].id;
    let e = &t.events[t.failing_event.expect("a failing event") as usize];
    assert_eq!(e.thread, second, "{e:?}");
    assert_eq!(e.kind, EventKind::Load, "{e:?}");
}
