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
    last_words::install();
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
    let Some(Recorded { thread, record }) =
        ctx.record_panic(|capture_backtrace, step| PanicRecord {
            message: payload_message(info.payload()),
            location: info
                .location()
                .map(|l| crate::report::trace::location_string(l)),
            backtrace: capture_backtrace
                .then(|| user_frames(&Backtrace::force_capture().to_string())),
            earlier: None,
            raised_in: None,
            step,
        })
    else {
        return false;
    };
    if ABORTING.iter().any(|m| record.message.starts_with(m)) {
        // Straight to the file descriptor: libtest's capture would die with the process.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            fatal_report(&thread, &record).as_bytes(),
        );
        last_words::forget();
    } else {
        let at = record.at();
        last_words::keep(&format!(
            "pulse: before the abort, thread '{thread}' panicked{at}:\n    {}\n",
            record.message
        ));
    }
    true
}

/// The last panic of the running execution on this OS thread, kept where a `SIGABRT`
/// handler can write it without allocating. A test that catches a panic and then aborts
/// (crossbeam-channel's `go!` does, after printing only `Err(Any { .. })`) otherwise dies
/// with its cause unsaid; a crash's report shows the dead process's last stderr lines.
pub(crate) mod last_words {
    use std::cell::Cell;

    const CAP: usize = 480;

    thread_local! {
        static LEN: Cell<usize> = const { Cell::new(0) };
        static TEXT: Cell<[u8; CAP]> = const { Cell::new([0; CAP]) };
    }

    pub(super) fn keep(line: &str) {
        let mut n = line.len().min(CAP);
        while !line.is_char_boundary(n) {
            n -= 1;
        }
        let mut text = [0; CAP];
        text[..n].copy_from_slice(&line.as_bytes()[..n]);
        let _ = TEXT.try_with(|t| t.set(text));
        let _ = LEN.try_with(|l| l.set(n));
    }

    /// A new execution starts: nothing of the last one's is said if it aborts.
    pub(crate) fn forget() {
        let _ = LEN.try_with(|l| l.set(0));
    }

    #[cfg(unix)]
    extern "C" fn on_abort(_signal: libc::c_int) {
        let n = LEN.try_with(Cell::get).unwrap_or(0);
        if n > 0 {
            if let Ok(text) = TEXT.try_with(Cell::get) {
                // SAFETY: write(2) is async-signal-safe; the handler returning lets abort
                // go on (glibc then restores the default action and raises again).
                unsafe { libc::write(2, text.as_ptr().cast(), n) };
            }
        }
    }

    /// Installs the `SIGABRT` handler once per process.
    pub(crate) fn install() {
        #[cfg(unix)]
        {
            static INSTALL: std::sync::Once = std::sync::Once::new();
            // SAFETY: the handler only reads thread-locals and calls write(2). A handler the
            // program installed itself is left in place.
            INSTALL.call_once(|| unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(libc::SIGABRT, std::ptr::null(), &mut old) != 0
                    || old.sa_sigaction != libc::SIG_DFL
                {
                    return;
                }
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_abort as extern "C" fn(libc::c_int) as usize;
                action.sa_flags = libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(libc::SIGABRT, &action, std::ptr::null_mut());
            });
        }
    }
}

/// The panics that led to an aborting one, oldest first.
fn fatal_report(thread: &str, fatal: &PanicRecord) -> String {
    let mut chain = vec![fatal];
    while let Some(earlier) = chain.last().and_then(|r| r.earlier.as_deref()) {
        chain.push(earlier);
    }
    let mut out = String::new();
    for (i, r) in chain.iter().rev().enumerate() {
        let at = r.at();
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
