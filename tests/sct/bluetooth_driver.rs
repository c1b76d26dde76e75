//! The Bluetooth driver of KISS (Qadeer and Wu, PLDI 2004; SCTBench CS/bluetooth_driver): an
//! I/O request checks that the device is not stopping, then counts itself in `pending_io`;
//! the stopper sets `stopping`, drops its own reference, waits for the count to reach zero,
//! and marks the device stopped. The buggy `add` checks and increments in two steps, so the
//! device can stop in between and the request then runs on a stopped device. The fixed twin
//! checks and increments under one lock.

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;

struct Device {
    /// (pending_io, stopping)
    state: Mutex<(u32, bool)>,
    zero: Condvar,
    stopped: AtomicBool,
}

impl Device {
    /// Counts an I/O request in; false if the device is stopping.
    fn enter(&self, fixed: bool) -> bool {
        if fixed {
            let mut s = self.state.lock().unwrap();
            if s.1 {
                return false;
            }
            s.0 += 1;
            return true;
        }
        if self.state.lock().unwrap().1 {
            return false;
        }
        self.state.lock().unwrap().0 += 1;
        true
    }

    fn leave(&self) {
        let mut s = self.state.lock().unwrap();
        s.0 -= 1;
        if s.0 == 0 {
            self.zero.notify_all();
        }
    }
}

fn run(fixed: bool) {
    let d = Arc::new(Device {
        state: Mutex::new((1, false)),
        zero: Condvar::new(),
        stopped: AtomicBool::new(false),
    });
    let s = d.clone();
    let stopper = thread::spawn(move || {
        s.state.lock().unwrap().1 = true;
        s.leave();
        let g = s.state.lock().unwrap();
        let _g = s.zero.wait_while(g, |st| st.0 > 0).unwrap();
        s.stopped.store(true, SeqCst);
    });
    if d.enter(fixed) {
        assert!(!d.stopped.load(SeqCst), "I/O on a stopped device");
        d.leave();
    }
    stopper.join().unwrap();
}

pub fn buggy(_n: usize) {
    run(false)
}

pub fn fixed(_n: usize) {
    run(true)
}
