//! A lost wakeup: the waiter checks the `ready` flag outside the lock and then waits; if the
//! notifier sets the flag and notifies in between, the notification is lost and the waiter
//! sleeps forever. The fixed twin checks the flag under the lock (`wait_while`).

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;

struct Signal {
    ready: AtomicBool,
    lock: Mutex<()>,
    cv: Condvar,
}

fn run(fixed: bool) {
    let s = Arc::new(Signal {
        ready: AtomicBool::new(false),
        lock: Mutex::new(()),
        cv: Condvar::new(),
    });
    let n = s.clone();
    let notifier = thread::spawn(move || {
        let _g = n.lock.lock().unwrap();
        n.ready.store(true, SeqCst);
        n.cv.notify_one();
    });
    if fixed {
        let g = s.lock.lock().unwrap();
        let _g = s.cv.wait_while(g, |_| !s.ready.load(SeqCst)).unwrap();
    } else if !s.ready.load(SeqCst) {
        let g = s.lock.lock().unwrap();
        let _g = s.cv.wait(g).unwrap();
    }
    notifier.join().unwrap();
}

pub fn buggy(_n: usize) {
    run(false)
}

pub fn fixed(_n: usize) {
    run(true)
}
