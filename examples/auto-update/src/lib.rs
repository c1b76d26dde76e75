//! Haskell's auto-update library (dejafu §6.1), ported: a worker thread computes a value
//! on demand, keeps it for one update period, then forgets it, so many readers within a
//! period share one computation.
//!
//! `buggy::AutoUpdate` is the library's 2014 design. A reader that finds no current value
//! asks the worker to run and waits for `last_value`. The worker stores the value, sleeps
//! one period, then clears `current` and *takes `last_value` back*. If the reader is slow,
//! woken by the store but not run again before the period ends, the value is gone when it
//! looks, and the worker waits for the next request: both wait forever.
//!
//! `fixed::AutoUpdate` numbers the values: a reader waits for a value newer than the one
//! it saw when it asked, and the worker never takes a published value back.

use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

/// How long a computed value is served before the next read recomputes it.
pub const UPDATE_PERIOD: Duration = Duration::from_millis(10);

/// A Haskell `MVar`: a slot that is full or empty; `take` waits until it is full.
struct MVar<T> {
    slot: Mutex<Option<T>>,
    changed: Condvar,
}

impl<T: Clone> MVar<T> {
    fn new() -> Self {
        MVar {
            slot: Mutex::new(None),
            changed: Condvar::new(),
        }
    }

    fn take(&self) -> T {
        let mut slot = self.slot.lock().unwrap();
        loop {
            if let Some(v) = slot.take() {
                self.changed.notify_all();
                return v;
            }
            slot = self.changed.wait(slot).unwrap();
        }
    }

    /// Waits until full and returns a copy, leaving it full.
    fn read(&self) -> T {
        let mut slot = self.slot.lock().unwrap();
        loop {
            if let Some(v) = slot.as_ref() {
                return v.clone();
            }
            slot = self.changed.wait(slot).unwrap();
        }
    }

    fn try_put(&self, v: T) -> bool {
        let mut slot = self.slot.lock().unwrap();
        if slot.is_some() {
            return false;
        }
        *slot = Some(v);
        self.changed.notify_all();
        true
    }

    fn try_take(&self) -> Option<T> {
        let v = self.slot.lock().unwrap().take();
        self.changed.notify_all();
        v
    }
}

pub mod buggy {
    use super::*;

    pub struct AutoUpdate {
        current: Mutex<Option<u64>>,
        needs_running: MVar<()>,
        last_value: MVar<u64>,
    }

    impl AutoUpdate {
        /// Starts the worker; `action` computes a fresh value.
        pub fn start(action: impl Fn() -> u64 + Send + 'static) -> Arc<AutoUpdate> {
            let au = Arc::new(AutoUpdate {
                current: Mutex::new(None),
                needs_running: MVar::new(),
                last_value: MVar::new(),
            });
            let worker = au.clone();
            thread::spawn(move || loop {
                worker.needs_running.take();
                let value = action();
                *worker.current.lock().unwrap() = Some(value);
                worker.last_value.try_take();
                worker.last_value.try_put(value);
                thread::sleep(UPDATE_PERIOD);
                *worker.current.lock().unwrap() = None;
                // BUG: a reader woken by the value above may not have read it yet.
                worker.last_value.take();
            });
            au
        }

        pub fn get(&self) -> u64 {
            if let Some(v) = *self.current.lock().unwrap() {
                return v;
            }
            self.needs_running.try_put(());
            self.last_value.read()
        }
    }
}

pub mod fixed {
    use super::*;

    #[derive(Default)]
    struct State {
        current: Option<u64>,
        /// How many values the worker has published.
        generation: u64,
        last_value: u64,
        requested: bool,
    }

    pub struct AutoUpdate {
        state: Mutex<State>,
        changed: Condvar,
    }

    impl AutoUpdate {
        pub fn start(action: impl Fn() -> u64 + Send + 'static) -> Arc<AutoUpdate> {
            let au = Arc::new(AutoUpdate {
                state: Mutex::new(State::default()),
                changed: Condvar::new(),
            });
            let worker = au.clone();
            thread::spawn(move || loop {
                {
                    let mut st = worker.state.lock().unwrap();
                    while !st.requested {
                        st = worker.changed.wait(st).unwrap();
                    }
                    st.requested = false;
                }
                let value = action();
                {
                    let mut st = worker.state.lock().unwrap();
                    st.current = Some(value);
                    st.last_value = value;
                    st.generation += 1;
                    worker.changed.notify_all();
                }
                thread::sleep(UPDATE_PERIOD);
                worker.state.lock().unwrap().current = None;
            });
            au
        }

        pub fn get(&self) -> u64 {
            let mut st = self.state.lock().unwrap();
            if let Some(v) = st.current {
                return v;
            }
            let seen = st.generation;
            st.requested = true;
            self.changed.notify_all();
            while st.generation == seen {
                st = self.changed.wait(st).unwrap();
            }
            st.last_value
        }
    }
}

/// dejafu's test: start the updater and read once. Hangs when the bug strikes.
pub fn scenario_buggy() {
    let au = buggy::AutoUpdate::start(|| 42);
    assert_eq!(au.get(), 42);
}

pub fn scenario_fixed() {
    let au = fixed::AutoUpdate::start(|| 42);
    assert_eq!(au.get(), 42);
}
