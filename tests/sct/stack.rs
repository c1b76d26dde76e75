//! A bounded stack over an array (after SCTBench CB/stack): the buggy lock-free `push` reads
//! `top`, writes the slot and stores `top + 1`, so two pushers can write the same slot and
//! one value is lost. The fixed twin reserves the slot with `fetch_add`.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;

struct Stack {
    slots: [AtomicUsize; 8],
    top: AtomicUsize,
}

impl Stack {
    fn push_buggy(&self, v: usize) {
        let t = self.top.load(SeqCst);
        self.slots[t].store(v, SeqCst);
        self.top.store(t + 1, SeqCst);
    }

    fn push_fixed(&self, v: usize) {
        let t = self.top.fetch_add(1, SeqCst);
        self.slots[t].store(v, SeqCst);
    }
}

fn run(fixed: bool) {
    let s = Arc::new(Stack {
        slots: std::array::from_fn(|_| AtomicUsize::new(0)),
        top: AtomicUsize::new(0),
    });
    let mut handles = Vec::new();
    for v in 1..=2 {
        let s = s.clone();
        handles.push(thread::spawn(move || {
            if fixed {
                s.push_fixed(v)
            } else {
                s.push_buggy(v)
            }
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    let top = s.top.load(SeqCst);
    let mut values: Vec<usize> = (0..top).map(|i| s.slots[i].load(SeqCst)).collect();
    values.sort();
    assert_eq!(values, [1, 2], "a pushed value was lost");
}

pub fn buggy(_n: usize) {
    run(false)
}

pub fn fixed(_n: usize) {
    run(true)
}
