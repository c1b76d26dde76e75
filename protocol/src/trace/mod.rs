//! The trace format: one execution, every event, the synchronisation between them and the
//! vector clocks of happens-before. Written by the runtime (`<test>.trace.json` next to a
//! failure record, and for any run with `--trace-out DIR`), read by `cargo pulse trace`, the
//! console's failure summary and the HTML viewer. JSON through serde; `TRACE_VERSION` says
//! which contract a file follows and a reader refuses another version.
//!
//! Happens-before is a pure function of the recorded events ([`Trace::link`] then
//! [`Trace::compute_clocks`]): each acquire-like event names the release-like event it
//! synchronises with (`sync`): unlock → lock, send → the receive that took that message
//! (channels are FIFO), spawn → the child's first event (`ThreadInfo::spawned_by`), exit →
//! the join that returned, notify/unpark → the wake, a store → the load that read it
//! (`reads_from`; under sequentially consistent atomics the latest store, the relaxed
//! memory model fills it itself and `link` keeps what it finds) when the load acquires and
//! the store releases, as Rust's orderings say (`Order`: a `Relaxed` load synchronises with
//! nothing until an `Acquire` fence; a `Relaxed` read-modify-write carries on the release
//! sequence it read from). PULSE's visualizer (§6 of
//! the paper) then draws a dotted edge between two conflicting side effects only where
//! happens-before does not order them: [`Trace::races`].

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod atomicity;
mod location;
mod races;
pub use races::Race;

pub use location::{dependency_of, display_location, display_locations_in, is_user_location};

/// The trace format's version, the one writers write. Version 2 added the kinds `invoke`
/// and `response` (a `pulse::statem` operation's interval); version 3 an atomic event's
/// `order` and the kind `fence`. Every older file is a valid newer one: an atomic event
/// without an `order` synchronises as a `SeqCst` one.
pub const TRACE_VERSION: u32 = 3;

/// The oldest version a reader of this crate reads; it refuses anything outside
/// `OLDEST_TRACE_VERSION..=TRACE_VERSION`.
pub const OLDEST_TRACE_VERSION: u32 = 1;

/// What an event is, for happens-before and for people.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A scheduling point before an operation (`Mutex::lock` requested; nothing taken yet).
    #[default]
    Request,
    /// The thread blocked in the operation.
    Block,
    /// The blocked thread became runnable again; `value` says why (`notify`, `unlock`,
    /// `send`, `exit`, `timeout`).
    Wake,
    /// The thread's timed wait ran out (a timed transition of the clock).
    Timeout,
    /// A lock was taken (`value`: who holds it now).
    Acquire,
    /// A lock was released.
    Release,
    /// A message was queued on a channel.
    Send,
    /// A receive returned (`value`: `Ok`, `Err(Empty)`, `Err(Disconnected)`, ...).
    Recv,
    /// An atomic load.
    Load,
    /// An atomic store.
    Store,
    /// An atomic read-modify-write (swap, CAS, fetch_*).
    Rmw,
    /// A thread was spawned (`object`: `Thread#n`).
    Spawn,
    /// A join returned (`object`: the joined thread).
    Join,
    /// The thread finished.
    Exit,
    /// A condvar notify or an unpark (`object`: what it wakes).
    Notify,
    /// A `#[pulse::atomic]` block: one event for the whole call.
    Atomic,
    /// Anything else (`thread::sleep`, `yield_now`, a result note).
    Other,
    /// A `pulse::statem` operation was called on this thread (`op`: the command, `object`:
    /// the var naming its result, `v3`). Its interval runs to the thread's next `response`
    /// of the same object; the events between are what the operation did.
    Invoke,
    /// A `pulse::statem` operation returned (`value`: the response, `Debug`).
    Response,
    /// An `atomic::fence` (`order`: its ordering; no object).
    Fence,
}

/// An atomic operation's or fence's memory ordering, as Rust names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    Relaxed,
    Release,
    Acquire,
    AcqRel,
    SeqCst,
}

impl Order {
    /// Whether a load (or fence) with this ordering acquires; `None` (a file from before
    /// orderings were recorded) does, as a `SeqCst` one.
    pub fn acquires(order: Option<Order>) -> bool {
        !matches!(order, Some(Order::Relaxed | Order::Release))
    }

    /// Whether a store (or fence) with this ordering releases; `None` does.
    pub fn releases(order: Option<Order>) -> bool {
        !matches!(order, Some(Order::Relaxed | Order::Acquire))
    }

    /// Rust's name for it (`Relaxed`, `SeqCst`).
    pub fn name(self) -> &'static str {
        match self {
            Order::Relaxed => "Relaxed",
            Order::Release => "Release",
            Order::Acquire => "Acquire",
            Order::AcqRel => "AcqRel",
            Order::SeqCst => "SeqCst",
        }
    }
}

impl EventKind {
    /// Whether this event is a release-like event others may synchronise with.
    fn releases(self) -> bool {
        matches!(
            self,
            EventKind::Release
                | EventKind::Store
                | EventKind::Rmw
                | EventKind::Send
                | EventKind::Notify
                | EventKind::Exit
        )
    }
}

/// One virtual thread of the execution.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ThreadInfo {
    pub id: u32,
    pub name: String,
    /// Where it was spawned, `file:line:col` (`None` for the test's main thread).
    pub spawn_site: Option<String>,
    /// The index of the spawn event in `events` (`None` for main, or when the spawn fell
    /// out of a truncated trace).
    pub spawned_by: Option<u64>,
}

