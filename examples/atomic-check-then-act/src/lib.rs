//! A service that starts its background flusher lazily, on first use, from whichever
//! thread gets there first. `BuggyService::ensure_started` loads the `started` flag and,
//! if it is 0, stores 1 and starts the flusher: a check-then-act on an atomic. Two
//! threads can both load 0 before either stores 1, and the flusher is started twice.
//!
//! `Service::ensure_started` claims the flag with `compare_exchange(0, 1)`, so exactly one
//! caller wins.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

#[derive(Default)]
pub struct BuggyService {
    started: AtomicUsize,
    flushers_started: AtomicUsize,
}

impl BuggyService {
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts the background flusher unless it is already running.
    pub fn ensure_started(&self) {
        if self.started.load(Ordering::SeqCst) == 0 {
            // BUG: another caller may also have loaded 0 and be about to start one too.
            self.started.store(1, Ordering::SeqCst);
            self.start_flusher();
        }
    }

    fn start_flusher(&self) {
        // Stands in for spawning the flusher; it must happen once per service.
        self.flushers_started.fetch_add(1, Ordering::SeqCst);
    }

    pub fn flushers_started(&self) -> usize {
        self.flushers_started.load(Ordering::SeqCst)
    }
}

#[derive(Default)]
pub struct Service {
    started: AtomicUsize,
    flushers_started: AtomicUsize,
}

impl Service {
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts the background flusher unless it is already running.
    pub fn ensure_started(&self) {
        // Only the caller whose compare_exchange turns 0 into 1 starts the flusher.
        if self
            .started
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            self.start_flusher();
        }
    }

    fn start_flusher(&self) {
        self.flushers_started.fetch_add(1, Ordering::SeqCst);
    }

    pub fn flushers_started(&self) -> usize {
        self.flushers_started.load(Ordering::SeqCst)
    }
}

/// Two request handlers, one on the main thread and one on another thread, each call
/// `ensure_started` on a fresh service. The flusher must have been started exactly once.
fn scenario<S: Send + Sync + 'static>(service: S, ensure_started: fn(&S), started: fn(&S) -> usize) {
    let service = Arc::new(service);
    let other = {
        let service = Arc::clone(&service);
        thread::spawn(move || ensure_started(&service))
    };
    ensure_started(&service);
    other.join().expect("handler panicked");
    assert_eq!(started(&service), 1, "the flusher must be started exactly once");
}

/// Runs the scenario against `BuggyService`; panics when the flusher starts twice.
pub fn scenario_buggy() {
    scenario(BuggyService::new(), BuggyService::ensure_started, BuggyService::flushers_started);
}

/// Runs the scenario against `Service`; never panics.
pub fn scenario_fixed() {
    scenario(Service::new(), Service::ensure_started, Service::flushers_started);
}
