//! The relaxed memory model (`Memory::Relaxed`): a view-based operational model of Rust's
//! (C++20's) atomics, after promising semantics and Miri's weak-memory emulation (no code
//! taken from either).
//!
//! - Every thread has a *view*, a vector clock of what happens-before its next step. Each
//!   atomic operation ticks the thread's own entry, so a store is named by (thread, tick).
//! - Every atomic location (by address) keeps its modification order: the last
//!   `HISTORY` stores, each with its value, its thread and tick, the clock a reader
//!   acquiring it gets, and which threads have read or written it.
//! - A load may read any store from the newest back to the newest one it must not skip:
//!   one that happens-before it (coherence with happens-before: write-read and write-write)
//!   or that its thread already read or wrote (read-read and read-write coherence). Which
//!   one is a recorded scheduler choice (`Scheduler::next_read`), so replay is exact.
//! - Release stores carry the writer's view; relaxed stores carry the view at the writer's
//!   last release fence. An RMW always reads the newest store and carries that store's
//!   clock on (release sequences). Acquire loads join the store's clock into the view;
//!   relaxed loads keep it for the thread's next acquire fence.
//! - `SeqCst`: a `SeqCst` load reads the newest store; `SeqCst` stores and RMWs release
//!   into one global clock, and `SeqCst` fences (and RMWs) also acquire from it. All-`SeqCst`
//!   programs therefore run exactly as under `Memory::Sc`.
//!
//! Not produced (the model is a subset of C++20, so it never reports an outcome C++20
//! forbids): load buffering and out-of-thin-air values (a load only reads stores already
//! made, loads are never reordered after later stores), a store that is not the newest
//! in modification order (stores are ordered as executed, so 2+2W's both-old outcome is
//! missing), stale reads by a failing `compare_exchange` (it reads the newest, as an RMW),
//! and outcomes that need `SeqCst` fences or `SeqCst` RMWs not to synchronise.
//!
//! Locks, channels and the other primitives synchronise through `sync_object`: every
//! operation on a pulse object is an acquire and a release on that object's clock (more
//! than std promises for failed `try_lock`s, which only removes outcomes).

use std::collections::{BTreeSet, VecDeque};
use std::panic::Location;
use std::sync::atomic::Ordering;

use crate::fast_hash::FastMap;
use crate::obj_ref::ObjRef;

/// Stores each location keeps: a load can read at most this far back. Bounds memory and
/// the branching of a load; a value overwritten eight times is rarely the bug.
pub(crate) const HISTORY: usize = 8;

/// Virtual time after which a store is visible to every thread: a load never reads a store
/// older than one made this long before it. C++20 allows a relaxed store to stay invisible
/// for ever, but no machine's store buffer holds one for a millisecond, and tests that sleep
/// and then read a counter (threadpool's `test_debug`) would otherwise fail under relaxed.
/// At the default 1 µs per step it spans a thousand steps, far more than any example's
/// stale-read window.
pub(crate) const VISIBLE_AFTER_NS: u64 = 1_000_000;

/// Threads whose reads are tracked per store (a bit each); threads past it always read the
/// newest store.
const TRACKED_THREADS: u32 = 64;

mod simd;

/// A vector clock: entry `t` is the last tick of thread `t` that happens-before.
#[derive(Clone, Default, Debug, PartialEq, Eq)]
pub(crate) struct VClock(Vec<u32>);

impl VClock {
    #[inline]
    fn get(&self, t: u32) -> u32 {
        self.0.get(t as usize).copied().unwrap_or(0)
    }

    fn join(&mut self, other: &VClock) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        simd::max_into(&mut self.0, &other.0);
    }

    /// Both become their join (a thread's view and a lock's clock).
    fn join_both(a: &mut VClock, b: &mut VClock) {
        a.join(b);
        b.copy_from(a);
    }

    /// Becomes a copy of `other`, in its own allocation.
    fn copy_from(&mut self, other: &VClock) {
        self.0.clear();
        self.0.extend_from_slice(&other.0);
    }

    /// Entry `t` becomes at least `tick`.
    fn tick_to(&mut self, t: u32, tick: u32) {
        let i = t as usize;
        if self.0.len() <= i {
            self.0.resize(i + 1, 0);
        }
        self.0[i] = self.0[i].max(tick);
    }

    fn tick(&mut self, t: u32) -> u32 {
        let i = t as usize;
        if self.0.len() <= i {
            self.0.resize(i + 1, 0);
        }
        self.0[i] += 1;
        self.0[i]
    }
}

