//! Schedule minimization: after a failure, looks for a schedule that fails the same way
//! with fewer preemptions, then fewer steps, within a time budget.
//!
//! A failing schedule found by a randomised strategy switches threads at hundreds of places
//! where nothing forced it to; the bug usually needs one or two of those switches. Each
//! candidate is a *plan*, a list of thread picks and yes/no answers derived from the best
//! schedule so far, run by `GuidedScheduler`: it follows the plan wherever the plan's thread
//! can run and otherwise lets the running thread go on (no preemption). A candidate is kept
//! when its execution fails the same way (same kind, and the same source location, or the
//! same message when there is none) and costs less: fewer preemptions, then fewer spurious
//! yes/no answers, then fewer steps.
//!
//! Two phases (ARCHITECTURE.md decision 29):
//! - greedy: at each preemption of the best schedule (thread `c` could go on, `t` ran), cut
//!   the plan there (no preemption from there on); move `c`'s next stretch before the switch;
//!   let `c` take up to `MORE_STEPS` more steps, with or without `t`'s stretch; drop `t`'s
//!   stretch. Then, for steps: every `yes` answer (a spurious wakeup, a weak CAS failure)
//!   turned to `no`, and the plan's tail cut. The first cheaper failure replaces the best,
//!   until none is cheaper (a local minimum);
//! - breadth first: canonical schedules (`DeviationScheduler`) with 0, 1, 2, .. deviations
//!   up to the best count, which finds two switches that fail only together; then the greedy
//!   phase again, for steps.
//!
//! Deterministic: the same failure minimizes to the same schedule.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::executor::Outcome;
use crate::report::explain::Explanation;
use crate::report::failure::{Minimized, MINIMIZATION_TRIES as MAX_TRIES};
use crate::scheduler::{ChoiceKind, RunLength, Scheduler, FAIR_RUN};

/// A step of a plan, or of a schedule as run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// A thread pick: `preempt` when the running thread could have gone on.
    Thread { t: u32, preempt: bool },
    /// A yes/no answer.
    Bool(bool),
    /// Which store a relaxed load read (0: the newest; an older one costs like a `yes`).
    Read(u32),
    /// A word of test data (`next_word`): kept as the failure drew it, never minimized.
    Word(u32),
}

impl Entry {
    /// An answer other than a thread pick: skipped where the plan expects a thread.
    fn is_answer(&self) -> bool {
        matches!(self, Entry::Bool(_) | Entry::Read(_) | Entry::Word(_))
    }
}

/// The data words of `entries`, in order: every plan run from them draws the same input.
fn words(entries: &[Entry]) -> Vec<u32> {
    entries
        .iter()
        .filter_map(|e| match *e {
            Entry::Word(w) => Some(w),
            _ => None,
        })
        .collect()
}

/// What a guided run did, shared with the minimizer (the scheduler is boxed away inside
/// the executor while it runs).
#[derive(Default)]
struct Log {
    entries: Vec<Entry>,
    preemptions: usize,
    yeses: usize,
    /// Switches the fairness rule forced (`RunLength::overstayed`), not counted as
    /// preemptions.
    forced_yields: usize,
}

/// How a plan is read: `Exact` replays a recorded schedule's raw values (the first run,
/// which learns which value is a thread and which a yes/no answer).
enum Plan {
    Exact(Vec<u32>),
    Guide(Vec<Entry>),
}

pub(crate) struct GuidedScheduler {
    plan: Plan,
    /// The failure's data words for a `Guide` plan (its input, whatever the plan keeps), and
    /// how many this execution drew.
    words: Vec<u32>,
    words_drawn: usize,
    next: usize,
    ran: bool,
    run: RunLength,
    log: Rc<RefCell<Log>>,
}

impl GuidedScheduler {
    fn new(plan: Plan, words: Vec<u32>, log: Rc<RefCell<Log>>) -> Self {
        GuidedScheduler {
            plan,
            words,
            words_drawn: 0,
            next: 0,
            ran: false,
            run: RunLength::default(),
            log,
        }
    }

