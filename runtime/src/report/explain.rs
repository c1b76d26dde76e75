//! Explaining a stopped execution: what failed, where, who held what, the trace, and the
//! line that replays it — read off the execution's state before cleanup changes it.

use std::collections::HashMap;

use pulse_protocol::env;

use crate::config::Config;
use crate::execution::{ExecState, PanicRecord, Status, Stop, Tid};
use crate::obj_ref::ObjRef;
use crate::report::failure::FailureKind;
use crate::report::trace::{location_string, Event, EventKind, TraceEvent, UserLines};
use crate::report::trace_file;
use pulse_protocol::trace::Trace;
use pulse_protocol::Schedule;

/// What went wrong in one execution, before it becomes a `Failure`.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Explanation {
    pub kind: FailureKind,
    pub message: String,
    pub location: Option<String>,
    pub thread: String,
    /// `thread`'s index, where one thread failed (a panic's root cause, a deadlock's first
    /// blocked thread).
    pub tid: Option<Tid>,
    pub details: Vec<String>,
    pub trace: Vec<TraceEvent>,
    pub backtrace: Option<String>,
    /// The whole trace, for the trace file (`None` when the execution was not traced).
    #[serde(default)]
    pub full: Option<pulse_protocol::trace::Trace>,
    /// What the reader needs to know to judge the failure (a spurious weak-CAS failure).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// Schedules longer than this (characters) are not written into a replay line.
const MAX_INLINE_SCHEDULE: usize = 64 << 10;

/// The line that replays a failing execution: its schedule, or its seed where that is the
/// line to copy. A crash's line runs the replay in a fresh process, which reports the crash
/// as the search did (in the test's own process it would only end it).
pub(crate) fn replay_command(
    config: &Config,
    schedule: &Schedule,
    seed: Option<u64>,
    test: &str,
    crash: bool,
) -> String {
    // (Written only as far as a command line takes it.)
    let text = schedule.text_within(MAX_INLINE_SCHEDULE);
    let long = text
        .as_ref()
        .map_or(true, |t| t.len() > crate::report::failure::LONG_SCHEDULE);
    let in_test = !test.is_empty() && test != "main";
    let package = std::env::var("CARGO_PKG_NAME")
        .map(|p| format!(" -p {p}"))
        .unwrap_or_default();
    // A schedule names the relaxed model when it ran under it; a seed draws its model from
    // the run's setting, so a setting other than the default travels with the command.
    let memory = if config.memory == crate::config::Memory::default() {
        String::new()
    } else {
        format!("{}={} ", env::MEMORY, config.memory)
    };
    let template = match &config.replay_command {
        Some(t) => t.clone(),
        // A command line people copy: a long schedule of a strategy whose executions depend
        // on their seed alone (random, pos) replays by its seed,
        // and so does a crash whose schedule was lost (it ran first in a fresh process, so
        // its seed replays it whatever the strategy).
        None if in_test
            && seed.is_some()
            && (schedule.is_empty()
                || long
                    && matches!(
                        config.strategy,
                        crate::scheduler::Strategy::Random | crate::scheduler::Strategy::Pos
                    )) =>
        {
            format!(
                "{memory}{}={{seed}} {}=1 cargo test{package} -- {{test}} --exact",
                env::SEED,
                env::SCHEDULES
            )
        }
        None if in_test => format!(
            "{memory}{}='{{schedule}}' cargo test{package} -- {{test}} --exact",
            env::REPLAY
        ),
        None => "pulse::Builder::new().replay(\"{schedule}\").unwrap().check(..)".to_string(),
    };
    let template = match crash {
        true => in_fresh_process(template, config.replay_command.is_some()),
        false => template,
    };
    if text.is_err() && template.contains("{schedule}") {
        // Longer than one argument may be (Linux takes 128 KiB), and written once already
        // (`Failure::schedule`; a failure record's `schedule`, which `cargo pulse test
        // --replay FILE` reads): a 100,000,000-step execution's was 64 MB, three times over.
        return format!(
            "(its schedule, {} choices, is too long for a command line: replay it from \
             `Failure::schedule`, or from the failure file with `cargo pulse test --replay FILE`)",
            schedule.len()
        );
    }
    template
        .replace("{schedule}", &text.unwrap_or_default())
        .replace(
            "{seed}",
            &seed.map_or_else(|| "-".to_string(), |s| s.to_string()),
        )
        .replace("{test}", test)
}

