//! Dynamic partial-order reduction: source sets without a bound (Abdulla, Aronis, Jonsson
//! and Sagonas, POPL 2014, Algorithm 1), persistent sets under a preemption bound (Flanagan
//! and Godefroid, POPL 2005, with the conservative backtracking points Coons, Musuvathi and
//! McKinley showed a bound needs, `dejafu-systematic-concurrency-testing.txt` §4.2).
//!
//! Like `dfs`, the search is stateless and keeps the current path of choice points; unlike
//! it, a scheduling point does not try every thread. Each execution records its steps (a
//! thread running from one scheduling point to its next) with a footprint, and a vector
//! clock per step for happens-before. Whenever a step, or the pending operation of a thread
//! that could run, races with an earlier step of another thread (is dependent with it, and
//! it does not happen before), the race is reversed at the choice point that started the
//! earlier step's run:
//! - without a bound, every such race, by adding one thread that can start `v` (the steps
//!   after that point that do not come after the earlier step, then the racing operation)
//!   unless one is in the point's backtrack, done or sleep set already; where `v` is not
//!   known to be runnable from the point, every option. Source sets reach every class of
//!   equivalent executions; persistent sets, which only reverse the latest race, reach
//!   every deadlock but not every class (`dpor_classes.rs` has a program where they miss
//!   one; `source_sets(false)` asks for them, to compare);
//! - under a bound, the latest such race, by adding the thread (every option if it is not
//!   one), and every option at the last context switch before the point.
//!
//! Only backtrack sets are explored.
//!
//! Sleep sets (Godefroid): once an option's subtree is explored, that thread sleeps in the
//! later options' subtrees, with its pending operation's footprint, until a step dependent
//! with it runs; a sleeping thread is not added to a backtrack set, nor picked unless
//! every way on sleeps. With a bound, an equivalent reordering can cost more preemptions than
//! the schedule it stands for, so the explored subtree might not contain it: an option sleeps
//! only if nothing was left out of its subtree (no option beyond the bound, no step touching
//! time, counted by `dirty`). Without a bound every explored option sleeps.
//!
//! Soundness first: where the dependency relation does not know an operation, it is coarse.
//! - A footprint is the object the operation acts on (`Scheduler::pending_op`'s resource),
//!   and only for operations known to act on that one object alone: mutex, rwlock, channel,
//!   once, barrier and join-handle operations, condvar notifications, atomics (objects
//!   named by address), and park and unpark (the parking thread's token). Everything else
//!   (time, anything without an object) is `UNKNOWN`: dependent with every step. So is a `Condvar::wait` before it
//!   runs (its scheduling point names the condvar, not the mutex it releases); the steps it
//!   took are recorded as touching the condvar and the mutexes the runtime said they
//!   released and re-took (`Scheduler::released`, `acquired`). That took the fixed twins of
//!   the corpus at bound 2 from 691 executions to 679, `condvar_handoff` without a bound
//!   from 53 to 3.
//! - Two reads of one object commute: atomic loads (which store a load reads is a choice of
//!   its own, explored in full; what it may read changes only with stores to that address)
//!   and taking a `RwLock` to read. Everything else on an object is a write, including
//!   reference-count operations (clones and drops have no scheduling point).
//! - A step in which its thread blocks acts on what its operation acts on, a blocking read
//!   counting as a write (it joins a wait queue); a woken thread resumes its operation with
//!   the same footprint. Except where the blocked attempt changes nothing (`Mutex::lock`,
//!   `JoinHandle::join`): that attempt is not a step at all (as in the literature, where a
//!   disabled thread takes no step), and the lock or join happens when it succeeds. Its
//!   race with what enabled it (a release of the mutex, the joined thread's end) cannot be
//!   reversed, so the race scan passes over that step to the one before it (the other
//!   thread's lock). A blocked attempt as a step made "A tried and waited, then B unlocked"
//!   and "B unlocked, then A locked" two classes: 1,455 executions for the 431 classes of
//!   the class check (569 without), 247 for `reorder_3`'s fixed twin (6 without).
//! - A thread's end (`Scheduler::ended`) writes its own exit, which its join handle's
//!   operations act on; a sleeping thread is given both, since its next step may block or
//!   end.
//! - A `yield_now` (or `spin_loop`) touches nothing: its step is the thread's own code up
//!   to its next scheduling point. As `UNKNOWN` it raced with every step of a spin loop's
//!   partner: `spinlock`'s fixed twin took 12,686 executions without a bound, now 572.
//! - A spawn creates the thread before its `thread::spawn` scheduling point: the step that
//!   ends there writes `SPAWNS` (thread ids are taken in spawn order), and the new thread's
//!   first step, its own code up to its first scheduling point, comes after it.
//! - Once an execution touches time (a sleep, a timeout, a clock read, a competing timer),
//!   the virtual clock depends on how many steps ran, so every later choice point tries all
//!   its options and nothing sleeps.
//! - Other choices (which waiter a notify wakes, which timer fires, spurious wakeups and
//!   weak-CAS failures, which store a relaxed load reads) are explored in full, as `dfs`
//!   does; without a bound an execution may have `UNBOUNDED_SPURIOUS` spurious events,
//!   as under `dfs` (each turns a loop once more).
//!
//! Two steps are dependent when they act on the same object, one of them as a write, or
//! either is `UNKNOWN`. Spurious failures and preemptions cost what they cost in `dfs`; an
//! option that would exceed the bound is left out (`pruned`). Unlike `dfs`, there are no
//! rounds of growing bounds: the order is depth-first, not fewest preemptions first
//! (restarting a round per bound ran more executions than `dfs` on the corpus's fixed twins),
//! so its first failure need not have the fewest preemptions; the default finds the large
//! programs' bugs sooner. Not optimal: an execution whose every way on sleeps still runs to
//! its end (it repeats an explored one; wakeup trees would avoid it).

use std::collections::HashMap;

use super::dfs::{fair_choice, FairChoice};
use super::dpor_steps::StepIndex;
use super::{position, ChoiceKind, Covered, ReplayCheck, Scheduler, SpuriousLimit, FAIR_RUN};
use crate::obj_ref::ObjRef;

