//! Components tested with `pulse::statem`: each has one sequential model (in `tests/`), a
//! buggy version whose race breaks linearizability, and a correct twin. Written against plain
//! std; `cargo pulse test` schedules them.
//!
//! - [`table`]: a sharded table after the ETS/DETS thesis (`insert`, `delete_all`, `get`,
//!   `to_vec`) whose `to_vec` is not atomic with concurrent inserts, its fixed twin, and a
//!   file-backed variant whose disk writes are one atomic step each.
//! - [`queue`]: a FIFO queue whose `pop` claims a slot in two steps, and a locked one.
//! - [`kv`]: a key-value store whose `append` reads and writes under separate locks, and one
//!   that appends under one lock.
//! - The process registry is `proc-reg`'s (the PULSE paper's, with the client-side check).
//!
//! One file (no out-of-line modules): pulse's corpus tests instrument each example's
//! `src/lib.rs` as a whole.

pub mod table {
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
            sorted(
                all.iter()
                    .flat_map(|s| s.iter().map(|(k, v)| (*k, *v)))
                    .collect(),
            )
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
}

pub mod queue {
    //! A FIFO queue. `Buggy` keeps a head index beside the slots and claims a slot in two steps
    //! (read the head, then store head + 1): two concurrent pops can claim the same slot, so one
    //! of them finds it taken and reports the queue empty while another value waits. `Queue`
    //! does each operation under one lock.

    use std::collections::VecDeque;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Mutex;

    pub trait Fifo: Sync {
        fn push(&self, value: u32);
        fn pop(&self) -> Option<u32>;
    }

    #[derive(Default)]
    pub struct Buggy {
        slots: Mutex<Vec<Option<u32>>>,
        head: AtomicUsize,
    }

    impl Fifo for Buggy {
        fn push(&self, value: u32) {
            self.slots.lock().unwrap().push(Some(value));
        }
        fn pop(&self) -> Option<u32> {
            // BUG: the head is read and advanced in two steps.
            let h = self.head.load(SeqCst);
            if h >= self.slots.lock().unwrap().len() {
                return None;
            }
            self.head.store(h + 1, SeqCst);
            self.slots.lock().unwrap()[h].take()
        }
    }

    #[derive(Default)]
    pub struct Queue(Mutex<VecDeque<u32>>);

    impl Fifo for Queue {
        fn push(&self, value: u32) {
            self.0.lock().unwrap().push_back(value);
        }
        fn pop(&self) -> Option<u32> {
            self.0.lock().unwrap().pop_front()
        }
    }
}

pub mod kv {
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
            self.0
                .write()
                .unwrap()
                .insert(key.to_string(), value.to_string());
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
            self.0
                .write()
                .unwrap()
                .insert(key.to_string(), value.to_string());
        }
        fn append(&self, key: &str, value: &str) {
            self.0
                .write()
                .unwrap()
                .entry(key.to_string())
                .or_default()
                .push_str(value);
        }
    }
}
