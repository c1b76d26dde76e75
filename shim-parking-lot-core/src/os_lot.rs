//! The parking lot outside a pulse execution: a real one on std's `Mutex` and `Condvar`,
//! for code that runs on OS threads (before `pulse::check`, or never under it).
//!
//! One process-wide lock guards every queue (parking_lot_core shards them into hashed
//! buckets; code outside an execution is set-up code, where one lock is plenty). Each OS
//! thread has one `Waiter`, queued while it is parked; an unparker removes it from its
//! queue and sets its token under the table lock, then signals it after releasing the lock.
//! A thread whose wait timed out takes the table lock again before deciding, so an unpark
//! that got there first still wins, as in parking_lot_core.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::types::{FilterOp, ParkResult, ParkToken, RequeueOp, UnparkResult, UnparkToken};

struct Waiter {
    /// The key whose queue it is in; written under the table lock.
    key: AtomicUsize,
    /// Its `ParkToken`; written under the table lock.
    park_token: AtomicUsize,
    /// `Some` once unparked; set under the table lock.
    unparked: Mutex<Option<UnparkToken>>,
    wakeup: Condvar,
}

struct Table {
    queues: BTreeMap<usize, VecDeque<Arc<Waiter>>>,
    /// When the next unpark is fair (one timer for all keys).
    fair_after: Option<Instant>,
    /// xorshift state for the fair timer's jitter.
    seed: u32,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    queues: BTreeMap::new(),
    fair_after: None,
    seed: 0x9E37_79B9,
});

/// Callbacks must not panic, but if one does the queues are still consistent: every
/// update is made after the callback it depends on.
fn table() -> MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn new_waiter() -> Arc<Waiter> {
    Arc::new(Waiter {
        key: AtomicUsize::new(0),
        park_token: AtomicUsize::new(0),
        unparked: Mutex::new(None),
        wakeup: Condvar::new(),
    })
}

thread_local! {
    static WAITER: Arc<Waiter> = new_waiter();
}

/// This thread's waiter (a fresh one while its thread-locals are being destroyed).
fn waiter() -> Arc<Waiter> {
    WAITER.try_with(Arc::clone).unwrap_or_else(|_| new_waiter())
}

impl Table {
    /// About once every 0.5 ms (a pseudo-random 0..1 ms after the last fair unpark).
    fn be_fair(&mut self) -> bool {
        let now = Instant::now();
        match self.fair_after {
            Some(t) if now <= t => false,
            _ => {
                self.seed ^= self.seed << 13;
                self.seed ^= self.seed >> 17;
                self.seed ^= self.seed << 5;
                self.fair_after =
                    Some(now + Duration::from_nanos(u64::from(self.seed % 1_000_000)));
                true
            }
        }
    }

    /// Removes and returns the whole queue of `key`.
    fn take(&mut self, key: usize) -> VecDeque<Arc<Waiter>> {
        self.queues.remove(&key).unwrap_or_default()
    }

    /// Puts back what is left of `key`'s queue (dropping it when empty).
    fn put(&mut self, key: usize, queue: VecDeque<Arc<Waiter>>) {
        if !queue.is_empty() {
            self.queues.insert(key, queue);
        }
    }
}

/// Sets `w`'s token (the caller holds the table lock); `wake` signals it afterwards.
fn mark_unparked(w: &Waiter, token: UnparkToken) {
    *lock(&w.unparked) = Some(token);
}

fn wake(w: &Waiter) {
    // Taking the waiter's lock orders this signal after its check of the token.
    let _guard = lock(&w.unparked);
    w.wakeup.notify_one();
}