/// One object a step acts on, and whether it may change it (`write`) or only reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Access {
    object: u64,
    write: bool,
}

/// What a step touches: some objects, or (`None`) possibly anything.
type Footprint = Option<Vec<Access>>;

/// The footprint of a step that may touch anything.
const UNKNOWN: Footprint = None;

/// What a thread's end touches: its own exit (it wakes its joiners and hands over its
/// result), the object its join handle's operations act on.
fn exit_of(thread: u32) -> u64 {
    ObjRef::thread(thread).resource()
}

/// The runtime's thread table: a spawn takes the next thread id, so two spawns do not
/// commute. Object ids are `ObjRef::resource`s (low byte ASCII) or atomics' addresses (bit
/// 63), so this id, like `SEQCST_CLOCK`, is nobody's.
const SPAWNS: u64 = (1 << 63) - 2;

/// The relaxed memory model's one `SeqCst` clock (decision 27): `SeqCst` stores and RMWs
/// release into it and RMWs acquire from it, so under that model atomic writes to different
/// addresses do not commute. Every atomic store and RMW writes it then (the operation's name
/// does not say its ordering); object ids are small counters and atomics have bit 63 set,
/// so this id is nobody's.
const SEQCST_CLOCK: u64 = (1 << 63) - 1;

/// Operations that act on their object alone (by name prefix), and that, if they block,
/// resume acting on it alone.
const SINGLE_OBJECT: &[&str] = &[
    "Mutex::",
    "RwLock",
    "Condvar::notify",
    "Sender::",
    "SyncSender::",
    "Receiver::",
    "Once",
    "Barrier::",
    "JoinHandle::",
    // A thread's park token (`park_timeout` is timed, so `UNKNOWN`).
    "thread::park",
    "Thread::unpark",
];

/// Operations whose blocked attempt changes nothing: their scheduling point comes right
/// before the attempt, a failed attempt only waits, and the thread is woken to try again
/// (a joined thread's end wakes every joiner; a mutex's release wakes one waiter, which one
/// a choice explored in full). Such an attempt is not a step.
const BLOCK_IS_NOT_AN_EVENT: &[&str] = &["Mutex::lock", "JoinHandle::join"];

/// Operations that only read their object, so that two of them commute: an atomic load
/// (its reads-from is a separate choice, explored in full; what it may read changes only
/// with stores to the same address) and taking a `RwLock` for reading (readers share the
/// lock; whether one must wait depends on writers only).
fn is_read(op: &str, resource: u64) -> bool {
    (resource >> 63 == 1 && op.starts_with("Atomic") && op.ends_with("::load"))
        || op == "RwLock::read"
        || op == "RwLock::try_read"
}

fn write(object: u64) -> Access {
    Access {
        object,
        write: true,
    }
}

/// Whether an operation makes the execution depend on the virtual clock.
fn is_timed(op: &str) -> bool {
    ["sleep", "timeout", "Timeout", "now", "elapsed", "timed"]
        .iter()
        .any(|w| op.contains(w))
}

/// The footprint of operation `op` on `resource`.
fn footprint(op: &str, resource: u64) -> Footprint {
    if op == "thread::yield_now" {
        // It only gives way: the step is the thread's own code.
        return Some(Vec::new());
    }
    if op == "thread::spawn" {
        // The spawn itself happened before its scheduling point (`pending_op`); what follows
        // it is the spawner's own code.
        return Some(Vec::new());
    }
    if resource == 0 || is_timed(op) {
        return UNKNOWN;
    }
    // Atomics and reference counts are named by address (bit 63).
    if resource >> 63 == 1 || SINGLE_OBJECT.iter().any(|p| op.starts_with(p)) {
        Some(vec![Access {
            object: resource,
            write: !is_read(op, resource),
        }])
    } else {
        UNKNOWN
    }
}

/// The footprint of a step that blocks in its operation: a read that blocks counts as a
/// write (it joins a wait queue; an atomic load cannot block).
fn blocking(footprint: &Footprint) -> Footprint {
    footprint.clone().map(|mut accesses| {
        for a in &mut accesses {
            a.write |= a.object >> 63 == 0;
        }
        accesses
    })
}

/// `footprint` plus `access` (nothing to add to `UNKNOWN`).
fn with(mut footprint: Footprint, access: Access) -> Footprint {
    if let Some(accesses) = footprint.as_mut() {
        accesses.push(access);
    }
    footprint
}

/// Whether step `s` is what lets operation `op` (footprint `footprint`) proceed: a release
/// of the mutex it locks (an unlock, a `Condvar` wait), the end of the thread it joins.
/// Their race cannot be reversed: before `s` the operation would only wait, which is not a
/// step (`BLOCK_IS_NOT_AN_EVENT`). The race to reverse is with the step before, e.g. the
/// other thread's lock.
fn enables(s: &Step, op: &str, footprint: &Footprint) -> bool {
    let Some([access]) = footprint.as_deref() else {
        return false;
    };
    match op {
        "Mutex::lock" => s.released.contains(&access.object),
        "JoinHandle::join" => s.ended && exit_of(s.thread) == access.object,
        _ => false,
    }
}

fn dependent(a: &Footprint, b: &Footprint) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.iter().any(|x| {
            b.iter()
                .any(|y| x.object == y.object && (x.write || y.write))
        }),
        _ => true,
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
enum Kind {
    /// Which runnable thread runs next: the options (dfs's, so yielding threads give way)
    /// and those still to explore.
    Sched {
        current: Option<u32>,
        stay: Option<u32>,
        options: Vec<u32>,
        backtrack: Vec<u32>,
        done: Vec<u32>,
        /// The threads asleep on arriving here: never explored from this point.
        asleep: Vec<u32>,
        /// The options whose subtrees were explored with nothing left out (no option beyond
        /// the bound, no time): they sleep in the later options' subtrees.
        slept: Vec<u32>,
        /// `DporScheduler::dirty` when the current option's subtree began.
        dirty: u64,
        /// How many steps the execution had recorded here: the picked thread's step is the
        /// next one (the prefix replays the same steps, so it holds in every execution).
        at: usize,
    },
    /// Any other choice, explored in full; `costly`: its alternatives cost a preemption.
    Data { untried: Vec<u32>, cost: DataCost },
}