/// A replay line that runs its execution in a fresh process, where a crash is caught and
/// reported as the search reported it (in the test's own process it would only end it):
/// cargo-pulse's line (`templated`) takes a flag, `cargo test` the variable, and code the
/// builder's setting.
fn in_fresh_process(line: String, templated: bool) -> String {
    if templated {
        format!("{line} --isolation always")
    } else if line.contains(" cargo test") {
        format!("{}=always {line}", env::ISOLATION)
    } else {
        line.replace(
            ".check(..)",
            ".isolation(pulse::Isolation::Always).check(..)",
        )
    }
}

/// The line that replays a failing execution from its seed alone: its own strategy
/// (`Scheduler::strategy_for`: `pct:5:137`, `pos`, `random`), and the time mode and memory
/// model it ran under, which the run's setting drew for the seed (`--time portfolio`,
/// `--memory portfolio`) and are stated, so the line reproduces it whatever the settings.
pub(crate) fn seed_command(
    config: &Config,
    seed: u64,
    strategy: &crate::scheduler::Strategy,
    time: pulse_protocol::TimeParams,
    relaxed: bool,
    test: &str,
    crash: bool,
) -> String {
    let memory = if relaxed { "relaxed" } else { "sc" };
    let in_test = !test.is_empty() && test != "main";
    let package = std::env::var("CARGO_PKG_NAME")
        .map(|p| format!(" -p {p}"))
        .unwrap_or_default();
    let template = match &config.seed_command {
        Some(t) => t.clone(),
        None if in_test => format!(
            "{}={{strategy}} {}={{seed}} {}=1 {}='{{time}}' {}={{memory}} cargo test{package} -- {{test}} --exact",
            env::STRATEGY,
            env::SEED,
            env::SCHEDULES,
            env::TIME,
            env::MEMORY,
        ),
        None => "pulse::Builder::new().strategy(\"{strategy}\".parse().unwrap()).seed({seed}).schedules(1).time(\"{time}\".parse().unwrap()).memory(\"{memory}\".parse().unwrap()).check(..)".to_string(),
    };
    let template = match crash {
        true => in_fresh_process(template, config.seed_command.is_some()),
        false => template,
    };
    template
        .replace("{strategy}", &strategy.to_string())
        .replace("{seed}", &seed.to_string())
        .replace("{time}", &time.to_string())
        .replace("{memory}", memory)
        .replace("{test}", test)
}

