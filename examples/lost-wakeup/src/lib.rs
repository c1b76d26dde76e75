//! A work queue whose `pop` waits on a condition variable with `if` instead of `while`.
//! A woken consumer must re-acquire the mutex before it runs; if another consumer takes
//! the lock first and pops the item the notification was for, the woken consumer carries
//! on with the queue empty and `pop_front` finds nothing. (A spurious wakeup, which
//! `Condvar` allows, has the same effect.)
//!
//! `fixed::WorkQueue` re-checks the condition after every wakeup (`Condvar::wait_while`).

use std::sync::Arc;
use std::thread::{self, JoinHandle};

pub mod buggy {
    use std::collections::VecDeque;
    use std::sync::{Condvar, Mutex};

    pub struct WorkQueue {
        items: Mutex<VecDeque<u32>>,
        not_empty: Condvar,
    }

    impl WorkQueue {
        pub fn new() -> Self {
            WorkQueue { items: Mutex::new(VecDeque::new()), not_empty: Condvar::new() }
        }

        pub fn push(&self, item: u32) {
            self.items.lock().unwrap().push_back(item);
            self.not_empty.notify_one();
        }

        /// Blocks until an item is available and returns it.
        pub fn pop(&self) -> u32 {
            let mut items = self.items.lock().unwrap();
            // BUG: `if`, not `while`. After the wakeup the queue may be empty again.
            if items.is_empty() {
                items = self.not_empty.wait(items).unwrap();
            }
            items.pop_front().expect("woke up to an empty queue")
        }
    }

    impl Default for WorkQueue {
        fn default() -> Self {
            Self::new()
        }
    }
}

pub mod fixed {
    use std::collections::VecDeque;
    use std::sync::{Condvar, Mutex};

    pub struct WorkQueue {
        items: Mutex<VecDeque<u32>>,
        not_empty: Condvar,
    }

    impl WorkQueue {
        pub fn new() -> Self {
            WorkQueue { items: Mutex::new(VecDeque::new()), not_empty: Condvar::new() }
        }

        pub fn push(&self, item: u32) {
            self.items.lock().unwrap().push_back(item);
            self.not_empty.notify_one();
        }

        /// Blocks until an item is available and returns it.
        pub fn pop(&self) -> u32 {
            let items = self.items.lock().unwrap();
            // Re-checks `is_empty` after every wakeup, so a stolen item or a spurious
            // wakeup just means waiting again.
            let mut items = self.not_empty.wait_while(items, |items| items.is_empty()).unwrap();
            items.pop_front().expect("wait_while returned with the queue empty")
        }
    }

    impl Default for WorkQueue {
        fn default() -> Self {
            Self::new()
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

/// What the scenario needs from a queue, so one scenario drives both twins.
trait Queue: Send + Sync + 'static {
    fn push(&self, item: u32);
    fn pop(&self) -> u32;
}

impl Queue for buggy::WorkQueue {
    fn push(&self, item: u32) {
        buggy::WorkQueue::push(self, item)
    }
    fn pop(&self) -> u32 {
        buggy::WorkQueue::pop(self)
    }
}

impl Queue for fixed::WorkQueue {
    fn push(&self, item: u32) {
        fixed::WorkQueue::push(self, item)
    }
    fn pop(&self) -> u32 {
        fixed::WorkQueue::pop(self)
    }
}

/// Two consumers each pop one job while the main thread pushes two. Every job must be
/// taken exactly once.
fn scenario<Q: Queue>(queue: Q) {
    let queue = Arc::new(queue);
    let consumers: Vec<_> = (0..2)
        .map(|_| {
            let queue = Arc::clone(&queue);
            thread::spawn(move || queue.pop())
        })
        .collect();
    queue.push(1);
    queue.push(2);
    let mut popped: Vec<u32> = consumers.into_iter().map(join).collect();
    popped.sort_unstable();
    assert_eq!(popped, [1, 2], "each job must be popped exactly once");
}

/// Runs the scenario against `buggy::WorkQueue`; a consumer panics when the race fires.
pub fn scenario_buggy() {
    scenario(buggy::WorkQueue::new());
}

/// Runs the scenario against `fixed::WorkQueue`; never panics.
pub fn scenario_fixed() {
    scenario(fixed::WorkQueue::new());
}