    /// Without a plan step that fits: the running thread goes on if it can; else the first
    /// runnable thread the rest of the plan names; else the one after the running thread
    /// (round robin, so yielding threads take turns).
    fn fallback(&self, runnable: &[u32], current: Option<u32>, yielding: bool) -> u32 {
        if let (Some(c), false) = (current, yielding) {
            return c;
        }
        if let Plan::Guide(plan) = &self.plan {
            for e in plan.iter().skip(self.next).take(256) {
                if let Entry::Thread { t, .. } = *e {
                    if runnable.contains(&t) && Some(t) != current {
                        return t;
                    }
                }
            }
        }
        match current {
            Some(c) => runnable
                .iter()
                .copied()
                .find(|&t| t > c)
                .unwrap_or(runnable[0]),
            None => runnable[0],
        }
    }
}

impl Scheduler for GuidedScheduler {
    fn new_execution(&mut self, _seed: u64) -> bool {
        let first = !self.ran;
        self.ran = true;
        self.next = 0;
        self.words_drawn = 0;
        self.run.reset();
        *self.log.borrow_mut() = Log::default();
        first
    }

    fn next_word(&mut self) -> Option<u32> {
        let w = match &self.plan {
            Plan::Exact(choices) => {
                let w = choices.get(self.next).copied()?;
                self.next += 1;
                w
            }
            // Wherever the plan's run draws it, the failure's input.
            Plan::Guide(_) => self.words.get(self.words_drawn).copied().unwrap_or(0),
        };
        self.words_drawn += 1;
        self.log.borrow_mut().entries.push(Entry::Word(w));
        Some(w)
    }

    fn next_thread(
        &mut self,
        runnable: &[u32],
        current: Option<u32>,
        yielding: bool,
    ) -> Option<u32> {
        // A thread that ran long enough gives way as if it yielded (strategies' fairness).
        let yielding = yielding || self.run.overstayed(current);
        let t = match &self.plan {
            Plan::Exact(choices) => {
                let t = choices.get(self.next).copied()?;
                self.next += 1;
                runnable.contains(&t).then_some(())?;
                t
            }
            Plan::Guide(plan) => {
                // Answers the run did not ask for here are dropped.
                while plan.get(self.next).is_some_and(Entry::is_answer) {
                    self.next += 1;
                }
                match plan.get(self.next) {
                    Some(&Entry::Thread { t, .. }) if runnable.contains(&t) => {
                        self.next += 1;
                        t
                    }
                    _ => self.fallback(runnable, current, yielding),
                }
            }
        };
        let preempt = current.is_some_and(|c| c != t) && !yielding;
        self.run.ran(t);
        let mut log = self.log.borrow_mut();
        log.entries.push(Entry::Thread { t, preempt });
        log.preemptions += preempt as usize;
        Some(t)
    }

    fn next_read(&mut self, stores: u32) -> Option<u32> {
        let k = match &self.plan {
            Plan::Exact(choices) => {
                let k = choices.get(self.next).copied()?;
                self.next += 1;
                (k < stores).then_some(k)?
            }
            Plan::Guide(plan) => match plan.get(self.next) {
                Some(&Entry::Read(k)) => {
                    self.next += 1;
                    k.min(stores - 1)
                }
                // Not asked for by the plan here: the newest store.
                _ => 0,
            },
        };
        let mut log = self.log.borrow_mut();
        log.entries.push(Entry::Read(k));
        log.yeses += (k > 0) as usize;
        Some(k)
    }

    fn next_bool(&mut self, _kind: ChoiceKind) -> Option<bool> {
        let b = match &self.plan {
            Plan::Exact(choices) => {
                let b = choices.get(self.next).copied()?;
                self.next += 1;
                match b {
                    0 => false,
                    1 => true,
                    _ => return None,
                }
            }
            Plan::Guide(plan) => match plan.get(self.next) {
                Some(&Entry::Bool(b)) => {
                    self.next += 1;
                    b
                }
                // Not asked for by the plan here: the usual answer.
                _ => false,
            },
        };
        let mut log = self.log.borrow_mut();
        log.entries.push(Entry::Bool(b));
        log.yeses += b as usize;
        Some(b)
    }
}

/// A choice point of a canonical run: the options, and the one taken by default.
type Point = (Vec<u32>, u32);

