//! Atomicity violations among the user's own accesses (AVIO's unserializable interleavings,
//! Lu et al., ASPLOS 2006): a thread's two accesses to one object with another thread's
//! access between them that no serial order of the three gives. A lost update through an
//! async runtime is no race at all (the runtime's queues order every access) yet it is
//! the bug; naming it beats naming a race inside the runtime.

use std::collections::BTreeMap;

use super::location::{display_location, short_location};
use super::{EventKind, Trace};

/// What an access did, for the patterns.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Did {
    Read,
    Write,
    /// A read-modify-write that wrote: one indivisible step, never one of a pair's ends.
    Update,
}

impl Trace {
    /// The unserializable interleaving that best explains the failure, in the words of a
    /// race between two accesses (`between`): only accesses at the user's lines, up to the
    /// failing event; on the object the failing thread touched last among those with one,
    /// if any; of the patterns, a lost update (read, another's write, write) first, then a
    /// torn state seen (write, another's read, write), a write overwritten before it was
    /// read back (write, write, read), and two reads that differ (read, write, read), the
    /// last since a spin loop makes it too; the latest of the best.
    pub(super) fn unserializable(&self) -> Option<super::Race> {
        let end = self.failing_event.map_or(self.events.len(), |f| {
            (f as usize + 1).min(self.events.len())
        });
        // Per object, its accesses at the user's lines, in trace order.
        let mut per_object: BTreeMap<&str, Vec<(usize, Did)>> = BTreeMap::new();
        for (i, e) in self.events[..end].iter().enumerate() {
            let (Some(obj), Some(did)) = (e.object.as_deref(), did(e)) else {
                continue;
            };
            if self.user(i) == 1 {
                per_object.entry(obj).or_default().push((i, did));
            }
        }
        let mut budget = SCAN_BUDGET;
        let found: Vec<(&str, Pattern)> = per_object
            .iter()
            .filter_map(|(obj, list)| {
                let across = best_on(self, list, &mut budget);
                let within = interleaved_runs(self, list);
                let best = [across, within]
                    .into_iter()
                    .flatten()
                    .min_by_key(|p| (p.rank(), std::cmp::Reverse(p.last())))?;
                Some((*obj, best))
            })
            .collect();
        let focus = self.failing_thread_last_of(|o| found.iter().any(|(f, _)| *f == o));
        let (_, best) = found
            .into_iter()
            .filter(|(o, _)| focus.is_none_or(|f| f == *o))
            .min_by_key(|(_, p)| (p.rank(), std::cmp::Reverse(p.last())))?;
        Some(match best {
            Pattern::Between {
                a,
                b_first,
                b_last,
                c,
                ..
            } => self.between(a, b_first, b_last, c, true),
            Pattern::Runs { reads, writes } => self.runs(reads, writes),
        })
    }

    /// "two runs of src/lib.rs:11:27 → :13 interleaved on tokio-rt-worker (two tasks on one
    /// thread, say): both read `X` at :11 before either wrote it at :13, so the second write
    /// overwrote the first".
    fn runs(&self, reads: [usize; 2], writes: [usize; 2]) -> super::Race {
        let (r, w) = (&self.events[reads[0]], &self.events[writes[1]]);
        let (read_at, write_at) = (r.location.as_deref(), w.location.as_deref());
        let short = short_location(write_at, read_at);
        let summary = format!(
            "two runs of {} \u{2192} {short} interleaved on {} (two tasks on one thread, say): \
             both read `{}` at {} before either wrote it at {short}, so the second write \
             overwrote the first",
            read_at.map_or_else(|| "?".into(), display_location),
            self.thread_name(r.thread),
            r.object.as_deref().unwrap_or("-"),
            short_location(read_at, write_at),
        );
        super::Race {
            summary,
            steps: (r.step, w.step),
        }
    }
}

