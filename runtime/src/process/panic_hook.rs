//! A panic hook that records panics of virtual threads instead of printing them: a search
//! may panic thousands of times, and the one worth showing is reported with its schedule.
//! Panics outside an execution go to the hook that was installed before ours.

use std::backtrace::Backtrace;
use std::panic::{self, PanicHookInfo};
use std::sync::Once;

use crate::ctx::Recorded;
use crate::execution::PanicRecord;
use crate::report::backtrace::user_frames;

static INSTALL: Once = Once::new();

pub(crate) fn install() {
    INSTALL.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !record(info) {
                previous(info);
            }
        }));
    });
}

/// Messages of core's panics that cannot unwind: the process aborts right after the hook.
const ABORTING: &[&str] = &[
    "panic in a destructor during cleanup",
    "panic in a function that cannot unwind",
    "unsafe precondition(s) violated",
];

/// Stores the panic on the running virtual thread; false if there is none. A panic the
/// process will not survive (one that cannot unwind, such as the one a destructor's panic
/// during unwinding turns into) is also written to stderr at once, with the panics it
/// interrupted: the record dies with the process, and whoever sees the crash (cargo-pulse,
/// an isolated run's parent) shows what led to it.
fn record(info: &PanicHookInfo<'_>) -> bool {
    let Some(ctx) = crate::ctx::current() else {
        return false;
    };
    let Some(Recorded { thread, record }) = ctx.record_panic(|capture_backtrace| PanicRecord {
        message: payload_message(info.payload()),
        location: info
            .location()
            .map(|l| crate::report::trace::location_string(l)),
        backtrace: capture_backtrace.then(|| user_frames(&Backtrace::force_capture().to_string())),
        earlier: None,
    }) else {
        return false;
    };
    if ABORTING.iter().any(|m| record.message.starts_with(m)) {
        // Straight to the file descriptor: libtest's capture would die with the process.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            fatal_report(&thread, &record).as_bytes(),
        );
    }
    true
}

/// The panics that led to an aborting one, oldest first.
fn fatal_report(thread: &str, fatal: &PanicRecord) -> String {
    let mut chain = vec![fatal];
    while let Some(earlier) = chain.last().and_then(|r| r.earlier.as_deref()) {
        chain.push(earlier);
    }
    let mut out = String::new();
    for (i, r) in chain.iter().rev().enumerate() {
        let at = r
            .location
            .as_deref()
            .map(|l| format!(" at {l}"))
            .unwrap_or_default();
        let how = if i == 0 {
            format!("pulse: thread '{thread}' panicked")
        } else {
            "  then, while unwinding, panicked".to_string()
        };
        out.push_str(&format!("{how}{at}:\n    {}\n", r.message));
    }
    out.push_str("  this panic cannot unwind: the process aborts\n");
    out
}

/// The text of a panic payload (`&str` or `String`), as std's default hook prints it.
pub fn payload_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "Box<dyn Any>".to_string()
    }
}