/// Runs one execution under a scheduler that logs to the `Log`; a failure like the target's
/// comes back as a candidate.
type Attempt<'a> = dyn FnMut(Box<dyn Scheduler>, &Rc<RefCell<Log>>) -> Option<Candidate> + 'a;

/// The canonical schedules with a few deviations, for the breadth-first phase: at every
/// choice point the running thread goes on (or, when it cannot or yields, the next thread
/// after it in index order), except at the listed choice points, which pick the listed
/// thread. Yes/no answers are all `no`.
pub(crate) struct DeviationScheduler {
    deviations: Vec<(usize, u32)>,
    /// The failure's data words, drawn in order (its input stays the same).
    words: Vec<u32>,
    index: usize,
    ran: bool,
    run: RunLength,
    /// Each choice point: the options and the one taken by default.
    points: Rc<RefCell<Vec<Point>>>,
    log: Rc<RefCell<Log>>,
}

impl Scheduler for DeviationScheduler {
    fn new_execution(&mut self, _seed: u64) -> bool {
        let first = !self.ran;
        self.ran = true;
        self.index = 0;
        self.run.reset();
        self.points.borrow_mut().clear();
        *self.log.borrow_mut() = Log::default();
        first
    }

    fn next_thread(
        &mut self,
        runnable: &[u32],
        current: Option<u32>,
        yielding: bool,
    ) -> Option<u32> {
        let forced = !yielding && self.run.overstayed(current);
        let yielding = yielding || forced;
        let default = match (current, yielding) {
            (Some(c), false) => c,
            (Some(c), true) => runnable
                .iter()
                .copied()
                .find(|&t| t > c)
                .unwrap_or(runnable[0]),
            (None, _) => runnable[0],
        };
        let t = match self.deviations.iter().find(|d| d.0 == self.index) {
            Some(&(_, t)) => runnable.contains(&t).then_some(t)?,
            None => default,
        };
        self.index += 1;
        self.points.borrow_mut().push((runnable.to_vec(), default));
        let preempt = current.is_some_and(|c| c != t) && !yielding;
        self.run.ran(t);
        let mut log = self.log.borrow_mut();
        log.entries.push(Entry::Thread { t, preempt });
        log.preemptions += preempt as usize;
        log.forced_yields += forced as usize;
        Some(t)
    }

    fn next_bool(&mut self, _kind: ChoiceKind) -> Option<bool> {
        self.index += 1;
        self.points.borrow_mut().push((Vec::new(), 0));
        self.log.borrow_mut().entries.push(Entry::Bool(false));
        Some(false)
    }

    fn next_read(&mut self, _stores: u32) -> Option<u32> {
        self.index += 1;
        self.points.borrow_mut().push((Vec::new(), 0));
        self.log.borrow_mut().entries.push(Entry::Read(0));
        Some(0)
    }

    fn next_word(&mut self) -> Option<u32> {
        let mut log = self.log.borrow_mut();
        let drawn = log
            .entries
            .iter()
            .filter(|e| matches!(e, Entry::Word(_)))
            .count();
        let w = self.words.get(drawn).copied().unwrap_or(0);
        self.index += 1;
        self.points.borrow_mut().push((Vec::new(), w));
        log.entries.push(Entry::Word(w));
        Some(w)
    }
}

/// A failing schedule and what it costs.
#[derive(Clone)]
struct Candidate {
    entries: Vec<Entry>,
    schedule: Vec<u32>,
    preemptions: usize,
    yeses: usize,
    steps: u64,
}

impl Candidate {
    fn cost(&self) -> (usize, usize, u64) {
        (self.preemptions, self.yeses, self.steps)
    }
}

/// Whether `e` is the same failure as `target`: same kind, same place (or, without one,
/// the same message).
pub(crate) fn same_failure(target: &Explanation, e: &Explanation) -> bool {
    e.kind == target.kind
        && match (&target.location, &e.location) {
            (Some(a), Some(b)) => a == b,
            _ => e.message == target.message,
        }
}

