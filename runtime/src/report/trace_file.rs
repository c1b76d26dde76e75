//! The trace file's format (`pulse_protocol::trace`) from an execution's events: each event
//! converted, then the whole assembled (user locations only, threads, the failing event,
//! links and vector clocks). `explain::full_trace` assembles an execution's trace in
//! process; `process::journal` assembles a crashed worker's from the events it journaled.

use crate::obj_ref::ObjRef;
use crate::report::trace::{is_machinery, location_string, Event, EventKind, TraceKind};
use pulse_protocol::trace::{self, ThreadInfo, Trace};

/// `events[i]` as the trace file has it; indices it names count from `first`, the first
/// event the file keeps. (The trace file's events before `user_locations_only` and
/// `Trace::link`, which `assemble` does.)
/// Threads are named by `names`, as in the file's thread list.
pub(crate) fn event(
    events: &[Event],
    i: usize,
    first: usize,
    names: &dyn Fn(u32) -> String,
) -> trace::Event {
    let e = &events[i];
    let (kind, object) = kind_and_object(e);
    // A relaxed load that read an older store: which one, counted back from the newest
    // store to the object in the trace (modification order is execution order).
    let (value, reads_from, stale) = match e.kind {
        EventKind::ReadOld(r) => {
            // A failed compare-exchange wrote nothing: it is no store of the history.
            let mut stores = events[first..i].iter().enumerate().rev().filter(|(_, x)| {
                let (kind, other) = kind_and_object(x);
                let failed = x.atomic.is_some_and(|a| a.failed);
                matches!(kind, TraceKind::Store | TraceKind::Rmw) && other == object && !failed
            });
            let read =
                r.at.and_then(|_| stores.nth(r.newer as usize))
                    .map(|(i, _)| i as u64);
            // The row's `op` already names the load: "reads old value 1 (...)".
            let what = e.describe(names);
            let what = what
                .strip_prefix(e.op)
                .map_or(what.as_str(), str::trim_start);
            (Some(what.to_string()), read, Some(r.newer))
        }
        _ => (
            e.atomic
                .map(|a| a.describe())
                .filter(|v| !v.is_empty())
                .or_else(|| e.value.map(str::to_string)),
            None,
            None,
        ),
    };
    trace::Event {
        step: e.step,
        thread: e.thread,
        kind,
        op: match e.kind {
            EventKind::Exit | EventKind::Start | EventKind::Returns => e.describe(names),
            _ => e.op.to_string(),
        },
        object: object.map(|o| o.to_string()),
        value,
        location: e.location.map(location_string),
        clock_ns: e.clock_ns,
        reads_from,
        stale,
        order: e.atomic.map(|a| a.order),
        ..Default::default()
    }
}

fn kind_and_object(e: &Event) -> (TraceKind, Option<ObjRef>) {
    match e.kind {
        EventKind::Op => (op_kind(e), e.object),
        EventKind::Block => (TraceKind::Block, e.object),
        EventKind::Exit => (TraceKind::Exit, Some(ObjRef::thread(e.thread))),
        EventKind::Start => (TraceKind::Other, Some(ObjRef::thread(e.thread))),
        EventKind::Returns => (TraceKind::Other, e.object),
        EventKind::Timeout => (TraceKind::Timeout, e.object),
        EventKind::Note(k) => (k, e.object),
        EventKind::ReadOld(_) => (TraceKind::Load, e.object),
        EventKind::ClockRead => (TraceKind::Other, e.object),
    }
}

/// The thread where a failure shows, and how many events came before its panic.
pub(crate) struct Failing {
    /// By id: a pool's threads may share a name.
    pub thread: Option<u32>,
    /// Events before the thread's panic began: what the unwinding did after (a `Drop`'s
    /// loads) is not where the failure shows.
    pub panicked_after: Option<usize>,
}