/// Reads what went wrong off the state, before cleanup changes it.
pub(crate) fn explain_stop(st: &ExecState, stop: &Stop) -> Explanation {
    let trace = resolve_trace(st);
    let blocked_lines = || -> Vec<String> {
        st.threads
            .iter()
            .enumerate()
            .filter_map(|(i, t)| match t.status {
                Status::Blocked(b) => Some(describe_blocked(
                    st, i as Tid, b.op, b.object, b.location, &t.held,
                )),
                _ => None,
            })
            .collect()
    };
    let first_blocked = || {
        st.threads
            .iter()
            .enumerate()
            .find_map(|(i, t)| match t.status {
                Status::Blocked(b) => Some((i as Tid, location_string(b.location))),
                _ => None,
            })
    };
    let (kind, message, location, tid, thread, details, backtrace) = match *stop {
        Stop::Panic { thread } => {
            let t = &st.threads[thread as usize];
            let mut details = Vec::new();
            if thread != 0 {
                details.push(
                    "(the thread's JoinHandle was never joined, so nothing observed this panic)"
                        .to_string(),
                );
            }
            // `join().unwrap()` on a panicked thread says only `Any { .. }`, and a peer's
            // panic shows as a poisoned lock or a channel whose other end its unwinding
            // dropped: the root cause is that thread's own panic, so that leads the report.
            let cause = (t.panic.as_ref())
                .filter(|effect| is_consequence(&effect.message))
                .and_then(|effect| Some((effect, root_cause(st, thread, effect)?)));
            let (thread, record) = match cause {
                Some((effect, (cause, record))) => {
                    let raised = effect.raised_in.unwrap_or(thread);
                    details.push(format!(
                        "which made thread '{}' panic{}: {}",
                        st.thread_name(raised),
                        effect.at(),
                        effect.message
                    ));
                    if raised != thread {
                        details.push(resumed_in(st, thread));
                    }
                    (cause, Some(record))
                }
                None => (thread, t.panic.clone()),
            };
            // A panic resumed on another thread is reported where it was raised.
            let thread = match record.as_ref().and_then(|r| r.raised_in) {
                Some(raised) => {
                    details.push(resumed_in(st, thread));
                    raised
                }
                None => thread,
            };
            (
                FailureKind::Panic,
                record
                    .as_ref()
                    .map_or_else(|| "panicked".to_string(), |r| r.message.clone()),
                record.as_ref().and_then(|r| r.location.clone()),
                Some(thread),
                st.thread_name(thread),
                details,
                record.and_then(|r| r.backtrace),
            )
        }
        Stop::Deadlock | Stop::LeakedThread => {
            let mut lines = blocked_lines();
            let live = lines.len();
            let reactor = st.threads.iter().any(|t| {
                matches!(t.status, Status::Blocked(b) if b.object.is_some_and(|o| o.kind == "Epoll"))
            });
            if reactor && matches!(stop, Stop::Deadlock) {
                lines.push(format!(
                    "(no thread of the test made the epoll_wait's descriptors ready, and nothing \
                     did from outside the process in {} s of real time)",
                    crate::fd_waiters::REAL_WAIT_MS / 1000
                ));
            }
            let (kind, message) = if matches!(stop, Stop::Deadlock) {
                (
                    FailureKind::Deadlock,
                    format!("deadlock: all {live} live threads are blocked"),
                )
            } else {
                (
                    FailureKind::LeakedThread,
                    format!(
                        "the test's main thread returned, but {live} thread(s) stay blocked forever"
                    ),
                )
            };
            let (tid, thread, location) = match first_blocked() {
                Some((t, l)) => (Some(t), st.thread_name(t), Some(l)),
                None => (None, "-".to_string(), None),
            };
            (kind, message, location, tid, thread, lines, None)
        }
        Stop::StepLimit {
            capped,
            progressing,
            alone,
        } => {
            let (details, top) = busiest_threads(st);
            // Timed waits kept running out up to the end, within the probe's last window, and
            // nothing changed: the threads sleep and poll (time passes, nothing happens).
            let polling = !capped && st.polling();
            let bound = st.progress.bound();
            let raise =
                "raise the bound with --max-steps / Builder::max_steps if the test is just long";
            (
                if polling {
                    FailureKind::Livelock
                } else {
                    FailureKind::StepLimit
                },
                if alone {
                    format!(
                        "execution passed {bound} scheduling points and its one live thread ran on alone for {} steps more without ending ({} of virtual time in): a loop that never ends, which would hang plain `cargo test` too, or a single-threaded test longer than that ({raise})",
                        (st.steps - 1).saturating_sub(bound),
                        virtual_time(st.clock_ns),
                    )
                } else if capped && progressing {
                    format!(
                        "execution passed {bound} scheduling points and was still making progress (writing new values, sending messages, starting or ending threads) when pulse stopped it {} steps later ({} of virtual time in): a test too long for one execution ({raise}) or a runaway loop",
                        (st.steps - 1).saturating_sub(bound),
                        virtual_time(st.clock_ns),
                    )
                } else if capped {
                    format!(
                        "execution passed {bound} scheduling points and went on changing state without ending, through values it had written before (atomics that wrap around, a lock taken in turns), until pulse stopped it {} steps later ({} of virtual time in): a livelock in turns (threads that take a lock or flip a flag while they wait for something that never comes), or a stress test longer than that ({raise})",
                        (st.steps - 1).saturating_sub(bound),
                        virtual_time(st.clock_ns),
                    )
                } else if polling {
                    format!(
                        "livelock: {} of virtual time passed ({} scheduling points) while threads kept sleeping or waiting with timeouts and waking again, and changed nothing in the last {}: a polling loop whose condition never comes ({raise})",
                        virtual_time(st.clock_ns),
                        bound,
                        st.progress.quiet_span(),
                    )
                } else if st.main_returned() {
                    format!(
                        "the test's main thread had returned, but other threads were still running after {bound} scheduling points ({} of virtual time): a background thread that never ends (std would let the test pass and kill it; pulse runs threads to completion), or a livelock",
                        virtual_time(st.clock_ns)
                    )
                } else {
                    format!(
                        "execution passed {bound} scheduling points without finishing ({} of virtual time in when stopped), and changed nothing pulse can see in its last {}: no atomic changed its value, no lock changed hands, no message was sent, no thread started or ended. A spin or polling loop that never sees its condition, or a long test whose progress pulse does not see (data changed only in plain memory, by one thread at a time){} ({raise})",
                        virtual_time(st.clock_ns),
                        st.progress.quiet_span(),
                        next_timer(st).map(|due| format!("; {due}")).unwrap_or_default(),
                    )
                },
                top.and_then(|t| st.threads[t as usize].last_location.map(location_string)),
                None,
                top.map_or("-".to_string(), |t| st.thread_name(t)),
                details,
                None,
            )
        }
        Stop::TimeLimit => {
            let (details, top) = busiest_threads(st);
            // A replay that ran out of recorded choices ends where the search's limit cut it.
            let limit = match st.scheduler.ran_out() {
                true => "the search's time limit".to_string(),
                false => format!(
                    "the test's time limit{}",
                    st.config
                        .time_budget
                        .map_or_else(String::new, |limit| format!(" ({limit:?})"))
                ),
            };
            let bound = st.progress.bound();
            // Past its bound the execution is a step-limit finding, as it would be at the
            // probe's cap; before it, it is just long: no verdict.
            let (kind, message) = match st.progress.probing() {
                true if st.body_alone() => (
                    FailureKind::ToolError,
                    format!(
                        "a schedule did not end within {limit}: its one live thread ran alone past {bound} scheduling points, and pulse cut it {} steps later ({} of virtual time in), so the test has no verdict: a single-threaded test too long for the limit, or a loop that never ends (which would hang plain `cargo test` too); `--test-time` raises the limit (`none`: no limit)",
                        st.steps.saturating_sub(bound),
                        virtual_time(st.clock_ns),
                    ),
                ),
                true => (
                    FailureKind::StepLimit,
                    format!(
                        "execution passed {bound} scheduling points and went on changing state without ending until {limit} cut it {} steps later ({} of virtual time in): a stress test too long for one execution, or a livelock in turns (threads that take a lock or flip a flag while they wait for something that never comes); raise --max-steps and --test-time if the test is just long",
                        st.steps.saturating_sub(bound),
                        virtual_time(st.clock_ns),
                    ),
                ),
                false => (
                    FailureKind::ToolError,
                    format!(
                        "a schedule did not end within {limit}: pulse cut it after {} scheduling points ({} of virtual time), short of its step bound, so the test has no verdict; `--test-time` raises the limit (`none`: no limit)",
                        st.steps,
                        virtual_time(st.clock_ns),
                    ),
                ),
            };
            (
                kind,
                message,
                top.and_then(|t| st.threads[t as usize].last_location.map(location_string)),
                None,
                top.map_or("-".to_string(), |t| st.thread_name(t)),
                details,
                None,
            )
        }
        Stop::ReplayDiverged => (
            FailureKind::ReplayDiverged,
            if st.scheduler.by_seed() {
                format!(
                    "the schedule does not match the program after {} choices (was the code or the test changed since it was recorded?)",
                    st.schedule.len()
                )
            } else {
                // dfs and dpor replay their own prefixes, in this process.
                format!(
                    "the search replayed choices it had made before, and after {} of them the test went another way: its runs in one process do not start from the same state (state kept in statics, such as a global thread pool or registry, or nondeterminism outside pulse), and they could not run one process each here (`PULSE_ISOLATION=off`, or a run that is not a libtest test). dfs and dpor need every run to start alike",
                    st.schedule.len()
                )
            },
            None,
            None,
            st.thread_name(st.current),
            Vec::new(),
            None,
        ),
    };
    // A thread that panicked and that nobody joined yet is often why the others wait (a
    // consumer's panic leaves its producer spinning): said first, as plain `cargo test`'s
    // stderr would have it before the hang.
    let details = match stop {
        Stop::StepLimit { .. } | Stop::Deadlock | Stop::LeakedThread | Stop::TimeLimit => {
            let mut said = unjoined_panics(st);
            said.extend(details);
            said
        }
        _ => details,
    };
    let full = full_trace(st, tid);
    Explanation {
        kind,
        message,
        location,
        thread,
        tid,
        details,
        trace,
        backtrace,
        full,
        notes: match stop {
            // A loop stopped at the bound retries whatever failed last: not its cause.
            Stop::StepLimit { .. } | Stop::TimeLimit => None,
            _ => spurious_cas_note(st),
        }
        .into_iter()
        .chain(loaded_machine_note(st))
        .collect(),
    }
}

