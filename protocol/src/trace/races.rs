//! PULSE's dotted edges: conflicting side effects on one object that nothing but the
//! object's own synchronisation orders, and the one race the console names.

use std::collections::BTreeMap;

use super::location::{dependency_of, display_location, is_user_location, short_location};
use super::{hb, Edge, Event, EventKind, Trace};

/// Races are looked for on at most this many objects (each costs one pass of clocks).
const MAX_RACE_OBJECTS: usize = 64;

/// All the per-object passes of `races` together stay under this many clock entries: a
/// fifth of the 100 million that took over 10 s on bus 2.4.1's 55,000-step trace in the
/// debug build a test binary is.
const RACE_WORK: usize = 20_000_000;

/// What an access to an object does, for conflicts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
    /// Channel operations conflict with their own kind only (two sends race for the queue
    /// order, two receives for a message; a send and its receive are ordered).
    Send,
    Recv,
}

impl Access {
    fn conflicts(self, other: Access) -> bool {
        match (self, other) {
            (Access::Read, Access::Read) => false,
            (Access::Read | Access::Write, Access::Read | Access::Write) => true,
            (a, b) => a == b,
        }
    }
}

impl Trace {
    /// PULSE's dotted edges: for each object, each access and the access to the same
    /// object just before it, when they are on different threads, conflict (one writes;
    /// two sends; two receives) and nothing but the object itself orders them (the
    /// happens-before relation computed without that object's own synchronisation: which
    /// thread got the lock or the store first was the scheduler's choice, not the
    /// program's). What remains are the races.
    pub fn races(&self) -> Vec<Edge> {
        if !self.clocks_affordable() {
            return Vec::new();
        }
        let per_pass = self
            .events
            .len()
            .saturating_mul(self.thread_count().max(1))
            .max(1);
        let max_objects = (RACE_WORK / per_pass).clamp(1, MAX_RACE_OBJECTS);
        let mut per_object: BTreeMap<&str, Vec<(usize, Access)>> = BTreeMap::new();
        let mut order: Vec<&str> = Vec::new();
        for (i, e) in self.events.iter().enumerate() {
            let (Some(obj), Some(access)) = (e.object.as_deref(), access_of(e)) else {
                continue;
            };
            per_object
                .entry(obj)
                .or_insert_with(|| {
                    order.push(obj);
                    Vec::new()
                })
                .push((i, access));
        }
        let mut edges = Vec::new();
        let mut examined = 0;
        for obj in order {
            let accesses = &per_object[obj];
            let candidates: Vec<(usize, usize)> = accesses
                .windows(2)
                .filter(|w| {
                    self.events[w[0].0].thread != self.events[w[1].0].thread
                        && w[0].1.conflicts(w[1].1)
                })
                .map(|w| (w[0].0, w[1].0))
                .collect();
            if candidates.is_empty() {
                continue;
            }
            if examined == max_objects {
                break;
            }
            examined += 1;
            let clocks = self.clocks_without(Some(obj));
            for (a, b) in candidates {
                if !hb(&self.events, &clocks[a], a, &clocks[b]) {
                    edges.push(Edge { from: a, to: b });
                }
            }
        }
        edges.sort();
        edges
    }

    /// Threads blocked for good on a lock another thread holds: an edge from the block to
    /// the holder's acquire (a deadlock's cycle).
    pub fn waits_for(&self) -> Vec<Edge> {
        let mut edges = Vec::new();
        for t in 0..self.thread_count() as u32 {
            let Some(last) = self.events.iter().rposition(|e| e.thread == t) else {
                continue;
            };
            let e = &self.events[last];
            if e.kind != EventKind::Block {
                continue;
            }
            let Some(obj) = e.object.as_deref() else {
                continue;
            };
            let mut holder = None;
            for (i, x) in self.events[..last].iter().enumerate() {
                if x.object.as_deref() == Some(obj) {
                    match x.kind {
                        EventKind::Acquire => holder = Some(i),
                        EventKind::Release => holder = None,
                        _ => {}
                    }
                }
            }
            if let Some(h) = holder.filter(|&h| self.events[h].thread != t) {
                edges.push(Edge { from: last, to: h });
            }
        }
        edges
    }

    /// The failing thread's last load, up to the failure, that read an older store than
    /// the newest one made to its atomic (`Event::stale`): under the relaxed memory model
    /// the newer stores were not visible to it, as nothing ordered them before the load.
    /// That is the cause a sequentially consistent reading of the trace cannot show, so
    /// `race_summary` says it first: "main read `AtomicUsize#3` at src/lib.rs:678:38 and got
    /// thread-2's store at :473:25, though 2 newer stores were made (the last by thread-2 at
    /// :473:25): nothing ordered them before the read".
    pub fn stale_read_summary(&self) -> Option<String> {
        self.stale_read().map(|r| r.summary)
    }

