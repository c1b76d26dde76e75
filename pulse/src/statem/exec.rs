//! Runs one test case under pulse's scheduler (the prefix on the execution's main thread,
//! each branch on a virtual thread of its own, one seed) and judges what it observed: the
//! prefix against the postconditions in sequence, the branches by linearizability.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use std::fmt::Debug;

use pulse_lincheck::{check_with_timeout, Operation, Verdict};
use pulse_protocol::trace::Trace;
use pulse_runtime::{payload_message, Builder, Isolation, TraceKind};

use super::case::{Layout, Pool};
use super::{Env, StateMachine, Var};

/// One branch command as it ran: when it was called and returned on the execution's
/// logical clock (every virtual thread runs on one OS thread, so the order of these stamps
/// is the order pulse ran the calls in).
#[derive(Clone, Debug)]
pub(crate) struct Event {
    pub var: Var,
    pub branch: usize,
    pub call: u64,
    pub ret: u64,
}

/// What a case's run showed.
pub(crate) struct Observed<R> {
    /// Each command's response, by var (`None`: not run).
    pub results: Vec<Option<R>>,
    pub events: Vec<Event>,
}

/// Why a case failed.
pub(crate) enum Failure<R> {
    /// The execution failed under pulse: a panic (a command's, or a branch's), a deadlock,
    /// a livelock. The text is pulse's headline and details.
    Execution(String),
    /// A prefix command's response broke its postcondition.
    Postcondition { var: Var, observed: Observed<R> },
    /// The branches' history has no linearization.
    NotLinearizable {
        observed: Observed<R>,
        history: Vec<Operation<Var, R>>,
        verdict: Verdict,
    },
}

/// A case's result under one seed.
pub(crate) enum Run<R> {
    Passed,
    /// Passed, but the linearizability check ran out of time.
    Unknown,
    Failed(Failure<R>),
}

/// The linearizability checker's view of a model: inputs are vars, the state starts where
/// the prefix left it.
struct Lin<'a, M: StateMachine> {
    model: &'a M,
    cmds: &'a [Option<M::Command>],
    results: &'a [Option<M::Response>],
    start: M::State,
}

impl<M: StateMachine> pulse_lincheck::Model for Lin<'_, M> {
    type Input = Var;
    type Output = M::Response;
    type State = M::State;

    fn init(&self) -> M::State {
        self.start.clone()
    }

    fn step(&self, state: &M::State, var: &Var, output: Option<&M::Response>) -> Option<M::State> {
        let cmd = self.cmds[var.0].as_ref()?;
        let env = Env {
            values: self.results,
        };
        if let Some(resp) = output {
            if !self.model.postcondition(state, cmd, resp, &env) {
                return None;
            }
        }
        Some(self.model.next_state(state, cmd, *var))
    }
}

/// Runs `layout` once under `seed` and checks it.
pub(crate) fn run_case<M: StateMachine>(
    model: &M,
    pool: &Pool<M::Command>,
    layout: &Layout,
    seed: u64,
    check_timeout: Duration,
) -> Run<M::Response> {
    run_case_traced(model, pool, layout, seed, check_timeout, false).0
}

/// The name of branch `b`'s thread (0-based `b`): the trace file finds its operations by it.
fn branch_thread(b: usize) -> String {
    format!("branch-{}", b + 1)
}

/// Marks a command's call and return in the execution's trace (nothing unless it is
/// traced); `label_operations` names them afterwards.
fn note_op(kind: TraceKind) {
    if let Some(ctx) = pulse_runtime::current() {
        ctx.note(kind, "statem", None, None);
    }
}