/// Threads that ended by a panic no `join` has taken yet: "thread 'x' panicked at ...".
fn unjoined_panics(st: &ExecState) -> Vec<String> {
    (st.threads.iter().enumerate())
        .filter(|(_, t)| t.panic_payload.is_some())
        .map(|(i, t)| {
            let record = t.panic.as_ref();
            let at = record.map(PanicRecord::at).unwrap_or_default();
            let said = record.map_or("", |r| r.message.as_str());
            format!(
                "thread '{}' panicked{at}: {said} (no thread joined it: it may be what the others wait for)",
                st.thread_name(i as Tid)
            )
        })
        .collect()
}

/// Threads listed one per line in a step or time limit's report; the rest are counted
/// by where they were (flume's `send_bounded` listed 101).
const BUSIEST_LISTED: usize = 8;

/// The threads still running, busiest first ("thread 'x' took N steps, last at ..."), the
/// rest summed up by their last places, and the busiest.
fn busiest_threads(st: &ExecState) -> (Vec<String>, Option<Tid>) {
    let mut busy: Vec<(u64, Tid)> = st
        .threads
        .iter()
        .enumerate()
        .filter(|(_, t)| !t.is_finished())
        .map(|(i, t)| (t.steps, i as Tid))
        .collect();
    busy.sort_by(|a, b| b.cmp(a));
    let last_at = |t: Tid| st.threads[t as usize].last_location.map(location_string);
    // (One more thread is listed rather than summed up.)
    let listed = match busy.len() > BUSIEST_LISTED + 1 {
        true => BUSIEST_LISTED,
        false => busy.len(),
    };
    let mut details: Vec<String> = busy[..listed]
        .iter()
        .map(|&(steps, t)| {
            let at = last_at(t)
                .map(|l| format!(", last at {l}"))
                .unwrap_or_default();
            format!("thread '{}' took {steps} steps{at}", st.thread_name(t))
        })
        .collect();
    let rest = &busy[listed..];
    if let [most, .., least] = rest {
        let mut places: Vec<(usize, String)> = Vec::new();
        for &(_, t) in rest {
            let place = last_at(t).unwrap_or_else(|| "-".into());
            match places.iter_mut().find(|(_, p)| *p == place) {
                Some((n, _)) => *n += 1,
                None => places.push((1, place)),
            }
        }
        places.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let shown: Vec<String> = places
            .iter()
            .take(3)
            .map(|(n, p)| format!("{p} ({n})"))
            .collect();
        let more = match places.len() > 3 {
            true => format!(", {} more places", places.len() - 3),
            false => String::new(),
        };
        details.push(format!(
            "{} more threads took {} to {} steps, last at {}{more}",
            rest.len(),
            least.0,
            most.0,
            shown.join(", ")
        ));
    }
    (details, busy.first().map(|&(_, t)| t))
}