/// What taking a data choice's other option (not its default) costs.
#[derive(Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum DataCost {
    /// Nothing: which waiter a notify wakes, writer preference.
    Free,
    /// A preemption: an older store read, a timer firing first, a switch in `next_thread`.
    Preemption,
    /// A preemption, and without a bound one of the execution's `UNBOUNDED_SPURIOUS`: a
    /// spurious wakeup or weak-CAS failure.
    Spurious,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Node {
    choice: u32,
    kind: Kind,
    /// Preemptions spent on the path before this point.
    spent: usize,
}

impl Node {
    /// Preemptions choosing `option` here costs.
    fn cost(&self, option: u32) -> usize {
        match &self.kind {
            Kind::Sched { stay, .. } => usize::from(stay.is_some_and(|s| s != option)),
            Kind::Data { cost, .. } => usize::from(*cost != DataCost::Free && option != 0),
        }
    }
}

/// An operation whose races are checked: thread `p`'s, named `op`, coming after `p`'s
/// earlier steps (happens-before `clock`), acting on `footprint`.
#[derive(Clone, Copy)]
struct Racing<'a> {
    p: u32,
    op: &'a str,
    clock: &'a [u32],
    footprint: &'a Footprint,
}

struct Step {
    thread: u32,
    footprint: Footprint,
    /// The locks the step released.
    released: Vec<u64>,
    /// The thread ended at the step's end (`Scheduler::ended`).
    ended: bool,
    /// The choice point that picked the thread for the run this step belongs to (`None`:
    /// the thread was the only one that could run).
    start: Option<usize>,
    /// This step's index among its thread's steps, plus one.
    local: u32,
    clock: Vec<u32>,
}

#[derive(Default, Clone)]
struct ThreadInfo {
    pending: Footprint,
    /// A new thread's first step only runs its own code up to its first scheduling point.
    seen: bool,
    clock: Vec<u32>,
    steps: u32,
    /// The operation named at the thread's last scheduling point, and its object.
    op: &'static str,
    resource: u64,
    /// The locks released and taken in the step it is taking.
    released: Vec<u64>,
    acquired: Vec<u64>,
}

/// The steps of this execution that last acted on an object: its last write, and the reads
/// since (a write comes after all of them; a read only after the write).
#[derive(Default)]
struct LastOn {
    write: Option<usize>,
    reads: Vec<usize>,
}

/// Serialized as its position (`Scheduler::save_position`): the path with its backtrack,
/// done and sleep sets, and the search's counters; what one execution records (its steps,
/// threads, sleep set) is skipped, as `start` clears it.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct DporScheduler {
    /// The search runs the relaxed memory model (see `SEQCST_CLOCK`).
    relaxed_memory: bool,
    /// Without a bound, source sets (the default) or persistent sets (to compare).
    source_sets: bool,
    bound: usize,
    path: Vec<Node>,
    pos: usize,
    spent: usize,
    started: bool,
    exhausted: bool,
    pruned: bool,
    /// Without a bound, spurious events against `UNBOUNDED_SPURIOUS`.
    spurious: SpuriousLimit,
    /// Counts the events that make a subtree's exploration incomplete as a justification
    /// for sleeping: an option left out for the bound, a step touching time.
    dirty: u64,
    // This execution.
    #[serde(skip)]
    steps: Vec<Step>,
    #[serde(skip)]
    threads: Vec<ThreadInfo>,
    #[serde(skip)]
    last_on: HashMap<u64, LastOn>,
    #[serde(skip)]
    last_unknown: Option<usize>,
    /// Each thread's steps by object, for the bounded race check.
    #[serde(skip)]
    index: StepIndex,
    /// The last scheduling choice point and the thread it picked.
    #[serde(skip)]
    last_sched: Option<(usize, u32)>,
    #[serde(skip)]
    timed: bool,
    /// The sleep set: threads not to pick, each with the footprint of its pending
    /// operation; one wakes when a step dependent with it runs.
    #[serde(skip)]
    sleep: Vec<(u32, Footprint)>,
    /// The thread `ended` named, until it leaves the runnable set.
    #[serde(skip)]
    ending: Option<u32>,
    #[serde(skip)]
    last: Option<u32>,
    #[serde(skip)]
    run_length: u32,
    replay_check: ReplayCheck,
}

fn join(into: &mut Vec<u32>, other: &[u32]) {
    if into.len() < other.len() {
        into.resize(other.len(), 0);
    }
    for (a, &b) in into.iter_mut().zip(other) {
        *a = (*a).max(b);
    }
}

impl DporScheduler {
    /// Under the relaxed memory model, atomic writes to different addresses are dependent
    /// (they meet in the `SeqCst` clock).
    pub fn relaxed_memory(mut self, on: bool) -> Self {
        self.relaxed_memory = on;
        self
    }

    /// Without a bound, reverse races with source sets (Source-DPOR, the default) or, if
    /// `on` is false, persistent sets, which can miss a class (see the module doc). Under a
    /// bound persistent sets run either way.
    pub fn source_sets(mut self, on: bool) -> Self {
        self.source_sets = on;
        self
    }

    pub fn new(bound: usize) -> Self {
        DporScheduler {
            relaxed_memory: false,
            source_sets: true,
            bound,
            path: Vec::new(),
            pos: 0,
            spent: 0,
            started: false,
            exhausted: false,
            pruned: false,
            spurious: SpuriousLimit::default(),
            dirty: 0,
            steps: Vec::new(),
            threads: Vec::new(),
            last_on: HashMap::new(),
            last_unknown: None,
            index: StepIndex::default(),
            last_sched: None,
            timed: false,
            sleep: Vec::new(),
            ending: None,
            last: None,
            run_length: 0,
            replay_check: ReplayCheck::default(),
        }
    }

    fn thread(&mut self, t: u32) -> &mut ThreadInfo {
        let t = t as usize;
        if self.threads.len() <= t {
            self.threads.resize(t + 1, ThreadInfo::default());
        }
        &mut self.threads[t]
    }