#[derive(Clone, Default)]
struct ThreadMem {
    view: VClock,
    /// The view at the last release fence: what a relaxed store releases.
    fence_rel: VClock,
    /// Clocks of stores read by relaxed loads: what the next acquire fence acquires.
    fence_acq: VClock,
    /// The store (`Store::id`) whose clock `view` last acquired: views only grow, so
    /// acquiring it again changes nothing (a thread spinning on a flag reads one store
    /// over and over, and with 1,000 threads a join is 1,000 entries).
    acquired: u64,
}

impl ThreadMem {
    /// Reads `store`: an acquire joins its clock, a relaxed load keeps it for the next
    /// acquire fence.
    fn acquire(&mut self, store: &Store, order: Ordering) {
        if !acquires(order) {
            self.fence_acq.join(&store.clock);
        } else if self.acquired != store.id || store.id == 0 {
            self.view.join(&store.clock);
            self.acquired = store.id;
        }
    }
}

struct Store {
    /// Numbers the execution's stores from 1 (0: a location's first value).
    id: u64,
    value: u64,
    thread: u32,
    /// The clock entry (`Slots`) the writer ticked, and its tick.
    slot: u32,
    tick: u32,
    /// What a load acquiring this store joins into its view.
    clock: VClock,
    /// Threads that read or wrote it (bit per thread below `TRACKED_THREADS`).
    seen: u64,
    /// Where it was made (`None`: the value the location had when first used).
    at: Option<&'static Location<'static>>,
    /// Virtual time it was made at.
    ns: u64,
}

#[derive(Default)]
struct Loc {
    /// Modification order, oldest first; never empty.
    stores: VecDeque<Store>,
}

/// Which store a load read when it was not the newest: for the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OldRead {
    pub value: u64,
    pub thread: u32,
    pub at: Option<&'static Location<'static>>,
    /// Stores after it in modification order.
    pub newer: u32,
}

/// Which vector-clock entry each thread ticks. A clock entry per thread ever spawned made
/// every clock as long as the execution's thread count, so a test spawning thousands of
/// short-lived threads one after another (crossbeam-channel's `stress_oneshot`) ran
/// quadratically slower under the relaxed model (4,000 rounds of two threads: 3.5 s per
/// execution against 0.15 s under `sc`). A finished thread's entry goes to the next thread
/// spawned by one that has seen its last store (joined it, directly or not), as
/// ThreadSanitizer reuses thread slots: the new thread's ticks continue above the old one's,
/// and a view that holds one of them came after the spawn, so after every store of the old
/// owner too. Entries stay as many as the threads alive at once, and those joined before.
#[derive(Default)]
struct Slots {
    /// Thread id -> its entry.
    of: Vec<u32>,
    /// Entries whose thread finished, with its last tick: free to a spawner that saw it.
    free: Vec<(u32, u32)>,
    count: u32,
}

/// A spawner looks at this many of the most recently freed entries (an entry stays free
/// while no spawner has seen its last store, e.g. a detached thread's).
const REUSE_CANDIDATES: usize = 8;

impl Slots {
    /// Thread `t`'s slot in `of` (`u32::MAX`: no entry yet).
    fn slot(&mut self, t: u32) -> &mut u32 {
        let i = t as usize;
        if self.of.len() <= i {
            self.of.resize(i + 1, u32::MAX);
        }
        &mut self.of[i]
    }

    /// Thread `t`'s entry, a fresh one if it has none yet.
    fn of(&mut self, t: u32) -> u32 {
        if *self.slot(t) == u32::MAX {
            let fresh = self.count;
            self.count += 1;
            *self.slot(t) = fresh;
        }
        *self.slot(t)
    }

    /// An entry for `child`, spawned by a thread whose view is `spawner`.
    fn assign(&mut self, child: u32, spawner: &VClock) {
        let first = self.free.len().saturating_sub(REUSE_CANDIDATES);
        let reusable = (first..self.free.len())
            .rev()
            .find(|&k| spawner.get(self.free[k].0) >= self.free[k].1);
        match reusable {
            Some(k) => *self.slot(child) = self.free.swap_remove(k).0,
            None => {
                self.of(child);
            }
        }
    }
}