/// As `run_case`; with `traced`, the execution's trace file too (the passing execution
/// replayed with tracing, or the failing one's), each command's call and return in it as an
/// `invoke` and a `response` event on the thread that ran it.
pub(crate) fn run_case_traced<M: StateMachine>(
    model: &M,
    pool: &Pool<M::Command>,
    layout: &Layout,
    seed: u64,
    check_timeout: Duration,
    traced: bool,
) -> (Run<M::Response>, Option<Trace>) {
    let nvars = pool.trees.len();
    let mut cmds: Vec<Option<M::Command>> = vec![None; nvars];
    for &v in layout.prefix.iter().chain(layout.branches.iter().flatten()) {
        cmds[v.0] = Some(pool.cmd(v));
    }
    let observed: RefCell<Option<Observed<M::Response>>> = RefCell::new(None);
    let mut builder = Builder::new()
        .seed(seed)
        .schedules(1)
        .isolation(Isolation::Off);
    builder.config.trace_passing = traced;
    let report = builder.run(|| {
        let sut = model.setup();
        let mut results: Vec<Option<M::Response>> = vec![None; nvars];
        for &v in &layout.prefix {
            let cmd = cmds[v.0].as_ref().expect("laid out");
            note_op(TraceKind::Invoke);
            let resp = model.run(&sut, cmd, &Env { values: &results });
            note_op(TraceKind::Response);
            results[v.0] = Some(resp);
        }
        let clock = AtomicU64::new(0);
        let recorded: Mutex<Vec<(Event, M::Response)>> = Mutex::new(Vec::new());
        let (sut_ref, results_ref, cmds_ref) = (&sut, &results, &cmds);
        let (clock_ref, recorded_ref) = (&clock, &recorded);
        crate::std::thread::scope(|s| {
            let handles: Vec<_> = layout
                .branches
                .iter()
                .enumerate()
                .map(|(b, branch)| {
                    let spawn = crate::std::thread::Builder::new().name(branch_thread(b));
                    spawn
                        .spawn_scoped(s, move || {
                            let mut local = results_ref.clone();
                            for &v in branch {
                                let cmd = cmds_ref[v.0].as_ref().expect("laid out");
                                let call = clock_ref.fetch_add(1, Ordering::Relaxed);
                                note_op(TraceKind::Invoke);
                                let resp = model.run(sut_ref, cmd, &Env { values: &local });
                                note_op(TraceKind::Response);
                                let ret = clock_ref.fetch_add(1, Ordering::Relaxed);
                                local[v.0] = Some(resp.clone());
                                let event = Event {
                                    var: v,
                                    branch: b,
                                    call,
                                    ret,
                                };
                                recorded_ref
                                    .lock()
                                    .unwrap_or_else(|e| e.into_inner())
                                    .push((event, resp));
                            }
                        })
                        .expect("spawning a branch thread")
                })
                .collect();
            for (b, h) in handles.into_iter().enumerate() {
                if let Err(payload) = h.join() {
                    panic!("branch {} panicked: {}", b + 1, payload_message(&*payload));
                }
            }
        });
        let mut events = Vec::new();
        for (event, resp) in recorded.into_inner().unwrap_or_else(|e| e.into_inner()) {
            results[event.var.0] = Some(resp);
            events.push(event);
        }
        model.teardown(sut);
        *observed.borrow_mut() = Some(Observed { results, events });
    });
    let mut trace = match &report.failure {
        Some(f) => f.full_trace.clone(),
        None => report.trace,
    };
    if let Some(failure) = report.failure {
        if let Some(t) = &mut trace {
            t.outcome = "execution".into();
            t.message = failure.message.clone();
            label_operations(t, layout, &cmds, None::<&Observed<M::Response>>);
        }
        let mut text = failure.message.clone();
        if let Some(loc) = &failure.location {
            text.push_str(&format!(" (at {loc}, thread '{}')", failure.thread));
        }
        for d in &failure.details {
            text.push_str(&format!("\n    {d}"));
        }
        return (Run::Failed(Failure::Execution(text)), trace);
    }
    let Some(observed) = observed.into_inner() else {
        return (
            Run::Failed(Failure::Execution(
                "the execution ended without finishing the case".into(),
            )),
            trace,
        );
    };
    let run = judge(model, &cmds, layout, observed, check_timeout);
    if let Some(t) = &mut trace {
        let observed = match &run {
            Run::Failed(Failure::Postcondition { observed, .. })
            | Run::Failed(Failure::NotLinearizable { observed, .. }) => Some(observed),
            _ => None,
        };
        label_operations(t, layout, &cmds, observed);
        let response_of = |t: &Trace, var: Var| {
            let name = format!("v{}", var.0);
            t.events
                .iter()
                .position(|e| e.kind == TraceKind::Response && e.object.as_deref() == Some(&name))
                .map(|i| i as u64)
        };
        match &run {
            Run::Failed(Failure::Postcondition { var, .. }) => {
                t.outcome = "postcondition".into();
                t.message = format!("v{}'s response breaks its postcondition", var.0);
                t.failing_event = response_of(t, *var);
            }
            Run::Failed(Failure::NotLinearizable {
                history, verdict, ..
            }) => {
                t.outcome = "linearizability".into();
                t.message = "the branches' history has no linearization".into();
                let stuck = match verdict {
                    Verdict::NotLinearizable(e) => e.cannot_follow,
                    _ => None,
                };
                if let Some(op) = stuck.and_then(|k| history.get(k)) {
                    t.message = format!(
                        "no linearization: v{} cannot follow the longest linearizable prefix",
                        op.input.0
                    );
                    t.failing_event = response_of(t, op.input);
                }
            }
            _ => {}
        }
    }
    (run, trace)
}