    fn stale_read(&self) -> Option<Race> {
        let end = self.failing_event? as usize;
        let failing = self.events.get(end)?;
        if self.fails_in_a_deadlock() {
            return None;
        }
        let thread = failing.thread;
        // Objects the thread read afresh later: an earlier stale read of them was made good.
        let mut read_afresh: Vec<&str> = Vec::new();
        let (i, l) = self.events[..=end]
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, e)| e.thread == thread && e.kind == EventKind::Load)
            .find(|(_, e)| {
                let Some(obj) = e.object.as_deref() else {
                    return false;
                };
                if e.stale.is_none() {
                    read_afresh.push(obj);
                    return false;
                }
                !read_afresh.contains(&obj)
            })?;
        let newer = l.stale.unwrap_or(0);
        let last = self.events[..i]
            .iter()
            .rev()
            .find(|e| e.object == l.object && e.writes())?;
        let at = |e: &Event| short_location(e.location.as_deref(), l.location.as_deref());
        let read = match l.reads_from.and_then(|r| self.events.get(r as usize)) {
            Some(r) => format!("{}'s store at {}", self.thread_name(r.thread), at(r)),
            None => "its value from before any store in the trace".to_string(),
        };
        let (s, were, them) = if newer == 1 {
            ("", "was", "it")
        } else {
            ("s", "were", "them")
        };
        let summary = format!(
            "{} read `{}` at {} and got {read}, though {newer} newer store{s} {were} made (the \
             last by {} at {}): nothing ordered {them} before the read",
            self.thread_name(l.thread),
            l.object.as_deref().unwrap_or("-"),
            l.location
                .as_deref()
                .map_or_else(|| "?".into(), display_location),
            self.thread_name(last.thread),
            at(last),
        );
        Some(Race {
            summary,
            steps: (last.step, l.step),
        })
    }

    /// The object whose races explain the failure: of the objects with a race before the
    /// failing event, the one the failing thread touched last before (or at) it, the value
    /// the failure was judged on (a `recv`'s message, a load, the lock around a read);
    /// `None` when the failing thread touched none of them (or no event is marked failing).
    pub fn failure_object(&self, races: &[Edge]) -> Option<&str> {
        let end = self.failing_event? as usize;
        let raced: std::collections::BTreeSet<&str> = races
            .iter()
            .filter(|e| e.to <= end)
            .filter_map(|e| self.events[e.to].object.as_deref())
            .collect();
        self.failing_thread_last_of(|o| raced.contains(o))
    }

    /// Of the objects `among` accepts, the one the failing thread touched last before (or
    /// at) the failing event; `None` without a failing event or such an object.
    pub(super) fn failing_thread_last_of(&self, among: impl Fn(&str) -> bool) -> Option<&str> {
        let end = self.failing_event? as usize;
        let thread = self.events.get(end)?.thread;
        self.events[..=end]
            .iter()
            .rev()
            .filter(|e| e.thread == thread)
            .find_map(|e| e.object.as_deref().filter(|o| among(o)))
    }

    /// Whether the failure is a deadlock (the failing event is a block for good): its
    /// cause is the wait cycle, not a value read or a race inside a dependency.
    fn fails_in_a_deadlock(&self) -> bool {
        self.failing_event
            .and_then(|f| self.events.get(f as usize))
            .is_some_and(|e| e.kind == EventKind::Block)
    }

    /// For each event, the user's location it stands for: its own when that is a line of
    /// the user's code ([`is_user_location`]), else its thread's last such location before
    /// it (a dependency's lock taken on the user's behalf), else, for a thread that has run
    /// no line of the user's yet (a dependency's worker), what its spawn stood for (the
    /// user's line that made the pool), else `None`.
    pub fn on_behalf_of(&self) -> Vec<Option<&str>> {
        let mut last: BTreeMap<u32, &str> = BTreeMap::new();
        let mut out: Vec<Option<&str>> = Vec::with_capacity(self.events.len());
        for (i, e) in self.events.iter().enumerate() {
            let here = match e.location.as_deref() {
                Some(l) if is_user_location(l) => {
                    last.insert(e.thread, l);
                    Some(l)
                }
                _ => last.get(&e.thread).copied().or_else(|| {
                    let spawn = self
                        .threads
                        .iter()
                        .find(|th| th.id == e.thread)?
                        .spawned_by? as usize;
                    out.get(spawn).copied().flatten().filter(|_| spawn < i)
                }),
            };
            out.push(here);
        }
        out
    }

    /// The racing pair in words, when the trace shows one. Only races before the failing
    /// event count; of those the ones at the user's own lines first: races whose two
    /// accesses are both at user locations ([`is_user_location`]), else those with one, and
    /// only when there are none the races inside dependencies, said as such ("inside
    /// parking_lot-0.13.0: ...", each dependency access followed by the user's line it ran
    /// on behalf of, its thread's last, and only its first line inside the dependency). Within that tier only the races on
    /// [`failure_object`](Self::failure_object) when there is one (a channel whose messages
    /// arrived out of order rather than the counter that numbered them). Of those: a
    /// thread's accesses landing between two of another thread's ("thread-1 wrote
    /// `AtomicU64#0` at src/lib.rs:12 between main's read at :10 and write at :14"), the
    /// last such; else the last race. When no race has both accesses at the user's lines,
    /// an unserializable interleaving of the user's own accesses comes first
    /// (`unserializable`: a lost update between async tasks is no race at all).
    pub fn race_summary(&self) -> Option<String> {
        self.race().map(|r| r.summary)
    }

    /// `race_summary` with the steps its events span.
    pub fn race(&self) -> Option<Race> {
        if let Some(stale) = self.stale_read() {
            return Some(stale);
        }
        let races = self.races();
        let end = self.failing_event.map_or(usize::MAX, |f| f as usize);
        let score = |e: &Edge| self.user(e.from) + self.user(e.to);
        let best = races.iter().filter(|e| e.to <= end).map(score).max();
        // No race between two of the user's lines: the user's accesses may still interleave
        // in a way no serial order of them gives (a lost update through an async runtime,
        // whose queues order every access), which says more than a race inside the runtime.
        if best < Some(2) {
            if let Some(v) = self.unserializable() {
                return Some(v);
            }
        }
        let best = best?;
        if self.fails_in_a_deadlock() && best == 0 {
            return None;
        }
        let races: Vec<Edge> = races.into_iter().filter(|e| score(e) == best).collect();
        let focus = self.failure_object(&races);
        let before: Vec<&Edge> = races
            .iter()
            .filter(|e| e.to <= end)
            .filter(|e| focus.is_none() || self.events[e.to].object.as_deref() == focus)
            .collect();
        let ev = |i: usize| &self.events[i];
        // The last pair of races on one object where another thread's accesses (one or
        // more, no race between them) land between two of a thread's.
        for (k, y) in before.iter().enumerate().rev() {
            let (b_last, c) = (ev(y.from), ev(y.to));
            let Some(x) = before[..k]
                .iter()
                .rev()
                .find(|x| ev(x.to).object == c.object)
            else {
                continue;
            };
            let (a, b_first) = (ev(x.from), ev(x.to));
            if !(a.thread == c.thread
                && b_first.thread == b_last.thread
                && a.thread != b_first.thread)
            {
                continue;
            }
            return Some(self.between(x.from, x.to, y.from, y.to, best > 0));
        }
        let last = before.last()?;
        let (a, b) = (ev(last.from), ev(last.to));
        let behalf = self.on_behalf_of();
        let summary = format!(
            "{}{} {} `{}` at {}{} and {} {} it at {}{}, unordered by any synchronisation",
            self.inside(&[last.from, last.to], best > 0),
            self.thread_name(a.thread),
            verb(a),
            a.object.as_deref().unwrap_or("-"),
            a.location
                .as_deref()
                .map_or_else(|| "?".into(), display_location),
            self.after(&behalf, last.from),
            self.thread_name(b.thread),
            verb(b),
            short_location(b.location.as_deref(), a.location.as_deref()),
            self.after(&behalf, last.to),
        );
        Some(Race {
            summary,
            steps: (a.step, b.step),
        })
    }

    /// "thread-1 wrote `X` at src/lib.rs:12 between main's read at :10 and write at :14":
    /// thread `b_first`..`b_last`'s accesses to the object, all made between `a` and `c` of
    /// another thread. `at_user_lines`: the words name the user's lines; otherwise the
    /// accesses are inside a dependency, said as such, each followed by the user's line it
    /// ran on behalf of, and only the first of its lines is named (its lock word's lines
    /// say nothing).
    pub(super) fn between(
        &self,
        a: usize,
        b_first: usize,
        b_last: usize,
        c: usize,
        at_user_lines: bool,
    ) -> Race {
        let behalf = self.on_behalf_of();
        let ev = |i: usize| &self.events[i];
        let (first, object) = (ev(b_first), ev(c).object.as_deref());
        // Each line once: the first in full, the others as `:line` of the same file.
        let mut lines: Vec<String> = Vec::new();
        // What the thread did at each line: `wrote `X` at a and :b and read it at :c`.
        let mut did = String::new();
        let mut last_verb = "";
        for e in &self.events[b_first..=b_last] {
            if e.thread != first.thread || e.object.as_deref() != object || access_of(e).is_none() {
                continue;
            }
            let short = short_location(e.location.as_deref(), first.location.as_deref());
            if lines.contains(&short) || !(at_user_lines || lines.is_empty()) {
                continue;
            }
            if lines.is_empty() {
                did = format!(
                    "{} `{}` at {}",
                    verb(e),
                    e.object.as_deref().unwrap_or("-"),
                    e.location
                        .as_deref()
                        .map_or_else(|| "?".into(), display_location)
                );
            } else if verb(e) == last_verb {
                did.push_str(&format!(" and {short}"));
            } else {
                did.push_str(&format!(" and {} it at {short}", verb(e)));
            }
            last_verb = verb(e);
            lines.push(short);
        }
        let summary = format!(
            "{}{} {}{} between {}'s {} at {}{} and {} at {}{}",
            self.inside(&[a, b_first, b_last, c], at_user_lines),
            self.thread_name(first.thread),
            did,
            self.after(&behalf, b_first),
            self.thread_name(ev(a).thread),
            noun(ev(a)),
            short_location(ev(a).location.as_deref(), first.location.as_deref()),
            self.after(&behalf, a),
            noun(ev(c)),
            short_location(ev(c).location.as_deref(), first.location.as_deref()),
            self.after(&behalf, c),
        );
        Race {
            summary,
            steps: (ev(a).step, ev(c).step),
        }
    }

    /// 1 if event `i` is at a line of the user's code ([`is_user_location`]), else 0.
    pub(super) fn user(&self, i: usize) -> u8 {
        self.events[i]
            .location
            .as_deref()
            .is_some_and(is_user_location) as u8
    }

    /// ` (after src/lib.rs:199:29)` for an access inside a dependency.
    fn after(&self, behalf: &[Option<&str>], i: usize) -> String {
        match behalf[i] {
            Some(l) if self.user(i) == 0 => format!(" (after {})", display_location(l)),
            _ => String::new(),
        }
    }

    /// `inside parking_lot-0.13.0: ` when the named accesses are not at the user's lines.
    fn inside(&self, idx: &[usize], at_user_lines: bool) -> String {
        let mut deps: Vec<String> = Vec::new();
        for &i in idx {
            if let Some(d) = self.events[i].location.as_deref().and_then(dependency_of) {
                if !deps.contains(&d) {
                    deps.push(d);
                }
            }
        }
        if at_user_lines || deps.is_empty() {
            String::new()
        } else {
            format!("inside {}: ", deps.join(" and "))
        }
    }
}

