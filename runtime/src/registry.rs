//! Which executions are running right now, process-wide, so an object can tell a stale
//! owner (reset it) from a concurrent one (refuse).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);
static LIVE: Mutex<Vec<u64>> = Mutex::new(Vec::new());

/// Allocates a fresh execution id and marks it live.
pub(crate) fn begin() -> u64 {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    LIVE.lock().unwrap_or_else(|e| e.into_inner()).push(id);
    id
}

pub(crate) fn end(id: u64) {
    let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = live.iter().position(|&x| x == id) {
        live.swap_remove(i);
    }
}

pub(crate) fn is_live(id: u64) -> bool {
    LIVE.lock().unwrap_or_else(|e| e.into_inner()).contains(&id)
}
