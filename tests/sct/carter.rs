//! After SCTBench Inspect/carter01: a lock held across a wait. The main thread takes the
//! log's lock to append, and, still holding it, joins a worker that also appends: if the
//! worker has not taken the lock yet, each waits for the other. The fixed twin drops the
//! guard before joining.

use std::sync::{Arc, Mutex};
use std::thread;

fn run(fixed: bool) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    let worker = thread::spawn(move || l.lock().unwrap().push("worker"));
    let mut guard = log.lock().unwrap();
    guard.push("main");
    if fixed {
        drop(guard);
        worker.join().unwrap();
    } else {
        worker.join().unwrap();
        drop(guard);
    }
    assert_eq!(log.lock().unwrap().len(), 2);
}

pub fn buggy(_n: usize) {
    run(false)
}

pub fn fixed(_n: usize) {
    run(true)
}