/// The race the console names: its words, and the first and last step of the events they
/// name (a report shows the trace's rows there when its tail does not reach them).
pub struct Race {
    pub summary: String,
    pub steps: (u64, u64),
}

/// What an event does to its object, if it is a side effect.
fn access_of(e: &Event) -> Option<Access> {
    match e.kind {
        EventKind::Acquire if e.op.contains("read") => Some(Access::Read),
        EventKind::Acquire => Some(Access::Write),
        EventKind::Load => Some(Access::Read),
        EventKind::Store | EventKind::Rmw if e.writes() => Some(Access::Write),
        // A compare-exchange that failed only read.
        EventKind::Rmw => Some(Access::Read),
        EventKind::Send => Some(Access::Send),
        EventKind::Recv if e.value.as_deref().is_none_or(|v| v.starts_with("Ok")) => {
            Some(Access::Recv)
        }
        _ => None,
    }
}

fn verb(e: &Event) -> &'static str {
    match e.kind {
        EventKind::Acquire => "locked",
        EventKind::Load => "read",
        EventKind::Store => "wrote",
        EventKind::Rmw if !e.writes() => "read (a failed compare-exchange)",
        EventKind::Rmw => "updated",
        EventKind::Send => "sent on",
        EventKind::Recv => "received from",
        _ => "used",
    }
}

fn noun(e: &Event) -> &'static str {
    match e.kind {
        EventKind::Acquire => "lock",
        EventKind::Load => "read",
        EventKind::Store => "write",
        EventKind::Rmw if !e.writes() => "failed compare-exchange",
        EventKind::Rmw => "update",
        EventKind::Send => "send",
        EventKind::Recv => "receive",
        _ => "use",
    }
}
