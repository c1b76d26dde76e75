//! A client asks a server for prices over channels and gives each request 10 ms; the
//! server needs about 4 ms per request.
//!
//! `buggy::Client` treats a timeout as "no answer" and moves on, but the answer may still
//! come: on a loaded machine the server's reply to request 1 arrives after the client gave
//! up on it, and the client takes it as the answer to request 2.
//!
//! `fixed::Client` tags every request with an id and drops replies to requests it has
//! given up on. `scenario_generous` is a client whose 10 s timeout is answered at once:
//! correct under any realistic timing, so pulse must never report it.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// How long the client waits for a reply.
pub const TIMEOUT: Duration = Duration::from_millis(10);
/// How long the server takes to answer.
pub const SERVICE_TIME: Duration = Duration::from_millis(4);

fn price(item: u64) -> u64 {
    item * 10
}

/// Serves `(id, item)` requests with `(id, price)` replies until the client hangs up.
fn start_server(service_time: Duration) -> (Sender<(u64, u64)>, Receiver<(u64, u64)>, JoinHandle<()>) {
    let (req_tx, req_rx) = mpsc::channel::<(u64, u64)>();
    let (resp_tx, resp_rx) = mpsc::channel();
    let server = thread::spawn(move || {
        for (id, item) in req_rx {
            thread::sleep(service_time);
            if resp_tx.send((id, price(item))).is_err() {
                return;
            }
        }
    });
    (req_tx, resp_rx, server)
}

pub mod buggy {
    use super::*;

    /// Asks for each item's price; `None` where the server was too slow.
    pub fn prices(items: &[u64]) -> Vec<Option<u64>> {
        let (requests, replies, server) = start_server(SERVICE_TIME);
        let mut out = Vec::new();
        for (id, &item) in items.iter().enumerate() {
            requests.send((id as u64, item)).unwrap();
            // BUG: a reply that missed its timeout is still in the channel, and is read
            // here as the answer to the next request.
            out.push(replies.recv_timeout(TIMEOUT).ok().map(|(_, price)| price));
        }
        drop(requests);
        server.join().unwrap();
        out
    }
}

pub mod fixed {
    use super::*;

    pub fn prices(items: &[u64]) -> Vec<Option<u64>> {
        let (requests, replies, server) = start_server(SERVICE_TIME);
        let mut out = Vec::new();
        for (id, &item) in items.iter().enumerate() {
            let id = id as u64;
            requests.send((id, item)).unwrap();
            out.push(loop {
                match replies.recv_timeout(TIMEOUT) {
                    Ok((for_id, price)) if for_id == id => break Some(price),
                    Ok(_stale) => continue, // the answer to a request already given up on
                    Err(RecvTimeoutError::Timeout) => break None,
                    Err(RecvTimeoutError::Disconnected) => break None,
                }
            });
        }
        drop(requests);
        server.join().unwrap();
        out
    }
}

/// Every price the client reports is the right one for its item (or missing).
fn check(prices: fn(&[u64]) -> Vec<Option<u64>>) {
    let items = [1, 2, 3];
    for (item, got) in items.iter().zip(prices(&items)) {
        if let Some(p) = got {
            assert_eq!(p, price(*item), "the price reported for item {item}");
        }
    }
}

pub fn scenario_buggy() {
    check(buggy::prices);
}

pub fn scenario_fixed() {
    check(fixed::prices);
}

/// A 10 s timeout on a server that answers at once: the answer is always there in time.
pub fn scenario_generous() {
    let (requests, replies, server) = start_server(Duration::ZERO);
    requests.send((0, 7)).unwrap();
    assert_eq!(
        replies.recv_timeout(Duration::from_secs(10)),
        Ok((0, price(7))),
        "a server that answers at once is never 10 s late"
    );
    drop(requests);
    server.join().unwrap();
}
