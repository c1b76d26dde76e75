//! A key-value store of strings with `get`, `put` and `append` (Jepsen's key-value workload).
//! `Buggy::append` reads the value under the read lock and writes the longer one under the
//! write lock: two concurrent appends to one key can both read the old value, and one append
//! is lost. `Store::append` does both under the write lock.

use std::collections::HashMap;
use std::sync::RwLock;

pub trait KvStore: Sync {
    fn get(&self, key: &str) -> String;
    fn put(&self, key: &str, value: &str);
    fn append(&self, key: &str, value: &str);
}

#[derive(Default)]
pub struct Buggy(RwLock<HashMap<String, String>>);

impl KvStore for Buggy {
    fn get(&self, key: &str) -> String {
        self.0.read().unwrap().get(key).cloned().unwrap_or_default()
    }
    fn put(&self, key: &str, value: &str) {
        self.0.write().unwrap().insert(key.to_string(), value.to_string());
    }
    fn append(&self, key: &str, value: &str) {
        // BUG: read, then write under a second lock.
        let old = self.get(key);
        self.0.write().unwrap().insert(key.to_string(), old + value);
    }
}

#[derive(Default)]
pub struct Store(RwLock<HashMap<String, String>>);

impl KvStore for Store {
    fn get(&self, key: &str) -> String {
        self.0.read().unwrap().get(key).cloned().unwrap_or_default()
    }
    fn put(&self, key: &str, value: &str) {
        self.0.write().unwrap().insert(key.to_string(), value.to_string());
    }
    fn append(&self, key: &str, value: &str) {
        self.0.write().unwrap().entry(key.to_string()).or_default().push_str(value);
    }
}