/// The execution's first spurious `compare_exchange_weak` failure that its thread did not
/// retry, explained: a failure that needs one is real on LL/SC hardware but never seen on
/// x86-64, where tests are run. One retried at the same place was a loop's turn, which the
/// failure owes nothing to (it was named on concurrent-queue's and crossbeam-channel's
/// failures that `--weak-cas strong` did not change), unless the thread stored to an atomic
/// between the failure and its retry: then the loop's turn repeated an effect beyond the
/// exchange (moka's cht ran its `on_modify` closure again, which had already set the entry's
/// weight and timestamps, and read back its own writes: the cache's size drifted).
fn spurious_cas_note(st: &ExecState) -> Option<String> {
    let trace = st.trace.as_ref()?;
    let at = |e: &Event| {
        e.location
            .map(|l| format!(" at {}", location_string(l)))
            .unwrap_or_default()
    };
    let weak = "std lets a weak compare-exchange fail even when the value matches, and ARM, \
                RISC-V and POWER do";
    let strong = "`--weak-cas strong` runs it as x86-64 does";
    if let Some(e) = first_not_retried(trace) {
        return Some(format!(
            "`{}`{} failed spuriously (step {}): {weak}, so code that takes one failure for \
             contention or a final answer breaks there; {strong}",
            e.op,
            at(e),
            e.step
        ));
    }
    let (e, store) = first_retried_after_a_store(trace)?;
    Some(format!(
        "`{}`{} failed spuriously (step {}) and its thread stored again (`{}`{}) before \
         retrying it: a retry loop whose turn has effects beyond the exchange repeats them \
         (a value it already changed is read back as the old one); {weak}, and a strong \
         exchange fails the same way under contention; {strong}",
        e.op,
        at(e),
        e.step,
        store.op,
        at(store)
    ))
}

