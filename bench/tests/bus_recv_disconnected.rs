//! An independent check, with loom, of what `cargo pulse test --memory relaxed` reports in the
//! published crate bus 2.4.1 (`it_iterates` and `it_can_count_to_10000` fail): a reader can get
//! `Disconnected` while an item it has not received is still queued.
//!
//! This is a model of bus 2.4.1's close protocol (jonhoo/bus, MIT OR Apache-2.0; paraphrased,
//! its `src/lib.rs` line numbers in the comments), cut down to the part the failure involves:
//!
//! - `Bus::broadcast_inner` (396-473): write the seat, then `tail.store(tail + 1, Release)`;
//! - `Bus::drop` (594-601): `closed.store(true, Relaxed)`, then `tail.fetch_add(0, AcqRel)`,
//!   whose comment says it makes readers see the new `closed`;
//! - `BusReader::recv_inner` (674-746): `tail.load(Acquire)`; if it equals `head`, load
//!   `closed` (`Relaxed`); the first time it is true, loop once more to re-check `tail`; the
//!   second time, return `Disconnected`. Otherwise take the seat at `head`.
//!
//! Left out, as not involved: the seats' `read` counters, `max`/`rleft` and the writer's check of
//! the fence seat (one reader and a ring with room for every item, so the writer never waits),
//! and parking (the reader's wait is `yield_now`, which is also what loom needs in a spin loop).
//!
//! The test is bus's own: a writer thread broadcasts, then drops the bus; the reader receives
//! until `Disconnected` and must have received every item.
//!
//! Under the C++20/Rust model the reader's `Relaxed` load of `closed` can read `true` without
//! synchronising with the writer, and then nothing makes the writer's `tail` store happen before
//! the reader's second `tail` load, so that load may still return the old tail: `Disconnected`
//! with an item queued. The `AcqRel` RMW on `tail` does not help a reader that never reads
//! the value it wrote. Storing `closed` with `Release` and loading it with `Acquire` fixes it:
//! reading `true` then makes the last `tail` store happen before the re-check, which must
//! read it (or the RMW) by coherence.
//!
//! ```sh
//! cd bench && cargo test --release --test bus_recv_disconnected -- --nocapture
//! ```

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

/// Items the writer broadcasts before dropping the bus.
const ITEMS: usize = 2;
/// Seats in the ring (`Bus::new(ITEMS)` makes `ITEMS + 1`: one padding seat).
const LEN: usize = ITEMS + 1;

/// The orderings of the `closed` flag, the only thing the two twins differ in.
#[derive(Clone, Copy)]
struct Closed {
    store: Ordering,
    load: Ordering,
}

/// bus 2.4.1 as published.
const AS_PUBLISHED: Closed = Closed {
    store: Ordering::Relaxed,
    load: Ordering::Relaxed,
};

/// The fix: `closed` published with `Release`, read with `Acquire`.
const FIXED: Closed = Closed {
    store: Ordering::Release,
    load: Ordering::Acquire,
};

/// `BusInner`: the ring, `tail`, `closed`.
struct Inner {
    ring: [UnsafeCell<Option<usize>>; LEN],
    tail: AtomicUsize,
    closed: AtomicBool,
    orderings: Closed,
}

// SAFETY: as in bus, a seat is written by the writer only before the `tail` store that hands
// it to the reader, and read by the reader only after its `Acquire` load of that `tail`; loom's
// `UnsafeCell` checks that every access is ordered so.
unsafe impl Sync for Inner {}

struct Bus {
    inner: Arc<Inner>,
}

impl Bus {
    /// `broadcast_inner` when the fence seat is free (always, here).
    fn broadcast(&mut self, val: usize) {
        let tail = self.inner.tail.load(Ordering::Relaxed);
        self.inner.ring[tail].with_mut(|seat| unsafe { *seat = Some(val) });
        self.inner.tail.store((tail + 1) % LEN, Ordering::Release);
    }
}

impl Drop for Bus {
    fn drop(&mut self) {
        self.inner.closed.store(true, self.inner.orderings.store);
        self.inner.tail.fetch_add(0, Ordering::AcqRel);
    }
}

struct Reader {
    inner: Arc<Inner>,
    head: usize,
}

impl Reader {
    /// `recv_inner(RecvCondition::Block)`: `None` is `Disconnected`.
    fn recv(&mut self) -> Option<usize> {
        let mut was_closed = false;
        loop {
            let tail = self.inner.tail.load(Ordering::Acquire);
            if tail != self.head {
                break;
            }
            if self.inner.closed.load(self.inner.orderings.load) {
                if !was_closed {
                    was_closed = true;
                    continue;
                }
                return None;
            }
            thread::yield_now();
        }
        let v = self.inner.ring[self.head].with(|seat| unsafe { *seat });
        self.head = (self.head + 1) % LEN;
        Some(v.expect("a seat the reader was handed is empty"))
    }
}

/// bus's `it_iterates`, `ITEMS` items: every broadcast is received before `Disconnected`.
fn it_iterates(orderings: Closed) {
    let inner = Arc::new(Inner {
        ring: std::array::from_fn(|_| UnsafeCell::new(None)),
        tail: AtomicUsize::new(0),
        closed: AtomicBool::new(false),
        orderings,
    });
    let mut rx = Reader {
        inner: inner.clone(),
        head: inner.tail.load(Ordering::Relaxed),
    };
    let mut tx = Bus { inner };
    let writer = thread::spawn(move || {
        for i in 0..ITEMS {
            tx.broadcast(i);
        }
        // (`tx` dropped here: `Bus::drop`.)
    });
    let mut got = Vec::new();
    while let Some(v) = rx.recv() {
        got.push(v);
    }
    writer.join().unwrap();
    assert_eq!(
        got,
        (0..ITEMS).collect::<Vec<_>>(),
        "Disconnected before every item was received"
    );
}

/// loom finds the failure in bus as published.
#[test]
#[should_panic(expected = "Disconnected before every item was received")]
fn as_published_loses_items() {
    loom::model(|| it_iterates(AS_PUBLISHED));
}

/// loom explores every execution of the fixed twin (no preemption bound unless
/// `LOOM_MAX_PREEMPTIONS` sets one): none fails.
#[test]
fn fixed_receives_every_item() {
    static EXECUTIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    loom::model(|| {
        EXECUTIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        it_iterates(FIXED)
    });
    eprintln!(
        "fixed: {} executions, every item received",
        EXECUTIONS.load(std::sync::atomic::Ordering::Relaxed)
    );
}
