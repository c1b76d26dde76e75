//! Waiting in the scheduler for a descriptor to become readable, shared by the epoll shims
//! (`epoll`) and by a reactor's wait through rustix (`ready_by`, polling 3's).

use std::os::fd::{AsFd, AsRawFd};
use std::time::Duration;

use ::libc::c_int;
use pulse_runtime::WakeReason;

use crate::rt::{self, Ctx};
use crate::time::Instant;

/// Looks (`look`, which must not block) until it has something (`Some`), the call's
/// `timeout` (`None`: none) passes on the virtual clock, or the execution tears down, waiting
/// for `fd` to become readable in between; at the timeout, looks once more. Anything a look
/// finds acquires every store made so far under the relaxed memory model: the write that
/// made a descriptor ready came before, whichever thread made it.
#[track_caller]
pub(super) fn look_until_ready<R>(
    ctx: Ctx,
    op: &'static str,
    fd: c_int,
    timeout: Option<Duration>,
    mut look: impl FnMut() -> Option<R>,
) -> Option<R> {
    let mut look = || {
        let found = look();
        if found.is_some() {
            ctx.kernel_acquire();
        }
        found
    };
    ctx.switch(op, None);
    let deadline = timeout.map(|t| ctx.now() + t);
    loop {
        let found = look();
        if found.is_some() || timeout.is_some_and(|t| t.is_zero()) || ctx.is_teardown() {
            return found;
        }
        let left = deadline.map(|d| d.saturating_sub(ctx.now()));
        if left.is_some_and(|l| l.is_zero()) {
            return None;
        }
        match ctx.wait_readable(op, fd, left) {
            WakeReason::Notified => {}
            WakeReason::TimedOut => return look(),
            WakeReason::Teardown => return None,
        }
    }
}

const REACTOR_WAIT: &str = "Poller::wait";

/// How long a reactor's wait may last: a timeout (`Option<Duration>`) or a deadline
/// (`Option<Instant>`, pulse's), as the waiting function takes it.
pub trait WaitLimit: Sized {
    /// What is left of it at virtual time `now` (`None`: no limit).
    fn left(&self, now: Duration) -> Option<Duration>;
    /// The limit of a wait that must not block: already due at `now`.
    fn due(now: Duration) -> Self;
}

impl WaitLimit for Option<Duration> {
    fn left(&self, _: Duration) -> Option<Duration> {
        *self
    }
    fn due(_: Duration) -> Self {
        Some(Duration::ZERO)
    }
}

impl WaitLimit for Option<Instant> {
    fn left(&self, now: Duration) -> Option<Duration> {
        self.map(|d| d.saturating_duration_since(Instant::at_virtual(now)))
    }
    fn due(now: Duration) -> Self {
        Some(Instant::at_virtual(now))
    }
}

/// A reactor's wait on epoll instance `fd` for up to `limit`, scheduled: the instrumenter
/// puts `let limit = ready_by(&(fd), limit);` first in a function that takes its timeout or
/// deadline and waits in rustix's `epoll::wait` (polling 3's `Poller::wait`), whose system
/// call pulse cannot see. Inside an execution the thread waits in the scheduler until the
/// instance is readable (another thread's write to an eventfd or pipe it watches) or the
/// limit passes on the virtual clock, then the function goes on with a limit already due, so
/// its own wait only collects what is ready (and a timerfd it arms for the limit stays
/// disarmed). Outside an execution the limit is returned as it is.
#[track_caller]
pub fn ready_by<F: AsFd + ?Sized, L: WaitLimit>(fd: &F, limit: L) -> L {
    let Some(ctx) = rt::current() else {
        return limit;
    };
    let fd = fd.as_fd().as_raw_fd();
    let timeout = limit.left(ctx.now());
    look_until_ready(ctx, REACTOR_WAIT, fd, timeout, || {
        readable(fd).then_some(())
    });
    L::due(ctx.now())
}

/// Whether `fd` is readable (or in error, which the caller's own call reports), without
/// waiting.
fn readable(fd: c_int) -> bool {
    let mut p = ::libc::pollfd {
        fd,
        events: ::libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { ::libc::poll(&mut p, 1, 0) > 0 }
}