/// The first spurious failure whose thread never came back to its place.
fn first_not_retried(trace: &[Event]) -> Option<&Event> {
    // From the end: the places each thread reached later, so each event is checked once
    // (a traced step-limit run has millions).
    let mut later = std::collections::HashSet::new();
    let mut first = None;
    for e in trace.iter().rev() {
        let place = (e.thread, e.location, e.op);
        if e.atomic.is_some_and(|a| a.spurious) && !later.contains(&place) {
            first = Some(e);
        }
        later.insert(place);
    }
    first
}

/// The first spurious failure whose thread stored to another atomic before trying the same
/// exchange again (the loop's next turn, reloading the atomic in between as it likes), with
/// that store. A write to the atomic elsewhere first (parking_lot's lock taken on its slow
/// path after its fast path's weak CAS failed) ended the loop: what follows is no turn of it.
fn first_retried_after_a_store(trace: &[Event]) -> Option<(&Event, &Event)> {
    // Per thread: the spurious failure awaiting its retry, and the first store since.
    let mut waiting: HashMap<u32, (&Event, Option<&Event>)> = HashMap::new();
    let place = |e: &Event| (e.location, e.op);
    let writes = |e: &Event| e.atomic.is_some_and(|a| a.wrote.is_some());
    for e in trace {
        if let Some((failed, stored)) = waiting.get_mut(&e.thread) {
            let same_atomic = e.object.is_some() && e.object == failed.object;
            let retry = same_atomic && place(e) == place(failed);
            if let (true, Some(store)) = (retry, *stored) {
                return Some((failed, store));
            }
            // A reload of the atomic before the next turn keeps waiting.
            if retry || (same_atomic && writes(e)) {
                waiting.remove(&e.thread);
            } else if !same_atomic
                && stored.is_none()
                && e.atomic
                    .is_some_and(|a| a.wrote.is_some() && a.read.is_none())
            {
                *stored = Some(e);
            }
        }
        if e.atomic.is_some_and(|a| a.spurious) {
            waiting.insert(e.thread, (e, None));
        }
    }
    None
}

