//! `std::sync::Condvar`. Under pulse, which waiter a `notify_one` wakes is a scheduler
//! choice, and every wait may return spuriously (a scheduler choice too), as std allows:
//! code that waits with `if` instead of `while` is caught.

use std::fmt;
use std::time::Duration;

use pulse_runtime::{ChoiceKind, ObjectCell, ObjectState, TraceKind, WakeReason};

use super::mutex::{MutexGuard, RawMutex};
use super::poison::{self, LockResult, PoisonError};
use crate::rt;

#[derive(Default)]
struct CondvarState;

impl ObjectState for CondvarState {
    const KIND: &'static str = "Condvar";
}

pub struct Condvar {
    os: std::sync::Condvar,
    state: ObjectCell<CondvarState>,
}

/// Whether a timed wait on a condition variable returned because the time elapsed.
#[derive(Debug, PartialEq, Eq, Copy, Clone)]
pub struct WaitTimeoutResult(bool);

impl WaitTimeoutResult {
    /// Returns `true` if the wait was known to have timed out.
    #[must_use]
    pub fn timed_out(&self) -> bool {
        self.0
    }
}

impl Condvar {
    /// Creates a new condition variable which is ready to be waited on and notified.
    #[must_use]
    #[inline]
    pub const fn new() -> Condvar {
        Condvar {
            os: std::sync::Condvar::new(),
            state: ObjectCell::new(),
        }
    }

    /// Blocks the current thread until this condition variable receives a notification.
    #[track_caller]
    pub fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> LockResult<MutexGuard<'a, T>> {
        self.wait_inner(guard, None, "Condvar::wait")
            .map(|(g, _)| g)
            .map_err(|e| PoisonError::new(e.into_inner().0))
    }

    /// Blocks the current thread until `condition` returns false.
    #[track_caller]
    pub fn wait_while<'a, T, F>(
        &self,
        mut guard: MutexGuard<'a, T>,
        mut condition: F,
    ) -> LockResult<MutexGuard<'a, T>>
    where
        F: FnMut(&mut T) -> bool,
    {
        while condition(&mut *guard) {
            guard = self.wait(guard)?;
        }
        Ok(guard)
    }

    /// Waits on this condition variable for a notification, timing out after `ms`.
    #[deprecated(
        since = "1.6.0",
        note = "replaced by `std::sync::Condvar::wait_timeout`"
    )]
    #[track_caller]
    pub fn wait_timeout_ms<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        ms: u32,
    ) -> LockResult<(MutexGuard<'a, T>, bool)> {
        self.wait_timeout(guard, Duration::from_millis(ms as u64))
            .map(|(g, t)| (g, t.timed_out()))
            .map_err(|e| {
                let (g, t) = e.into_inner();
                PoisonError::new((g, t.timed_out()))
            })
    }

    /// Waits on this condition variable for a notification, timing out after `dur`.
    #[track_caller]
    pub fn wait_timeout<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        dur: Duration,
    ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)> {
        self.wait_inner(guard, Some(dur), "Condvar::wait_timeout")
    }

    /// Waits until `condition` returns false or `dur` has elapsed.
    #[track_caller]
    pub fn wait_timeout_while<'a, T, F>(
        &self,
        mut guard: MutexGuard<'a, T>,
        dur: Duration,
        mut condition: F,
    ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)>
    where
        F: FnMut(&mut T) -> bool,
    {
        // Measured on the clock pulse controls, so virtual time works.
        let start = crate::time::Instant::now();
        loop {
            if !condition(&mut *guard) {
                return Ok((guard, WaitTimeoutResult(false)));
            }
            let timeout = match dur.checked_sub(start.elapsed()) {
                Some(timeout) => timeout,
                None => return Ok((guard, WaitTimeoutResult(true))),
            };
            guard = self.wait_timeout(guard, timeout)?.0;
        }
    }

    /// The one wait every public wait reduces to.
    #[track_caller]
    #[inline]
    fn wait_inner<'a, T>(
        &self,
        mut guard: MutexGuard<'a, T>,
        timeout: Option<Duration>,
        op: &'static str,
    ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)> {
        let lock = guard.lock.raw();
        let timed_out = self.wait_raw(lock, &mut guard.os, timeout, op);
        let result = (guard, WaitTimeoutResult(timed_out));
        poison::map_result(lock.is_poisoned(), result)
    }

    /// The wait itself, on the mutex apart from its data (not generic: compiled once,
    /// optimised, here). Returns whether it timed out.
    #[track_caller]
    fn wait_raw<'a>(
        &self,
        lock: &'a RawMutex,
        os: &mut Option<std::sync::MutexGuard<'a, ()>>,
        timeout: Option<Duration>,
        op: &'static str,
    ) -> bool {
        match (rt::current(), os.take()) {
            (_, Some(held)) => {
                self.state.outside(op);
                let (held, timed_out) = match timeout {
                    None => (
                        self.os.wait(held).unwrap_or_else(PoisonError::into_inner),
                        false,
                    ),
                    Some(dur) => {
                        let (held, r) = self
                            .os
                            .wait_timeout(held, dur)
                            .unwrap_or_else(PoisonError::into_inner);
                        (held, r.timed_out())
                    }
                };
                *os = Some(held);
                timed_out
            }
            (Some(ctx), None) => {
                let cv = self.state.obj(ctx);
                let mutex = lock.obj(ctx);
                ctx.switch(op, Some(cv));
                // Atomically release the mutex and start waiting: no scheduling point
                // between the two, as std guarantees.
                lock.release(ctx, mutex);
                let reason = if ctx.choose(ChoiceKind::SpuriousWakeup) {
                    ctx.note(TraceKind::Wake, op, Some(cv), Some("spurious"));
                    WakeReason::Notified
                } else {
                    ctx.block(op, Some(cv), timeout)
                };
                lock.acquire(ctx, mutex, op);
                reason == WakeReason::TimedOut
            }
            (None, None) => unreachable!("a guard taken under pulse outlived its execution"),
        }
    }

    /// Wakes up one blocked thread on this condvar (which one: a scheduler choice).
    #[track_caller]
    pub fn notify_one(&self) {
        match rt::current() {
            Some(ctx) => {
                let cv = self.state.obj(ctx);
                ctx.switch("Condvar::notify_one", Some(cv));
                ctx.wake_one(cv);
            }
            None => {
                self.state.outside("Condvar::notify_one");
                self.os.notify_one()
            }
        }
    }

    /// Wakes up all blocked threads on this condvar.
    #[track_caller]
    pub fn notify_all(&self) {
        match rt::current() {
            Some(ctx) => {
                let cv = self.state.obj(ctx);
                ctx.switch("Condvar::notify_all", Some(cv));
                ctx.wake_all(cv);
            }
            None => {
                self.state.outside("Condvar::notify_all");
                self.os.notify_all()
            }
        }
    }
}

impl fmt::Debug for Condvar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Condvar").finish_non_exhaustive()
    }
}

impl Default for Condvar {
    fn default() -> Condvar {
        Condvar::new()
    }
}