/// One execution's memory state. Only consulted under `Memory::Relaxed`.
#[derive(Default)]
pub(crate) struct Memory {
    pub relaxed: bool,
    slots: Slots,
    threads: Vec<ThreadMem>,
    locations: FastMap<usize, Loc>,
    /// The addresses in `locations`, in order: which atomics a value's bytes hold
    /// (`exclusive`).
    addresses: BTreeSet<usize>,
    objects: FastMap<ObjRef, VClock>,
    /// Each clock entry's last tick: every store made so far, as a clock (`exclusive`).
    latest: VClock,
    /// Everything released by `SeqCst` operations (the single total order, as a clock).
    sc: VClock,
    /// The execution's virtual time, set before each operation (`VISIBLE_AFTER_NS`).
    pub now: u64,
    /// Stores made so far.
    stores: u64,
}

fn acquires(order: Ordering) -> bool {
    matches!(
        order,
        Ordering::Acquire | Ordering::AcqRel | Ordering::SeqCst
    )
}

fn releases(order: Ordering) -> bool {
    matches!(
        order,
        Ordering::Release | Ordering::AcqRel | Ordering::SeqCst
    )
}

/// The location's history, restarted at `actual` when there is none (first use, or the
/// first after `forget`) or memory no longer holds its newest store (a write the model
/// did not see: an atomic moved, or written over with `ptr::write`, at this address).
fn loc_in<'m>(
    locations: &'m mut FastMap<usize, Loc>,
    addresses: &mut BTreeSet<usize>,
    addr: usize,
    actual: u64,
) -> &'m mut Loc {
    let loc = locations.entry(addr).or_insert_with(|| {
        addresses.insert(addr);
        Loc::default()
    });
    if loc.stores.back().is_none_or(|s| s.value != actual) {
        loc.stores.clear();
        loc.stores.push_back(Store {
            id: 0,
            value: actual,
            thread: 0,
            slot: 0,
            tick: 0, // happens-before every thread
            clock: VClock::default(),
            seen: u64::MAX,
            at: None,
            ns: 0,
        });
    }
    loc
}

fn bit(t: u32) -> u64 {
    if t < TRACKED_THREADS {
        1 << t
    } else {
        0
    }
}

impl Memory {
    pub fn reset(&mut self, relaxed: bool) {
        self.relaxed = relaxed;
        self.threads.clear();
        self.slots = Slots::default();
        self.locations.clear();
        self.addresses.clear();
        self.objects.clear();
        self.latest = VClock::default();
        self.sc = VClock::default();
        self.now = 0;
        self.stores = 0;
    }

    fn thread(&mut self, t: u32) -> &mut ThreadMem {
        let i = t as usize;
        if self.threads.len() <= i {
            self.threads.resize(i + 1, ThreadMem::default());
        }
        &mut self.threads[i]
    }

    /// `child` starts with everything `parent` has done (spawn happens-before the thread).
    pub fn spawned(&mut self, parent: u32, child: u32) {
        if parent != child {
            self.slots.of(parent);
            let view = self.thread(parent).view.clone();
            self.slots.assign(child, &view);
            self.thread(child).view.join(&view);
        }
    }

    /// An operation of thread `t` on a pulse object: acquires what earlier operations on it
    /// released, and releases `t`'s view into it.
    pub fn sync_object(&mut self, t: u32, object: ObjRef) {
        self.thread(t);
        let view = &mut self.threads[t as usize].view;
        VClock::join_both(view, self.objects.entry(object).or_default());
    }

    /// The atomic at `addr` was dropped or mutably borrowed (`get_mut`): either way every
    /// store made to it happens-before whatever touches the address next (the allocator
    /// orders a free before the allocation that reuses it; `&mut` excludes every other
    /// thread), so its history ends here and the next operation starts a new one from what
    /// memory then holds, visible to every thread.
    pub fn forget(&mut self, addr: usize) {
        if self.locations.remove(&addr).is_some() {
            self.addresses.remove(&addr);
        }
    }

