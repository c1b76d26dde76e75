//! Coroutine stacks kept across searches. A search's executor reuses its stacks from one
//! execution to the next; this pool carries them on to the next search in the process (the
//! next test of a test binary, the next `Builder::run`). A fresh stack costs an `mmap`, a
//! guard-page `mprotect`, a page fault per page it touches and an `munmap` at the end: about
//! two thirds of a one-execution search's time before the pool (perf, 2-thread program).

use std::sync::Mutex;

use corosensei::stack::{DefaultStack, Stack};

/// Stacks the pool holds at most (about 2 MiB of address space each, resident only where a
/// thread once ran): enough for a few parallel tests' threads, bounded for 1,000-thread ones.
const POOL_LIMIT: usize = 64;

static POOL: Mutex<Vec<DefaultStack>> = Mutex::new(Vec::new());

/// A pooled stack with at least `size` bytes, if the pool has one.
pub(crate) fn take(size: usize) -> Option<DefaultStack> {
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    let i = pool.iter().rposition(|s| capacity(s) >= size)?;
    Some(pool.swap_remove(i))
}

/// Keeps `stacks` for later searches, up to the limit; the rest are unmapped.
pub(crate) fn give_back(stacks: impl IntoIterator<Item = DefaultStack>) {
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    for stack in stacks {
        if pool.len() >= POOL_LIMIT {
            break;
        }
        pool.push(stack);
    }
}

pub(crate) fn capacity(stack: &DefaultStack) -> usize {
    stack.base().get() - stack.limit().get()
}