pub(crate) fn park(
    key: usize,
    validate: impl FnOnce() -> bool,
    before_sleep: impl FnOnce(),
    timed_out: impl FnOnce(usize, bool),
    park_token: ParkToken,
    timeout: Option<Instant>,
) -> ParkResult {
    let me = waiter();
    {
        let mut table = table();
        if !validate() {
            return ParkResult::Invalid;
        }
        me.key.store(key, Relaxed);
        me.park_token.store(park_token.0, Relaxed);
        *lock(&me.unparked) = None;
        table
            .queues
            .entry(key)
            .or_default()
            .push_back(Arc::clone(&me));
    }
    before_sleep();

    {
        let mut unparked = lock(&me.unparked);
        loop {
            if let Some(token) = *unparked {
                return ParkResult::Unparked(token);
            }
            unparked = match timeout {
                None => me.wakeup.wait(unparked).unwrap_or_else(|e| e.into_inner()),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        break;
                    }
                    me.wakeup
                        .wait_timeout(unparked, deadline - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        }
    }

    // Timed out: decide under the table lock, where unparks happen.
    let mut table = table();
    if let Some(token) = *lock(&me.unparked) {
        return ParkResult::Unparked(token);
    }
    let key = me.key.load(Relaxed);
    let mut queue = table.take(key);
    queue.retain(|w| !Arc::ptr_eq(w, &me));
    let was_last = queue.is_empty();
    table.put(key, queue);
    timed_out(key, was_last);
    ParkResult::TimedOut
}

pub(crate) fn unpark_one(
    key: usize,
    callback: impl FnOnce(UnparkResult) -> UnparkToken,
) -> UnparkResult {
    let mut table = table();
    let mut queue = table.take(key);
    let mut result = UnparkResult::default();
    let first = queue.pop_front();
    if first.is_some() {
        result.unparked_threads = 1;
        result.have_more_threads = !queue.is_empty();
        result.be_fair = table.be_fair();
    }
    table.put(key, queue);
    let token = callback(result);
    if let Some(w) = &first {
        mark_unparked(w, token);
    }
    drop(table);
    if let Some(w) = &first {
        wake(w);
    }
    result
}

pub(crate) fn unpark_all(key: usize, token: UnparkToken) -> usize {
    let mut table = table();
    let queue = table.take(key);
    for w in &queue {
        mark_unparked(w, token);
    }
    drop(table);
    for w in &queue {
        wake(w);
    }
    queue.len()
}

pub(crate) fn unpark_requeue(
    key_from: usize,
    key_to: usize,
    validate: impl FnOnce() -> RequeueOp,
    callback: impl FnOnce(RequeueOp, UnparkResult) -> UnparkToken,
) -> UnparkResult {
    let mut table = table();
    let mut result = UnparkResult::default();
    let op = validate();
    if op == RequeueOp::Abort {
        return result;
    }
    let mut from = table.take(key_from);
    let unpark_first = matches!(op, RequeueOp::UnparkOneRequeueRest | RequeueOp::UnparkOne);
    let only_one = matches!(op, RequeueOp::UnparkOne | RequeueOp::RequeueOne);
    let mut wakeup = None;
    let mut moved = VecDeque::new();
    while let Some(w) = from.pop_front() {
        if unpark_first && wakeup.is_none() {
            wakeup = Some(w);
            result.unparked_threads = 1;
        } else {
            w.key.store(key_to, Relaxed);
            moved.push_back(w);
            result.requeued_threads += 1;
        }
        if only_one {
            result.have_more_threads = !from.is_empty();
            break;
        }
    }
    table.put(key_from, from);
    let mut to = table.take(key_to);
    to.extend(moved);
    table.put(key_to, to);
    if result.unparked_threads != 0 {
        result.be_fair = table.be_fair();
    }
    let token = callback(op, result);
    if let Some(w) = &wakeup {
        mark_unparked(w, token);
    }
    drop(table);
    if let Some(w) = &wakeup {
        wake(w);
    }
    result
}

pub(crate) fn unpark_filter(
    key: usize,
    mut filter: impl FnMut(ParkToken) -> FilterOp,
    callback: impl FnOnce(UnparkResult) -> UnparkToken,
) -> UnparkResult {
    let mut table = table();
    let queue = table.take(key);
    let mut result = UnparkResult::default();
    let mut kept = VecDeque::new();
    let mut chosen = Vec::new();
    let mut rest = queue.into_iter();
    for w in rest.by_ref() {
        match filter(ParkToken(w.park_token.load(Relaxed))) {
            FilterOp::Unpark => chosen.push(w),
            FilterOp::Skip => {
                result.have_more_threads = true;
                kept.push_back(w);
            }
            FilterOp::Stop => {
                result.have_more_threads = true;
                kept.push_back(w);
                break;
            }
        }
    }
    kept.extend(rest);
    table.put(key, kept);
    result.unparked_threads = chosen.len();
    if !chosen.is_empty() {
        result.be_fair = table.be_fair();
    }
    let token = callback(result);
    for w in &chosen {
        mark_unparked(w, token);
    }
    drop(table);
    for w in &chosen {
        wake(w);
    }
    result
}
