//! Peterson's mutual exclusion for two threads. Each thread raises its flag, gives the turn
//! away, then waits while the other's flag is up and the turn is the other's. The algorithm
//! needs the store of its own flag to be ordered before the load of the other's flag (a
//! store-load order). `Release`/`Acquire` do not give that (a store may be buffered past a
//! later load, as on x86 too), so both threads can read the other's flag as down and enter
//! together. With `SeqCst` on every access the four accesses are in one total order and the
//! lock is correct.

use std::hint;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

#[derive(Default)]
pub struct Peterson {
    flag: [AtomicBool; 2],
    turn: AtomicUsize,
    /// The orderings: (store, load).
    seq_cst: bool,
}

impl Peterson {
    /// BUG: `Release` stores and `Acquire` loads.
    pub fn release_acquire() -> Self {
        Peterson::default()
    }

    pub fn seq_cst() -> Self {
        Peterson {
            seq_cst: true,
            ..Peterson::default()
        }
    }

    fn orders(&self) -> (Ordering, Ordering) {
        if self.seq_cst {
            (Ordering::SeqCst, Ordering::SeqCst)
        } else {
            (Ordering::Release, Ordering::Acquire)
        }
    }

    pub fn lock(&self, me: usize) {
        let (store, load) = self.orders();
        let other = 1 - me;
        self.flag[me].store(true, store);
        self.turn.store(other, store);
        while self.flag[other].load(load) && self.turn.load(load) == other {
            hint::spin_loop();
        }
    }

    pub fn unlock(&self, me: usize) {
        self.flag[me].store(false, self.orders().0);
    }
}

fn scenario(lock: Peterson) {
    let shared = Arc::new((lock, AtomicUsize::new(0)));
    let enter = |shared: &(Peterson, AtomicUsize), me: usize| {
        shared.0.lock(me);
        let inside = shared.1.fetch_add(1, Ordering::SeqCst) + 1;
        assert_eq!(inside, 1, "both threads are inside the critical section");
        shared.1.fetch_sub(1, Ordering::SeqCst);
        shared.0.unlock(me);
    };
    let other = {
        let shared = Arc::clone(&shared);
        thread::spawn(move || enter(&shared, 1))
    };
    enter(&shared, 0);
    other.join().unwrap();
}

/// Peterson with `Release`/`Acquire`: panics when both threads get in.
pub fn scenario_buggy() {
    scenario(Peterson::release_acquire());
}

/// Peterson with `SeqCst`: never panics.
pub fn scenario_fixed() {
    scenario(Peterson::seq_cst());
}