    /// Thread `t` holds the only reference to the value at `addr`, `size` bytes long: it
    /// runs the value's `Drop::drop`, or `Arc::get_mut` gave it `&mut`. Exclusive access
    /// happens after every other thread's access to the value, but the edge is often one
    /// pulse cannot see: the last of std's `Arc`s to go (a release decrement, an acquire
    /// fence; `Arc` stays std's, decision 10) or a handle dropped in uninstrumented code.
    /// Without it a `Drop` that loads its own atomics `Relaxed` could read a store another
    /// owner overwrote before it let go: a false alarm (a count short by one; a double free
    /// in atom 0.3.6). So when the value holds an atomic with a history, thread `t` acquires
    /// every store made so far. That is more than the value's own bytes (a queue's `Drop`
    /// walks nodes it owns through pointers, as ownership lets it), which only removes
    /// outcomes; a value holding no atomic of its own (a lock guard) acquires nothing.
    pub fn exclusive(&mut self, t: u32, addr: usize, size: usize) {
        let holds_atomic = self
            .addresses
            .range(addr..addr.saturating_add(size))
            .next()
            .is_some();
        if holds_atomic {
            self.acquire_all(t);
        }
    }

    /// Thread `t` acquires every store made so far.
    pub fn acquire_all(&mut self, t: u32) {
        self.thread(t);
        self.threads[t as usize].view.join(&self.latest);
    }

    fn loc(&mut self, addr: usize, actual: u64) -> &mut Loc {
        loc_in(&mut self.locations, &mut self.addresses, addr, actual)
    }

    /// How many stores a load by `t` could read (the newest first), given `actual`, the value
    /// memory holds. 1: only the newest.
    pub fn load_options(&mut self, t: u32, addr: usize, actual: u64, order: Ordering) -> u32 {
        self.thread(t);
        let view = std::mem::take(&mut self.threads[t as usize].view);
        let now = self.now;
        let loc = self.loc(addr, actual);
        let n = if order == Ordering::SeqCst || t >= TRACKED_THREADS {
            1
        } else {
            let me = bit(t);
            let skippable = loc
                .stores
                .iter()
                .rev()
                .take_while(|s| {
                    s.seen & me == 0
                        && view.get(s.slot) < s.tick
                        && now.saturating_sub(s.ns) <= VISIBLE_AFTER_NS
                })
                .count();
            (skippable + 1).min(loc.stores.len()) as u32
        };
        self.threads[t as usize].view = view;
        n
    }

    /// Thread `t` loads the store `back` places before the newest (`load_options` was
    /// called just before). Returns its value, and which store it was if not the newest.
    pub fn load(
        &mut self,
        t: u32,
        addr: usize,
        back: u32,
        order: Ordering,
    ) -> (u64, Option<OldRead>) {
        self.thread(t);
        let loc = self.locations.get_mut(&addr).expect("load_options first");
        let i = loc.stores.len() - 1 - back as usize;
        let s = &mut loc.stores[i];
        s.seen |= bit(t);
        let old = (back > 0).then_some(OldRead {
            value: s.value,
            thread: s.thread,
            at: s.at,
            newer: back,
        });
        self.threads[t as usize].acquire(s, order);
        (s.value, old)
    }

    /// Thread `t` stores `new` where memory held `actual` (a plain store).
    pub fn store(
        &mut self,
        t: u32,
        addr: usize,
        actual: u64,
        new: u64,
        order: Ordering,
        at: &'static Location<'static>,
    ) {
        self.loc(addr, actual);
        self.write(t, addr, new, order, false, at);
    }

    /// Thread `t` reads the newest store (memory held `actual`) and, if `new` is `Some`,
    /// writes it in the same step (an RMW; `None`: a failed compare-exchange, a load).
    pub fn rmw(
        &mut self,
        t: u32,
        addr: usize,
        actual: u64,
        new: Option<u64>,
        order: Ordering,
        at: &'static Location<'static>,
    ) {
        self.thread(t);
        let loc = loc_in(&mut self.locations, &mut self.addresses, addr, actual);
        let s = loc.stores.back_mut().expect("never empty");
        s.seen |= bit(t);
        let tm = &mut self.threads[t as usize];
        tm.acquire(s, order);
        if order == Ordering::SeqCst {
            tm.view.join(&self.sc);
        }
        if let Some(new) = new {
            self.write(t, addr, new, order, true, at);
        }
    }