/// One event.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Event {
    /// The scheduler step it was taken at (several events can share one step: a request,
    /// then the acquire it led to).
    pub step: u64,
    pub thread: u32,
    pub kind: EventKind,
    /// The operation, as the shim names it (`Mutex::lock`).
    pub op: String,
    /// The object, `Mutex#1` (numbered in creation order within the execution).
    pub object: Option<String>,
    /// What happened, where it matters: a `recv`'s `Ok`/`Err`, a failed `try_lock`'s
    /// `WouldBlock`, a wake's reason, a lock's holder.
    pub value: Option<String>,
    /// The user's source location, `file:line:col`.
    pub location: Option<String>,
    /// The operation had no user's line of its own (a guard or a channel end dropped, a
    /// `recv` called from inside std by an iterator): `location` is then the thread's last
    /// user location before it ("after" that line), never a path inside pulse or std.
    #[serde(skip_serializing_if = "is_false")]
    pub location_inferred: bool,
    /// Virtual time, ns since the execution started.
    pub clock_ns: u64,
    /// The index of the release-like event this one synchronises with.
    pub sync: Option<u64>,
    /// For a load: the index of the store it read. Filled by the memory model when it
    /// chooses; otherwise the latest store to the object.
    pub reads_from: Option<u64>,
    /// A load that read an older store than the newest (the relaxed memory model's choice):
    /// how many newer stores to its atomic it did not see. `reads_from` is then the store it
    /// read, or `None` when that was the atomic's value from before the trace's first store
    /// to it (its initial value, or a store that fell out of a truncated trace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale: Option<u32>,
    /// An atomic operation's or fence's ordering (a failed compare-exchange's is its failure
    /// ordering); `None` for other events, and in files from before version 3.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order: Option<Order>,
    /// Happens-before: `vc[t]` is how many of thread `t`'s events happen before or are
    /// this one.
    pub vc: Vec<u32>,
}

impl Event {
    /// Whether this event wrote its atomic: a store, or a read-modify-write that did not
    /// fail (a failed compare-exchange only read).
    pub fn writes(&self) -> bool {
        match self.kind {
            EventKind::Store => true,
            EventKind::Rmw => !self
                .value
                .as_deref()
                .is_some_and(|v| v.starts_with("failed")),
            _ => false,
        }
    }
}

/// Synchronisation through atomics, by Rust's orderings: which release a store carries (its
/// own, its thread's last release fence before it, or for a read-modify-write the release
/// sequence it continues), and which release each thread's relaxed reads saw, for its next
/// acquire fence.
struct AtomicSync {
    /// For each store: the event an acquire reading it synchronises with.
    carries: Vec<Option<usize>>,
    /// Each thread's last release fence.
    release_fence: BTreeMap<u32, usize>,
    /// Each thread's last release read by a relaxed read since its last acquire fence.
    seen: BTreeMap<u32, usize>,
}

impl AtomicSync {
    fn new(events: usize) -> AtomicSync {
        AtomicSync {
            carries: vec![None; events],
            release_fence: BTreeMap::new(),
            seen: BTreeMap::new(),
        }
    }

    /// A read of the store `reads` by event `i`: the release it synchronises with, if it
    /// acquires; else remembered for the thread's next acquire fence.
    fn read(&mut self, i: usize, e: &Event, reads: Option<u64>) -> Option<usize> {
        let carried = reads.and_then(|r| self.carries.get(r as usize).copied().flatten());
        let carried = carried.filter(|&c| c != i)?;
        if Order::acquires(e.order) {
            return Some(carried);
        }
        self.seen.insert(e.thread, carried);
        None
    }

    /// Event `i` wrote its atomic, having read `reads` if it is a read-modify-write.
    fn wrote(&mut self, i: usize, e: &Event, reads: Option<u64>) {
        self.carries[i] = if Order::releases(e.order) {
            Some(i)
        } else {
            let sequence = (e.kind == EventKind::Rmw)
                .then(|| reads.and_then(|r| self.carries.get(r as usize).copied().flatten()))
                .flatten();
            sequence.or_else(|| self.release_fence.get(&e.thread).copied())
        };
    }

    /// A fence, event `i`: the release its thread's relaxed reads saw, if it acquires.
    fn fence(&mut self, i: usize, e: &Event) -> Option<usize> {
        if Order::releases(e.order) {
            self.release_fence.insert(e.thread, i);
        }
        if Order::acquires(e.order) {
            return self.seen.remove(&e.thread);
        }
        None
    }
}

/// One execution's trace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Trace {
    pub version: u32,
    /// The test's name as libtest prints it.
    pub test: String,
    /// `passed`, or the failure kind's snake_case name (`panic`, `deadlock`, ...).
    pub outcome: String,
    /// The failure's headline (empty for a pass).
    pub message: String,
    pub seed: Option<u64>,
    /// The schedule (`Schedule` text) that replays this execution.
    pub schedule: String,
    pub threads: Vec<ThreadInfo>,
    pub events: Vec<Event>,
    /// The index of the event where the failure shows (the panicking thread's last event,
    /// a deadlock's last block).
    pub failing_event: Option<u64>,
    /// How many events from the start were left out (very long executions keep their
    /// last events); 0 when the trace is whole.
    pub dropped: u64,
}

/// A `pulse::statem` operation's interval: its `invoke` and `response` events (indices into
/// `events`; `response` is `None` when the operation never returned).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interval {
    pub thread: u32,
    pub invoke: usize,
    pub response: Option<usize>,
}

/// An edge of the diagram between two events (indices into `events`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
}

/// Vector clocks cost events x threads entries: past this many (a 1,000-thread test's long
/// trace) none are computed, `vc` stays empty and no races are drawn.
pub const MAX_CLOCK_ENTRIES: usize = 20_000_000;

