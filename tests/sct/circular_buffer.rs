//! A single-producer single-consumer ring buffer (after SCTBench CB/circular_buffer): the
//! buggy producer publishes the new tail before writing the slot, so the consumer can read a
//! slot that was never written. The fixed twin writes the slot first.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;

const CAP: usize = 4;
const ITEMS: usize = 3;

struct Ring {
    slots: [AtomicUsize; CAP],
    head: AtomicUsize,
    tail: AtomicUsize,
}

fn run(fixed: bool) {
    let r = Arc::new(Ring {
        slots: std::array::from_fn(|_| AtomicUsize::new(0)),
        head: AtomicUsize::new(0),
        tail: AtomicUsize::new(0),
    });
    let p = r.clone();
    let producer = thread::spawn(move || {
        for item in 1..=ITEMS {
            let t = p.tail.load(SeqCst);
            while t - p.head.load(SeqCst) == CAP {
                thread::yield_now();
            }
            if fixed {
                p.slots[t % CAP].store(item, SeqCst);
                p.tail.store(t + 1, SeqCst);
            } else {
                p.tail.store(t + 1, SeqCst);
                p.slots[t % CAP].store(item, SeqCst);
            }
        }
    });
    for expected in 1..=ITEMS {
        let h = r.head.load(SeqCst);
        while r.tail.load(SeqCst) == h {
            thread::yield_now();
        }
        let got = r.slots[h % CAP].swap(0, SeqCst);
        assert_eq!(got, expected, "read slot {} before it was written", h % CAP);
        r.head.store(h + 1, SeqCst);
    }
    producer.join().unwrap();
}

pub fn buggy(_n: usize) {
    run(false)
}

pub fn fixed(_n: usize) {
    run(true)
}
