//! SCTBench CS/wronglock_N: `n` threads increment a counter under lock `b`, one under lock
//! `a`: the odd one out is not excluded, and an increment is lost when it reads, is
//! preempted, and writes back. The fixed twin uses `b` everywhere.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread;

struct Shared {
    a: Mutex<()>,
    b: Mutex<()>,
    data: AtomicUsize,
}

fn increment(s: &Shared, lock: &Mutex<()>) {
    let _g = lock.lock().unwrap();
    let v = s.data.load(SeqCst);
    s.data.store(v + 1, SeqCst);
}

fn run(n: usize, fixed: bool) {
    let s = Arc::new(Shared {
        a: Mutex::new(()),
        b: Mutex::new(()),
        data: AtomicUsize::new(0),
    });
    let mut handles = Vec::new();
    let odd = s.clone();
    handles.push(thread::spawn(move || {
        let lock = if fixed { &odd.b } else { &odd.a };
        increment(&odd, lock);
    }));
    for _ in 0..n.max(1) {
        let s = s.clone();
        handles.push(thread::spawn(move || increment(&s, &s.b)));
    }
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(s.data.load(SeqCst), n.max(1) + 1, "an increment was lost");
}

pub fn buggy(n: usize) {
    run(n, false)
}

pub fn fixed(n: usize) {
    run(n, true)
}