/// Under a time mode where timers compete with ready threads, an execution in which one
/// fired first played a loaded machine: a failure that needs that (a timeout or an expiry
/// shorter than a pause such a machine makes) is a timing assumption, which the note names
/// so the reader can judge it (stretto's TTL tests, session 29's trial).
fn loaded_machine_note(st: &ExecState) -> Option<String> {
    let step = st.timer_overtook?;
    Some(format!(
        "under the time mode `{}` (a loaded machine: a timer due within {} may fire before a \
         ready thread's next step) a timer fired ahead of ready threads at step {step}: if the \
         failure needs that, the test assumes its threads are never that slow; `--time \
         infinitely-fast` runs ready threads first",
        st.time,
        pulse_protocol::time::format_duration_nanos(st.time.interval),
    ))
}

fn describe_blocked(
    st: &ExecState,
    tid: Tid,
    op: &str,
    object: Option<ObjRef>,
    location: &std::panic::Location<'_>,
    held: &[(ObjRef, &'static std::panic::Location<'static>)],
) -> String {
    let on = match object {
        Some(o) if o == ObjRef::thread(o.id) => {
            format!(" waiting for thread '{}'", st.thread_name(o.id))
        }
        Some(o) => format!(" on {o}"),
        None => String::new(),
    };
    let mut line = format!(
        "thread '{}' blocked in {op}{on} at {}",
        st.thread_name(tid),
        location_string(location)
    );
    if !held.is_empty() {
        let holding: Vec<String> = held
            .iter()
            .map(|(o, l)| format!("{o} (taken at {})", location_string(l)))
            .collect();
        line.push_str(&format!(", holding {}", holding.join(", ")));
    }
    line
}

/// The most recent steps a report keeps: a million-step livelock's whole trace would cost
/// seconds to resolve and hundreds of megabytes of JSON, and people read the end.
pub(crate) const KEPT_TRACE: usize = 10_000;

fn resolve_trace(st: &ExecState) -> Vec<TraceEvent> {
    let Some(events) = &st.trace else {
        return Vec::new();
    };
    let table: Vec<&Event> = events
        .iter()
        .filter(|e| !matches!(e.kind, EventKind::Note(_)))
        .collect();
    let first = table.len().saturating_sub(KEPT_TRACE);
    let mut lines = UserLines::default();
    for e in &table[..first] {
        lines.locate(e, false);
    }
    table[first..]
        .iter()
        .map(|e| lines.row(e, &|t| st.thread_name(t)))
        .collect()
}

/// The most recent events a trace file keeps (the viewer is made for 100,000).
pub(crate) const KEPT_FULL_TRACE: usize = 200_000;

/// The execution's events in the trace file's format (`pulse_protocol::trace`), linked and
/// with their vector clocks; the failing event is `failing_thread`'s last (before the panic
/// of `failing_tid`, its index, if it panicked: names may repeat, indices do not).
pub(crate) fn full_trace(st: &ExecState, failing_tid: Option<Tid>) -> Option<Trace> {
    let events = st.trace.as_ref()?;
    let dropped = events.len().saturating_sub(KEPT_FULL_TRACE);
    let out = (dropped..events.len())
        .map(|i| trace_file::event(events, i, dropped, &|t| st.thread_name(t)))
        .collect();
    let names = (0..st.threads.len() as Tid)
        .map(|t| st.thread_name(t))
        .collect();
    let panicked_after = failing_tid
        .and_then(|t| st.threads[t as usize].panicked_after_events)
        .map(|n| n.saturating_sub(dropped));
    Some(trace_file::assemble(
        out,
        names,
        trace_file::Failing {
            thread: failing_tid,
            panicked_after,
        },
        dropped as u64,
    ))
}