/// An interleaving that no serial order gives (trace indices).
#[derive(Clone, Copy)]
enum Pattern {
    /// A thread's accesses `a` and `c` with another thread's `b_first..=b_last` between.
    Between {
        rank: u8,
        a: usize,
        b_first: usize,
        b_last: usize,
        c: usize,
    },
    /// One thread read twice at one line, then wrote twice at another: two runs of one
    /// read-then-write, interleaved (async tasks polled by one thread).
    Runs {
        reads: [usize; 2],
        writes: [usize; 2],
    },
}

impl Pattern {
    /// Lower says more: a lost update is 0.
    fn rank(&self) -> u8 {
        match *self {
            Pattern::Between { rank, .. } => rank,
            Pattern::Runs { .. } => 0,
        }
    }

    fn last(&self) -> usize {
        match *self {
            Pattern::Between { c, .. } => c,
            Pattern::Runs { writes, .. } => writes[1],
        }
    }
}

/// The latest four accesses in a row to one object, all by one thread, that read twice at
/// one line and then write twice at another (plain reads and writes).
fn interleaved_runs(t: &Trace, list: &[(usize, Did)]) -> Option<Pattern> {
    let loc = |i: usize| t.events[i].location.as_deref();
    list.windows(4).rev().find_map(|w| {
        let [(r0, d0), (r1, d1), (w0, d2), (w1, d3)] = [w[0], w[1], w[2], w[3]];
        let one_thread = [r1, w0, w1]
            .iter()
            .all(|&i| t.events[i].thread == t.events[r0].thread);
        (one_thread
            && [d0, d1, d2, d3] == [Did::Read, Did::Read, Did::Write, Did::Write]
            && loc(r0) == loc(r1)
            && loc(w0) == loc(w1))
        .then_some(Pattern::Runs {
            reads: [r0, r1],
            writes: [w0, w1],
        })
    })
}

fn did(e: &super::Event) -> Option<Did> {
    match e.kind {
        EventKind::Load => Some(Did::Read),
        EventKind::Store => Some(Did::Write),
        EventKind::Rmw if e.writes() => Some(Did::Update),
        // A compare-exchange that failed only read.
        EventKind::Rmw => Some(Did::Read),
        _ => None,
    }
}

/// Accesses looked at between pairs, over all objects: the patterns are a summary's words,
/// not worth seconds on a stress test's trace of 1,000 threads on one counter.
const SCAN_BUDGET: usize = 4_000_000;

/// The best unserializable interleaving among one object's accesses: for each thread's two
/// consecutive accesses `a`, `c` (reads or plain writes), the last other thread to access
/// the object between them, and its accesses there; the lowest rank, the latest of those.
fn best_on(t: &Trace, list: &[(usize, Did)], budget: &mut usize) -> Option<Pattern> {
    let mut best: Option<Pattern> = None;
    // Per thread, the position in `list` of its last access so far.
    let mut last_of: BTreeMap<u32, usize> = BTreeMap::new();
    for (j, &(c, dc)) in list.iter().enumerate() {
        let thread = t.events[c].thread;
        let Some(k) = last_of.insert(thread, j) else {
            continue;
        };
        let (a, da) = list[k];
        if j == k + 1 || da == Did::Update || dc == Did::Update {
            continue;
        }
        let between = &list[k + 1..j];
        *budget = budget.checked_sub(between.len())?;
        let (b_last, _) = between[between.len() - 1];
        let other = t.events[b_last].thread;
        let theirs = || between.iter().filter(|(i, _)| t.events[*i].thread == other);
        let wrote = theirs().any(|(_, d)| *d != Did::Read);
        let read = theirs().any(|(_, d)| *d != Did::Write);
        let rank = match (da, dc) {
            (Did::Read, Did::Write) if wrote => 0,
            (Did::Write, Did::Write) if read => 1,
            (Did::Write, Did::Read) if wrote => 2,
            (Did::Read, Did::Read) if wrote => 3,
            _ => continue,
        };
        let b_first = theirs().next()?.0;
        if best.is_none_or(|p| rank <= p.rank()) {
            best = Some(Pattern::Between {
                rank,
                a,
                b_first,
                b_last,
                c,
            });
        }
    }
    best
}