/// Minimizes the failing `schedule`. `run` runs one execution under the scheduler it is
/// given (in this process, under the failing execution's time). Returns the best schedule
/// and what it did, or `None` if the schedule no longer fails the same way when replayed.
pub(crate) fn minimize(
    schedule: &[u32],
    target: &Explanation,
    budget: Duration,
    run: &mut dyn FnMut(Box<dyn Scheduler>) -> Outcome,
) -> Option<(Vec<u32>, Minimized)> {
    let deadline = Instant::now() + budget;
    let tries = std::cell::Cell::new(0u64);
    // The tries bound ends almost every minimization, so the same failure minimizes to the
    // same schedule on any machine; the time budget only bounds slow executions.
    let spent = || tries.get() >= MAX_TRIES || Instant::now() >= deadline;
    let mut attempt = |scheduler: Box<dyn Scheduler>, log: &Rc<RefCell<Log>>| {
        tries.set(tries.get() + 1);
        let outcome = run(scheduler);
        let fails = outcome
            .explanation
            .as_ref()
            .is_some_and(|e| outcome.failed && same_failure(target, e));
        let log = log.borrow();
        (fails && log.entries.len() == outcome.schedule.len()).then(|| Candidate {
            entries: log.entries.clone(),
            schedule: outcome.schedule.clone(),
            preemptions: log.preemptions,
            yeses: log.yeses,
            steps: outcome.steps,
        })
    };
    let exact = Plan::Exact(schedule.to_vec());
    let log = Rc::new(RefCell::new(Log::default()));
    let mut best = attempt(
        Box::new(GuidedScheduler::new(exact, Vec::new(), log.clone())),
        &log,
    )?;
    // The failure's input: every later run draws it, whatever its plan keeps.
    let input = words(&best.entries);
    let mut guided = |plan: Plan| {
        let log = Rc::new(RefCell::new(Log::default()));
        let scheduler = GuidedScheduler::new(plan, input.clone(), log.clone());
        attempt(Box::new(scheduler), &log)
    };
    let (original_preemptions, original_steps) = (best.preemptions, best.steps);
    let mut complete = greedy(&mut best, &mut guided, &spent);
    if complete && best.preemptions > 0 {
        complete = breadth_first(&mut best, &input, target.tid, &mut attempt, &spent);
        let mut guided = |plan: Plan| {
            let log = Rc::new(RefCell::new(Log::default()));
            let scheduler = GuidedScheduler::new(plan, input.clone(), log.clone());
            attempt(Box::new(scheduler), &log)
        };
        // Fewer steps from whatever it found.
        complete &= greedy(&mut best, &mut guided, &spent);
    }
    let stats = Minimized {
        original_preemptions,
        original_steps,
        preemptions: best.preemptions,
        steps: best.steps,
        tries: tries.get(),
        complete,
    };
    Some((best.schedule, stats))
}

/// Greedy descent from `best`: the first candidate plan that costs less replaces it, until
/// none does. False if the budget stopped it.
fn greedy(
    best: &mut Candidate,
    attempt: &mut dyn FnMut(Plan) -> Option<Candidate>,
    spent: &dyn Fn() -> bool,
) -> bool {
    loop {
        let mut improved = false;
        let entries = best.entries.clone();
        for plan in candidates(&entries) {
            if spent() {
                return false;
            }
            if let Some(c) = attempt(Plan::Guide(plan)) {
                if c.cost() < best.cost() {
                    *best = c;
                    improved = true;
                    break;
                }
            }
        }
        if !improved {
            return true;
        }
    }
}

/// Choice points in a row a thread may run in the breadth-first phase's canonical runs when
/// the usual `FAIR_RUN` would make one give way (see `breadth_first`).
const PATIENT_RUN: u32 = FAIR_RUN * 16;

