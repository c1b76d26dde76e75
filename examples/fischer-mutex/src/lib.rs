//! Fischer's timed mutual exclusion (pulse_time §2.1.7): no atomic read-modify-write, only
//! a shared variable and two delays. A thread waits until the variable is 0, writes its id
//! within `D` of reading that 0, waits `T`, and enters if its id is still there. It is
//! correct only if `T` is longer than `D` (plus however late a step can run): then every
//! thread that read 0 before our write has written by the time we look again.
//!
//! `BUGGY` uses `D = 200 ms, T = 100 ms`: a thread that read 0 just before another's write
//! lands can write after the other has checked, and both enter. `FIXED` uses `D = 100 ms,
//! T = 400 ms`: correct on any machine whose steps take less than (T - D) / 2 = 150 ms.

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// The algorithm's delays, and how the threads use the lock.
#[derive(Clone, Copy)]
pub struct Timing {
    /// At most this long between reading 0 and writing one's id.
    pub write_within: Duration,
    /// How long to wait after writing before checking.
    pub check_after: Duration,
    /// How often a waiting thread looks at the variable again.
    pub poll: Duration,
    /// Time spent inside the critical section.
    pub hold: Duration,
}

pub const BUGGY: Timing = Timing {
    write_within: Duration::from_millis(200),
    check_after: Duration::from_millis(100),
    poll: Duration::from_millis(250),
    hold: Duration::from_millis(300),
};

pub const FIXED: Timing = Timing {
    write_within: Duration::from_millis(100),
    check_after: Duration::from_millis(400),
    poll: Duration::from_millis(250),
    hold: Duration::from_millis(300),
};

pub struct Fischer {
    owner: AtomicU64,
    timing: Timing,
}

impl Fischer {
    pub fn new(timing: Timing) -> Self {
        Fischer {
            owner: AtomicU64::new(0),
            timing,
        }
    }

    /// Enters the critical section as `id` (never 0).
    pub fn lock(&self, id: u64) {
        loop {
            while self.owner.load(SeqCst) != 0 {
                thread::sleep(self.timing.poll);
            }
            // The slowest write the algorithm allows.
            thread::sleep(self.timing.write_within);
            self.owner.store(id, SeqCst);
            thread::sleep(self.timing.check_after);
            if self.owner.load(SeqCst) == id {
                return;
            }
        }
    }

    pub fn unlock(&self) {
        self.owner.store(0, SeqCst);
    }
}

/// Two threads enter the critical section three times each; a shared counter says how
/// many are inside.
fn scenario(timing: Timing) {
    let lock = Arc::new(Fischer::new(timing));
    let inside = Arc::new(AtomicU64::new(0));
    let worker = |id: u64| {
        let (lock, inside) = (lock.clone(), inside.clone());
        move || {
            for _ in 0..3 {
                lock.lock(id);
                assert_eq!(inside.fetch_add(1, SeqCst), 0, "thread {id} entered a taken lock");
                thread::sleep(timing.hold);
                inside.fetch_sub(1, SeqCst);
                lock.unlock();
            }
        }
    };
    let other = thread::spawn(worker(2));
    worker(1)();
    other.join().unwrap();
}

pub fn scenario_buggy() {
    scenario(BUGGY);
}

pub fn scenario_fixed() {
    scenario(FIXED);
}