    fn start(&mut self) {
        self.pos = 0;
        self.spent = 0;
        self.steps.clear();
        self.threads.clear();
        self.last_on.clear();
        self.last_unknown = None;
        self.index.clear();
        self.spurious.start();
        self.last_sched = None;
        self.timed = false;
        self.sleep.clear();
        self.ending = None;
        self.last = None;
        self.run_length = 0;
    }

    /// Sets up the next execution's prefix: false when nothing is left to explore.
    fn next_prefix(&mut self) -> bool {
        self.main_ended();
        self.start();
        if !self.started {
            self.started = true;
            return true;
        }
        if self.exhausted {
            return false;
        }
        let now = self.dirty;
        while let Some(node) = self.path.last_mut() {
            let next = match &mut node.kind {
                Kind::Sched {
                    backtrack,
                    done,
                    slept,
                    dirty,
                    ..
                } => {
                    let next = backtrack.pop();
                    if let Some(o) = next {
                        // The option just finished sleeps in the later ones' subtrees if
                        // nothing was left out of its own.
                        if *dirty == now {
                            slept.push(node.choice);
                        }
                        *dirty = now;
                        done.push(o);
                    }
                    next
                }
                Kind::Data { untried, .. } => untried.pop(),
            };
            if let Some(o) = next {
                node.choice = o;
                return true;
            }
            self.path.pop();
        }
        self.exhausted = true;
        false
    }

    fn ran(&mut self, t: u32) {
        if self.last == Some(t) {
            self.run_length += 1;
        } else {
            self.last = Some(t);
            self.run_length = 1;
        }
    }

    /// What a step of `Condvar::wait` that `t` just took touched: the condvar (whose wait
    /// queue it joined or left) and the mutexes it released and re-took. Before it runs, a
    /// wait's footprint is `UNKNOWN` (which mutex it releases is not named at its scheduling
    /// point); once it ran, the runtime has said. A wait with a timeout touches time instead.
    fn wait_footprint(&mut self, t: u32) -> Option<Vec<Access>> {
        let info = self.thread(t);
        if info.op != "Condvar::wait" {
            return None;
        }
        let locks = info.released.iter().chain(&info.acquired);
        Some(
            std::iter::once(info.resource)
                .chain(locks.copied())
                .map(write)
                .collect(),
        )
    }

    /// An option was left out for the bound.
    fn prune(&mut self) {
        self.pruned = true;
        self.dirty += 1;
    }

    /// The execution depends on the virtual clock from here on: no reordering of
    /// independent steps is known to be equivalent any more.
    fn touch_time(&mut self) {
        self.timed = true;
        self.dirty += 1;
        self.sleep.clear();
    }

    /// Adds `option` to the backtrack set of scheduling point `n`, within the bound.
    fn add(&mut self, n: usize, option: u32) {
        let bound = self.bound;
        let node = &mut self.path[n];
        let over = node.spent + node.cost(option) > bound;
        let Kind::Sched {
            backtrack,
            done,
            asleep,
            ..
        } = &mut node.kind
        else {
            return;
        };
        if done.contains(&option) || backtrack.contains(&option) || asleep.contains(&option) {
            return;
        }
        if over {
            self.prune();
        } else {
            backtrack.push(option);
        }
    }

    fn add_all(&mut self, n: usize) {
        if let Kind::Sched { options, .. } = &self.path[n].kind {
            for o in options.clone() {
                self.add(n, o);
            }
        }
    }

    /// Thread `p`, about to perform an operation with `footprint`, races with the latest
    /// dependent step of another thread that does not happen before it: `p` should also be
    /// tried before that step.
    fn race(&mut self, p: u32, footprint: &Footprint) {
        let info = self.thread(p);
        let (clock, op) = (info.clock.clone(), info.op);
        let racing = Racing {
            p,
            op,
            clock: &clock,
            footprint,
        };
        self.race_before(racing, self.steps.len());
    }

    /// `race` for an operation of `p` with happens-before `clock` (its thread's earlier
    /// steps), against the steps before `limit`: source sets if asked for and without a
    /// bound, persistent sets otherwise.
    fn race_before(&mut self, racing: Racing, limit: usize) {
        if self.source_sets && self.bound == usize::MAX {
            self.source_races(racing, limit);
        } else {
            self.persistent_race(racing, limit);
        }
    }

    /// Source-DPOR's race check (Abdulla et al., POPL 2014, Algorithm 1): every step `e` of
    /// another thread that races with `p`'s operation (dependent with it, and not happening
    /// before it through a later step or one of `p`'s own) is reversed at the choice point
    /// `n` that started `e`'s run, by adding one initial of `v` (the steps after `n` that do
    /// not come after the run's first step, then `p`'s operation) to `n`'s backtrack set,
    /// unless one is there, done or asleep already.
    fn source_races(&mut self, racing: Racing, limit: usize) {
        let Racing {
            p,
            op,
            clock,
            footprint,
        } = racing;
        let mut covered = clock.to_vec();
        let mut races = Vec::new();
        if self.all_covered(p, &covered, limit) {
            return;
        }
        for (i, s) in self.steps[..limit].iter().enumerate().rev() {
            if s.thread == p || !dependent(&s.footprint, footprint) || enables(s, op, footprint) {
                continue;
            }
            if covered.get(s.thread as usize).copied().unwrap_or(0) < s.local {
                races.push(i);
            }
            join(&mut covered, &s.clock);
            if self.all_covered(p, &covered, limit) {
                break;
            }
        }
        for i in races {
            if let Some(n) = self.steps[i].start {
                self.reverse(n, racing, limit);
            }
        }
    }

    /// Whether every step of every thread but `p` comes before a step `covered` (a vector
    /// clock) says happened before: then no earlier step can race, and the scan stops. A
    /// single-threaded stretch of an execution, or a race found near the end, no longer
    /// costs a scan of the whole trace (a 45,000-step single-threaded test took minutes).
    /// Known only for the whole trace (`limit` at its end).
    fn all_covered(&self, p: u32, covered: &[u32], limit: usize) -> bool {
        limit == self.steps.len()
            && self.threads.iter().enumerate().all(|(t, info)| {
                t == p as usize || info.steps <= covered.get(t).copied().unwrap_or(0)
            })
    }

