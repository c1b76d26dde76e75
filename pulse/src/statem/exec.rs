//! Runs one test case under pulse's scheduler (the prefix on the execution's main thread,
//! each branch on a virtual thread of its own, one seed) and judges what it observed: the
//! prefix against the postconditions in sequence, the branches by linearizability.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use pulse_lincheck::{check_with_timeout, Operation, Verdict};
use pulse_runtime::{payload_message, Builder, Isolation};

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
    let nvars = pool.trees.len();
    let mut cmds: Vec<Option<M::Command>> = vec![None; nvars];
    for &v in layout.prefix.iter().chain(layout.branches.iter().flatten()) {
        cmds[v.0] = Some(pool.cmd(v));
    }
    let observed: RefCell<Option<Observed<M::Response>>> = RefCell::new(None);
    let report = Builder::new()
        .seed(seed)
        .schedules(1)
        .isolation(Isolation::Off)
        .run(|| {
            let sut = model.setup();
            let mut results: Vec<Option<M::Response>> = vec![None; nvars];
            for &v in &layout.prefix {
                let cmd = cmds[v.0].as_ref().expect("laid out");
                let resp = model.run(&sut, cmd, &Env { values: &results });
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
                        s.spawn(move || {
                            let mut local = results_ref.clone();
                            for &v in branch {
                                let cmd = cmds_ref[v.0].as_ref().expect("laid out");
                                let call = clock_ref.fetch_add(1, Ordering::Relaxed);
                                let resp = model.run(sut_ref, cmd, &Env { values: &local });
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
    if let Some(failure) = report.failure {
        let mut text = failure.message.clone();
        if let Some(loc) = &failure.location {
            text.push_str(&format!(" (at {loc}, thread '{}')", failure.thread));
        }
        for d in &failure.details {
            text.push_str(&format!("\n    {d}"));
        }
        return Run::Failed(Failure::Execution(text));
    }
    let Some(observed) = observed.into_inner() else {
        return Run::Failed(Failure::Execution(
            "the execution ended without finishing the case".into(),
        ));
    };
    judge(model, &cmds, layout, observed, check_timeout)
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
