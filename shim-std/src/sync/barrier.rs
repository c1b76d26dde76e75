//! `std::sync::Barrier`, with `wait` a scheduling point under pulse.
//!
//! Inside an execution the barrier is logical (arrivals and the generation live in the
//! object's per-execution state): the order in which threads arrive is the scheduler's,
//! and so is the order in which the released threads go on. The leader is the last thread
//! to arrive in its generation, as in std's implementation (std only promises that
//! exactly one thread per generation is the leader). Outside an execution a real std
//! `Barrier` does the work.

use std::fmt;

use pulse_runtime::{ObjectCell, ObjectState, WakeReason};

use crate::rt;

#[derive(Default)]
struct BarrierState {
    arrived: usize,
    /// Bumped each time the barrier releases its waiters, so a thread can tell its own
    /// generation's release from a later one when the barrier is reused.
    generation: u64,
}

impl ObjectState for BarrierState {
    const KIND: &'static str = "Barrier";
}

pub struct Barrier {
    os: std::sync::Barrier,
    num_threads: usize,
    state: ObjectCell<BarrierState>,
}

/// Returned by [`Barrier::wait`] when all threads in the barrier have rendezvoused.
pub struct BarrierWaitResult(bool);

impl Barrier {
    /// Creates a new barrier that can block a given number of threads.
    #[must_use]
    #[inline]
    pub const fn new(n: usize) -> Barrier {
        Barrier {
            os: std::sync::Barrier::new(n),
            num_threads: n,
            state: ObjectCell::new(),
        }
    }

    /// Blocks the current thread until all threads have rendezvoused here.
    #[track_caller]
    pub fn wait(&self) -> BarrierWaitResult {
        let Some(ctx) = rt::current() else {
            return BarrierWaitResult(self.os.wait().is_leader());
        };
        let obj = self.state.obj(ctx);
        ctx.switch("Barrier::wait", Some(obj));
        let released = {
            let s = self.state.enter(ctx).state;
            s.arrived += 1;
            if s.arrived < self.num_threads {
                Err(s.generation)
            } else {
                s.arrived = 0;
                s.generation = s.generation.wrapping_add(1);
                Ok(())
            }
        };
        let generation = match released {
            Ok(()) => {
                ctx.wake_all(obj);
                return BarrierWaitResult(true);
            }
            Err(generation) => generation,
        };
        while self.state.enter(ctx).state.generation == generation {
            // Cleanup of an ended execution must not block: let the thread go.
            if ctx.block("Barrier::wait", Some(obj), None) == WakeReason::Teardown {
                break;
            }
        }
        BarrierWaitResult(false)
    }
}

impl fmt::Debug for Barrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Barrier").finish_non_exhaustive()
    }
}

impl BarrierWaitResult {
    /// Returns `true` if this thread is the "leader thread" for the call to
    /// [`Barrier::wait()`].
    #[must_use]
    pub fn is_leader(&self) -> bool {
        self.0
    }
}

impl fmt::Debug for BarrierWaitResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BarrierWaitResult")
            .field("is_leader", &self.is_leader())
            .finish()
    }
}

impl std::panic::RefUnwindSafe for Barrier {}
