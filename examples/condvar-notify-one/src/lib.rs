//! A one-item hand-off slot guarded by one `Mutex` and one `Condvar`, `changed`, on which
//! two kinds of thread wait: producers wait for the slot to empty, consumers wait for it
//! to fill. `buggy::Slot` signals with `notify_one`, which wakes *some* waiter, possibly
//! one of the wrong kind: a consumer's "slot is empty now" can wake another consumer,
//! which re-checks, finds nothing, and goes back to sleep, while the producer that needed
//! that signal sleeps on. Nobody is left to notify: a hang.
//!
//! `fixed::Slot` signals with `notify_all` (every waiter re-checks its own condition).
//! Separate condvars for "not full" and "not empty" would fix it too.
//!
//! So that a plain `cargo test` cannot hang on the rare bad interleaving, the buggy slot
//! waits with a watchdog: a waiter that hears nothing for `STALL` panics with a
//! "hung" message instead of sleeping forever. The fixed slot needs no watchdog.

use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// How long a buggy waiter waits without the slot changing before declaring a hang.
pub const STALL: Duration = Duration::from_secs(2);

pub mod buggy {
    use super::STALL;
    use std::sync::{Condvar, Mutex, MutexGuard};
    use std::time::Instant;

    #[derive(Default)]
    pub struct Slot {
        item: Mutex<Option<u32>>,
        changed: Condvar,
    }

    impl Slot {
        pub fn new() -> Self {
            Self::default()
        }

        /// Waits for the slot to be empty, then fills it.
        pub fn put(&self, value: u32) {
            let item = self.item.lock().unwrap();
            let mut item = self.wait_while(item, |item| item.is_some(), "put");
            *item = Some(value);
            // BUG: may wake a producer waiting for an empty slot, not a consumer.
            self.changed.notify_one();
        }

        /// Waits for the slot to be full, then empties it.
        pub fn take(&self) -> u32 {
            let item = self.item.lock().unwrap();
            let mut item = self.wait_while(item, |item| item.is_none(), "take");
            let value = item.take().expect("checked by wait_while");
            // BUG: may wake another consumer, not the producer waiting to put.
            self.changed.notify_one();
            value
        }

        /// `Condvar::wait_while` with a watchdog: panics if `keep_waiting` still holds
        /// after `STALL` (a real hang; a correct slot changes within microseconds).
        fn wait_while<'a>(
            &self,
            mut guard: MutexGuard<'a, Option<u32>>,
            mut keep_waiting: impl FnMut(&mut Option<u32>) -> bool,
            op: &str,
        ) -> MutexGuard<'a, Option<u32>> {
            let deadline = Instant::now() + STALL;
            while keep_waiting(&mut guard) {
                let now = Instant::now();
                if now >= deadline {
                    // Unlock first, so the panic does not poison the mutex for the others.
                    drop(guard);
                    panic!("{op} hung: no notification reached it for {STALL:?}");
                }
                guard = self.changed.wait_timeout(guard, deadline - now).unwrap().0;
            }
            guard
        }
    }
}

pub mod fixed {
    use std::sync::{Condvar, Mutex};

    #[derive(Default)]
    pub struct Slot {
        item: Mutex<Option<u32>>,
        changed: Condvar,
    }

    impl Slot {
        pub fn new() -> Self {
            Self::default()
        }

        /// Waits for the slot to be empty, then fills it.
        pub fn put(&self, value: u32) {
            let item = self.item.lock().unwrap();
            let mut item = self.changed.wait_while(item, |item| item.is_some()).unwrap();
            *item = Some(value);
            // Wake every waiter; each re-checks its own condition.
            self.changed.notify_all();
        }

        /// Waits for the slot to be full, then empties it.
        pub fn take(&self) -> u32 {
            let item = self.item.lock().unwrap();
            let mut item = self.changed.wait_while(item, |item| item.is_none()).unwrap();
            let value = item.take().expect("checked by wait_while");
            self.changed.notify_all();
            value
        }
    }
}

/// Joins a thread; if it panicked, panics in the caller with the same message.
fn join<T>(handle: JoinHandle<T>) -> T {
    handle.join().unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("a thread panicked");
        panic!("{message}")
    })
}

/// Main starts a pool of two consumers in the background (a starter thread spawns them,
/// so main need not wait for thread creation) and immediately hands two items through the
/// slot. Each consumer takes one item. Every item must arrive, and nobody may hang.
fn scenario<S: Send + Sync + 'static>(slot: S, put: fn(&S, u32), take: fn(&S) -> u32) {
    let slot = Arc::new(slot);
    let pool = {
        let slot = Arc::clone(&slot);
        thread::spawn(move || {
            let consumers: Vec<_> = (0..2)
                .map(|_| {
                    let slot = Arc::clone(&slot);
                    thread::spawn(move || take(&slot))
                })
                .collect();
            consumers.into_iter().map(join).collect::<Vec<u32>>()
        })
    };
    put(&slot, 1);
    put(&slot, 2);
    let mut taken = join(pool);
    taken.sort_unstable();
    assert_eq!(taken, [1, 2]);
}

/// Runs the scenario with `buggy::Slot`; hangs (then panics, after `STALL`) when the race
/// fires.
pub fn scenario_buggy() {
    scenario(buggy::Slot::new(), buggy::Slot::put, buggy::Slot::take);
}

/// Runs the scenario with `fixed::Slot`; always completes.
pub fn scenario_fixed() {
    scenario(fixed::Slot::new(), fixed::Slot::put, fixed::Slot::take);
}
