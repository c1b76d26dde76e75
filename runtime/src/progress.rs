//! Telling a long execution from a livelock at the step bound.
//!
//! An execution that reaches its step bound is either spinning on state that never changes
//! (a livelock: a flag nobody sets, a lock nobody releases) or simply long (a stress test of
//! 100,000 queue operations). No bound tells them apart, so at the bound the execution goes
//! on for a probe: a first window of steps records which values its atomic writes wrote,
//! and each later window must write a value the window before it did not (a counter's next
//! value, a queue's next index), send a message or start or end a thread. A spin lock
//! flipping between two values, a CAS loop failing, loads and yields write nothing new, so
//! a livelock is stopped two windows past the bound; a long execution runs on, up to a cap.
//! Data a `Mutex` guards is invisible here: a runaway loop that only changes it is a
//! livelock to this probe, as it was before.
//!
//! Nothing is recorded until the bound is reached: the probe costs nothing before.

use std::collections::HashSet;

/// A window is this fraction of `max_steps` (the configured bound).
const WINDOW_FRACTION: u64 = 10;

/// The smallest window, so a small `--max-steps` still sees a few loop turns.
const MIN_WINDOW: u64 = 1_000;

/// How far past the bound an execution that keeps progressing may run, in multiples of
/// `max_steps` (not of the bound, which grows with the threads: 1,000 threads' bound is
/// 10,000,000 steps): a runaway loop that writes new values (a counter counting for ever)
/// still ends.
pub(crate) const CAP_FACTOR: u64 = 10;

/// What the probe concluded at the end of a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Run another window: the step bound moves to this step.
    Continue(u64),
    /// No progress in the last window: a livelock.
    Stuck,
    /// Still progressing at the cap.
    Capped,
}

#[derive(Default)]
pub(crate) struct Progress {
    /// The bound the execution started with (0: not probing).
    bound: u64,
    window: u64,
    /// The step past which a progressing execution is stopped all the same.
    cap: u64,
    /// Windows finished so far.
    windows: u64,
    /// Values written in the window before and in this one, by address.
    before: HashSet<(usize, u64)>,
    now: HashSet<(usize, u64)>,
    /// This window wrote a value the one before did not, sent a message, or started or
    /// ended a thread.
    progressed: bool,
}

impl Progress {
    pub(crate) fn reset(&mut self) {
        self.bound = 0;
        self.windows = 0;
        self.before.clear();
        self.now.clear();
        self.progressed = false;
    }

    /// Whether the probe runs (the execution passed its bound): writes are to be told.
    #[inline]
    pub(crate) fn probing(&self) -> bool {
        self.bound != 0
    }

    /// The bound the execution started with, once probing.
    pub(crate) fn bound(&self) -> u64 {
        self.bound
    }

    /// Steps per window, once probing.
    pub(crate) fn window(&self) -> u64 {
        self.window
    }

    /// An atomic write of `value` to `addr`.
    pub(crate) fn wrote(&mut self, addr: usize, value: u64) {
        if self.now.insert((addr, value))
            && self.windows > 0
            && !self.before.contains(&(addr, value))
        {
            self.progressed = true;
        }
    }

    /// A message sent, a thread started or ended (counted only after the probe's first
    /// window; nothing before the bound).
    pub(crate) fn moved(&mut self) {
        if self.windows > 0 {
            self.progressed = true;
        }
    }

    /// The execution reached `step`, its current bound (`max_steps` the configured one):
    /// start the probe, or end a window.
    pub(crate) fn at_bound(&mut self, step: u64, max_steps: u64) -> Verdict {
        if !self.probing() {
            self.bound = step.max(1);
            self.window = (max_steps / WINDOW_FRACTION).max(MIN_WINDOW);
            self.cap = step.saturating_add(max_steps.saturating_mul(CAP_FACTOR));
            return Verdict::Continue(step + self.window);
        }
        let first = self.windows == 0;
        self.windows += 1;
        if !first && !self.progressed {
            return Verdict::Stuck;
        }
        if step >= self.cap {
            return Verdict::Capped;
        }
        self.before = std::mem::take(&mut self.now);
        self.progressed = false;
        Verdict::Continue(step + self.window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives a probe from the bound, `write(window, i)` giving the i-th write of each window.
    fn probe(bound: u64, write: impl Fn(u64, u64) -> u64) -> (Verdict, u64) {
        let mut p = Progress::default();
        let mut step = bound;
        let mut window = 0;
        loop {
            match p.at_bound(step, bound) {
                Verdict::Continue(next) => {
                    for i in 0..100 {
                        p.wrote(8, write(window, i));
                    }
                    window += 1;
                    step = next;
                }
                verdict => return (verdict, window),
            }
        }
    }

    #[test]
    fn a_flag_flipping_between_two_values_is_stuck_after_two_windows() {
        assert_eq!(probe(10_000, |_, i| i % 2), (Verdict::Stuck, 2));
    }

    #[test]
    fn a_counter_progresses_up_to_the_cap() {
        let (verdict, windows) = probe(10_000, |w, i| w * 100 + i);
        assert_eq!(verdict, Verdict::Capped);
        // The bound was 10,000 and windows are 1,000 steps: 10 x 10,000 more steps.
        assert_eq!(windows, 100);
    }

    #[test]
    fn messages_and_threads_are_progress_after_the_first_window() {
        let mut p = Progress::default();
        let Verdict::Continue(next) = p.at_bound(50_000, 50_000) else {
            panic!("starts")
        };
        assert_eq!(next, 55_000);
        p.moved();
        let Verdict::Continue(next) = p.at_bound(next, 50_000) else {
            panic!("the first window only records")
        };
        p.moved();
        assert_eq!(p.at_bound(next, 50_000), Verdict::Continue(65_000));
        assert_eq!(p.at_bound(65_000, 50_000), Verdict::Stuck);
    }
}
