//! Under the relaxed memory model, every primitive carries happens-before as std documents:
//! a relaxed store made before handing off through it is visible after (no false alarm), and
//! without the handoff the stale value is found (the check can fail).

use pulse_runtime::{Builder, Isolation, Memory, Strategy};
use pulse_shim_std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use pulse_shim_std::sync::{mpsc, Arc, Barrier, Condvar, Mutex, Once, OnceLock, RwLock};
use pulse_shim_std::thread;

fn relaxed(f: impl Fn() + 'static) -> Option<String> {
    let report = Builder::new()
        .memory(Memory::Relaxed)
        .strategy(Strategy::Random)
        .schedules(500)
        .seed(7)
        .isolation(Isolation::Off)
        .run(f);
    report.failure.map(|f| f.to_string())
}

#[track_caller]
fn no_false_alarm(f: impl Fn() + 'static) {
    if let Some(failure) = relaxed(f) {
        panic!("false alarm: {failure}");
    }
}

#[test]
fn spawn_and_join() {
    no_false_alarm(|| {
        let d = Arc::new(AtomicUsize::new(0));
        d.store(1, Relaxed);
        let d2 = d.clone();
        let h = thread::spawn(move || {
            assert_eq!(d2.load(Relaxed), 1);
            d2.store(2, Relaxed);
        });
        h.join().unwrap();
        assert_eq!(d.load(Relaxed), 2);
    });
}

#[test]
fn mutex_and_rwlock() {
    no_false_alarm(|| {
        let d = Arc::new((AtomicUsize::new(0), Mutex::new(false), RwLock::new(false)));
        let d2 = d.clone();
        let h = thread::spawn(move || {
            d2.0.store(1, Relaxed);
            *d2.1.lock().unwrap() = true;
            d2.0.store(2, Relaxed);
            *d2.2.write().unwrap() = true;
        });
        if *d.1.lock().unwrap() {
            assert!(d.0.load(Relaxed) >= 1);
        }
        if *d.2.read().unwrap() {
            assert_eq!(d.0.load(Relaxed), 2);
        }
        h.join().unwrap();
    });
}

#[test]
fn condvar_channel_barrier() {
    no_false_alarm(|| {
        let d = Arc::new((AtomicUsize::new(0), Mutex::new(false), Condvar::new()));
        let (tx, rx) = mpsc::channel();
        let b = Arc::new(Barrier::new(2));
        let (d2, b2) = (d.clone(), b.clone());
        let h = thread::spawn(move || {
            d2.0.store(1, Relaxed);
            *d2.1.lock().unwrap() = true;
            d2.2.notify_one();
            d2.0.store(2, Relaxed);
            tx.send(()).unwrap();
            d2.0.store(3, Relaxed);
            b2.wait();
        });
        let mut ready = d.1.lock().unwrap();
        while !*ready {
            ready = d.2.wait(ready).unwrap();
        }
        drop(ready);
        assert!(d.0.load(Relaxed) >= 1);
        rx.recv().unwrap();
        assert!(d.0.load(Relaxed) >= 2);
        b.wait();
        assert_eq!(d.0.load(Relaxed), 3);
        h.join().unwrap();
    });
}

/// The notifier writes after `notify_one`, before unlocking: the waiter re-locks without a
/// scheduling point of its own and must still see it.
#[test]
fn condvar_waiter_sees_what_the_notifier_did_before_unlocking() {
    no_false_alarm(|| {
        let d = Arc::new((AtomicUsize::new(0), Mutex::new(false), Condvar::new()));
        let d2 = d.clone();
        let h = thread::spawn(move || {
            let mut ready = d2.1.lock().unwrap();
            *ready = true;
            d2.2.notify_one();
            d2.0.store(1, Relaxed);
            drop(ready);
        });
        let mut ready = d.1.lock().unwrap();
        while !*ready {
            ready = d.2.wait(ready).unwrap();
        }
        assert_eq!(d.0.load(Relaxed), 1);
        drop(ready);
        h.join().unwrap();
    });
}

#[test]
fn once_oncelock_and_park() {
    no_false_alarm(|| {
        static_free();
    });
}

fn static_free() {
    let d = Arc::new((AtomicUsize::new(0), Once::new(), OnceLock::new()));
    let d2 = d.clone();
    let main = thread::current();
    let flag = Arc::new(AtomicBool::new(false));
    let flag2 = flag.clone();
    let h = thread::spawn(move || {
        d2.1.call_once(|| d2.0.store(1, Relaxed));
        d2.2.get_or_init(|| d2.0.store(2, Relaxed));
        flag2.store(true, Relaxed);
        main.unpark();
    });
    d.1.call_once(|| d.0.store(1, Relaxed));
    assert!(d.0.load(Relaxed) >= 1);
    d.2.get_or_init(|| d.0.store(2, Relaxed));
    assert_eq!(d.0.load(Relaxed), 2);
    h.join().unwrap();
}

/// The check can fail: the same handoff through a relaxed flag is found stale.
#[test]
fn without_a_handoff_the_stale_value_is_found() {
    let failure = relaxed(|| {
        let d = Arc::new((AtomicUsize::new(0), AtomicBool::new(false)));
        let d2 = d.clone();
        let h = thread::spawn(move || {
            d2.0.store(1, Relaxed);
            d2.1.store(true, Relaxed);
        });
        if d.1.load(Relaxed) {
            assert_eq!(d.0.load(Relaxed), 1, "stale data");
        }
        h.join().unwrap();
    })
    .expect("the stale read is found");
    assert!(
        failure.contains("stale data") && failure.contains("PULSE_MEMORY=relaxed"),
        "{failure}"
    );
    assert!(
        failure.contains("reads old value 0 (the initial value; 1 newer store(s) not seen)"),
        "the trace names the store read: {failure}"
    );
}
