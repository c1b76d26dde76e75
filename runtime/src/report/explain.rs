//! Explaining a stopped execution: what failed, where, who held what, the trace, and the
//! line that replays it — read off the execution's state before cleanup changes it.

use pulse_protocol::env;

use crate::config::Config;
use crate::execution::{ExecState, Status, Stop, Tid};
use crate::obj_ref::ObjRef;
use crate::report::failure::FailureKind;
use crate::report::trace::{location_string, TraceEvent};
use pulse_protocol::Schedule;

/// What went wrong in one execution, before it becomes a `Failure`.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Explanation {
    pub kind: FailureKind,
    pub message: String,
    pub location: Option<String>,
    pub thread: String,
    pub details: Vec<String>,
    pub trace: Vec<TraceEvent>,
    pub backtrace: Option<String>,
}

pub(crate) fn replay_command(
    config: &Config,
    schedule: &Schedule,
    seed: Option<u64>,
    test: &str,
) -> String {
    let long = schedule.to_string().len() > crate::report::failure::LONG_SCHEDULE;
    let in_test = !test.is_empty() && test != "main";
    let package = std::env::var("CARGO_PKG_NAME")
        .map(|p| format!(" -p {p}"))
        .unwrap_or_default();
    // Which store each load read is in the schedule only under the model that chose it.
    let memory = match config.memory {
        crate::config::Memory::Relaxed => format!("{}=relaxed ", env::MEMORY),
        crate::config::Memory::Sc => String::new(),
    };
    let template = match &config.replay_command {
        Some(t) => t.clone(),
        // A command line people copy: a long schedule of a strategy whose executions depend
        // on their seed alone (random, pos) replays by its seed,
        // and so does a crash, which left no schedule (it ran first in a fresh process, so
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
        None if memory.is_empty() => {
            "pulse::Builder::new().replay(\"{schedule}\").unwrap().check(..)".to_string()
        }
        None => "pulse::Builder::new().memory(Memory::Relaxed).replay(\"{schedule}\").unwrap().check(..)"
            .to_string(),
    };
    template
        .replace("{schedule}", &schedule.to_string())
        .replace(
            "{seed}",
            &seed.map_or_else(|| "-".to_string(), |s| s.to_string()),
        )
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
    let (kind, message, location, thread, details, backtrace) = match *stop {
        Stop::Panic { thread } => {
            let t = &st.threads[thread as usize];
            let mut details = Vec::new();
            if thread != 0 {
                details.push("(the thread's JoinHandle was never joined, so nothing observed this panic)".to_string());
            }
            // `join().unwrap()` on a panicked thread says only `Any { .. }`: the root cause is
            // the joined thread's own panic, so that leads the report.
            let (thread, record) = match (&t.panic, root_cause(st, thread)) {
                (Some(effect), Some(cause)) if effect.message.contains("Any { .. }") => {
                    let at = effect.location.as_deref().map(|l| format!(" at {l}")).unwrap_or_default();
                    details.push(format!("which made thread '{}' panic{at}: {}", st.thread_name(thread), effect.message));
                    (cause, st.threads[cause as usize].panic.clone())
                }
                _ => (thread, t.panic.clone()),
            };
            (
                FailureKind::Panic,
                record.as_ref().map_or_else(|| "panicked".to_string(), |r| r.message.clone()),
                record.as_ref().and_then(|r| r.location.clone()),
                st.thread_name(thread),
                details,
                record.and_then(|r| r.backtrace),
            )
        }
        Stop::Deadlock | Stop::LeakedThread => {
            let lines = blocked_lines();
            let (kind, message) = if matches!(stop, Stop::Deadlock) {
                (FailureKind::Deadlock, format!("deadlock: all {} live threads are blocked", lines.len()))
            } else {
                (FailureKind::LeakedThread, format!("the test's main thread returned, but {} thread(s) stay blocked forever", lines.len()))
            };
            let (thread, location) = first_blocked().map_or(("-".to_string(), None), |(t, l)| (st.thread_name(t), Some(l)));
            (kind, message, location, thread, lines, None)
        }
        Stop::StepLimit => {
            let mut busy: Vec<(u64, Tid)> = st
                .threads
                .iter()
                .enumerate()
                .filter(|(_, t)| !t.is_finished())
                .map(|(i, t)| (t.steps, i as Tid))
                .collect();
            busy.sort_by(|a, b| b.cmp(a));
            let details = busy
                .iter()
                .map(|&(steps, t)| {
                    let at = st.threads[t as usize].last_location.map(|l| format!(", last at {}", location_string(l))).unwrap_or_default();
                    format!("thread '{}' took {steps} steps{at}", st.thread_name(t))
                })
                .collect();
            let top = busy.first().map(|&(_, t)| t);
            // Timed waits kept running out up to the end: the threads sleep and poll (time
            // passes, nothing happens), which no bound on steps would change.
            let polling = st.last_timer_step > 0
                && st.steps.saturating_sub(st.last_timer_step) < (st.config.max_steps / 10).max(1_000);
            (
                if polling { FailureKind::Livelock } else { FailureKind::StepLimit },
                if polling {
                    format!(
                        "livelock: {} of virtual time passed ({} scheduling points) while threads kept sleeping or waiting with timeouts and waking again, and the test did not finish: a polling loop whose condition never comes",
                        virtual_time(st.clock_ns),
                        st.config.max_steps
                    )
                } else if st.main_returned() {
                    format!(
                        "the test's main thread had returned, but other threads were still running after {} scheduling points ({} of virtual time): a background thread that never ends (std would let the test pass and kill it; pulse runs threads to completion), or a livelock",
                        st.step_bound,
                        virtual_time(st.clock_ns)
                    )
                } else {
                    format!(
                        "execution passed {} scheduling points ({} of virtual time) without finishing: a livelock, a spin or polling loop that never sees its condition, or a runaway loop (raise the bound with --max-steps / Builder::max_steps if the test is just long)",
                        st.step_bound,
                        virtual_time(st.clock_ns)
                    )
                },
                top.and_then(|t| st.threads[t as usize].last_location.map(location_string)),
                top.map_or("-".to_string(), |t| st.thread_name(t)),
                details,
                None,
            )
        }
        Stop::ReplayDiverged => (
            FailureKind::ReplayDiverged,
            format!(
                "the schedule does not match the program after {} choices (was the code or the test changed since it was recorded?)",
                st.schedule.len()
            ),
            None,
            st.thread_name(st.current),
            Vec::new(),
            None,
        ),
    };
    Explanation {
        kind,
        message,
        location,
        thread,
        details,
        trace,
        backtrace,
    }
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
const KEPT_TRACE: usize = 10_000;

fn resolve_trace(st: &ExecState) -> Vec<TraceEvent> {
    let Some(events) = &st.trace else {
        return Vec::new();
    };
    events[events.len().saturating_sub(KEPT_TRACE)..]
        .iter()
        .map(|e| TraceEvent {
            step: e.step,
            thread: st.thread_name(e.thread),
            op: e.describe(),
            object: e.object.map(|o| o.to_string()),
            location: e.location.map(location_string),
            clock_ns: e.clock_ns,
        })
        .collect()
}

/// Another thread that panicked before `thread` did (the first, by thread order).
fn root_cause(st: &ExecState, thread: Tid) -> Option<Tid> {
    st.threads
        .iter()
        .enumerate()
        .find(|(i, t)| *i as Tid != thread && t.panic.is_some())
        .map(|(i, _)| i as Tid)
}

/// Virtual time for people: `1.5s`, `20ms`, `3µs`.
fn virtual_time(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns}ns"),
        1_000..1_000_000 => format!("{}µs", ns / 1_000),
        1_000_000..1_000_000_000 => format!("{}ms", ns / 1_000_000),
        _ => format!("{:.1}s", ns as f64 / 1e9),
    }
}