/// Breadth first over the canonical schedules (`DeviationScheduler`) with 0, 1, 2, ..
/// deviations, up to the best schedule's preemption count: finds what one greedy step
/// cannot (two switches that fail only together). False if the budget stopped it.
fn breadth_first(
    best: &mut Candidate,
    input: &[u32],
    culprit: Option<u32>,
    attempt: &mut Attempt<'_>,
    spent: &dyn Fn() -> bool,
) -> bool {
    // The failing thread (the panic's root cause, a deadlock's first blocked thread):
    // switching to it is tried first, at each level, as it is the likeliest to matter.
    let culprit = culprit.or_else(|| owners(&best.entries).last().copied());
    let mut canonical = |deviations: Vec<(usize, u32)>, patience: u32| {
        let log = Rc::new(RefCell::new(Log::default()));
        let points = Rc::new(RefCell::new(Vec::new()));
        let scheduler = DeviationScheduler {
            deviations,
            words: input.to_vec(),
            index: 0,
            ran: false,
            run: RunLength::with_patience(patience),
            points: points.clone(),
            log: log.clone(),
        };
        let failed = attempt(Box::new(scheduler), &log);
        let forced_yields = log.borrow().forced_yields;
        (failed, points.take(), forced_yields)
    };
    // A thread that runs long without blocking (a main thread spawning 100 workers) is made
    // to give way after `FAIR_RUN` choice points. That switch is no preemption, but undoing
    // it takes a deviation of its own, so a one-preemption bug would need two. When the
    // plain canonical run has such a switch, canonical runs let threads go on longer (a
    // spinning thread still gives way, later).
    let (failed, points, forced_yields) = canonical(Vec::new(), FAIR_RUN);
    let patience = match forced_yields {
        0 => FAIR_RUN,
        _ => PATIENT_RUN,
    };
    // The plain run is level 0's, unless level 0 runs again patiently: then only its failure
    // counts.
    let mut plain = Some((failed, points));
    if patience != FAIR_RUN {
        let failed = plain.take().and_then(|(failed, _)| failed);
        if let Some(c) = failed.filter(|c| c.cost() < best.cost()) {
            *best = c;
        }
    }
    // Never more candidates in a level than could run: a level of a long schedule among
    // many threads is (choice points x threads)^deviations.
    let room = MAX_TRIES as usize;
    let mut level: Vec<Vec<(usize, u32)>> = vec![Vec::new()];
    let mut deviations = 0;
    while deviations <= best.preemptions && !level.is_empty() {
        let (mut first, mut rest) = (Vec::new(), Vec::new());
        for devs in level {
            if spent() {
                return false;
            }
            let (failed, points) = match plain.take() {
                Some(run) => run,
                None => {
                    let (failed, points, _) = canonical(devs.clone(), patience);
                    (failed, points)
                }
            };
            if let Some(c) = failed {
                if c.cost() < best.cost() {
                    *best = c;
                }
                continue;
            }
            if deviations < best.preemptions {
                let from = devs.last().map_or(0, |d| d.0 + 1);
                for (k, (options, default)) in points.iter().enumerate().skip(from) {
                    for &t in options.iter().filter(|&&t| t != *default) {
                        let to = if Some(t) == culprit {
                            &mut first
                        } else {
                            &mut rest
                        };
                        if to.len() < room {
                            let mut more = devs.clone();
                            more.push((k, t));
                            to.push(more);
                        }
                    }
                }
            }
        }
        first.append(&mut rest);
        first.truncate(room);
        level = first;
        deviations += 1;
    }
    true
}

/// The thread running after each entry (a yes/no answer belongs to the thread before it).
fn owners(entries: &[Entry]) -> Vec<u32> {
    let mut owner = 0;
    entries
        .iter()
        .map(|e| {
            if let Entry::Thread { t, .. } = *e {
                owner = t;
            }
            owner
        })
        .collect()
}

/// How many more choice points a preempted thread is offered before the switch.
const MORE_STEPS: usize = 4;