    /// Reverses a race of `p`'s operation (footprint `footprint`, after `p`'s earlier steps
    /// of happens-before `clock`, in the trace cut at `limit`) with the run choice point `n`
    /// started: adds one thread that can start `v` at `n`, or, where `v` is not known to be
    /// runnable from `n`, every option (the persistent-set step).
    fn reverse(&mut self, n: usize, racing: Racing, limit: usize) {
        let Racing {
            p,
            clock,
            footprint,
            ..
        } = racing;
        let Kind::Sched {
            options,
            backtrack,
            done,
            asleep,
            at,
            ..
        } = &self.path[n].kind
        else {
            return;
        };
        let at = *at;
        let q = self.path[n].choice;
        let first = self.steps.get(at).filter(|s| s.thread == q && at < limit);
        let after =
            |c: &[u32], first: &Step| c.get(q as usize).copied().unwrap_or(0) >= first.local;
        let Some(first) = first.filter(|f| !after(clock, f)) else {
            // The run did not begin with `q`'s step, or `p`'s own earlier steps come after
            // it: no `v` to run from `n`.
            self.add_all(n);
            return;
        };
        // v: the steps after `n` that do not come after `first`, then `p`'s operation.
        let v: Vec<&Step> = self.steps[at..limit]
            .iter()
            .filter(|s| !after(&s.clock, first))
            .collect();
        let before =
            |c: &[u32], u: &Step| c.get(u.thread as usize).copied().unwrap_or(0) >= u.local;
        let mut initials = Vec::new();
        let mut seen = Vec::new();
        for (k, w) in v.iter().enumerate() {
            if seen.contains(&w.thread) {
                continue;
            }
            seen.push(w.thread);
            if v[..k].iter().all(|u| !before(&w.clock, u)) {
                initials.push(w.thread);
            }
        }
        if !seen.contains(&p) {
            // `p`'s operation comes after its own earlier steps and the steps of `v` it is
            // dependent with (and what they come after, all in `v`).
            let mut pred = clock.to_vec();
            for w in v.iter().filter(|w| dependent(&w.footprint, footprint)) {
                join(&mut pred, &w.clock);
            }
            if v.iter().all(|u| !before(&pred, u)) {
                initials.push(p);
            }
        }
        if initials
            .iter()
            .any(|t| backtrack.contains(t) || done.contains(t) || asleep.contains(t))
        {
            return;
        }
        let pick = if initials.contains(&p) && options.contains(&p) {
            Some(p)
        } else {
            initials
                .iter()
                .copied()
                .filter(|t| options.contains(t))
                .min()
        };
        match pick {
            Some(t) => self.add(n, t),
            None => self.add_all(n),
        }
    }

    /// Flanagan and Godefroid's race check, for a bounded search: the latest dependent step
    /// of another thread that does not happen before `p`'s operation; `p` is added to the
    /// backtrack set of the choice point that started it (all its options if `p` is not one
    /// of them), and every option at the last context switch before it.
    fn persistent_race(&mut self, racing: Racing, limit: usize) {
        let Racing {
            p,
            op,
            clock,
            footprint,
        } = racing;
        if self.all_covered(p, clock, limit) {
            return;
        }
        // Per thread, its latest dependent step: if that one happens before, so do the others.
        // (An iterator per thread, not a list collected at every step.)
        let objects = || (footprint.as_ref()).map(|a| a.iter().map(|a| (a.object, a.write)));
        let (steps, threads) = (&self.steps, &self.threads);
        // A thread all of whose steps happen before the operation has none that races: one
        // comparison, not an index lookup (threads that ended long ago, on a shared object).
        let seen_all = |q: u32| {
            let taken = threads.get(q as usize).map_or(0, |t| t.steps);
            clock.get(q as usize).copied().unwrap_or(0) >= taken
        };
        let found = (self.index.threads_for(objects()))
            .filter(|&q| q != p && !seen_all(q))
            .filter_map(|q| {
                let i = self.index.latest_dependent(q, objects(), limit, |i| {
                    !enables(&steps[i], op, footprint)
                })?;
                (clock.get(q as usize).copied().unwrap_or(0) < steps[i].local).then_some(i)
            })
            .max();
        #[cfg(test)]
        assert_eq!(found, self.scan_for_race(racing, limit));
        let Some(n) = found.and_then(|i| self.steps[i].start) else {
            return;
        };
        let Kind::Sched { options, .. } = &self.path[n].kind else {
            return;
        };
        if options.contains(&p) {
            self.add(n, p);
        } else {
            self.add_all(n);
        }
        // The bound makes reaching a state depend on where the context switches are: try
        // every option at the last one before this point, too.
        if self.bound != usize::MAX {
            let switch = (0..n).rev().find(|&k| match &self.path[k].kind {
                Kind::Sched { current, .. } => *current != Some(self.path[k].choice),
                Kind::Data { .. } => false,
            });
            if let Some(k) = switch {
                self.add_all(k);
            }
        }
    }

    /// `persistent_race`'s step found by scanning the execution back from `limit`, as it
    /// was before the index: the unit tests check the two agree.
    #[cfg(test)]
    fn scan_for_race(&self, racing: Racing, limit: usize) -> Option<usize> {
        let Racing {
            p,
            op,
            clock,
            footprint,
        } = racing;
        self.steps[..limit].iter().rposition(|s| {
            s.thread != p
                && dependent(&s.footprint, footprint)
                && !enables(s, op, footprint)
                && clock.get(s.thread as usize).copied().unwrap_or(0) < s.local
        })
    }

