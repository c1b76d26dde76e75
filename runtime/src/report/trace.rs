//! The trace of one execution: every scheduling point, in order, with the thread, the
//! operation, the object and the user's source location. Recorded only when a failing
//! schedule is replayed for its report, so the search itself pays nothing for it.

use std::collections::BTreeMap;
use std::panic::Location;

use crate::obj_ref::ObjRef;
pub use pulse_protocol::trace::EventKind as TraceKind;
use pulse_protocol::trace::Order;
use std::sync::atomic::Ordering;

/// The trace format's name for a Rust ordering.
pub(crate) fn order_of(order: Ordering) -> Order {
    match order {
        Ordering::Relaxed => Order::Relaxed,
        Ordering::Release => Order::Release,
        Ordering::Acquire => Order::Acquire,
        Ordering::AcqRel => Order::AcqRel,
        _ => Order::SeqCst,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventKind {
    /// The thread reached a scheduling point before `op`.
    Op,
    /// The thread blocked in `op`.
    Block,
    /// The thread finished.
    Exit,
    /// A spawned thread ran for the first time (the decision that picked it, before it
    /// reached a scheduling point of its own).
    Start,
    /// The thread resumed from `op` (a spawn), whose row came before the threads that ran
    /// in between.
    Returns,
    /// The thread's timed wait in `op` ran out (a timed transition).
    Timeout,
    /// What an operation did, for the trace file only (an acquire, a release, a wake, a
    /// send, a receive's result): the console's table leaves these out.
    Note(TraceKind),
    /// The thread's load `op` read an older store than the newest (relaxed memory).
    ReadOld(crate::memory::OldRead),
    /// The thread read the clock (`op`: `Instant::now`) after others ran or a timer fired
    /// since its scheduling point: what it read is this event's time, not that point's.
    ClockRead,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Event {
    pub step: u64,
    pub thread: u32,
    pub kind: EventKind,
    pub op: &'static str,
    pub object: Option<ObjRef>,
    pub location: Option<&'static Location<'static>>,
    pub clock_ns: u64,
    /// A note's value (`Ok`, `WouldBlock`, a wake's reason).
    pub value: Option<&'static str>,
    /// What an atomic operation read and wrote (traced replays only).
    pub atomic: Option<AtomicValue>,
}

/// What an atomic operation read and wrote, as bits (`u64`, like the memory model's values):
/// a compare-exchange's outcome is here, and a load's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AtomicValue {
    pub read: Option<u64>,
    pub wrote: Option<u64>,
    /// A compare-exchange that failed: it only read.
    pub failed: bool,
    /// A `compare_exchange_weak` that failed though it read the value it expected.
    pub spurious: bool,
    /// Its ordering (a failed compare-exchange's failure ordering; a fence's own).
    pub order: Order,
}

impl AtomicValue {
    pub fn read(value: u64, order: Ordering) -> AtomicValue {
        AtomicValue {
            read: Some(value),
            ..AtomicValue::ordered(order)
        }
    }

    pub fn wrote(value: u64, order: Ordering) -> AtomicValue {
        AtomicValue {
            wrote: Some(value),
            ..AtomicValue::ordered(order)
        }
    }

    /// Neither read nor wrote (a fence).
    pub fn ordered(order: Ordering) -> AtomicValue {
        AtomicValue {
            read: None,
            wrote: None,
            failed: false,
            spurious: false,
            order: order_of(order),
        }
    }

    pub fn describe(&self) -> String {
        match (self.read, self.wrote, self.failed) {
            (Some(r), _, true) if self.spurious => format!("failed spuriously, read {r}"),
            (Some(r), _, true) => format!("failed, read {r}"),
            (Some(r), Some(w), false) => format!("read {r}, wrote {w}"),
            (Some(r), None, false) => format!("read {r}"),
            (None, Some(w), _) => format!("wrote {w}"),
            (None, None, _) => String::new(),
        }
    }
}

/// A thread's name in reports: the test's own thread (0) is `main` (its real name, the test's,
/// is already in the report's header); an unnamed one is `thread-N`.
pub(crate) fn thread_name(tid: u32, name: Option<&str>) -> String {
    match name {
        _ if tid == 0 => "main".to_string(),
        Some(n) => n.to_string(),
        None => format!("thread-{tid}"),
    }
}

impl Event {
    /// The operation as the trace table says it; `names` names a thread by its index, as
    /// the table's thread column does.
    pub fn describe(&self, names: &dyn Fn(u32) -> String) -> String {
        match self.kind {
            EventKind::Op if self.atomic.is_some_and(|a| a.spurious) => {
                format!("{} (fails spuriously)", self.op)
            }
            // A compare-exchange that found another value: often the heart of a race (spin
            // 0.9.2's `Once` took its failure for a success).
            EventKind::Op if self.atomic.is_some_and(|a| a.failed) => {
                format!("{} (fails)", self.op)
            }
            EventKind::Op => self.op.to_string(),
            EventKind::Block => format!("{} (blocks)", self.op),
            EventKind::Exit => "thread exits".to_string(),
            EventKind::Start => "thread starts".to_string(),
            EventKind::Returns => format!("{} returns", self.op),
            EventKind::Timeout => format!("{} (times out)", self.op),
            EventKind::Note(_) => self.op.to_string(),
            EventKind::ClockRead => format!("{} (reads {})", self.op, clock_time(self.clock_ns)),
            EventKind::ReadOld(r) => {
                let by = names(r.thread);
                let store = r.at.map_or_else(
                    || "the initial value".to_string(),
                    |l| format!("stored by {by} at {}", location_string(l)),
                );
                format!(
                    "{} reads old value {} ({store}; {} newer store(s) not seen)",
                    self.op, r.value as i64, r.newer
                )
            }
        }
    }
}

pub use pulse_protocol::TraceEvent;

pub(crate) fn location_string(loc: &Location<'_>) -> String {
    format!("{}:{}:{}", loc.file(), loc.line(), loc.column())
}

/// What a timed transition's row says after the operation.
const TIMES_OUT: &str = " (times out)";

/// Renders events as an aligned table; with a virtual-time column when a timed wait ran out
/// in it (then when things happened is part of the story).
pub fn format_table(events: &[TraceEvent]) -> String {
    let width = |f: &dyn Fn(&TraceEvent) -> usize, min: usize| {
        events.iter().map(f).max().unwrap_or(0).max(min)
    };
    let timed = events.iter().any(|e| e.op.ends_with(TIMES_OUT));
    let time = |e: &TraceEvent| {
        if timed {
            format!("{:>10}  ", clock_time(e.clock_ns))
        } else {
            String::new()
        }
    };
    let tw = width(&|e| e.thread.len(), 6);
    let ow = width(&|e| e.op.len(), 9);
    let bw = width(&|e| e.object.as_deref().map_or(1, str::len), 6);
    let mut out = format!(
        "    {:>5}  {}{:tw$}  {:ow$}  {:bw$}  location\n",
        "step",
        if timed {
            format!("{:>10}  ", "time")
        } else {
            String::new()
        },
        "thread",
        "operation",
        "object"
    );
    for e in events {
        out.push_str(&format!(
            "    {:>5}  {}{:tw$}  {:ow$}  {:bw$}  {}\n",
            e.step,
            time(e),
            e.thread,
            e.op,
            e.object.as_deref().unwrap_or("-"),
            e.location
                .as_deref()
                .map_or_else(|| "-".into(), pulse_protocol::trace::display_location),
        ));
    }
    out
}

/// A clock reading for a trace row: exact to the microsecond, `1.250003s`, `12.5ms`, `7µs`.
pub(crate) fn clock_time(ns: u64) -> String {
    let us = ns / 1_000;
    match us {
        0..1_000 => format!("{us}µs"),
        1_000..1_000_000 => format!("{}ms", trim(us as f64 / 1e3)),
        _ => format!("{}s", trim(us as f64 / 1e6)),
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Each thread's last line in the user's code: a step inside pulse or std is shown "after"
/// it.
#[derive(Default)]
pub(crate) struct UserLines(BTreeMap<u32, &'static Location<'static>>);

impl UserLines {
    /// Notes `e`'s line if it is the user's, and says where to show `e` when `shown`.
    pub(crate) fn locate(&mut self, e: &Event, shown: bool) -> Option<String> {
        match e.location {
            Some(l) if is_machinery(l.file()) => self
                .0
                .get(&e.thread)
                .filter(|_| shown)
                .map(|l| format!("after {}", location_string(l))),
            Some(l) => {
                self.0.insert(e.thread, l);
                shown.then(|| location_string(l))
            }
            None => None,
        }
    }

    /// `e` as a row of the report's trace table, threads named by `names`.
    pub(crate) fn row(&mut self, e: &Event, names: &dyn Fn(u32) -> String) -> TraceEvent {
        TraceEvent {
            step: e.step,
            thread: names(e.thread),
            op: e.describe(names),
            object: e.object.map(|o| o.to_string()),
            location: self.locate(e, true),
            clock_ns: e.clock_ns,
        }
    }
}

/// pulse's own crates, as paths relative to the directory they are built from (this file's
/// `file!()` says where that is: the repository, or cargo-pulse's support copy).
const PULSE_DIRS: [&str; 6] = [
    "runtime/src/",
    "shim-std/src/",
    "pulse/src/",
    "pulse-macros/src/",
    "protocol/src/",
    "shim-parking-lot-core",
];

/// Whether `file` is inside pulse or Rust's standard library, not the user's code.
pub(crate) fn is_machinery(file: &str) -> bool {
    let root = file!()
        .strip_suffix("runtime/src/report/trace.rs")
        .unwrap_or("");
    let std = file.starts_with("/rustc/")
        || file.contains("/lib/rustlib/src/rust/library/")
        || file.starts_with("library/");
    std || file
        .strip_prefix(root)
        .is_some_and(|rest| PULSE_DIRS.iter().any(|d| rest.starts_with(d)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stale read names the thread that stored what it read as the thread column does
    /// (its own name), not by index.
    #[test]
    fn a_stale_read_names_the_storing_thread_as_the_table_does() {
        let event = Event {
            step: 3,
            thread: 0,
            kind: EventKind::ReadOld(crate::memory::OldRead {
                value: 1,
                thread: 2,
                at: Some(Location::caller()),
                newer: 1,
            }),
            op: "AtomicUsize::load",
            object: None,
            location: None,
            clock_ns: 0,
            value: None,
            atomic: None,
        };
        let names = |t: u32| thread_name(t, (t == 2).then_some("pool_worker_2"));
        let text = event.describe(&names);
        assert!(text.contains("stored by pool_worker_2 at "), "{text}");
        assert!(
            text.starts_with("AtomicUsize::load reads old value 1 ("),
            "{text}"
        );
    }
}
