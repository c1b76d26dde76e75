//! A report is computed on a worker thread. `buggy::fetch_report` starts the worker,
//! sleeps 10 ms ("the worker needs microseconds; 10 ms is plenty") and then reads the
//! result the worker should have stored. A sleep orders nothing: if the worker has not
//! run yet when the sleep ends (a loaded machine, a descheduled thread, a debugger, or a
//! scheduler that simply runs the sleeper first), the result is not there.
//!
//! `fixed::fetch_report` waits for the worker's message on a channel (and joins it), which
//! orders the read after the write however long the worker takes.

/// Stands in for real work.
fn compute_report() -> u64 {
    (1..=10).sum()
}

pub mod buggy {
    use std::sync::{Arc, Mutex};
    use std::thread;
    use std::time::Duration;

    pub fn fetch_report() -> u64 {
        let slot: Arc<Mutex<Option<u64>>> = Arc::new(Mutex::new(None));
        let worker = {
            let slot = Arc::clone(&slot);
            thread::spawn(move || {
                *slot.lock().unwrap() = Some(super::compute_report());
            })
        };
        // BUG: a sleep is not a synchronisation. Nothing makes the worker run first.
        thread::sleep(Duration::from_millis(10));
        let report = slot.lock().unwrap().take();
        worker.join().expect("worker panicked");
        report.expect("the worker has not stored the report yet")
    }
}

pub mod fixed {
    use std::sync::mpsc;
    use std::thread;

    pub fn fetch_report() -> u64 {
        let (tx, rx) = mpsc::channel();
        let worker = thread::spawn(move || {
            tx.send(super::compute_report()).expect("receiver hung up");
        });
        // Blocks until the worker has sent the report.
        let report = rx.recv().expect("worker exited without a report");
        worker.join().expect("worker panicked");
        report
    }
}

/// Fetches one report; it must be the computed value.
fn scenario(fetch_report: fn() -> u64) {
    assert_eq!(fetch_report(), compute_report());
}

/// Runs `buggy::fetch_report`; panics when the sleep ends before the worker ran.
pub fn scenario_buggy() {
    scenario(buggy::fetch_report);
}

/// Runs `fixed::fetch_report`; never panics.
pub fn scenario_fixed() {
    scenario(fixed::fetch_report);
}
