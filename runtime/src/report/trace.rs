//! The trace of one execution: every scheduling point, in order, with the thread, the
//! operation, the object and the user's source location. Recorded only when a failing
//! schedule is replayed for its report, so the search itself pays nothing for it.

use std::panic::Location;

use crate::obj_ref::ObjRef;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventKind {
    /// The thread reached a scheduling point before `op`.
    Op,
    /// The thread blocked in `op`.
    Block,
    /// The thread finished.
    Exit,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Event {
    pub step: u64,
    pub thread: u32,
    pub kind: EventKind,
    pub op: &'static str,
    pub object: Option<ObjRef>,
    pub location: Option<&'static Location<'static>>,
}

impl Event {
    pub fn describe(&self) -> String {
        match self.kind {
            EventKind::Op => self.op.to_string(),
            EventKind::Block => format!("{} (blocks)", self.op),
            EventKind::Exit => "thread exits".to_string(),
        }
    }
}

pub use pulse_protocol::TraceEvent;

pub(crate) fn location_string(loc: &Location<'_>) -> String {
    format!("{}:{}:{}", loc.file(), loc.line(), loc.column())
}

/// Renders events as an aligned table.
pub fn format_table(events: &[TraceEvent]) -> String {
    let width = |f: &dyn Fn(&TraceEvent) -> usize, min: usize| {
        events.iter().map(f).max().unwrap_or(0).max(min)
    };
    let tw = width(&|e| e.thread.len(), 6);
    let ow = width(&|e| e.op.len(), 9);
    let bw = width(&|e| e.object.as_deref().map_or(1, str::len), 6);
    let mut out = format!(
        "    {:>5}  {:tw$}  {:ow$}  {:bw$}  location\n",
        "step", "thread", "operation", "object"
    );
    for e in events {
        out.push_str(&format!(
            "    {:>5}  {:tw$}  {:ow$}  {:bw$}  {}\n",
            e.step,
            e.thread,
            e.op,
            e.object.as_deref().unwrap_or("-"),
            e.location.as_deref().unwrap_or("-"),
        ));
    }
    out
}
