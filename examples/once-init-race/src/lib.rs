//! A lazily loaded configuration shared by request handlers. Loading has a side effect
//! (it reads a file, opens a connection...; here it is counted) and must happen once.
//!
//! `BuggyConfigCache::get` checks `Mutex<Option<_>>` for a cached config in one critical
//! section and, if there is none, loads the config and stores it in a second one. Two
//! handlers can both see `None`, both load, and the second store replaces the first: the
//! config is loaded twice and the handlers hold different copies. `ConfigCache` uses
//! `OnceLock::get_or_init`, which runs the initializer once and makes every other caller
//! wait for it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;

#[derive(Debug, PartialEq, Eq)]
pub struct Config {
    pub endpoint: String,
    pub retries: u32,
}

/// Stands in for reading the configuration from disk; counts how often it ran.
fn load_config(loads: &AtomicUsize) -> Config {
    loads.fetch_add(1, Ordering::SeqCst);
    Config { endpoint: "https://db.internal:5432".to_owned(), retries: 3 }
}

#[derive(Default)]
pub struct BuggyConfigCache {
    slot: Mutex<Option<Arc<Config>>>,
    loads: AtomicUsize,
}

impl BuggyConfigCache {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn get(&self) -> Arc<Config> {
        // Critical section 1: is it cached?
        if let Some(config) = self.slot.lock().unwrap().as_ref() {
            return Arc::clone(config);
        }
        // BUG: unlocked. Another caller may be loading too.
        let config = Arc::new(load_config(&self.loads));
        // Critical section 2: cache it (replacing another caller's copy, if any).
        *self.slot.lock().unwrap() = Some(Arc::clone(&config));
        config
    }

    /// How many times the configuration was loaded.
    pub fn loads(&self) -> usize {
        self.loads.load(Ordering::SeqCst)
    }
}

#[derive(Default)]
pub struct ConfigCache {
    cell: OnceLock<Arc<Config>>,
    loads: AtomicUsize,
}

impl ConfigCache {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn get(&self) -> Arc<Config> {
        Arc::clone(self.cell.get_or_init(|| Arc::new(load_config(&self.loads))))
    }

    /// How many times the configuration was loaded.
    pub fn loads(&self) -> usize {
        self.loads.load(Ordering::SeqCst)
    }
}

/// Two request handlers, one on the main thread and one on another thread, fetch the
/// config concurrently from a fresh cache. It must be loaded once, and both handlers must
/// get the same instance.
fn scenario<C: Send + Sync + 'static>(cache: C, get: fn(&C) -> Arc<Config>, loads: fn(&C) -> usize) {
    let cache = Arc::new(cache);
    let other = {
        let cache = Arc::clone(&cache);
        thread::spawn(move || get(&cache))
    };
    let mine = get(&cache);
    let theirs = other.join().expect("handler panicked");
    assert_eq!(loads(&cache), 1, "the configuration must be loaded exactly once");
    assert!(Arc::ptr_eq(&mine, &theirs), "handlers got different config instances");
}

/// Runs the scenario against `BuggyConfigCache`; panics when the config loads twice.
pub fn scenario_buggy() {
    scenario(BuggyConfigCache::new(), BuggyConfigCache::get, BuggyConfigCache::loads);
}

/// Runs the scenario against `ConfigCache`; never panics.
pub fn scenario_fixed() {
    scenario(ConfigCache::new(), ConfigCache::get, ConfigCache::loads);
}
