//! An ordered log over `std::sync::mpsc`. Any thread may `log` a line: it draws a ticket
//! (the line's sequence number) from a shared atomic counter and sends `(ticket, line)`
//! down the channel. The writer drains the channel into the log, which promises that lines
//! are written in ticket order (tickets are handed back to callers as log positions).
//!
//! `buggy::writer` writes lines in the order the channel delivers them, assuming that is
//! ticket order. A channel is FIFO per sender, not across senders: a thread that drew
//! ticket 0 can be preempted between `fetch_add` and `send` while another thread draws
//! ticket 1 and sends it first. `fixed::writer` keeps a reorder buffer and writes ticket
//! `n` only after tickets `0..n`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread;

/// What travels down the channel: a ticket and its line.
pub type Entry = (u64, String);

/// A handle for logging lines; clone it for each thread.
#[derive(Clone)]
pub struct Logger {
    next_ticket: Arc<AtomicU64>,
    tx: Sender<Entry>,
}

impl Logger {
    /// A logger and the receiving end, for the writer.
    pub fn channel() -> (Logger, Receiver<Entry>) {
        let (tx, rx) = mpsc::channel();
        (Logger { next_ticket: Arc::new(AtomicU64::new(0)), tx }, rx)
    }

    /// Logs `line` and returns its ticket.
    pub fn log(&self, line: String) -> u64 {
        let ticket = self.next_ticket.fetch_add(1, Ordering::SeqCst);
        // Another thread may draw the next ticket and send it before this send.
        self.tx.send((ticket, line)).expect("writer hung up");
        ticket
    }
}

pub mod buggy {
    use super::Entry;
    use std::sync::mpsc::Receiver;

    /// Writes lines until every `Logger` is dropped; returns `(ticket, line)` in written
    /// order.
    pub fn writer(rx: Receiver<Entry>) -> Vec<Entry> {
        // BUG: trusts that arrival order is ticket order.
        rx.into_iter().collect()
    }
}

pub mod fixed {
    use super::Entry;
    use std::collections::BTreeMap;
    use std::sync::mpsc::Receiver;

    /// Writes lines until every `Logger` is dropped; returns `(ticket, line)` in written
    /// order, which is ticket order.
    pub fn writer(rx: Receiver<Entry>) -> Vec<Entry> {
        let mut written = Vec::new();
        let mut early: BTreeMap<u64, String> = BTreeMap::new();
        let mut next = 0;
        for (ticket, line) in rx {
            early.insert(ticket, line);
            while let Some(line) = early.remove(&next) {
                written.push((next, line));
                next += 1;
            }
        }
        assert!(early.is_empty(), "tickets missing before {:?}", early.keys());
        written
    }
}

const LINES: u64 = 2;

/// Logs this handler's lines.
fn handle_request(logger: &Logger, handler: &str) {
    for i in 0..LINES {
        logger.log(format!("{handler} line {i}"));
    }
}

/// The log opens with a header line; then two request handlers, one on the main thread
/// and one on another thread, log two lines each. When they are done the writer drains the
/// channel into the log. The log must hold all five lines in ticket order.
fn scenario(writer: fn(Receiver<Entry>) -> Vec<Entry>) {
    let (logger, rx) = Logger::channel();
    logger.log("log opened".to_owned());

    let other = {
        let logger = logger.clone();
        thread::spawn(move || handle_request(&logger, "handler B"))
    };
    handle_request(&logger, "handler A");
    // Once every Logger (and with it every Sender) is gone, the writer's drain ends.
    drop(logger);
    other.join().expect("handler B panicked");
    let written = writer(rx);

    let tickets: Vec<u64> = written.iter().map(|(ticket, _)| *ticket).collect();
    let expected: Vec<u64> = (0..=2 * LINES).collect();
    assert_eq!(tickets, expected, "log not written in ticket order: {written:?}");
}

/// Runs the scenario with `buggy::writer`; panics when lines arrive out of ticket order.
pub fn scenario_buggy() {
    scenario(buggy::writer);
}

/// Runs the scenario with `fixed::writer`; never panics.
pub fn scenario_fixed() {
    scenario(fixed::writer);
}
