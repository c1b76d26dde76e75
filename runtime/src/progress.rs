//! Telling a long execution from a livelock at the step bound.
//!
//! An execution that reaches its step bound is either spinning on state that never changes
//! (a livelock: a flag nobody sets) or simply long (a stress test of 100,000 queue
//! operations). No bound tells them apart, so at the bound the execution goes on for a
//! probe, in windows of steps. A window *progresses* if it writes an atomic value the window
//! before it did not (a counter's next value), sends a message or starts or ends a thread.
//! It *cycles* if it changes state all the same: an atomic write that changes the value it
//! overwrites, or a lock taken by another thread than its last holder. Positions that wrap
//! around a ring buffer, a value handed round through `(v % 100) + 1`, a lock taken in turns
//! cycle: a stress test does that for tens of millions of steps (scoped_threadpool's demos:
//! 80 million), and so does a livelock in turns. Nothing else tells them apart here, so a
//! cycling execution runs on to the cap, where it is stopped as too long, not called a
//! livelock. So does a window whose loads spread over many atomics (`SCAN_SPREAD`): a spin
//! polls a few, a read-only phase reads a structure (a map's lookups over a table of
//! atomics, flurry; its state changes in plain memory, which pulse does not see). A window
//! that changes nothing (loads of a few atomics, yields, failed CASes, stores of the value
//! already there) is quiet, and `STUCK_WINDOWS` quiet windows in a row are a livelock: a
//! spin is quiet for ever, a read-only phase of a few atomics ends (flurry's lookups in an
//! empty map, 131,072 of them, each a load or two of the table pointer).
//!
//!
//! A thread running alone (no other thread alive) waits on nobody: no livelock is possible,
//! and a loop that never ends would hang plain `cargo test` too. Its quiet or cycling
//! windows are a single-threaded test's long loop (heapless' `try_overflow`: 22 million
//! queue operations, 140 million steps), so while it is alone neither verdict is given
//! before `ALONE_CAP_FACTOR` times the cap.
//!
//! Nothing is recorded until the bound is reached: the probe costs nothing before.

use crate::fast_hash::{FastMap, FastSet};

/// A window is this fraction of `max_steps` (the configured bound).
const WINDOW_FRACTION: u64 = 10;

/// The smallest window, so a small `--max-steps` still sees a few loop turns.
const MIN_WINDOW: u64 = 1_000;

/// How far past the bound an execution that keeps changing state may run, in multiples of
/// `max_steps` (not of the bound, which grows with the threads: 1,000 threads' bound is
/// 10,000,000 steps): a runaway loop that writes new values (a counter counting for ever)
/// or a livelock in turns still ends. At 100 (100,000,000 steps by default) the stress tests
/// of the published crates tried end first (the longest, scoped_threadpool's demos,
/// 80,000,000 steps in 4 s); at 10 all but rtrb's were stopped (trial s18, F5).
pub(crate) const CAP_FACTOR: u64 = 100;

/// How far past the bound a thread running alone may go, in multiples of `max_steps`:
/// 1,000,000,000 steps by default (about 2 minutes of a debug build's single-threaded
/// steps), so a runaway single-threaded loop still ends with a trace.
const ALONE_CAP_FACTOR: u64 = CAP_FACTOR * 10;

/// Distinct atomics one window's loads must reach for it to be reading a structure rather
/// than spinning: a spin or polling loop waits on a flag or a few (a lock word, a state and
/// a counter); flurry's read-only tests read a bin per lookup, thousands per window.
const SCAN_SPREAD: usize = 64;

/// Quiet windows in a row that make a livelock: a million steps at the default bound, ten
/// times the one window it used to take. Past the bound, a loop that only loads a few
/// atomics for that long is a spin as far as pulse can see (its progress, if any, is in
/// plain memory).
const STUCK_WINDOWS: u64 = 10;

/// What the probe concluded at the end of a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Run another window: the step bound moves to this step.
    Continue(u64),
    /// Nothing changed in the last window: a livelock.
    Stuck,
    /// Still changing state at the cap: writing new values (`progressing`) or cycling
    /// through the same ones.
    Capped { progressing: bool },
    /// One thread, alone, still running at the cap for threads alone.
    Alone,
}

#[derive(Default)]
pub(crate) struct Progress {
    /// The bound the execution started with (0: not probing).
    bound: u64,
    window: u64,
    /// The step past which a progressing execution is stopped all the same.
    cap: u64,
    /// The step past which a thread running alone is stopped.
    alone_cap: u64,
    /// Windows finished so far.
    windows: u64,
    /// Values written in the window before and in this one, by address.
    before: FastSet<(usize, u64)>,
    now: FastSet<(usize, u64)>,
    /// This window wrote a value the one before did not, sent a message, or started or
    /// ended a thread.
    progressed: bool,
    /// This window changed state: a write that changed its atomic's value, a lock taken by
    /// another thread than the one that held it last.
    changed: bool,
    /// Each lock's last holder, by resource.
    holders: FastMap<u64, u32>,
    /// The atomics this window loaded, by address, until there are `SCAN_SPREAD`.
    loaded: FastSet<usize>,
    /// Quiet windows (nothing progressed or changed) in a row.
    quiet: u64,
}

