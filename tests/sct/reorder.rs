//! SCTBench CS/reorder_N: `n - 1` setter threads store `a = 1` then `b = -1`; one checker
//! reads `a` then `b` and asserts it saw both stores or neither. It fails when the checker
//! runs between some setter's two stores (one preemption). The fixed twin makes each pair
//! of stores, and the pair of reads, one critical section.

use std::sync::atomic::{AtomicI64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread;

struct Shared {
    a: AtomicI64,
    b: AtomicI64,
    lock: Mutex<()>,
}

fn run(n: usize, locked: bool) {
    let s = Arc::new(Shared {
        a: AtomicI64::new(0),
        b: AtomicI64::new(0),
        lock: Mutex::new(()),
    });
    let mut handles = Vec::new();
    for _ in 0..n.saturating_sub(1).max(1) {
        let s = s.clone();
        handles.push(thread::spawn(move || {
            let _g = locked.then(|| s.lock.lock().unwrap());
            s.a.store(1, SeqCst);
            s.b.store(-1, SeqCst);
        }));
    }
    let c = s.clone();
    handles.push(thread::spawn(move || {
        let _g = locked.then(|| c.lock.lock().unwrap());
        let a = c.a.load(SeqCst);
        let b = c.b.load(SeqCst);
        assert!(
            (a == 0 && b == 0) || (a == 1 && b == -1),
            "saw a = {a}, b = {b}"
        );
    }));
    for h in handles {
        h.join().unwrap();
    }
}

pub fn buggy(n: usize) {
    run(n, false)
}

pub fn fixed(n: usize) {
    run(n, true)
}
