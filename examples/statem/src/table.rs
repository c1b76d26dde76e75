//! A table split into shards, each under its own lock, after the ETS tables of Hans Svensson
//! and Thomas Arts' thesis (`../shared/papers/testing-erlang-concurrency-ets-dets.txt`).
//!
//! `Buggy::to_vec` visits the shards one lock at a time: an insert into an early shard can
//! be missed while a later insert into a later shard is seen, a snapshot of no moment. The
//! fixed `Table::to_vec` and `delete_all` hold every shard's lock at once.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

pub const SHARDS: usize = 4;

fn shard_of(key: u8) -> usize {
    usize::from(key) % SHARDS
}

/// What both tables do.
pub trait ShardedTable: Sync {
    fn insert(&self, key: u8, value: u32);
    fn get(&self, key: u8) -> Option<u32>;
    fn delete_all(&self);
    /// Every entry, sorted by key.
    fn to_vec(&self) -> Vec<(u8, u32)>;
}

#[derive(Default)]
struct Shards {
    shards: [Mutex<BTreeMap<u8, u32>>; SHARDS],
}

impl Shards {
    fn shard(&self, key: u8) -> MutexGuard<'_, BTreeMap<u8, u32>> {
        self.shards[shard_of(key)].lock().unwrap()
    }
    fn all(&self) -> Vec<MutexGuard<'_, BTreeMap<u8, u32>>> {
        self.shards.iter().map(|s| s.lock().unwrap()).collect()
    }
}

fn sorted(mut entries: Vec<(u8, u32)>) -> Vec<(u8, u32)> {
    entries.sort_unstable();
    entries
}

/// `to_vec` reads the shards one at a time.
#[derive(Default)]
pub struct Buggy(Shards);

impl ShardedTable for Buggy {
    fn insert(&self, key: u8, value: u32) {
        self.0.shard(key).insert(key, value);
    }
    fn get(&self, key: u8) -> Option<u32> {
        self.0.shard(key).get(&key).copied()
    }
    fn delete_all(&self) {
        for mut shard in self.0.all() {
            shard.clear();
        }
    }
    fn to_vec(&self) -> Vec<(u8, u32)> {
        let mut out = Vec::new();
        for shard in &self.0.shards {
            // BUG: each shard is locked on its own; inserts land between the reads.
            out.extend(shard.lock().unwrap().iter().map(|(k, v)| (*k, *v)));
        }
        sorted(out)
    }
}

/// `to_vec` holds every shard's lock (taken in shard order, as `delete_all` does).
#[derive(Default)]
pub struct Table(Shards);

impl ShardedTable for Table {
    fn insert(&self, key: u8, value: u32) {
        self.0.shard(key).insert(key, value);
    }
    fn get(&self, key: u8) -> Option<u32> {
        self.0.shard(key).get(&key).copied()
    }
    fn delete_all(&self) {
        for mut shard in self.0.all() {
            shard.clear();
        }
    }
    fn to_vec(&self) -> Vec<(u8, u32)> {
        let all = self.0.all();
        sorted(all.iter().flat_map(|s| s.iter().map(|(k, v)| (*k, *v))).collect())
    }
}

/// The fixed table kept on disk too, like DETS: each shard is a file, rewritten under the
/// shard's lock after every change, and `to_vec` reads the files. A disk write is one atomic
/// step for pulse (`#[cfg_attr(pulse, pulse::atomic)]`): pulse does not schedule file I/O,
/// and the shard lock already orders it.
pub struct FileTable {
    dir: std::path::PathBuf,
    shards: Shards,
}

impl FileTable {
    /// A table stored under `dir` (created; removed when the table is dropped).
    pub fn new(dir: std::path::PathBuf) -> FileTable {
        std::fs::create_dir_all(&dir).expect("creating the table's directory");
        FileTable {
            dir,
            shards: Shards::default(),
        }
    }

    fn path(&self, shard: usize) -> std::path::PathBuf {
        self.dir.join(format!("shard-{shard}"))
    }

    #[cfg_attr(pulse, pulse::atomic)]
    fn write_shard(&self, shard: usize, entries: &BTreeMap<u8, u32>) {
        let text: String = entries.iter().map(|(k, v)| format!("{k} {v}\n")).collect();
        std::fs::write(self.path(shard), text).expect("writing a shard");
    }

    #[cfg_attr(pulse, pulse::atomic)]
    fn read_shard(&self, shard: usize) -> Vec<(u8, u32)> {
        let text = std::fs::read_to_string(self.path(shard)).unwrap_or_default();
        text.lines()
            .filter_map(|l| {
                let (k, v) = l.split_once(' ')?;
                Some((k.parse().ok()?, v.parse().ok()?))
            })
            .collect()
    }
}

impl Drop for FileTable {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl ShardedTable for FileTable {
    fn insert(&self, key: u8, value: u32) {
        let mut shard = self.shards.shard(key);
        shard.insert(key, value);
        self.write_shard(shard_of(key), &shard);
    }
    fn get(&self, key: u8) -> Option<u32> {
        self.shards.shard(key).get(&key).copied()
    }
    fn delete_all(&self) {
        for (i, mut shard) in self.shards.all().into_iter().enumerate() {
            shard.clear();
            self.write_shard(i, &shard);
        }
    }
    fn to_vec(&self) -> Vec<(u8, u32)> {
        let all = self.shards.all();
        let entries = (0..all.len()).flat_map(|i| self.read_shard(i)).collect();
        drop(all);
        sorted(entries)
    }
}