/// Plans to try from the best schedule, cheapest-looking first: the whole plan dropped,
/// then for each preemption (first to last) the plan cut there, the preempted thread's next
/// stretch moved to before it, up to `MORE_STEPS` more steps of the preempted thread (with
/// and without the preempting stretch), the preempting stretch dropped; then each `yes`
/// answer turned to `no`; then the plan cut after each of its last choices.
fn candidates(entries: &[Entry]) -> impl Iterator<Item = Vec<Entry>> + '_ {
    let owner = owners(entries);
    let preemptions: Vec<usize> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, Entry::Thread { preempt: true, .. }))
        .map(|(i, _)| i)
        .collect();
    let empty = std::iter::once(Vec::new());
    let per_preemption = preemptions.clone().into_iter().flat_map(move |i| {
        let c = if i == 0 { 0 } else { owner[i - 1] };
        let t_end = (i..entries.len())
            .find(|&k| owner[k] != owner[i])
            .unwrap_or(entries.len());
        let mut plans = vec![entries[..i].to_vec()];
        // `c`'s next stretch, from the first entry after `i` it runs.
        if let Some(j) = (i + 1..entries.len()).find(|&j| owner[j] == c && owner[j - 1] != c) {
            let end = (j..entries.len())
                .find(|&k| owner[k] != c)
                .unwrap_or(entries.len());
            let mut p = entries[..i].to_vec();
            p.extend_from_slice(&entries[j..end]);
            p.extend_from_slice(&entries[i..j]);
            p.extend_from_slice(&entries[end..]);
            plans.push(p);
        }
        // `c` goes on for `k` more choice points, then the plan resumes where it switched, with
        // or without the preempting thread's stretch (which then runs when the plan next names
        // its thread, or when nothing else can run).
        for k in 1..=MORE_STEPS {
            let more = std::iter::repeat_n(
                Entry::Thread {
                    t: c,
                    preempt: false,
                },
                k,
            );
            let mut p = entries[..i].to_vec();
            p.extend(more.clone());
            let keep = p.len();
            p.extend_from_slice(&entries[t_end..]);
            plans.push(p.clone());
            p.truncate(keep);
            p.extend_from_slice(&entries[i..]);
            plans.push(p);
        }
        // The preempting stretch dropped where it was.
        let mut p = entries[..i].to_vec();
        p.extend_from_slice(&entries[t_end..]);
        plans.push(p);
        plans
    });
    let no_yes = (0..entries.len())
        .filter(|&i| matches!(entries[i], Entry::Bool(true) | Entry::Read(1..)))
        .map(move |i| {
            let mut p = entries.to_vec();
            p[i] = match p[i] {
                Entry::Read(_) => Entry::Read(0),
                _ => Entry::Bool(false),
            };
            p
        });
    // Cutting after the last preemption lets the rest run without preempting (fewer
    // steps, when the original tail made threads wait on each other).
    let last = preemptions.last().map_or(0, |&i| i + 1);
    let cuts = (last..entries.len())
        .rev()
        .map(move |k| entries[..k].to_vec());
    empty
        .chain(per_preemption)
        .chain(no_yes)
        .chain(cuts.take(64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_move_the_preempted_threads_next_stretch_before_the_switch() {
        let th = |t| Entry::Thread { t, preempt: false };
        let pre = |t| Entry::Thread { t, preempt: true };
        // 0 runs, 1 preempts it, 0 comes back.
        let entries = vec![th(0), pre(1), th(1), th(0), th(0), th(1)];
        let plans: Vec<_> = candidates(&entries).collect();
        assert_eq!(plans[0], Vec::<Entry>::new());
        assert_eq!(plans[1], vec![th(0)]);
        assert_eq!(plans[2], vec![th(0), th(0), th(0), pre(1), th(1), th(1)]);
        // One more step of 0, without and with 1's stretch.
        assert_eq!(plans[3], vec![th(0), th(0), th(0), th(0), th(1)]);
        assert_eq!(
            plans[4],
            vec![th(0), th(0), pre(1), th(1), th(0), th(0), th(1)]
        );
        // 1's stretch dropped.
        assert_eq!(
            plans[2 + 2 * MORE_STEPS + 1],
            vec![th(0), th(0), th(0), th(1)]
        );
    }

    #[test]
    fn a_guided_run_counts_only_switches_away_from_a_thread_that_could_go_on() {
        let log = Rc::new(RefCell::new(Log::default()));
        let plan = Plan::Guide(vec![Entry::Thread {
            t: 1,
            preempt: true,
        }]);
        let mut s = GuidedScheduler::new(plan, Vec::new(), log.clone());
        assert!(s.new_execution(0));
        // The plan's pick preempts 0; then 1 yields (no preemption), then 0 blocks (none).
        assert_eq!(s.next_thread(&[0, 1], Some(0), false), Some(1));
        assert_eq!(s.next_thread(&[0, 1], Some(1), true), Some(0));
        assert_eq!(s.next_thread(&[1, 2], None, false), Some(1));
        // Without a plan step the running thread goes on.
        assert_eq!(s.next_thread(&[1, 2], Some(1), false), Some(1));
        assert_eq!(log.borrow().preemptions, 1);
    }
}