    /// `carry`: an RMW, whose store continues the release sequence of the one it read (the
    /// newest).
    fn write(
        &mut self,
        t: u32,
        addr: usize,
        value: u64,
        order: Ordering,
        carry: bool,
        at: &'static Location<'static>,
    ) {
        let slot = self.slots.of(t);
        self.thread(t);
        let tm = &mut self.threads[t as usize];
        let tick = tm.view.tick(slot);
        self.latest.tick_to(slot, tick);
        let loc = self.locations.get_mut(&addr).expect("loc first");
        // The store that falls out of the history lends its clock's allocation.
        let mut clock = match loc.stores.len() >= HISTORY {
            true => loc.stores.pop_front().expect("never empty").clock,
            false => VClock::default(),
        };
        clock.copy_from(match releases(order) {
            true => &tm.view,
            false => &tm.fence_rel,
        });
        if carry {
            clock.join(&loc.stores.back().expect("never empty").clock);
        }
        if order == Ordering::SeqCst {
            self.sc.join(&tm.view);
        }
        self.stores += 1;
        loc.stores.push_back(Store {
            id: self.stores,
            value,
            thread: t,
            slot,
            tick,
            clock,
            seen: bit(t),
            at: Some(at),
            ns: self.now,
        });
    }

    /// `atomic::fence(order)` on thread `t`.
    pub fn fence(&mut self, t: u32, order: Ordering) {
        let sc = std::mem::take(&mut self.sc);
        let tm = self.thread(t);
        if acquires(order) {
            let acq = std::mem::take(&mut tm.fence_acq);
            tm.view.join(&acq);
            tm.fence_acq = acq;
        }
        let mut sc = sc;
        if order == Ordering::SeqCst {
            tm.view.join(&sc);
            sc.join(&tm.view);
        }
        if releases(order) {
            tm.fence_rel.copy_from(&tm.view);
        }
        self.sc = sc;
    }

