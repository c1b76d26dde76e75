//! A FIFO queue. `Buggy` keeps a head index beside the slots and claims a slot in two steps
//! (read the head, then store head + 1): two concurrent pops can claim the same slot, so one
//! of them finds it taken and reports the queue empty while another value waits. `Queue`
//! does each operation under one lock.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;

pub trait Fifo: Sync {
    fn push(&self, value: u32);
    fn pop(&self) -> Option<u32>;
}

#[derive(Default)]
pub struct Buggy {
    slots: Mutex<Vec<Option<u32>>>,
    head: AtomicUsize,
}

impl Fifo for Buggy {
    fn push(&self, value: u32) {
        self.slots.lock().unwrap().push(Some(value));
    }
    fn pop(&self) -> Option<u32> {
        // BUG: the head is read and advanced in two steps.
        let h = self.head.load(SeqCst);
        if h >= self.slots.lock().unwrap().len() {
            return None;
        }
        self.head.store(h + 1, SeqCst);
        self.slots.lock().unwrap()[h].take()
    }
}

#[derive(Default)]
pub struct Queue(Mutex<VecDeque<u32>>);

impl Fifo for Queue {
    fn push(&self, value: u32) {
        self.0.lock().unwrap().push_back(value);
    }
    fn pop(&self) -> Option<u32> {
        self.0.lock().unwrap().pop_front()
    }
}