    /// Thread `t` finished a step (reached its next scheduling point, blocked or ended).
    fn step(&mut self, t: u32, footprint: Footprint, ended: bool) {
        if self.exhausted {
            return;
        }
        let start = self.last_sched.filter(|&(_, c)| c == t).map(|(n, _)| n);
        let footprint = self.wait_footprint(t).map_or(footprint, Some);
        self.race(t, &footprint);
        // The sleepers this step is dependent with wake up.
        self.sleep
            .retain(|(s, f)| *s != t && !dependent(f, &footprint));
        let mut clock = self.thread(t).clock.clone();
        match &footprint {
            None => {
                for info in &self.threads {
                    join(&mut clock, &info.clock);
                }
            }
            Some(accesses) => {
                for a in accesses {
                    if let Some(last) = self.last_on.get(&a.object) {
                        if let Some(j) = last.write {
                            join(&mut clock, &self.steps[j].clock);
                        }
                        if a.write {
                            for &j in &last.reads {
                                join(&mut clock, &self.steps[j].clock);
                            }
                        }
                    }
                }
                if let Some(j) = self.last_unknown {
                    join(&mut clock, &self.steps[j].clock);
                }
            }
        }
        let info = self.thread(t);
        info.steps += 1;
        let local = info.steps;
        if clock.len() <= t as usize {
            clock.resize(t as usize + 1, 0);
        }
        clock[t as usize] = local;
        info.clock = clock.clone();
        let i = self.steps.len();
        match &footprint {
            None => self.last_unknown = Some(i),
            Some(accesses) => {
                for a in accesses {
                    let last = self.last_on.entry(a.object).or_default();
                    if a.write {
                        last.write = Some(i);
                        last.reads.clear();
                    } else {
                        last.reads.push(i);
                    }
                }
            }
        }
        let info = self.thread(t);
        info.acquired.clear();
        let released = std::mem::take(&mut info.released);
        let objects = footprint
            .as_ref()
            .map(|a| a.iter().map(|a| (a.object, a.write)));
        self.index.add(i, t, objects);
        self.steps.push(Step {
            thread: t,
            footprint,
            released,
            ended,
            start,
            local,
            clock,
        });
    }

    /// The end of the test's main thread ends the execution (detached threads are cut off):
    /// it is dependent with every step, its last.
    fn main_ended(&mut self) {
        if !self.started || self.exhausted {
            return;
        }
        let Some(i) = self.steps.iter().rposition(|s| s.thread == 0) else {
            return;
        };
        if !self.steps[i].ended {
            return;
        }
        let clock = self.steps[..i]
            .iter()
            .rposition(|s| s.thread == 0)
            .map(|j| self.steps[j].clock.clone())
            .unwrap_or_default();
        let racing = Racing {
            p: 0,
            op: "",
            clock: &clock,
            footprint: &UNKNOWN,
        };
        self.race_before(racing, i);
    }

    /// A choice point other than the pick of a runnable thread: every option is explored,
    /// within the bound, and without one within `UNBOUNDED_SPURIOUS`.
    fn data(&mut self, options: &[u32], default: u32, cost: DataCost) -> u32 {
        let pos = self.pos;
        self.pos += 1;
        if pos < self.path.len() {
            let node = &self.path[pos];
            self.spent += node.cost(node.choice);
            self.spurious
                .replayed(cost == DataCost::Spurious, node.choice != default);
            return node.choice;
        }
        let mut untried = Vec::new();
        let costly = usize::from(cost != DataCost::Free);
        for &o in options.iter().rev() {
            if o == default {
                continue;
            }
            if self.spent + costly > self.bound {
                self.prune();
            } else if !self.spurious.allows(cost == DataCost::Spurious, self.bound) {
                // Not `dirty`: reordering independent steps keeps an execution's number
                // of spurious events, so an equivalent one is cut as well.
            } else {
                untried.push(o);
            }
        }
        self.path.push(Node {
            choice: default,
            kind: Kind::Data { untried, cost },
            spent: self.spent,
        });
        default
    }

    /// Thread `d`, explored from a choice point before the one taken, goes to sleep with the
    /// footprint its pending operation may have (it could block or end there).
    fn fall_asleep(&mut self, d: u32) {
        if self.timed || self.sleep.iter().any(|(s, _)| *s == d) {
            return;
        }
        let f = with(blocking(&self.thread(d).pending), write(exit_of(d)));
        self.sleep.push((d, f));
    }
}

impl Scheduler for DporScheduler {
    fn new_execution(&mut self, _seed: u64) -> bool {
        let made = self.pos;
        let more = self.next_prefix();
        self.replay_check.next(made, more, self.path.len())
    }

    fn diverged(&self) -> bool {
        self.replay_check.diverged()
    }

    fn pending(&mut self, thread: u32, resource: u64) {
        self.pending_op(thread, "", resource);
    }

    fn pending_op(&mut self, thread: u32, op: &'static str, resource: u64) {
        let mut previous = self.thread(thread).pending.take();
        let spawning = op == "thread::spawn";
        if spawning {
            // The thread was created (its id taken) in the step that ends here.
            previous = with(previous, write(SPAWNS));
        }
        self.step(thread, previous, false);
        if spawning {
            // The thread named here comes after that step. (Not after the thread that reached
            // the last scheduling point: the spawner may have been picked there by another.)
            let child = (0..self.threads.len() as u32).find(|&c| exit_of(c) == resource);
            if let Some(child) = child {
                let clock = self.thread(thread).clock.clone();
                join(&mut self.thread(child).clock, &clock);
            }
        }
        if is_timed(op) {
            self.touch_time();
        }
        let mut pending = footprint(op, resource);
        if self.relaxed_memory && resource >> 63 == 1 && op.starts_with("Atomic") {
            if let Some(accesses) = pending.as_mut().filter(|a| a.iter().any(|a| a.write)) {
                accesses.push(write(SEQCST_CLOCK));
            }
        }
        let info = self.thread(thread);
        info.pending = pending;
        info.op = op;
        info.resource = resource;
    }

