//! A panic hook that records panics of virtual threads instead of printing them: a search
//! may panic thousands of times, and the one worth showing is reported with its schedule.
//! Panics outside an execution go to the hook that was installed before ours.

use std::backtrace::Backtrace;
use std::panic::{self, PanicHookInfo};
use std::sync::Once;

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

/// Stores the panic on the running virtual thread; false if there is none.
fn record(info: &PanicHookInfo<'_>) -> bool {
    let Some(ctx) = crate::ctx::current() else { return false };
    ctx.record_panic(|capture_backtrace| PanicRecord {
        message: payload_message(info.payload()),
        location: info.location().map(|l| crate::report::trace::location_string(l)),
        backtrace: capture_backtrace.then(|| user_frames(&Backtrace::force_capture().to_string())),
    })
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
