//! A work queue (after SCTBench CB/queue): the buggy `pop` checks a length counter outside the
//! lock and then pops expecting an item, so two consumers can both pass the check for the
//! last item. The fixed `pop` checks and pops under one lock.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread;

struct Queue {
    items: Mutex<VecDeque<u32>>,
    len: AtomicUsize,
}

impl Queue {
    fn push(&self, v: u32) {
        self.items.lock().unwrap().push_back(v);
        self.len.fetch_add(1, SeqCst);
    }

    fn pop_buggy(&self) -> Option<u32> {
        if self.len.load(SeqCst) == 0 {
            return None;
        }
        let v = self.items.lock().unwrap().pop_front().expect("length said non-empty");
        self.len.fetch_sub(1, SeqCst);
        Some(v)
    }

    fn pop_fixed(&self) -> Option<u32> {
        let v = self.items.lock().unwrap().pop_front()?;
        self.len.fetch_sub(1, SeqCst);
        Some(v)
    }
}

fn run(fixed: bool) {
    let q = Arc::new(Queue {
        items: Mutex::new(VecDeque::new()),
        len: AtomicUsize::new(0),
    });
    q.push(1);
    let mut consumers = Vec::new();
    for _ in 0..2 {
        let q = q.clone();
        consumers.push(thread::spawn(move || {
            if fixed {
                q.pop_fixed()
            } else {
                q.pop_buggy()
            }
        }));
    }
    let got: Vec<_> = consumers.into_iter().map(|c| c.join().unwrap()).collect();
    assert_eq!(got.iter().flatten().count(), 1);
}

pub fn buggy(_n: usize) {
    run(false)
}

pub fn fixed(_n: usize) {
    run(true)
}
