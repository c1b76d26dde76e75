//! A lock written the way parking_lot's `RawMutex` is (a CAS fast path, a bounded spin, then
//! `park` with a `validate` that re-checks the state under the queue lock, and an unlock
//! that `unpark_one`s when the parked bit is set), over pulse's atomics, so its every step
//! is a scheduling point. `validate_parks` lets a test break the re-check (a lost wakeup).

#![allow(dead_code)]

use parking_lot_core::{
    deadlock, park, unpark_one, ParkResult, SpinWait, DEFAULT_PARK_TOKEN, DEFAULT_UNPARK_TOKEN,
};
use pulse_shim_std::sync::atomic::{AtomicU8, Ordering::*};

const LOCKED: u8 = 1;
const PARKED: u8 = 2;

pub struct ParkLock {
    state: AtomicU8,
    /// false: `validate` always lets the thread park (the bug).
    recheck: bool,
}

impl ParkLock {
    pub fn new() -> Self {
        ParkLock {
            state: AtomicU8::new(0),
            recheck: true,
        }
    }

    /// A lock whose `validate` does not re-check that the lock is still held.
    pub fn without_recheck() -> Self {
        ParkLock {
            state: AtomicU8::new(0),
            recheck: false,
        }
    }

    /// A new, unlocked lock with the same `validate` as `other`.
    pub fn clone_kind(other: &ParkLock) -> Self {
        ParkLock {
            state: AtomicU8::new(0),
            recheck: other.recheck,
        }
    }

    fn key(&self) -> usize {
        self as *const _ as usize
    }

    /// As parking_lot does, tells the deadlock detector (under pulse: the deadlock report)
    /// which thread holds the lock.
    pub fn lock(&self) {
        self.lock_raw();
        // SAFETY: called right after acquiring.
        unsafe { deadlock::acquire_resource(self.key()) };
    }

    fn lock_raw(&self) {
        if self
            .state
            .compare_exchange(0, LOCKED, Acquire, Relaxed)
            .is_ok()
        {
            return;
        }
        let mut spin = SpinWait::new();
        let mut s = self.state.load(Relaxed);
        loop {
            if s & LOCKED == 0 {
                match self
                    .state
                    .compare_exchange_weak(s, s | LOCKED, Acquire, Relaxed)
                {
                    Ok(_) => return,
                    Err(now) => s = now,
                }
                continue;
            }
            if s & PARKED == 0 && spin.spin() {
                s = self.state.load(Relaxed);
                continue;
            }
            if s & PARKED == 0 {
                if let Err(now) = self
                    .state
                    .compare_exchange_weak(s, s | PARKED, Relaxed, Relaxed)
                {
                    s = now;
                    continue;
                }
            }
            let validate = || !self.recheck || self.state.load(Relaxed) == LOCKED | PARKED;
            // SAFETY: the key is this lock's address; the callbacks call nothing of ours.
            let r = unsafe {
                park(
                    self.key(),
                    validate,
                    || {},
                    |_, _| {},
                    DEFAULT_PARK_TOKEN,
                    None,
                )
            };
            assert!(
                matches!(r, ParkResult::Unparked(_) | ParkResult::Invalid),
                "{r:?}"
            );
            spin.reset();
            s = self.state.load(Relaxed);
        }
    }

    pub fn unlock(&self) {
        // SAFETY: called right before releasing.
        unsafe { deadlock::release_resource(self.key()) };
        if self
            .state
            .compare_exchange(LOCKED, 0, Release, Relaxed)
            .is_ok()
        {
            return;
        }
        // SAFETY: as in `lock`.
        unsafe {
            unpark_one(self.key(), |r| {
                self.state
                    .store(if r.have_more_threads { PARKED } else { 0 }, Release);
                DEFAULT_UNPARK_TOKEN
            });
        }
    }
}