impl Trace {
    /// Fills `sync` and `reads_from` from the events' kinds and objects (keeping any already
    /// set), then the vector clocks.
    pub fn link(&mut self) {
        let mut last_release: BTreeMap<&str, usize> = BTreeMap::new();
        let mut last_store: BTreeMap<&str, usize> = BTreeMap::new();
        let mut sends: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        let mut received: BTreeMap<&str, usize> = BTreeMap::new();
        let mut exits: BTreeMap<String, usize> = BTreeMap::new();
        let mut links: Vec<(usize, Option<u64>, Option<u64>)> = Vec::new();
        let mut atomics = AtomicSync::new(self.events.len());
        // Who holds each lock, for a block's value ("held by thread-1").
        let mut holders: BTreeMap<&str, u32> = BTreeMap::new();
        let mut held_by: Vec<(usize, u32)> = Vec::new();
        for (i, e) in self.events.iter().enumerate() {
            if e.kind == EventKind::Fence {
                if let Some(sync) = atomics.fence(i, e) {
                    links.push((i, Some(sync as u64), None));
                }
                continue;
            }
            let Some(obj) = e.object.as_deref() else {
                continue;
            };
            match e.kind {
                EventKind::Acquire => {
                    holders.insert(obj, e.thread);
                }
                EventKind::Release => {
                    holders.remove(obj);
                }
                EventKind::Block if e.value.is_none() => {
                    if let Some(&h) = holders.get(obj).filter(|&&h| h != e.thread) {
                        held_by.push((i, h));
                    }
                }
                _ => {}
            }
            let mut sync = None;
            let mut reads = None;
            match e.kind {
                EventKind::Acquire | EventKind::Wake => {
                    sync = last_release.get(obj).map(|&s| s as u64);
                }
                EventKind::Load | EventKind::Rmw => {
                    // A stale load's store is named by the model or lies before the trace.
                    reads = match e.stale {
                        Some(_) => e.reads_from,
                        None => e
                            .reads_from
                            .or_else(|| last_store.get(obj).map(|&s| s as u64)),
                    };
                    sync = atomics.read(i, e, reads).map(|s| s as u64);
                }
                EventKind::Recv if e.value.as_deref().is_none_or(|v| v.starts_with("Ok")) => {
                    let k = received.entry(obj).or_insert(0);
                    sync = sends.get(obj).and_then(|s| s.get(*k)).map(|&s| s as u64);
                    *k += 1;
                }
                EventKind::Join => sync = exits.get(obj).map(|&s| s as u64),
                _ => {}
            }
            if e.sync.is_none() && (sync.is_some() || reads.is_some()) {
                links.push((i, sync, reads));
            }
            if e.kind.releases() {
                last_release.insert(obj, i);
            }
            if e.writes() {
                atomics.wrote(i, e, reads);
                last_store.insert(obj, i);
            }
            if e.kind == EventKind::Send {
                sends.entry(obj).or_default().push(i);
            }
            if e.kind == EventKind::Exit {
                exits.insert(obj.to_string(), i);
            }
        }
        for (i, h) in held_by {
            let name = self.thread_name(h);
            self.events[i].value = Some(format!("held by {name}"));
        }
        for (i, sync, reads) in links {
            let e = &mut self.events[i];
            e.sync = sync.filter(|&s| s as usize != i);
            if e.reads_from.is_none() {
                e.reads_from = reads;
            }
        }
        self.compute_clocks();
    }

    /// The vector clocks from program order, spawns and `sync`.
    pub fn compute_clocks(&mut self) {
        if !self.clocks_affordable() {
            self.events.iter_mut().for_each(|e| e.vc.clear());
            return;
        }
        let clocks = self.clocks_without(None);
        for (e, vc) in self.events.iter_mut().zip(clocks) {
            e.vc = vc;
        }
    }

    /// Whether this trace's vector clocks fit `MAX_CLOCK_ENTRIES`.
    pub fn clocks_affordable(&self) -> bool {
        self.events.len().saturating_mul(self.thread_count().max(1)) <= MAX_CLOCK_ENTRIES
    }

    fn thread_count(&self) -> usize {
        let most = self.events.iter().map(|e| e.thread + 1).max().unwrap_or(0);
        most.max(self.threads.len() as u32) as usize
    }

    /// Vector clocks, ignoring the synchronisation through `skip` (an object name).
    fn clocks_without(&self, skip: Option<&str>) -> Vec<Vec<u32>> {
        let n = self.thread_count();
        let mut current: Vec<Option<Vec<u32>>> = vec![None; n];
        let mut out: Vec<Vec<u32>> = Vec::with_capacity(self.events.len());
        let spawned_by: Vec<Option<usize>> = (0..n)
            .map(|t| {
                self.threads
                    .iter()
                    .find(|th| th.id as usize == t)
                    .and_then(|th| th.spawned_by)
                    .map(|s| s as usize)
            })
            .collect();
        for (i, e) in self.events.iter().enumerate() {
            let t = e.thread as usize;
            let mut c = match current[t].take() {
                Some(c) => c,
                None => {
                    let mut c = vec![0; n];
                    if let Some(s) = spawned_by[t].filter(|&s| s < i) {
                        join(&mut c, &out[s]);
                    }
                    c
                }
            };
            c[t] += 1;
            let skipped = skip.is_some() && e.object.as_deref() == skip;
            if let Some(s) = e.sync.map(|s| s as usize).filter(|&s| s < i) {
                if !skipped {
                    join(&mut c, &out[s]);
                }
            }
            out.push(c.clone());
            current[t] = Some(c);
        }
        out
    }

    /// Whether event `a` happens before event `b` (by their vector clocks).
    pub fn happens_before(&self, a: usize, b: usize) -> bool {
        if self.events[a].vc.is_empty() || self.events[b].vc.is_empty() {
            return false;
        }
        hb(&self.events, &self.events[a].vc, a, &self.events[b].vc)
    }