/// Names each `invoke`/`response` note after its command: `op` the command (`Debug`),
/// `object` its var (`v3`), a response's `value` what it returned (when `observed` has it).
/// Branch `b`'s notes are on the thread named `branch_thread(b)`, in the branch's order; any
/// other thread's are the prefix's. Locations inside this file (the notes, the branches'
/// spawns and joins) are dropped: they are pulse's, not the user's.
fn label_operations<C: Debug, R: Debug>(
    trace: &mut Trace,
    layout: &Layout,
    cmds: &[Option<C>],
    observed: Option<&Observed<R>>,
) {
    let names: Vec<(u32, String)> = trace
        .threads
        .iter()
        .map(|t| (t.id, t.name.clone()))
        .collect();
    let ops_of = |thread: u32| -> &[Var] {
        let name = names
            .iter()
            .find(|(id, _)| *id == thread)
            .map(|(_, n)| n.as_str());
        (0..layout.branches.len())
            .find(|&b| name == Some(branch_thread(b).as_str()))
            .map_or(&layout.prefix[..], |b| &layout.branches[b][..])
    };
    let mut next: std::collections::BTreeMap<(u32, bool), usize> = Default::default();
    // This file spawns and joins the branches: no user's source line.
    let own = concat!(file!(), ":");
    for th in &mut trace.threads {
        if th.spawn_site.as_deref().is_some_and(|l| l.starts_with(own)) {
            th.spawn_site = None;
        }
    }
    for e in &mut trace.events {
        if e.location.as_deref().is_some_and(|l| l.starts_with(own)) {
            e.location = None;
            e.location_inferred = false;
        }
        let invoke = match e.kind {
            TraceKind::Invoke => true,
            TraceKind::Response => false,
            _ => continue,
        };
        let k = next.entry((e.thread, invoke)).or_insert(0);
        let Some(&var) = ops_of(e.thread).get(*k) else {
            continue;
        };
        *k += 1;
        e.location = None;
        e.location_inferred = false;
        e.op = cmds[var.0]
            .as_ref()
            .map_or_else(|| "?".into(), |c| format!("{c:?}"));
        e.object = Some(format!("v{}", var.0));
        if !invoke {
            e.value = observed
                .and_then(|o| o.results.get(var.0))
                .and_then(Option::as_ref)
                .map(|r| format!("{r:?}"));
        }
    }
}

fn judge<M: StateMachine>(
    model: &M,
    cmds: &[Option<M::Command>],
    layout: &Layout,
    observed: Observed<M::Response>,
    check_timeout: Duration,
) -> Run<M::Response> {
    let mut state = model.initial_state();
    for &v in &layout.prefix {
        let cmd = cmds[v.0].as_ref().expect("laid out");
        let resp = observed.results[v.0].as_ref().expect("prefix ran");
        let env = Env {
            values: &observed.results,
        };
        if !model.postcondition(&state, cmd, resp, &env) {
            return Run::Failed(Failure::Postcondition { var: v, observed });
        }
        state = model.next_state(&state, cmd, v);
    }
    if observed.events.is_empty() {
        return Run::Passed;
    }
    let history: Vec<Operation<Var, M::Response>> = observed
        .events
        .iter()
        .map(|e| Operation {
            client: e.branch + 1,
            input: e.var,
            call: e.call,
            output: observed.results[e.var.0].clone(),
            ret: Some(e.ret),
        })
        .collect();
    let lin = Lin {
        model,
        cmds,
        results: &observed.results,
        start: state,
    };
    match check_with_timeout(&lin, &history, check_timeout) {
        Verdict::Linearizable => Run::Passed,
        Verdict::Unknown(_) => Run::Unknown,
        verdict => Run::Failed(Failure::NotLinearizable {
            observed,
            history,
            verdict,
        }),
    }
}
