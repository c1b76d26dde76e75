//! Which executions are running right now, process-wide, so an object can tell a stale
//! owner (reset it) from a concurrent one (refuse). Lock-free: one atomic slot per
//! execution, no lock to contend on from concurrent test threads.

use std::sync::atomic::{AtomicU64, Ordering};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One slot per execution running at once (one per test thread at most).
const SLOTS: usize = 256;
static LIVE: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];

/// Allocates a fresh execution id and marks it live.
pub(crate) fn begin() -> u64 {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let claimed = LIVE.iter().any(|slot| {
        slot.compare_exchange(0, id, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    });
    assert!(
        claimed,
        "pulse: more than {SLOTS} executions at once in one process"
    );
    id
}

pub(crate) fn end(id: u64) {
    if let Some(slot) = LIVE.iter().find(|slot| slot.load(Ordering::Acquire) == id) {
        slot.store(0, Ordering::Release);
    }
}

pub(crate) fn is_live(id: u64) -> bool {
    LIVE.iter().any(|slot| slot.load(Ordering::Acquire) == id)
}
