//! A one-shot mailbox: the producer writes a value, then raises a `ready` flag; the consumer
//! waits for the flag, then reads the value. `BuggyMailbox` raises and reads the flag with
//! `Relaxed`, which orders nothing: the consumer may see the flag and still read the value
//! the mailbox had before (on ARM and POWER it does; x86's stronger hardware hides it).
//! `Mailbox` uses `Release` for the flag's store and `Acquire` for its load, so everything
//! the producer did before raising the flag is visible once the flag is seen.

use std::hint;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

#[derive(Default)]
pub struct BuggyMailbox {
    value: AtomicU64,
    ready: AtomicBool,
}

impl BuggyMailbox {
    pub fn put(&self, v: u64) {
        self.value.store(v, Ordering::Relaxed);
        // BUG: a relaxed flag does not publish the value stored before it.
        self.ready.store(true, Ordering::Relaxed);
    }

    pub fn take(&self) -> u64 {
        while !self.ready.load(Ordering::Relaxed) {
            hint::spin_loop();
        }
        self.value.load(Ordering::Relaxed)
    }
}

#[derive(Default)]
pub struct Mailbox {
    value: AtomicU64,
    ready: AtomicBool,
}

impl Mailbox {
    pub fn put(&self, v: u64) {
        self.value.store(v, Ordering::Relaxed);
        self.ready.store(true, Ordering::Release);
    }

    pub fn take(&self) -> u64 {
        while !self.ready.load(Ordering::Acquire) {
            hint::spin_loop();
        }
        self.value.load(Ordering::Relaxed)
    }
}

fn scenario<M: Default + Send + Sync + 'static>(put: fn(&M, u64), take: fn(&M) -> u64) {
    let mailbox = Arc::new(M::default());
    let producer = {
        let mailbox = Arc::clone(&mailbox);
        thread::spawn(move || put(&mailbox, 42))
    };
    assert_eq!(take(&mailbox), 42, "the flag was seen before the value");
    producer.join().unwrap();
}

/// With `BuggyMailbox`: panics when the consumer reads the value before the producer's.
pub fn scenario_buggy() {
    scenario(BuggyMailbox::put, BuggyMailbox::take);
}

/// With `Mailbox`: never panics.
pub fn scenario_fixed() {
    scenario(Mailbox::put, Mailbox::take);
}