    /// The diagram's synchronisation edges: each event's `sync` and each thread's spawn.
    pub fn sync_edges(&self) -> Vec<Edge> {
        let mut edges: Vec<Edge> = self
            .events
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                e.sync
                    .map(|s| s as usize)
                    .filter(|&s| self.events[s].thread != e.thread)
                    .map(|s| Edge { from: s, to: i })
            })
            .collect();
        for th in &self.threads {
            let first = self.events.iter().position(|e| e.thread == th.id);
            if let (Some(s), Some(f)) = (th.spawned_by, first) {
                edges.push(Edge {
                    from: s as usize,
                    to: f,
                });
            }
        }
        edges.sort();
        edges
    }

    /// The `pulse::statem` operations' intervals, in invocation order: each `invoke` with
    /// the same thread's next `response` of the same object.
    pub fn intervals(&self) -> Vec<Interval> {
        let mut open: BTreeMap<(u32, Option<&str>), usize> = BTreeMap::new();
        let mut out: Vec<Interval> = Vec::new();
        for (i, e) in self.events.iter().enumerate() {
            match e.kind {
                EventKind::Invoke => {
                    open.insert((e.thread, e.object.as_deref()), out.len());
                    out.push(Interval {
                        thread: e.thread,
                        invoke: i,
                        response: None,
                    });
                }
                EventKind::Response => {
                    if let Some(k) = open.remove(&(e.thread, e.object.as_deref())) {
                        out[k].response = Some(i);
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// A thread's name (`thread-3` when the trace does not list it).
    pub fn thread_name(&self, t: u32) -> String {
        self.threads
            .iter()
            .find(|th| th.id == t)
            .map_or_else(|| format!("thread-{t}"), |th| th.name.clone())
    }

    /// dejafu's compact schedule line: `S0` where thread 0 starts running after a block or
    /// exit, `P1` where thread 1 preempts a runnable thread, `-` for each further step of
    /// the same thread.
    pub fn schedule_line(&self) -> String {
        let mut out = String::new();
        let mut prev: Option<(u32, EventKind)> = None;
        let mut last_step = None;
        for e in &self.events {
            if e.kind == EventKind::Timeout || last_step == Some((e.step, e.thread)) {
                continue;
            }
            last_step = Some((e.step, e.thread));
            match prev {
                Some((t, _)) if t == e.thread => out.push('-'),
                Some((_, k)) if !matches!(k, EventKind::Block | EventKind::Exit) => {
                    out.push_str(&format!("P{}", e.thread))
                }
                _ => out.push_str(&format!("S{}", e.thread)),
            }
            prev = Some((e.thread, e.kind));
        }
        out
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn join(c: &mut [u32], other: &[u32]) {
    for (x, y) in c.iter_mut().zip(other) {
        *x = (*x).max(*y);
    }
}

fn hb(events: &[Event], va: &[u32], a: usize, vb: &[u32]) -> bool {
    let t = events[a].thread as usize;
    let _ = a;
    va.get(t).copied().unwrap_or(0) <= vb.get(t).copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(thread: u32, kind: EventKind, object: &str, line: u32) -> Event {
        Event {
            thread,
            kind,
            op: format!("{kind:?}"),
            object: (!object.is_empty()).then(|| object.to_string()),
            location: Some(format!("src/lib.rs:{line}:5")),
            ..Default::default()
        }
    }

    fn trace(events: Vec<Event>, spawn: usize) -> Trace {
        let mut t = Trace {
            version: TRACE_VERSION,
            threads: vec![
                ThreadInfo {
                    id: 0,
                    name: "main".into(),
                    ..Default::default()
                },
                ThreadInfo {
                    id: 1,
                    name: "thread-1".into(),
                    spawned_by: Some(spawn as u64),
                    ..Default::default()
                },
            ],
            events,
            ..Default::default()
        };
        for (i, e) in t.events.iter_mut().enumerate() {
            e.step = i as u64;
        }
        t.link();
        t
    }

    use EventKind::*;

    #[test]
    fn a_lost_update_under_a_lock_is_one_write_between_two_accesses() {
        let t = trace(
            vec![
                ev(0, Spawn, "Thread#1", 1),
                ev(0, Acquire, "Mutex#0", 10),
                ev(0, Release, "Mutex#0", 10),
                ev(1, Acquire, "Mutex#0", 12),
                ev(1, Release, "Mutex#0", 12),
                ev(0, Acquire, "Mutex#0", 14),
                ev(0, Release, "Mutex#0", 14),
                ev(1, Exit, "Thread#1", 0),
                ev(0, Join, "Thread#1", 20),
            ],
            0,
        );
        // The lock orders everything in the full relation.
        assert!(t.happens_before(2, 3));
        assert!(t.happens_before(7, 8), "exit -> join");
        assert!(t.happens_before(0, 3), "spawn -> child");
        assert!(!t.happens_before(3, 1));
        assert_eq!(t.events[3].sync, Some(2));
        assert_eq!(
            t.races(),
            vec![Edge { from: 1, to: 3 }, Edge { from: 3, to: 5 }]
        );
        assert_eq!(
            t.race_summary().unwrap(),
            "thread-1 locked `Mutex#0` at src/lib.rs:12:5 between main's lock at :10 and lock at :14"
        );
        assert_eq!(t.schedule_line(), "S0--P1-P0-P1S0");
    }

    #[test]
    fn a_stale_relaxed_load_is_named_before_any_race() {
        let mut load = ev(0, Load, "AtomicUsize#0", 20);
        load.reads_from = Some(1);
        load.stale = Some(1);
        let mut t = trace(
            vec![
                ev(0, Spawn, "Thread#1", 1),
                ev(0, Store, "AtomicUsize#0", 5),
                ev(1, Store, "AtomicUsize#0", 12),
                ev(1, Store, "AtomicBool#1", 13),
                ev(0, Load, "AtomicBool#1", 19),
                load,
            ],
            0,
        );
        t.failing_event = Some(5);
        assert_eq!(
            t.race_summary().unwrap(),
            "main read `AtomicUsize#0` at src/lib.rs:20:5 and got main's store at :5, \
             though 1 newer store was made (the last by thread-1 at :12): nothing ordered it \
             before the read"
        );
        // The atomic's value from before the trace's first store to it.
        t.events[5].reads_from = None;
        t.events[5].stale = Some(2);
        assert_eq!(
            t.race_summary().unwrap(),
            "main read `AtomicUsize#0` at src/lib.rs:20:5 and got its value from before any \
             store in the trace, though 2 newer stores were made (the last by thread-1 at :12): \
             nothing ordered them before the read"
        );
        // Read afresh later by the same thread: made good, not the cause.
        let mut again = ev(0, Load, "AtomicUsize#0", 21);
        again.reads_from = Some(2);
        t.events.push(again);
        t.failing_event = Some(6);
        assert_eq!(t.stale_read_summary(), None);
        t.events.pop();
        t.failing_event = Some(5);
        // A load of the newest store is no stale read: the race is named as before.
        t.events[5].reads_from = Some(2);
        t.events[5].stale = None;
        assert_eq!(t.stale_read_summary(), None);
    }

    #[test]
    fn a_whole_increment_between_a_read_and_a_write_is_named_once_per_line() {
        let t = trace(
            vec![
                ev(0, Spawn, "Thread#1", 1),
                ev(0, Acquire, "Mutex#0", 10),
                ev(0, Release, "Mutex#0", 10),
                ev(1, Acquire, "Mutex#0", 10),
                ev(1, Release, "Mutex#0", 10),
                ev(1, Acquire, "Mutex#0", 12),
                ev(1, Release, "Mutex#0", 12),
                ev(1, Acquire, "Mutex#0", 10),
                ev(1, Release, "Mutex#0", 10),
                ev(0, Acquire, "Mutex#0", 12),
            ],
            0,
        );
        assert_eq!(
            t.race_summary().unwrap(),
            "thread-1 locked `Mutex#0` at src/lib.rs:10:5 and :12 between main's lock at :10 and lock at :12"
        );
    }

    /// Each line says what the thread did there: st3's race line said `wrote` for a load
    /// among its stores (session 28 trial).
    #[test]
    fn a_thread_that_wrote_and_read_between_two_accesses_says_which_where() {
        let t = trace(
            vec![
                ev(0, Spawn, "Thread#1", 1),
                ev(0, Store, "AtomicU32#1", 10),
                ev(1, Store, "AtomicU32#1", 352),
                ev(1, Load, "AtomicU32#1", 337),
                ev(1, Store, "AtomicU32#1", 340),
                ev(0, Load, "AtomicU32#1", 12),
            ],
            0,
        );
        assert_eq!(
            t.race_summary().unwrap(),
            "thread-1 wrote `AtomicU32#1` at src/lib.rs:352:5 and read it at :337 and wrote it \
             at :340 between main's write at :10 and read at :12"
        );
    }

    #[test]
    fn the_summary_names_the_race_on_what_the_failing_thread_read() {
        // Message overtaking: main draws ticket 0, thread-1 draws 1 and sends it first; the
        // counter's hand-overs race too, but main fails on what it received.
        let mut t = trace(
            vec![
                ev(0, Spawn, "Thread#1", 1),
                ev(0, Rmw, "AtomicU64#0", 36),
                ev(1, Rmw, "AtomicU64#0", 36),
                ev(1, Send, "Channel#0", 38),
                ev(0, Send, "Channel#0", 38),
                ev(0, Rmw, "AtomicU64#0", 36),
                ev(1, Exit, "Thread#1", 0),
                ev(0, Join, "Thread#1", 40),
                ev(0, Recv, "Channel#0", 42),
                ev(0, Recv, "Channel#0", 42),
                ev(0, Other, "", 44),
            ],
            0,
        );
        t.failing_event = Some(10);
        assert_eq!(
            t.races(),
            vec![
                Edge { from: 1, to: 2 },
                Edge { from: 2, to: 5 },
                Edge { from: 3, to: 4 }
            ]
        );
        assert_eq!(t.failure_object(&t.races()), Some("Channel#0"));
        assert_eq!(
            t.race_summary().unwrap(),
            "thread-1 sent on `Channel#0` at src/lib.rs:38:5 and main sent on it at :38, \
             unordered by any synchronisation"
        );
        // Had main failed right after its last ticket, the counter would be the story.
        t.failing_event = Some(5);
        assert_eq!(t.failure_object(&t.races()), Some("AtomicU64#0"));
        assert!(
            t.race_summary()
                .unwrap()
                .starts_with("thread-1 updated `AtomicU64#0`"),
            "{:?}",
            t.race_summary()
        );
        // Its own last raced access, for a thread failing at its end.
        t.failing_event = Some(6);
        assert_eq!(t.failure_object(&t.races()), Some("Channel#0"));
        // Nothing failing: no focus, every race counts.
        t.failing_event = None;
        assert_eq!(t.failure_object(&t.races()), None);
    }

    const REG: &str =
        "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/parking_lot-0.13.0/src/raw_mutex.rs";

    /// An access inside parking_lot (a dependency's lock word) at `line`.
    fn dep(thread: u32, kind: EventKind, object: &str, line: u32) -> Event {
        Event {
            location: Some(format!("{REG}:{line}:14")),
            ..ev(thread, kind, object, 0)
        }
    }

    #[test]
    fn locations_inside_dependencies_are_shown_from_the_crate_on() {
        let reg = format!("{REG}:62:14");
        assert_eq!(dependency_of(&reg).as_deref(), Some("parking_lot-0.13.0"));
        assert_eq!(
            display_location(&reg),
            "parking_lot-0.13.0/src/raw_mutex.rs:62:14"
        );
        assert!(!is_user_location(&reg));
        let git = "/home/u/.cargo/git/checkouts/loom-2b9f0a3c1d4e5f67/a1b2c3d/src/rt/mod.rs:9:1";
        assert_eq!(dependency_of(git).as_deref(), Some("loom@a1b2c3d"));
        assert_eq!(display_location(git), "loom@a1b2c3d/src/rt/mod.rs:9:1");
        assert!(!is_user_location(git));
        for user in [
            "src/lib.rs:3:1",
            "/work/app/src/main.rs:1:1",
            "tests/t.rs:2:2",
        ] {
            assert!(is_user_location(user), "{user}");
            assert_eq!(dependency_of(user), None);
            assert_eq!(display_location(user), user);
        }
        assert!(!is_user_location(
            "/rustc/abc/library/std/src/sync/mpsc.rs:1:1"
        ));
        // Where the traced replay sees it: cargo-pulse's instrumented copy.
        // In a target dir shared with other workspaces (`CARGO_TARGET_DIR` outside this one)
        // the copies are under a directory per workspace.
        for copy in [
            "/w/app/target/pulse/deps/parking_lot-0.13.0/src/raw_mutex.rs:62:14",
            "/t/pulse/app-407e5e22fb989809/deps/parking_lot-0.13.0/src/raw_mutex.rs:62:14",
        ] {
            assert_eq!(dependency_of(copy).as_deref(), Some("parking_lot-0.13.0"));
            assert!(!is_user_location(copy), "{copy}");
            assert_eq!(
                display_location(copy),
                "parking_lot-0.13.0/src/raw_mutex.rs:62:14"
            );
        }
        // A user's own directory that only looks alike stays theirs.
        for own in [
            "/w/pulse/app-notahash/deps/src/lib.rs:1:1",
            "/w/pulse/src/deps.rs:1:1",
        ] {
            assert!(is_user_location(own), "{own}");
        }
        // A report's text: each dependency path shortened, anything else left alone.
        assert_eq!(
            display_locations_in(&format!(
                "thread 'main' at {reg}:\n  at {git} (x)\n  src/lib.rs:1:1 /registry/"
            )),
            "thread 'main' at parking_lot-0.13.0/src/raw_mutex.rs:62:14:\n  \
             at loom@a1b2c3d/src/rt/mod.rs:9:1 (x)\n  src/lib.rs:1:1 /registry/"
        );
    }

    /// r2d2's `test::events`, cut down: the event log is a parking_lot mutex, so every
    /// access to it is at a line of parking_lot; main records a checkin (src/lib.rs:492)
    /// and a release (src/lib.rs:199) and a worker an acquire (src/lib.rs:257) between them.
    fn r2d2_like(with_user_race: bool) -> Trace {
        let mut events = vec![
            ev(0, Spawn, "Thread#1", 1),
            ev(0, Other, "", 492),
            dep(0, Rmw, "AtomicU8#1", 62),
            dep(0, Rmw, "AtomicU8#1", 161),
            ev(1, Other, "", 257),
            dep(1, Rmw, "AtomicU8#1", 62),
            dep(1, Rmw, "AtomicU8#1", 192),
            ev(0, Other, "", 199),
            dep(0, Rmw, "AtomicU8#1", 62),
        ];
        if with_user_race {
            events.splice(
                7..7,
                [
                    ev(1, Store, "AtomicUsize#0", 250),
                    ev(0, Store, "AtomicUsize#0", 251),
                ],
            );
        }
        let mut t = trace(events, 0);
        t.threads[1].name = "r2d2-worker-0".into();
        t.failing_event = Some(t.events.len() as u64 - 1);
        t
    }

    #[test]
    fn a_race_inside_a_dependency_is_said_so_with_the_user_lines_it_ran_for() {
        let t = r2d2_like(false);
        assert_eq!(t.races().len(), 2);
        assert_eq!(
            t.race_summary().unwrap(),
            "inside parking_lot-0.13.0: r2d2-worker-0 updated `AtomicU8#1` at \
             parking_lot-0.13.0/src/raw_mutex.rs:62:14 (after src/lib.rs:257:5) \
             between main's update at :161 (after src/lib.rs:492:5) and update at :62 \
             (after src/lib.rs:199:5)"
        );
        let behalf = t.on_behalf_of();
        assert_eq!(behalf[0], Some("src/lib.rs:1:5"));
        assert_eq!(
            behalf[5],
            Some("src/lib.rs:257:5"),
            "the worker's own last line"
        );
        assert_eq!(behalf[8], Some("src/lib.rs:199:5"));
        // A pool's worker that has run none of the user's lines yet stands for the line
        // that spawned it.
        let mut t = r2d2_like(false);
        t.events.remove(4);
        t.link();
        let behalf = t.on_behalf_of();
        assert_eq!(t.events[4].thread, 1);
        assert_eq!(behalf[4], Some("src/lib.rs:1:5"), "its spawn's line");
        let s = t.race_summary().unwrap();
        assert!(s.contains("(after src/lib.rs:1:5) between main's"), "{s}");
        // Had main blocked there for good (a deadlock), the lock word's race would say
        // nothing of the wait cycle: no race line.
        let mut t = r2d2_like(false);
        t.events.push(ev(0, Block, "Mutex#7", 300));
        t.failing_event = Some(t.events.len() as u64 - 1);
        t.link();
        assert_eq!(t.race_summary(), None);
    }

    #[test]
    fn a_race_at_the_user_s_own_lines_wins_over_one_inside_a_dependency() {
        let t = r2d2_like(true);
        assert_eq!(t.races().len(), 3);
        // Main fails right after its access to the lock word, the object it touched last
        // (which the focus rule alone would pick), yet a race at the user's own lines exists.
        assert_eq!(t.failure_object(&t.races()), Some("AtomicU8#1"));
        assert_eq!(
            t.race_summary().unwrap(),
            "r2d2-worker-0 wrote `AtomicUsize#0` at src/lib.rs:250:5 and main wrote it at :251, \
             unordered by any synchronisation"
        );
    }

    /// A lost update through a runtime's queue (tokio's, cut down: its lock word is inside
    /// a dependency): main reads the counter, yields, a worker reads and writes it, main
    /// writes what it read plus one. The queue orders every access to the counter, so no
    /// race is at the user's lines; the interleaving is still the bug.
    fn lost_update_through_a_queue(updates: bool) -> Trace {
        let (read, write) = if updates { (Rmw, Rmw) } else { (Load, Store) };
        let mut t = trace(
            vec![
                ev(0, Spawn, "Thread#1", 1),
                ev(0, read, "AtomicUsize#0", 11),
                dep(0, Rmw, "AtomicU8#1", 62),
                dep(1, Rmw, "AtomicU8#1", 62),
                ev(1, read, "AtomicUsize#0", 11),
                ev(1, write, "AtomicUsize#0", 13),
                dep(1, Rmw, "AtomicU8#1", 161),
                dep(0, Rmw, "AtomicU8#1", 192),
                ev(0, write, "AtomicUsize#0", 13),
                ev(0, Load, "AtomicUsize#0", 22),
            ],
            0,
        );
        t.threads[1].name = "tokio-rt-worker#1".into();
        t.failing_event = Some(9);
        t
    }

    #[test]
    fn a_lost_update_no_race_explains_is_named_over_a_race_inside_a_dependency() {
        let t = lost_update_through_a_queue(false);
        assert!(
            t.races().iter().all(|e| t.user(e.from) + t.user(e.to) == 0),
            "only the queue's lock word races: {:?}",
            t.races()
        );
        let race = t.race().unwrap();
        assert_eq!(
            race.summary,
            "tokio-rt-worker#1 read `AtomicUsize#0` at src/lib.rs:11:5 and wrote it at :13 \
             between main's read at :11 and write at :13"
        );
        assert_eq!(race.steps, (1, 8));
        // Read-modify-writes are indivisible: the same steps as updates are no violation,
        // and the summary falls back to the race inside the dependency.
        let s = lost_update_through_a_queue(true).race_summary().unwrap();
        assert!(s.starts_with("inside parking_lot-0.13.0: "), "{s}");
    }

    #[test]
    fn two_tasks_interleaved_on_one_thread_are_named_as_two_runs() {
        // One worker polls two tasks: each reads the counter at :11, yields, writes at :13;
        // both read before either writes. No other thread is between, so no pair of threads
        // explains it; the same lines twice in a row do.
        let mut t = trace(
            vec![
                ev(0, Spawn, "Thread#1", 1),
                ev(1, Load, "AtomicUsize#0", 11),
                dep(1, Rmw, "AtomicU8#1", 62),
                ev(1, Load, "AtomicUsize#0", 11),
                dep(1, Rmw, "AtomicU8#1", 62),
                ev(1, Store, "AtomicUsize#0", 13),
                ev(1, Store, "AtomicUsize#0", 13),
                dep(1, Rmw, "AtomicU8#1", 161),
                dep(0, Rmw, "AtomicU8#1", 192),
                ev(0, Load, "AtomicUsize#0", 22),
            ],
            0,
        );
        t.threads[1].name = "tokio-rt-worker".into();
        t.failing_event = Some(9);
        let race = t.race().unwrap();
        assert_eq!(
            race.summary,
            "two runs of src/lib.rs:11:5 \u{2192} :13 interleaved on tokio-rt-worker (two tasks \
             on one thread, say): both read `AtomicUsize#0` at :11 before either wrote it at \
             :13, so the second write overwrote the first"
        );
        assert_eq!(race.steps, (1, 6));
        // Read, write, read, write at the same lines is one run after the other.
        t.events.swap(3, 5);
        t.link();
        let s = t.race_summary().unwrap();
        assert!(s.starts_with("inside parking_lot"), "{s}");
    }

    #[test]
    fn a_lost_update_is_named_before_a_spin_loop_s_two_reads() {
        // main loses an update to `AtomicUsize#0` (as above), then spins on `AtomicBool#2`
        // (two reads, thread-1's write between) and fails on the flag: the flag is what it
        // touched last, so its read-write-read is named; without the failing event to focus
        // on, the lost update ranks first.
        let mut t = lost_update_through_a_queue(false);
        t.threads[1].name = "thread-1".into();
        t.events.truncate(9);
        t.events.extend([
            ev(0, Load, "AtomicBool#2", 30),
            dep(0, Rmw, "AtomicU8#1", 62),
            dep(1, Rmw, "AtomicU8#1", 62),
            ev(1, Store, "AtomicBool#2", 40),
            dep(1, Rmw, "AtomicU8#1", 161),
            dep(0, Rmw, "AtomicU8#1", 192),
            ev(0, Load, "AtomicBool#2", 30),
        ]);
        for (i, e) in t.events.iter_mut().enumerate() {
            e.step = i as u64;
        }
        t.link();
        t.failing_event = Some(15);
        assert!(
            t.race_summary()
                .unwrap()
                .starts_with("thread-1 wrote `AtomicBool#2` at src/lib.rs:40:5 between main's read at :30 and read at :30"),
            "{:?}",
            t.race_summary()
        );
        t.failing_event = None;
        assert_eq!(
            t.race_summary().unwrap(),
            "thread-1 read `AtomicUsize#0` at src/lib.rs:11:5 and wrote it at :13 between \
             main's read at :11 and write at :13"
        );
    }

    #[test]
    fn a_spawn_or_join_ordering_two_writes_leaves_no_race() {
        let t = trace(
            vec![
                ev(0, Store, "AtomicU64#0", 1),
                ev(0, Spawn, "Thread#1", 2),
                ev(1, Store, "AtomicU64#0", 3),
                ev(1, Exit, "Thread#1", 0),
                ev(0, Join, "Thread#1", 4),
                ev(0, Load, "AtomicU64#0", 5),
            ],
            1,
        );
        assert!(t.races().is_empty(), "{:?}", t.races());
        assert_eq!(t.events[5].reads_from, Some(2));
    }

    #[test]
    fn two_unordered_sends_race_but_a_send_and_its_receive_do_not() {
        let t = trace(
            vec![
                ev(0, Spawn, "Thread#1", 1),
                ev(1, Send, "Channel#0", 2),
                ev(0, Send, "Channel#0", 3),
                ev(0, Recv, "Channel#0", 4),
            ],
            0,
        );
        assert_eq!(t.races(), vec![Edge { from: 1, to: 2 }]);
        assert_eq!(t.events[3].sync, Some(1), "FIFO: the first send");
    }

    #[test]
    fn a_deadlock_is_two_waits_for_edges() {
        let t = trace(
            vec![
                ev(0, Spawn, "Thread#1", 1),
                ev(0, Acquire, "Mutex#0", 2),
                ev(1, Acquire, "Mutex#1", 3),
                ev(0, Block, "Mutex#1", 4),
                ev(1, Block, "Mutex#0", 5),
            ],
            0,
        );
        assert_eq!(
            t.waits_for(),
            vec![Edge { from: 3, to: 2 }, Edge { from: 4, to: 1 }]
        );
        assert_eq!(t.events[3].value.as_deref(), Some("held by thread-1"));
        assert_eq!(t.events[4].value.as_deref(), Some("held by main"));
        assert!(t.races().is_empty());
    }

    #[test]
    fn an_operation_s_interval_is_its_invoke_to_its_response() {
        let op = |thread, kind, var: &str| Event {
            thread,
            kind,
            op: "Incr".into(),
            object: Some(var.into()),
            ..Default::default()
        };
        let t = trace(
            vec![
                ev(0, Spawn, "Thread#1", 1),
                op(1, Invoke, "v1"),
                op(0, Invoke, "v0"),
                ev(1, Store, "A#0", 2),
                op(1, Response, "v1"),
                op(1, Invoke, "v2"),
                op(0, Response, "v0"),
            ],
            0,
        );
        assert_eq!(
            t.intervals(),
            vec![
                Interval {
                    thread: 1,
                    invoke: 1,
                    response: Some(4)
                },
                Interval {
                    thread: 0,
                    invoke: 2,
                    response: Some(6)
                },
                Interval {
                    thread: 1,
                    invoke: 5,
                    response: None
                },
            ]
        );
        assert!(t.races().is_empty(), "intervals are no accesses");
    }

    fn ordered(thread: u32, kind: EventKind, object: &str, line: u32, order: Order) -> Event {
        Event {
            order: Some(order),
            ..ev(thread, kind, object, line)
        }
    }

    #[test]
    fn a_relaxed_flag_orders_nothing_until_an_acquire_fence() {
        use Order::*;
        // thread-1 writes the data, then raises the flag; main reads the flag, then the
        // data. Whether the data's write happens before its read is the orderings' say.
        let run = |flag_store: Order, flag_load: Order, fences: bool| {
            let mut events = vec![
                ev(0, Spawn, "Thread#1", 1),
                ordered(1, Store, "AtomicUsize#0", 10, Relaxed),
                ordered(1, Fence, "", 11, Release),
                ordered(1, Store, "AtomicBool#1", 12, flag_store),
                ordered(0, Load, "AtomicBool#1", 20, flag_load),
                ordered(0, Fence, "", 21, Acquire),
                ordered(0, Load, "AtomicUsize#0", 22, Relaxed),
            ];
            if !fences {
                events.retain(|e| e.kind != Fence);
            }
            let t = trace(events, 0);
            let (store, load) = (1, t.events.len() - 1);
            t.happens_before(store, load)
        };
        assert!(run(Release, Acquire, false), "release/acquire");
        assert!(run(SeqCst, SeqCst, false), "seq_cst");
        assert!(
            !run(Relaxed, Acquire, false),
            "a relaxed store releases nothing"
        );
        assert!(
            !run(Release, Relaxed, false),
            "a relaxed load acquires nothing"
        );
        assert!(run(Relaxed, Relaxed, true), "fence to fence");
        assert!(run(Release, Relaxed, true), "store to fence");
        assert!(run(Relaxed, Acquire, true), "fence to load");
    }

    #[test]
    fn a_relaxed_update_carries_on_the_release_sequence_it_read() {
        use Order::*;
        let three = |t: &mut Trace| {
            t.threads.push(ThreadInfo {
                id: 2,
                name: "thread-2".into(),
                spawned_by: Some(0),
                ..Default::default()
            });
        };
        let mut t = Trace {
            events: vec![
                ev(0, Spawn, "Thread#1", 1),
                ordered(1, Store, "AtomicUsize#0", 10, Relaxed),
                ordered(1, Store, "AtomicUsize#1", 11, Release),
                ordered(2, Rmw, "AtomicUsize#1", 30, Relaxed),
                ordered(0, Load, "AtomicUsize#1", 20, Acquire),
                ordered(0, Load, "AtomicUsize#0", 21, Relaxed),
            ],
            ..trace(vec![], 0)
        };
        three(&mut t);
        t.link();
        assert_eq!(t.events[4].reads_from, Some(3));
        assert_eq!(
            t.events[4].sync,
            Some(2),
            "the head of the release sequence"
        );
        assert!(t.happens_before(1, 5));
        assert!(
            !t.happens_before(3, 4),
            "the relaxed update itself releases nothing"
        );
    }

    #[test]
    fn a_failed_compare_exchange_only_reads() {
        let mut failed = ev(1, Rmw, "AtomicUsize#0", 12);
        failed.value = Some("failed, read 1".into());
        let t = trace(
            vec![
                ev(0, Spawn, "Thread#1", 1),
                ev(0, Store, "AtomicUsize#0", 10),
                failed,
                ev(0, Load, "AtomicUsize#0", 14),
            ],
            0,
        );
        assert_eq!(t.events[2].reads_from, Some(1));
        assert_eq!(t.events[3].reads_from, Some(1), "not the failed exchange");
        // Two reads do not race: only the store and the failed exchange's read do.
        assert_eq!(t.races(), vec![Edge { from: 1, to: 2 }]);
        assert_eq!(
            t.race_summary().unwrap(),
            "main wrote `AtomicUsize#0` at src/lib.rs:10:5 and thread-1 read (a failed \
             compare-exchange) it at :12, unordered by any synchronisation"
        );
    }

    #[test]
    fn a_trace_survives_both_json_implementations() {
        let mut t = trace(vec![ev(0, Spawn, "Thread#1", 1), ev(1, Load, "A#0", 2)], 0);
        t.events[1].order = Some(Order::AcqRel);
        let text = crate::json::to_string(&t);
        assert!(text.contains(r#""kind":"load""#), "{text}");
        assert!(text.contains(r#""order":"acq_rel""#), "{text}");
        assert_eq!(serde_json::from_str::<Trace>(&text).unwrap(), t);
        assert_eq!(crate::json::from_str::<Trace>(&text).unwrap(), t);
    }
}