    fn runnable_changed(&mut self, thread: u32, runnable: bool) {
        let info = self.thread(thread);
        if runnable {
            if !info.seen {
                // A new thread: its first step is its own code up to its first scheduling
                // point (or its end, which `runnable_changed(false)` reports). Its spawner's
                // `thread::spawn` scheduling point names it next (`pending_op`).
                info.seen = true;
                info.pending = Some(Vec::new());
            }
            // A woken thread resumes its operation: the same footprint.
            return;
        }
        // Its step ends here: it blocked inside its operation, or ended (`ended` said so just
        // before), which touches its exit.
        let (pending, op) = (info.pending.clone(), info.op);
        let ended = self.ending.take() == Some(thread);
        let footprint = if ended {
            with(pending, write(exit_of(thread)))
        } else if BLOCK_IS_NOT_AN_EVENT.contains(&op) {
            return;
        } else {
            blocking(&pending)
        };
        self.step(thread, footprint, ended);
    }

    fn ended(&mut self, thread: u32) {
        self.ending = Some(thread);
    }

    fn released(&mut self, thread: u32, resource: u64) {
        self.thread(thread).released.push(resource);
    }

    fn acquired(&mut self, thread: u32, resource: u64) {
        self.thread(thread).acquired.push(resource);
    }

    fn by_seed(&self) -> bool {
        false
    }

    fn save_position(&mut self) -> Option<Vec<u8>> {
        self.main_ended();
        position::save(self)
    }

    fn resume(&mut self, at: &[u8]) -> Result<(), String> {
        *self = position::read(at)?;
        Ok(())
    }

    fn exhaustive(&self) -> Option<Covered> {
        (self.exhausted && !self.replay_check.diverged()).then_some(Covered {
            bound: self.bound,
            pruned: self.pruned,
            spurious_limited: self.spurious.limited(),
        })
    }

    fn next_runnable(
        &mut self,
        runnable: &[u32],
        current: Option<u32>,
        yielding: bool,
    ) -> Option<u32> {
        let pos = self.pos;
        self.pos += 1;
        if let Some(node) = self.path.get(pos) {
            let c = node.choice;
            self.spent += node.cost(c);
            if let Kind::Sched { slept, .. } = &node.kind {
                for d in slept.clone() {
                    self.fall_asleep(d);
                }
            }
            self.last_sched = Some((pos, c));
            self.ran(c);
            return runnable.contains(&c).then_some(c);
        }
        let overstayed = self.last == current && self.run_length >= FAIR_RUN;
        let FairChoice {
            stay,
            options,
            default,
        } = fair_choice(runnable, current, yielding || overstayed);
        let asleep: Vec<u32> = self.sleep.iter().map(|&(s, _)| s).collect();
        // The fair pick, unless it sleeps: then the first awake option within the bound (if
        // none, every way on is equivalent to one explored: the pick stands).
        let within = |o: u32| self.spent + usize::from(stay.is_some_and(|s| s != o)) <= self.bound;
        let default = if asleep.contains(&default) {
            options
                .iter()
                .copied()
                .find(|&o| !asleep.contains(&o) && within(o))
                .unwrap_or(default)
        } else {
            default
        };
        let node = Node {
            choice: default,
            kind: Kind::Sched {
                current,
                stay,
                options: options.clone(),
                backtrack: Vec::new(),
                done: vec![default],
                asleep,
                slept: Vec::new(),
                dirty: self.dirty,
                at: self.steps.len(),
            },
            spent: self.spent,
        };
        self.spent += node.cost(default);
        self.path.push(node);
        if self.timed {
            self.add_all(pos);
        } else {
            // The threads not picked race with what ran before, too.
            for &p in &options {
                if p != default {
                    let f = self.thread(p).pending.clone();
                    self.race(p, &f);
                }
            }
        }
        self.last_sched = Some((pos, default));
        self.ran(default);
        Some(default)
    }

    fn next_thread(
        &mut self,
        runnable: &[u32],
        current: Option<u32>,
        yielding: bool,
    ) -> Option<u32> {
        // Which waiter a notify wakes, which timer fires: explored in full.
        let stay = current.filter(|_| !yielding);
        let default = stay.unwrap_or(runnable[0]);
        let cost = if stay.is_some() {
            DataCost::Preemption
        } else {
            DataCost::Free
        };
        let c = self.data(runnable, default, cost);
        runnable.contains(&c).then_some(c)
    }

    /// Which store a relaxed load reads: every one is explored, an older one costing a
    /// preemption as under `dfs`.
    /// One input: the schedules are what this search enumerates.
    fn next_word(&mut self) -> Option<u32> {
        Some(0)
    }

    fn next_read(&mut self, stores: u32) -> Option<u32> {
        let options: Vec<u32> = (0..stores).collect();
        Some(self.data(&options, 0, DataCost::Preemption))
    }

