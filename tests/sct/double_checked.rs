//! Double-checked lazy initialisation gone wrong: the initialiser sets the `ready` flag
//! before it stores the value, so a reader on the fast path sees "ready" and reads the
//! unset value. The fixed twin stores the value first.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread;

struct Lazy {
    ready: AtomicBool,
    value: AtomicUsize,
    init: Mutex<()>,
}

impl Lazy {
    fn get(&self, fixed: bool) -> usize {
        if !self.ready.load(SeqCst) {
            let _g = self.init.lock().unwrap();
            if !self.ready.load(SeqCst) {
                if fixed {
                    self.value.store(42, SeqCst);
                    self.ready.store(true, SeqCst);
                } else {
                    self.ready.store(true, SeqCst);
                    self.value.store(42, SeqCst);
                }
            }
        }
        self.value.load(SeqCst)
    }
}

fn run(fixed: bool) {
    let l = Arc::new(Lazy {
        ready: AtomicBool::new(false),
        value: AtomicUsize::new(0),
        init: Mutex::new(()),
    });
    let other = l.clone();
    let t = thread::spawn(move || assert_eq!(other.get(fixed), 42, "read before init"));
    assert_eq!(l.get(fixed), 42, "read before init");
    t.join().unwrap();
}

pub fn buggy(_n: usize) {
    run(false)
}

pub fn fixed(_n: usize) {
    run(true)
}