impl Progress {
    pub(crate) fn reset(&mut self) {
        self.bound = 0;
        self.windows = 0;
        self.before.clear();
        self.now.clear();
        self.holders.clear();
        self.loaded.clear();
        self.quiet = 0;
        self.progressed = false;
        self.changed = false;
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

    /// The quiet steps that make a livelock, once probing.
    pub(crate) fn quiet_span(&self) -> u64 {
        self.window * STUCK_WINDOWS
    }

    /// An atomic write of `new` to `addr`, which held `old`.
    pub(crate) fn wrote(&mut self, addr: usize, old: u64, new: u64) {
        if old != new {
            self.changed = true;
        }
        if self.now.insert((addr, new)) && self.windows > 0 && !self.before.contains(&(addr, new)) {
            self.progressed = true;
        }
    }

    /// An atomic load from `addr`: loads spread over `SCAN_SPREAD` atomics read a structure,
    /// which changes state as far as the probe can tell (it runs on to the cap).
    pub(crate) fn read(&mut self, addr: usize) {
        if self.loaded.len() < SCAN_SPREAD && self.loaded.insert(addr) {
            self.changed |= self.loaded.len() == SCAN_SPREAD;
        }
    }

    /// Lock `resource` taken by `thread`: state changes hands if another held it last.
    pub(crate) fn took(&mut self, resource: u64, thread: u32) {
        if self
            .holders
            .insert(resource, thread)
            .is_some_and(|last| last != thread)
        {
            self.changed = true;
        }
    }

    /// A message sent, a thread started or ended (counted only after the probe's first
    /// window; nothing before the bound).
    pub(crate) fn moved(&mut self) {
        if self.windows > 0 {
            self.progressed = true;
        }
    }

    /// The execution reached `step`, its current bound (`max_steps` the configured one), with
    /// one thread `alone` alive or more: start the probe, or end a window.
    pub(crate) fn at_bound(&mut self, step: u64, max_steps: u64, alone: bool) -> Verdict {
        if !self.probing() {
            self.bound = step.max(1);
            self.window = (max_steps / WINDOW_FRACTION).max(MIN_WINDOW);
            self.cap = step.saturating_add(max_steps.saturating_mul(CAP_FACTOR));
            self.alone_cap = step.saturating_add(max_steps.saturating_mul(ALONE_CAP_FACTOR));
            return Verdict::Continue(step + self.window);
        }
        let first = self.windows == 0;
        self.windows += 1;
        if first || self.progressed || self.changed {
            self.quiet = 0;
        } else {
            self.quiet += 1;
        }
        if alone {
            if step >= self.alone_cap {
                return Verdict::Alone;
            }
        } else if self.quiet >= STUCK_WINDOWS {
            return Verdict::Stuck;
        } else if step >= self.cap {
            return Verdict::Capped {
                progressing: self.progressed,
            };
        }
        self.before = std::mem::take(&mut self.now);
        self.loaded.clear();
        self.progressed = false;
        self.changed = false;
        Verdict::Continue(step + self.window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives a probe from the bound, `write(window, i)` giving the i-th write of each window
    /// (and the value before it, the write before's).
    fn probe(bound: u64, write: impl Fn(u64, u64) -> u64) -> (Verdict, u64) {
        let mut p = Progress::default();
        let mut step = bound;
        let mut window = 0;
        let mut old = 0;
        loop {
            match p.at_bound(step, bound, false) {
                Verdict::Continue(next) => {
                    for i in 0..100 {
                        let new = write(window, i);
                        p.wrote(8, old, new);
                        old = new;
                    }
                    window += 1;
                    step = next;
                }
                verdict => return (verdict, window),
            }
        }
    }

    /// After `windows` more quiet windows from `next`, the verdict (`Continue` until the last).
    fn quiet(p: &mut Progress, mut next: u64, windows: u64, max_steps: u64) -> Verdict {
        for _ in 1..windows {
            let Verdict::Continue(n) = p.at_bound(next, max_steps, false) else {
                panic!("stuck before {windows} quiet windows")
            };
            next = n;
        }
        p.at_bound(next, max_steps, false)
    }

    #[test]
    fn a_flag_stored_with_the_value_it_holds_is_stuck_after_its_quiet_windows() {
        // The first window records; then `STUCK_WINDOWS` quiet ones.
        assert_eq!(probe(10_000, |_, _| 0), (Verdict::Stuck, 1 + STUCK_WINDOWS));
    }

    #[test]
    fn a_counter_progresses_up_to_the_cap() {
        let (verdict, windows) = probe(10_000, |w, i| w * 100 + i);
        assert_eq!(verdict, Verdict::Capped { progressing: true });
        // The bound was 10,000 and windows are 1,000 steps: 100 x 10,000 more steps.
        assert_eq!(windows, 1_000);
    }

    #[test]
    fn a_value_cycling_through_the_same_few_runs_to_the_cap_as_cycling() {
        let (verdict, windows) = probe(10_000, |_, i| i % 6);
        assert_eq!(verdict, Verdict::Capped { progressing: false });
        assert_eq!(windows, 1_000);
    }

    #[test]
    fn a_lock_taken_in_turns_cycles_and_one_thread_retaking_it_does_not() {
        let mut p = Progress::default();
        let Verdict::Continue(next) = p.at_bound(10_000, 10_000, false) else {
            panic!("starts")
        };
        let Verdict::Continue(next) = p.at_bound(next, 10_000, false) else {
            panic!("the first window only records")
        };
        p.took(7, 1);
        p.took(7, 2);
        let Verdict::Continue(next) = p.at_bound(next, 10_000, false) else {
            panic!("a hand-off changes state")
        };
        p.took(7, 2);
        p.took(7, 2);
        assert_eq!(quiet(&mut p, next, STUCK_WINDOWS, 10_000), Verdict::Stuck);
    }

    #[test]
    fn loads_spread_over_many_atomics_are_a_read_not_a_spin() {
        let mut p = Progress::default();
        let mut step = 10_000;
        let mut window = |p: &mut Progress, atomics: usize| {
            for i in 0..1_000 {
                p.read(8 * (i % atomics));
            }
            let verdict = p.at_bound(step, 10_000, false);
            step += 1_000;
            verdict
        };
        assert!(matches!(window(&mut p, 1), Verdict::Continue(_)), "starts");
        assert!(matches!(window(&mut p, 1), Verdict::Continue(_)), "records");
        // A table of 1,000 atomics read over and over: runs on.
        for _ in 0..5 {
            assert!(matches!(window(&mut p, 1_000), Verdict::Continue(_)));
        }
        // A spin on a few: stuck.
        for _ in 1..STUCK_WINDOWS {
            assert!(matches!(
                window(&mut p, SCAN_SPREAD - 1),
                Verdict::Continue(_)
            ));
        }
        assert_eq!(window(&mut p, SCAN_SPREAD - 1), Verdict::Stuck);
    }

    #[test]
    fn a_quiet_stretch_shorter_than_the_quiet_windows_is_not_stuck() {
        let mut p = Progress::default();
        let Verdict::Continue(mut next) = p.at_bound(10_000, 10_000, false) else {
            panic!("starts")
        };
        for round in 0..3 {
            // A change, then one window short of stuck, three times over.
            p.wrote(8, round, round + 1);
            let Verdict::Continue(n) = p.at_bound(next, 10_000, false) else {
                panic!("a change is no livelock")
            };
            assert!(matches!(
                quiet(&mut p, n, STUCK_WINDOWS - 1, 10_000),
                Verdict::Continue(_)
            ));
            next = n + (STUCK_WINDOWS - 1) * 1_000;
        }
    }

    #[test]
    fn messages_and_threads_are_progress_after_the_first_window() {
        let mut p = Progress::default();
        let Verdict::Continue(next) = p.at_bound(50_000, 50_000, false) else {
            panic!("starts")
        };
        assert_eq!(next, 55_000);
        p.moved();
        let Verdict::Continue(next) = p.at_bound(next, 50_000, false) else {
            panic!("the first window only records")
        };
        p.moved();
        assert_eq!(p.at_bound(next, 50_000, false), Verdict::Continue(65_000));
        assert_eq!(quiet(&mut p, 65_000, STUCK_WINDOWS, 50_000), Verdict::Stuck);
    }

    #[test]
    fn a_thread_alone_is_neither_stuck_nor_capped_before_the_cap_for_threads_alone() {
        let mut p = Progress::default();
        let Verdict::Continue(mut next) = p.at_bound(10_000, 10_000, true) else {
            panic!("starts")
        };
        let mut windows = 0;
        let verdict = loop {
            windows += 1;
            match p.at_bound(next, 10_000, true) {
                Verdict::Continue(n) => next = n,
                verdict => break verdict,
            }
        };
        // Quiet all along: 1,000 steps a window up to 1,000 x 10,000 steps past the bound.
        assert_eq!((verdict, windows), (Verdict::Alone, 10_000));
        // A quiet thread that is no longer alone is stuck at its next window.
        let mut p = Progress::default();
        let Verdict::Continue(mut next) = p.at_bound(10_000, 10_000, true) else {
            panic!("starts")
        };
        for _ in 0..=STUCK_WINDOWS {
            let Verdict::Continue(n) = p.at_bound(next, 10_000, true) else {
                panic!("alone, it runs on")
            };
            next = n;
        }
        assert_eq!(p.at_bound(next, 10_000, false), Verdict::Stuck);
    }
}