/// The panic that made `thread`'s `effect` (a consequence: a join's `Any { .. }`, a poisoned
/// lock, a channel's dropped end), raised no later than it: the first of another thread's
/// that is not a consequence itself; else the last one a thread caught before (easy-parallel
/// catches main's failed assertion, joins a worker whose send failed as main unwound, and
/// resumes the worker's panic); else the first of another thread's.
fn root_cause(st: &ExecState, thread: Tid, effect: &PanicRecord) -> Option<(Tid, PanicRecord)> {
    let held = (st.threads.iter().enumerate())
        .filter(|&(t, _)| t as Tid != thread)
        .filter_map(|(t, v)| Some((t as Tid, v.panic.as_ref()?)));
    let caught = st.caught_panics.iter().map(|(t, r)| (*t, r));
    let before =
        |(_, r): &(Tid, &PanicRecord)| r.step <= effect.step && r.message != effect.message;
    let first = |(t, r): &(Tid, &PanicRecord)| (r.step, *t);
    let cause = (held.clone().filter(before))
        .filter(|(_, r)| !is_consequence(&r.message))
        .min_by_key(first)
        .or_else(|| {
            (caught.filter(before))
                .filter(|(_, r)| !is_consequence(&r.message))
                .max_by_key(first)
        })
        .or_else(|| held.filter(before).min_by_key(first))?;
    Some((cause.0, cause.1.clone()))
}

/// Said of the thread that ended by another thread's panic it resumed.
fn resumed_in(st: &ExecState, thread: Tid) -> String {
    format!(
        "resumed in thread '{}' by `resume_unwind`, which it ended",
        st.thread_name(thread)
    )
}

/// What a panic says when another thread's panic made it (`unwrap` on the error): a join's
/// `Any { .. }`, a lock that thread poisoned, a channel whose other end its unwinding dropped.
fn is_consequence(message: &str) -> bool {
    [
        "Any { .. }",
        "PoisonError",
        "SendError",
        "RecvError",
        "Disconnected",
    ]
    .iter()
    .any(|m| message.contains(m))
}

/// Virtual time for people: `1.5s`, `20ms`, `3µs`.
/// The timed wait due first, if one is still to come: the step bound may have come before
/// a long sleep ended.
fn next_timer(st: &ExecState) -> Option<String> {
    let (deadline, t) = (st.threads.iter().enumerate())
        .filter_map(|(t, thread)| match thread.status {
            Status::Blocked(b) => b.deadline.map(|d| (d, t as Tid)),
            _ => None,
        })
        .filter(|&(d, _)| d > st.clock_ns)
        .min()?;
    Some(format!(
        "thread '{}' was still waiting for its timer, due in {} of virtual time",
        st.thread_name(t),
        virtual_time(deadline - st.clock_ns)
    ))
}

fn virtual_time(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns}ns"),
        1_000..1_000_000 => format!("{}µs", ns / 1_000),
        1_000_000..1_000_000_000 => format!("{}ms", ns / 1_000_000),
        _ => format!("{:.1}s", ns as f64 / 1e9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_too_long_for_a_command_line_is_named_not_written() {
        let config = Config::default();
        let short = Schedule::new(vec![0, 1, 1]);
        let line = replay_command(&config, &short, None, "tests::t", false);
        assert!(line.contains("'p1:0.1*2'"), "{line}");
        // Alternating choices do not compress: about 2 characters a choice.
        let long = Schedule::new((0..100_000).map(|i| i % 2).collect());
        let line = replay_command(&config, &long, None, "tests::t", false);
        assert!(
            line.contains("100000 choices, is too long for a command line"),
            "{line}"
        );
    }
}
