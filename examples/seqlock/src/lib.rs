//! A sequence lock protecting a pair of numbers that must always be equal. The writer makes
//! the sequence odd, writes both halves, makes it even again; a reader reads the sequence,
//! both halves, the sequence again, and retries if it changed or was odd. The halves are
//! relaxed atomics (they are read while being written). `BuggySeqLock` bumps the sequence
//! with plain `Relaxed`/`Release` RMWs and has no fences: a reader can read a new half and
//! then an old sequence number, and accept a torn pair. `SeqLock` follows Boehm ("Can
//! seqlocks get along with programming language memory models?", 2012): a release fence
//! after making the sequence odd, an acquire fence before re-reading it.

use std::hint;
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

#[derive(Default)]
pub struct SeqLock {
    seq: AtomicU64,
    a: AtomicU64,
    b: AtomicU64,
    fenced: bool,
}

impl SeqLock {
    /// BUG: no fences.
    pub fn buggy() -> Self {
        SeqLock::default()
    }

    pub fn new() -> Self {
        SeqLock {
            fenced: true,
            ..SeqLock::default()
        }
    }

    pub fn write(&self, v: u64) {
        self.seq.fetch_add(1, Ordering::Relaxed);
        if self.fenced {
            fence(Ordering::Release);
        }
        self.a.store(v, Ordering::Relaxed);
        self.b.store(v, Ordering::Relaxed);
        self.seq.fetch_add(1, Ordering::Release);
    }

    pub fn read(&self) -> (u64, u64) {
        loop {
            let s1 = self.seq.load(Ordering::Acquire);
            if s1 % 2 == 1 {
                hint::spin_loop();
                continue;
            }
            let pair = (self.a.load(Ordering::Relaxed), self.b.load(Ordering::Relaxed));
            if self.fenced {
                fence(Ordering::Acquire);
            }
            if self.seq.load(Ordering::Relaxed) == s1 {
                return pair;
            }
        }
    }
}

fn scenario(lock: SeqLock) {
    let lock = Arc::new(lock);
    let writer = {
        let lock = Arc::clone(&lock);
        thread::spawn(move || {
            lock.write(1);
            lock.write(2);
        })
    };
    let (a, b) = lock.read();
    assert_eq!(a, b, "the reader accepted a torn pair");
    writer.join().unwrap();
}

/// Without fences: panics when the reader accepts a torn pair.
pub fn scenario_buggy() {
    scenario(SeqLock::buggy());
}

/// With Boehm's fences: never panics.
pub fn scenario_fixed() {
    scenario(SeqLock::new());
}