/// A trace file from its events (`event`) and its threads' names (by id),
/// `dropped` events left out before them; the failing event is the failing thread's last
/// (before its panic).
pub(crate) fn assemble(
    mut out: Vec<trace::Event>,
    names: Vec<String>,
    failing: Failing,
    dropped: u64,
) -> Trace {
    user_locations_only(&mut out);
    let threads = (names.into_iter().enumerate())
        .map(|(t, name)| {
            let t = t as u32;
            let me = Some(ObjRef::thread(t).to_string());
            let spawn = out
                .iter()
                .position(|e| e.kind == TraceKind::Spawn && e.object == me);
            ThreadInfo {
                id: t,
                name,
                // Only a user's own line: a spawn inside pulse or std has no site.
                spawn_site: spawn
                    .filter(|&s| !out[s].location_inferred)
                    .and_then(|s| out[s].location.clone()),
                spawned_by: spawn.map(|s| s as u64),
            }
        })
        .collect::<Vec<_>>();
    let before_panic = &out[..failing.panicked_after.unwrap_or(out.len()).min(out.len())];
    let failing_event = failing
        .thread
        .and_then(|t| {
            (before_panic.iter().rposition(|e| e.thread == t))
                .or_else(|| out.iter().rposition(|e| e.thread == t))
        })
        .or_else(|| out.iter().rposition(|e| e.kind == TraceKind::Block))
        .or(out.len().checked_sub(1))
        .map(|i| i as u64);
    let mut trace = Trace {
        version: pulse_protocol::trace::TRACE_VERSION,
        threads,
        events: out,
        failing_event,
        dropped,
        ..Default::default()
    };
    trace.link();
    trace
}

/// An event whose location is inside pulse or std (a `Drop`, which cannot be
/// `#[track_caller]`; an iterator's `recv`, called by std) gets its thread's last user
/// location before it instead, marked `location_inferred`, or none.
fn user_locations_only(events: &mut [trace::Event]) {
    let mut last: std::collections::BTreeMap<u32, String> = Default::default();
    for e in events {
        let Some(loc) = &e.location else { continue };
        let file = loc.rsplitn(3, ':').nth(2).unwrap_or(loc);
        if is_machinery(file) {
            e.location = last.get(&e.thread).cloned();
            e.location_inferred = e.location.is_some();
        } else {
            last.insert(e.thread, loc.clone());
        }
    }
}

/// What a scheduling point's operation is, from its name and object.
fn op_kind(e: &Event) -> TraceKind {
    let atomic = e.object.is_some_and(|o| o.kind.starts_with("Atomic"));
    match e.op {
        "thread::spawn" => TraceKind::Spawn,
        "pulse::atomic" => TraceKind::Atomic,
        op if op.starts_with("Condvar::notify") => TraceKind::Notify,
        op if atomic && op.ends_with("::load") => TraceKind::Load,
        op if atomic && op.ends_with("::store") => TraceKind::Store,
        _ if atomic => TraceKind::Rmw,
        _ => TraceKind::Request,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pulse_s_and_std_s_files_are_machinery_and_the_user_s_are_not() {
        let root = file!()
            .strip_suffix("runtime/src/report/trace_file.rs")
            .unwrap();
        assert!(is_machinery(&format!("{root}shim-std/src/sync/mpsc.rs")));
        assert!(is_machinery(&format!("{root}pulse/src/statem/exec.rs")));
        assert!(is_machinery(
            "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/alloc/src/vec/mod.rs"
        ));
        assert!(!is_machinery("src/lib.rs"));
        assert!(!is_machinery("/home/u/app/src/shim-std/src/x.rs"));
        assert!(!is_machinery(
            "/home/u/.cargo/registry/src/x/crossbeam-0.8/src/lib.rs"
        ));
    }

    #[test]
    fn a_drop_s_event_takes_its_thread_s_last_user_line() {
        let root = file!()
            .strip_suffix("runtime/src/report/trace_file.rs")
            .unwrap();
        let ev = |thread, loc: &str| trace::Event {
            thread,
            location: Some(loc.to_string()),
            ..Default::default()
        };
        let shim = format!("{root}shim-std/src/sync/mpsc.rs:491:18");
        let mut events = vec![
            ev(1, &shim),
            ev(0, "src/lib.rs:10:5"),
            ev(1, "src/lib.rs:20:5"),
            ev(0, &shim),
            ev(1, "/rustc/abc/library/alloc/src/vec/mod.rs:3969:44"),
        ];
        user_locations_only(&mut events);
        let shown: Vec<(Option<&str>, bool)> = events
            .iter()
            .map(|e| (e.location.as_deref(), e.location_inferred))
            .collect();
        assert_eq!(
            shown,
            [
                (None, false),
                (Some("src/lib.rs:10:5"), false),
                (Some("src/lib.rs:20:5"), false),
                (Some("src/lib.rs:10:5"), true),
                (Some("src/lib.rs:20:5"), true),
            ]
        );
    }
}