    /// Thread `t` finished: a `join` of it acquires everything it did.
    pub fn finished(&mut self, t: u32) {
        let view = std::mem::take(&mut self.thread(t).view);
        let slot = self.slots.of(t);
        self.slots.free.push((slot, view.get(slot)));
        self.objects
            .entry(ObjRef::thread(t))
            .or_default()
            .join(&view);
        // It runs no more (its fence clocks too are done with).
        self.threads[t as usize] = ThreadMem::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mem() -> Memory {
        let mut m = Memory::default();
        m.reset(true);
        m
    }

    /// Message passing: a relaxed flag lets the reader see old data; release/acquire does not.
    #[test]
    fn release_acquire_publishes_data_and_relaxed_does_not() {
        for (store, load, stale_data) in [
            (Ordering::Relaxed, Ordering::Relaxed, 2),
            (Ordering::Release, Ordering::Acquire, 1),
        ] {
            let mut m = mem();
            let (data, flag) = (0x10, 0x20);
            m.load_options(0, data, 0, Ordering::Relaxed);
            m.spawned(0, 1);
            m.spawned(0, 2);
            m.store(1, data, 0, 42, Ordering::Relaxed, Location::caller());
            m.store(1, flag, 0, 1, store, Location::caller());
            assert_eq!(m.load_options(2, flag, 1, load), 2);
            assert_eq!(m.load(2, flag, 0, load).0, 1);
            assert_eq!(m.load_options(2, data, 42, Ordering::Relaxed), stale_data);
        }
    }

    #[test]
    fn a_store_made_long_enough_ago_is_visible_to_every_thread() {
        let mut m = mem();
        let x = 0x10;
        m.load_options(0, x, 0, Ordering::Relaxed);
        m.spawned(0, 1);
        m.store(0, x, 0, 1, Ordering::Relaxed, Location::caller());
        m.now = VISIBLE_AFTER_NS;
        assert_eq!(m.load_options(1, x, 1, Ordering::Relaxed), 2);
        m.now = VISIBLE_AFTER_NS + 1;
        assert_eq!(m.load_options(1, x, 1, Ordering::Relaxed), 1);
    }

    #[test]
    fn coherence_forbids_reading_older_than_what_was_read() {
        let mut m = mem();
        let x = 0x10;
        m.load_options(0, x, 0, Ordering::Relaxed);
        m.spawned(0, 1);
        m.store(0, x, 0, 1, Ordering::Relaxed, Location::caller());
        m.store(0, x, 1, 2, Ordering::Relaxed, Location::caller());
        assert_eq!(m.load_options(1, x, 2, Ordering::Relaxed), 3);
        assert_eq!(m.load(1, x, 1, Ordering::Relaxed).0, 1);
        assert_eq!(m.load_options(1, x, 2, Ordering::Relaxed), 2);
        // Its own store is the oldest it may read after writing.
        assert_eq!(m.load_options(0, x, 2, Ordering::Relaxed), 1);
    }

    /// The `Drop` of a value holding an atomic reads every store made so far, its own
    /// atomic's and others' (a node it owns); a value holding none (a guard) changes nothing.
    #[test]
    fn a_value_dropped_by_its_last_owner_sees_every_store() {
        let mut m = mem();
        let (value, node, guard) = (0x100, 0x200, 0x300);
        m.load_options(0, value, 0, Ordering::Relaxed);
        m.load_options(0, node, 0, Ordering::Relaxed);
        m.spawned(0, 1);
        m.store(1, value, 0, 1, Ordering::Relaxed, Location::caller());
        m.store(1, node, 0, 5, Ordering::Relaxed, Location::caller());
        m.exclusive(0, guard, 8);
        assert_eq!(m.load_options(0, value, 1, Ordering::Relaxed), 2);
        m.exclusive(0, value - 8, 16);
        assert_eq!(m.load_options(0, value, 1, Ordering::Relaxed), 1);
        assert_eq!(m.load_options(0, node, 5, Ordering::Relaxed), 1);
        // A store made after the drop began may still be missed.
        m.store(1, node, 5, 6, Ordering::Relaxed, Location::caller());
        assert_eq!(m.load_options(0, node, 6, Ordering::Relaxed), 2);
        // A forgotten atomic no longer counts as the value's.
        m.forget(value);
        m.store(1, node, 6, 7, Ordering::Relaxed, Location::caller());
        m.exclusive(0, value, 8);
        assert_eq!(m.load_options(0, node, 7, Ordering::Relaxed), 3);
    }

    /// A forgotten address starts over from the value memory holds, even the same one.
    #[test]
    fn a_forgotten_address_starts_a_new_history() {
        let mut m = mem();
        let x = 0x10;
        m.load_options(0, x, 0, Ordering::Relaxed);
        m.spawned(0, 1);
        m.store(0, x, 0, 7, Ordering::Relaxed, Location::caller());
        m.store(0, x, 7, 0, Ordering::Relaxed, Location::caller());
        assert_eq!(m.load_options(1, x, 0, Ordering::Relaxed), 3);
        m.forget(x);
        assert_eq!(m.load_options(1, x, 0, Ordering::Relaxed), 1);
        assert_eq!(m.load(1, x, 0, Ordering::Relaxed), (0, None));
    }

    /// A joined thread's clock entry goes to the next thread its joiner spawns, so clocks
    /// stay short however many threads come and go; a thread nobody has joined keeps its
    /// entry, and what it stored stays stale to others exactly as before.
    #[test]
    fn a_joined_threads_clock_entry_is_reused_and_a_detached_ones_is_not() {
        let mut m = mem();
        let x = 0x10;
        m.load_options(0, x, 0, Ordering::Relaxed);
        for child in 1..=40 {
            m.spawned(0, child);
            m.store(
                child,
                x,
                child as u64 - 1,
                child as u64,
                Ordering::Relaxed,
                Location::caller(),
            );
            m.finished(child);
            // Main joins it, and then reads only the newest store.
            m.sync_object(0, ObjRef::thread(child));
            assert_eq!(m.load_options(0, x, child as u64, Ordering::Relaxed), 1);
        }
        assert_eq!(m.slots.count, 2, "main's entry and one reused");
        // A detached thread's store: a later thread (on a fresh entry) may read past it.
        m.spawned(0, 50);
        m.store(50, x, 40, 7, Ordering::Relaxed, Location::caller());
        m.finished(50);
        m.spawned(0, 51);
        assert_eq!(m.slots.count, 3);
        assert_eq!(m.load_options(51, x, 7, Ordering::Relaxed), 2);
        // Once main joins it, a thread it spawns takes that entry and sees the store.
        m.sync_object(0, ObjRef::thread(50));
        m.spawned(0, 52);
        assert_eq!(m.slots.count, 3);
        assert_eq!(m.load_options(52, x, 7, Ordering::Relaxed), 1);
    }
}
