//! `epoll_wait` and `epoll_pwait`, scheduled inside an execution: a scheduling point, then a
//! look at the instance (the real call, without waiting). If nothing is ready, the thread
//! waits until the instance's descriptor is readable, looked at in each decision (another
//! thread's write to an eventfd, pipe or socket it watches makes it so), or until its
//! timeout passes on the virtual clock, and looks again. A look that returns events
//! acquires every store made so far under the relaxed memory model (`Ctx::kernel_acquire`):
//! the write that made a descriptor ready came before, whichever thread made it. Outside an
//! execution they are the system calls.

use std::time::Duration;

use ::libc::{c_int, epoll_event, sigset_t};

use super::readiness::look_until_ready;
use crate::rt::{self, Ctx};

const EPOLL_WAIT: &str = "epoll_wait";

/// `epoll_wait(2)`, scheduled inside an execution (see the module doc).
///
/// # Safety
/// As the system call's: `events` points to room for `maxevents` events.
#[track_caller]
pub unsafe fn epoll_wait(
    epfd: c_int,
    events: *mut epoll_event,
    maxevents: c_int,
    timeout: c_int,
) -> c_int {
    // SAFETY: the caller's.
    let look = |ms| unsafe { ::libc::epoll_wait(epfd, events, maxevents, ms) };
    match rt::current() {
        Some(ctx) => wait_ready(ctx, epfd, timeout, look),
        None => look(timeout),
    }
}

/// `epoll_pwait(2)`, scheduled inside an execution: as `epoll_wait`, the signal mask
/// applied to each look (virtual threads take no signals while they wait in the scheduler).
///
/// # Safety
/// As the system call's.
#[track_caller]
pub unsafe fn epoll_pwait(
    epfd: c_int,
    events: *mut epoll_event,
    maxevents: c_int,
    timeout: c_int,
    sigmask: *const sigset_t,
) -> c_int {
    // SAFETY: the caller's.
    let look = |ms| unsafe { ::libc::epoll_pwait(epfd, events, maxevents, ms, sigmask) };
    match rt::current() {
        Some(ctx) => wait_ready(ctx, epfd, timeout, look),
        None => look(timeout),
    }
}

/// Looks at the instance (`look(0)`, the real call without waiting) until something is
/// ready, the call fails, or `timeout_ms` (negative: none) passes on the virtual clock,
/// waiting for the descriptor in between.
#[track_caller]
fn wait_ready(ctx: Ctx, epfd: c_int, timeout_ms: c_int, look: impl Fn(c_int) -> c_int) -> c_int {
    let timeout = u64::try_from(timeout_ms).ok().map(Duration::from_millis);
    look_until_ready(ctx, EPOLL_WAIT, epfd, timeout, || {
        let n = look(0);
        (n != 0).then_some(n)
    })
    .unwrap_or(0)
}
