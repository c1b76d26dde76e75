//! A test-and-set spinlock that spins politely (`yield_now`) on `load` and then `store`s:
//! two threads can both see it free and both enter. The fixed twin acquires with
//! `compare_exchange`. Spinning loops make naive depth-first search diverge, so this one
//! also checks that bounded DFS stays fair.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;

struct Lock {
    held: AtomicBool,
    inside: AtomicUsize,
}

impl Lock {
    fn acquire(&self, fixed: bool) {
        if fixed {
            while self
                .held
                .compare_exchange(false, true, SeqCst, SeqCst)
                .is_err()
            {
                thread::yield_now();
            }
        } else {
            while self.held.load(SeqCst) {
                thread::yield_now();
            }
            self.held.store(true, SeqCst);
        }
    }
}

fn run(fixed: bool) {
    let l = Arc::new(Lock {
        held: AtomicBool::new(false),
        inside: AtomicUsize::new(0),
    });
    let mut handles = Vec::new();
    for _ in 0..2 {
        let l = l.clone();
        handles.push(thread::spawn(move || {
            l.acquire(fixed);
            let n = l.inside.fetch_add(1, SeqCst);
            assert_eq!(n, 0, "two threads hold the lock");
            l.inside.fetch_sub(1, SeqCst);
            l.held.store(false, SeqCst);
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
}

pub fn buggy(_n: usize) {
    run(false)
}

pub fn fixed(_n: usize) {
    run(true)
}
