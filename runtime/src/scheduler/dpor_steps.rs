//! DPOR's race check without a scan of the execution: each thread's steps indexed by the
//! objects they act on.
//!
//! The bounded race check wants the latest step of another thread that is dependent with an
//! operation and does not happen before it. Scanning the steps back from the end found it,
//! but an operation that races with nothing recent (a thread on an object of its own while
//! others work elsewhere) scanned the whole history at every step: one execution of
//! rayon-core's `broadcast_sleep_race` ran for minutes. Happens-before is monotone along a
//! thread (a step before one that happens before the operation does too), so per thread only
//! its latest dependent step can race, and the index finds it in O(objects) per thread. The
//! threads asked are those that acted on the operation's objects or took a step that may
//! touch anything, not every thread of the execution: a step's check costs what its objects'
//! sharing costs, not the thread count (bus's `aggressive_iteration` starts 686 threads).

use crate::fast_hash::FastMap;

/// One object's accesses, as step indices in ascending order: all of them, and the writes.
#[derive(Default)]
struct Accesses {
    all: Vec<usize>,
    writes: Vec<usize>,
}

#[derive(Default)]
pub(super) struct StepIndex {
    /// (object, thread) -> the thread's steps acting on the object.
    on: FastMap<(u64, u32), Accesses>,
    /// Per thread: its steps, and those that may touch anything (dependent with every step).
    steps: Vec<Vec<usize>>,
    unknown: Vec<Vec<usize>>,
    /// Per object, the threads that acted on it, each once; and the threads with a step
    /// that may touch anything.
    touched_by: FastMap<u64, Vec<u32>>,
    anything: Vec<u32>,
}

impl StepIndex {
    pub(super) fn clear(&mut self) {
        self.on.clear();
        self.steps.clear();
        self.unknown.clear();
        self.touched_by.clear();
        self.anything.clear();
    }

    /// Step `i`, thread `thread`'s, acted on `objects` (object, write), or on anything
    /// (`None`).
    pub(super) fn add(
        &mut self,
        i: usize,
        thread: u32,
        objects: Option<impl Iterator<Item = (u64, bool)>>,
    ) {
        let t = thread as usize;
        if self.steps.len() <= t {
            self.steps.resize_with(t + 1, Vec::new);
            self.unknown.resize_with(t + 1, Vec::new);
        }
        self.steps[t].push(i);
        match objects {
            None => {
                if self.unknown[t].is_empty() {
                    self.anything.push(thread);
                }
                self.unknown[t].push(i);
            }
            Some(objects) => {
                for (object, write) in objects {
                    let on = self.on.entry((object, thread)).or_default();
                    if on.all.is_empty() {
                        self.touched_by.entry(object).or_default().push(thread);
                    }
                    if on.all.last() != Some(&i) {
                        on.all.push(i);
                    }
                    if write && on.writes.last() != Some(&i) {
                        on.writes.push(i);
                    }
                }
            }
        }
    }

    /// The threads that may have a step dependent with an operation on `objects`, or on
    /// anything (`None`: every thread with steps). A thread may come more than once.
    pub(super) fn threads_for<'a>(
        &'a self,
        objects: Option<impl Iterator<Item = (u64, bool)> + 'a>,
    ) -> impl Iterator<Item = u32> + 'a {
        let every = objects.is_none().then_some(0..self.steps.len() as u32);
        let touched = objects.map(|objects| {
            let by = |(object, _)| self.touched_by.get(&object).into_iter().flatten();
            self.anything.iter().chain(objects.flat_map(by)).copied()
        });
        every
            .into_iter()
            .flatten()
            .chain(touched.into_iter().flatten())
    }

    /// The latest step of `thread` before `limit` dependent with an operation on `objects`
    /// (object, write), or on anything (`None`), that `eligible` accepts.
    pub(super) fn latest_dependent(
        &self,
        thread: u32,
        objects: Option<impl Iterator<Item = (u64, bool)>>,
        limit: usize,
        eligible: impl Fn(usize) -> bool,
    ) -> Option<usize> {
        let t = thread as usize;
        let latest = |list: &[usize]| {
            let end = list.partition_point(|&i| i < limit);
            list[..end].iter().rev().copied().find(|&i| eligible(i))
        };
        let Some(objects) = objects else {
            return self.steps.get(t).and_then(|s| latest(s));
        };
        let mut best = self.unknown.get(t).and_then(|s| latest(s));
        for (object, write) in objects {
            if let Some(on) = self.on.get(&(object, thread)) {
                // A write depends on every access, a read on the writes.
                let list = if write { &on.all } else { &on.writes };
                best = best.max(latest(list));
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step or operation that may touch anything.
    const NONE: Option<std::iter::Empty<(u64, bool)>> = None;

    #[test]
    fn the_latest_dependent_step_per_thread() {
        let mut index = StepIndex::default();
        // Thread 0: write a (0), read b (1), anything (2), read a (3). Thread 1: write b (4).
        index.add(0, 0, Some([(1, true)].into_iter()));
        index.add(1, 0, Some([(2, false)].into_iter()));
        index.add(2, 0, NONE);
        index.add(3, 0, Some([(1, false)].into_iter()));
        index.add(4, 1, Some([(2, true)].into_iter()));
        let all = |_| true;
        // A read of a: thread 0's latest write of a, or the step that may touch anything.
        assert_eq!(
            index.latest_dependent(0, Some([(1, false)].into_iter()), 5, all),
            Some(2)
        );
        assert_eq!(
            index.latest_dependent(0, Some([(1, false)].into_iter()), 2, all),
            Some(0)
        );
        // A write of a: its read too.
        assert_eq!(
            index.latest_dependent(0, Some([(1, true)].into_iter()), 5, all),
            Some(3)
        );
        // Not eligible: the one before.
        assert_eq!(
            index.latest_dependent(0, Some([(1, true)].into_iter()), 5, |i| i != 3),
            Some(2)
        );
        // A read of b: thread 1's write; thread 0's read of b is not dependent.
        assert_eq!(
            index.latest_dependent(1, Some([(2, false)].into_iter()), 5, all),
            Some(4)
        );
        assert_eq!(
            index.latest_dependent(0, Some([(2, false)].into_iter()), 2, all),
            None
        );
        // Anything: the latest step.
        assert_eq!(index.latest_dependent(0, NONE, 5, all), Some(3));
        assert_eq!(index.latest_dependent(2, NONE, 5, all), None);
        // Asked about a: thread 0 twice (a step that may touch anything, and its write of
        // a); about b: thread 0 twice again and thread 1; about anything: both.
        let threads_for = |objects| index.threads_for(objects).collect::<Vec<_>>();
        assert_eq!(threads_for(Some([(1, true)].into_iter())), [0, 0]);
        assert_eq!(threads_for(Some([(2, false)].into_iter())), [0, 0, 1]);
        assert_eq!(index.threads_for(NONE).collect::<Vec<_>>(), [0, 1]);
    }
}
