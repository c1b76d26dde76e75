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

/// The smallest stack a virtual thread gets, whatever it asked for: std raises a request
/// below the platform's minimum (`PTHREAD_STACK_MIN`) to it, and a virtual thread also
/// holds pulse's own frames (scheduling, a panic's hook and backtrace capture).
pub(crate) const MIN_STACK: usize = 128 << 10;

/// Stacks bigger than this (a test's `stack_size` of 16 MiB) are unmapped, not kept.
const POOL_MAX_STACK: usize = 4 << 20;

/// Whether a `size`-byte stack can be had, as std's `Builder::spawn` finds out when it maps
/// one: an `Err` it returns, not a failure later in the executor. Only a request above what
/// the pool keeps is tried (mapping is lazy: smaller ones do not fail), and unmapped again.
pub(crate) fn can_allocate(size: usize) -> std::io::Result<()> {
    if size <= POOL_MAX_STACK {
        return Ok(());
    }
    DefaultStack::new(size).map(drop)
}

/// A pooled stack for a `size`-byte request, if the pool has one.
pub(crate) fn take(size: usize) -> Option<DefaultStack> {
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    let i = pool.iter().rposition(|s| fits(s, size))?;
    Some(pool.swap_remove(i))
}

/// Keeps `stacks` for later searches, up to the limit; the rest are unmapped.
pub(crate) fn give_back(stacks: impl IntoIterator<Item = DefaultStack>) {
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    for stack in stacks {
        if pool.len() >= POOL_LIMIT {
            break;
        }
        if capacity(&stack) <= POOL_MAX_STACK {
            pool.push(stack);
        }
    }
}

/// Whether `stack` serves a `size`-byte request: at least that big, and less than twice
/// it, so whether deep recursion overflows does not depend on which stack a thread got
/// (which tests ran before in the process, which threads of the search came first).
pub(crate) fn fits(stack: &DefaultStack, size: usize) -> bool {
    let cap = capacity(stack);
    cap >= size && cap < size.saturating_mul(2)
}

fn capacity(stack: &DefaultStack) -> usize {
    stack.base().get() - stack.limit().get()
}