    fn next_bool(&mut self, kind: ChoiceKind) -> Option<bool> {
        let cost = match kind {
            ChoiceKind::SpuriousWakeup | ChoiceKind::WeakCasFailure => DataCost::Spurious,
            ChoiceKind::TimerFirst => {
                self.touch_time();
                DataCost::Preemption
            }
            ChoiceKind::WriterPreference => DataCost::Free,
        };
        match self.data(&[0, 1], 0, cost) {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two threads of `steps` operations each, thread `t`'s on object `objects[t]`, driven
    /// as the execution drives a scheduler; returns the orders explored.
    fn explore(bound: usize, steps: u32, objects: [u64; 2]) -> Vec<Vec<u32>> {
        explore_op(DporScheduler::new(bound), steps, objects, "Mutex::lock")
    }

    /// `explore`, each operation being `op`, under `dpor`.
    fn explore_op(
        mut dpor: DporScheduler,
        steps: u32,
        objects: [u64; 2],
        op: &'static str,
    ) -> Vec<Vec<u32>> {
        let mut seen = Vec::new();
        while dpor.new_execution(0) {
            assert!(seen.len() < 10_000, "did not terminate");
            let mut left = [steps, steps];
            let mut runnable = vec![0, 1];
            for t in 0..2 {
                dpor.runnable_changed(t, true);
            }
            let mut current = None;
            let mut order = Vec::new();
            while !runnable.is_empty() {
                let t = if runnable.len() == 1 {
                    runnable[0]
                } else {
                    dpor.next_runnable(&runnable, current, false).unwrap()
                };
                // `t` performs its pending operation and runs to its next scheduling point.
                order.push(t);
                left[t as usize] -= 1;
                if left[t as usize] == 0 {
                    runnable.retain(|&r| r != t);
                    dpor.ended(t);
                    dpor.runnable_changed(t, false);
                    current = None;
                } else {
                    dpor.pending_op(t, op, objects[t as usize]);
                    current = Some(t);
                }
            }
            assert!(!seen.contains(&order), "{order:?} ran twice");
            seen.push(order);
        }
        seen
    }

    #[test]
    fn under_relaxed_memory_atomic_writes_to_different_addresses_are_dependent() {
        let (x, y) = (1 << 63 | 8, 1 << 63 | 16);
        let sc = explore_op(
            DporScheduler::new(usize::MAX),
            4,
            [x, y],
            "AtomicUsize::store",
        );
        assert_eq!(sc.len(), 1, "{sc:?}");
        // They meet in the SeqCst clock: as many orders as on one object (C(6, 3) = 20).
        let relaxed = DporScheduler::new(usize::MAX).relaxed_memory(true);
        let relaxed = explore_op(relaxed, 4, [x, y], "AtomicUsize::store");
        assert_eq!(relaxed.len(), 20, "{relaxed:?}");
        // Loads still commute.
        let relaxed = DporScheduler::new(usize::MAX).relaxed_memory(true);
        let loads = explore_op(relaxed, 4, [x, y], "AtomicUsize::load");
        assert_eq!(loads.len(), 1, "{loads:?}");
    }

    #[test]
    fn independent_threads_are_not_interleaved() {
        // Different objects: nothing to reorder (each thread's end touches only its own
        // exit), one execution where dfs runs C(8, 4) = 70 (and dpor ran 5 before sleep
        // sets, 2 while every thread end touched one object).
        let seen = explore(usize::MAX, 4, [8, 9]);
        assert_eq!(seen.len(), 1, "{seen:?}");
        // The same object: every order of the dependent operations (each thread's first step
        // runs its own code only; the other three act on the object: C(6, 3) = 20 orders).
        let seen = explore(usize::MAX, 4, [8, 8]);
        let orders: std::collections::BTreeSet<Vec<u32>> = seen
            .iter()
            .map(|order| {
                let mut first = [true, true];
                order
                    .iter()
                    .copied()
                    .filter(|&t| !std::mem::replace(&mut first[t as usize], false))
                    .collect()
            })
            .collect();
        assert_eq!(orders.len(), 20);
        // One execution per order (dfs: 70; dpor without sleep sets ran more than 20).
        assert_eq!(seen.len(), 20);
    }

    #[test]
    fn persistent_sets_serve_every_bound() {
        // Without a bound they may be asked for (to compare); on these programs they reach
        // the same orders as source sets.
        let persistent = || DporScheduler::new(usize::MAX).source_sets(false);
        let seen = explore_op(persistent(), 4, [8, 9], "Mutex::lock");
        assert_eq!(seen.len(), 1, "{seen:?}");
        let seen = explore_op(persistent(), 4, [8, 8], "Mutex::lock");
        assert_eq!(seen.len(), 20, "{seen:?}");
        // Under a bound they are what runs, whatever the flag says.
        let bounded = explore_op(
            DporScheduler::new(1).source_sets(false),
            3,
            [8, 8],
            "Mutex::lock",
        );
        assert_eq!(bounded, explore(1, 3, [8, 8]));
    }

    #[test]
    fn the_bound_prunes_and_is_reported() {
        let mut dpor = DporScheduler::new(0);
        let seen = explore(0, 3, [8, 8]);
        // No thread runs yet at the first choice: starting either is free.
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert!(dpor.new_execution(0));
        assert!(dpor.exhaustive().is_none());
    }

    #[test]
    fn footprints_are_one_object_only_for_known_operations() {
        assert_eq!(footprint("Mutex::lock", 5), Some(vec![write(5)]));
        let load = footprint("AtomicUsize::load", 1 << 63 | 4);
        let read = Access {
            object: 1 << 63 | 4,
            write: false,
        };
        assert_eq!(load, Some(vec![read]));
        assert_eq!(
            footprint("AtomicUsize::fetch_add", 1 << 63 | 4),
            Some(vec![write(1 << 63 | 4)])
        );
        assert_eq!(footprint("JoinHandle::join", 7), Some(vec![write(7)]));
        // Two loads of one address, two read acquisitions of one rwlock, commute; a load
        // and a store do not, nor a blocked read and anything on its lock.
        assert!(!dependent(&load, &load));
        let rd = footprint("RwLock::read", 5);
        assert!(!dependent(&rd, &footprint("RwLock::try_read", 5)));
        assert!(dependent(&rd, &footprint("RwLock::write", 5)));
        assert!(dependent(&rd, &footprint("RwLock::read_unlock", 5)));
        assert!(dependent(&blocking(&rd), &rd));
        assert!(!dependent(&blocking(&load), &load));
        assert!(dependent(
            &load,
            &footprint("AtomicUsize::store", 1 << 63 | 4)
        ));
        assert_eq!(
            footprint("Arc::strong_count", 1 << 63 | 4),
            Some(vec![write(1 << 63 | 4)])
        );
        assert_eq!(footprint("Condvar::wait", 5), UNKNOWN);
        assert_eq!(footprint("thread::yield_now", 0), Some(vec![]));
        // A spawn's own step is the one before its scheduling point (`pending_op`).
        assert_eq!(footprint("thread::spawn", 7), Some(vec![]));
        assert_eq!(footprint("Condvar::wait_timeout", 5), UNKNOWN);
        // Park and unpark act on the parking thread's token.
        assert_eq!(footprint("thread::park", 5), Some(vec![write(5)]));
        assert_eq!(footprint("Thread::unpark", 5), Some(vec![write(5)]));
        assert_eq!(footprint("thread::park_timeout", 5), UNKNOWN);
        assert!(is_timed("Receiver::recv_timeout") && is_timed("Instant::now"));
        assert!(dependent(&UNKNOWN, &Some(vec![])));
        assert!(!dependent(&Some(vec![write(1)]), &Some(vec![write(2)])));
    }
}
