//! The counter of the linearizability blog post: `incr` as a load then a store is found
//! (the lost update) and shrunk to two parallel `incr`s and a `get`; `fetch_add` passes.

use pulse::statem::{self, BoxedStrategy, Config, Env, Just, Outcome, StateMachine, Strategy, Var};
use pulse::std::sync::atomic::{AtomicU64, Ordering::SeqCst};

#[derive(Clone, Debug, PartialEq, Eq)]
enum Cmd {
    Incr,
    Get,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Resp {
    Done,
    Value(u64),
}

struct CounterModel {
    atomic: bool,
}

impl StateMachine for CounterModel {
    type State = u64;
    type Command = Cmd;
    type Response = Resp;
    type Sut = AtomicU64;

    fn initial_state(&self) -> u64 {
        0
    }

    fn commands(&self, _: &u64) -> BoxedStrategy<Cmd> {
        pulse::statem::proptest::prop_oneof![Just(Cmd::Incr), Just(Cmd::Get)].boxed()
    }

    fn next_state(&self, n: &u64, cmd: &Cmd, _: Var) -> u64 {
        match cmd {
            Cmd::Incr => n + 1,
            Cmd::Get => *n,
        }
    }

    fn expected(&self, n: &u64, cmd: &Cmd, _: &Env<'_, Resp>) -> Option<Resp> {
        Some(match cmd {
            Cmd::Incr => Resp::Done,
            Cmd::Get => Resp::Value(*n),
        })
    }

    fn setup(&self) -> AtomicU64 {
        AtomicU64::new(0)
    }

    fn run(&self, counter: &AtomicU64, cmd: &Cmd, _: &Env<'_, Resp>) -> Resp {
        match cmd {
            Cmd::Incr if self.atomic => {
                counter.fetch_add(1, SeqCst);
                Resp::Done
            }
            Cmd::Incr => {
                let v = counter.load(SeqCst);
                counter.store(v + 1, SeqCst);
                Resp::Done
            }
            Cmd::Get => Resp::Value(counter.load(SeqCst)),
        }
    }
}

#[test]
fn a_non_atomic_incr_is_found_and_shrunk_to_two_incrs_and_a_get() {
    let outcome = statem::run(&CounterModel { atomic: false }, Config::default().seed(7));
    let Outcome::Failed {
        report,
        kind,
        prefix,
        commands,
        ..
    } = outcome
    else {
        panic!("the lost update was not found: {outcome:?}");
    };
    eprintln!("{report}");
    assert_eq!(kind, "linearizability", "{report}");
    assert_eq!(prefix, 0, "{report}");
    let mut branches: Vec<Vec<String>> = commands[1..].to_vec();
    branches.sort_by_key(Vec::len);
    assert_eq!(
        branches,
        vec![vec!["Incr".to_string()], vec!["Incr".into(), "Get".into()]],
        "{report}"
    );
    assert!(report.contains("not linearizable"), "{report}");
    assert!(
        report.contains("replay: PULSE_STATEM_REPLAY=s1:7:"),
        "{report}"
    );
}

/// The failure's trace file links each operation's interval to its events: an `invoke` and
/// a `response` on the branch thread that ran it, and between them that thread's accesses
/// to the counter (the load and the store of a non-atomic `incr`).
#[test]
fn the_failing_execution_s_trace_has_each_operation_s_interval() {
    use pulse::statem::trace::EventKind;
    let outcome = statem::run(&CounterModel { atomic: false }, Config::default().seed(7));
    let Outcome::Failed {
        trace, commands, ..
    } = outcome
    else {
        panic!("the lost update was not found: {outcome:?}");
    };
    let trace = trace.expect("a failure has its trace");
    assert_eq!(trace.outcome, "linearizability");
    assert!(trace.seed.is_some());
    let intervals = trace.intervals();
    let ops: usize = commands.iter().map(Vec::len).sum();
    assert_eq!(
        intervals.len(),
        ops,
        "one interval per command: {intervals:?}"
    );
    let name = |t: u32| trace.thread_name(t);
    let mut per_branch: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for iv in &intervals {
        let inv = &trace.events[iv.invoke];
        let resp = &trace.events[iv.response.expect("every command returned")];
        assert_eq!((inv.thread, resp.thread), (iv.thread, iv.thread));
        assert_eq!(inv.object, resp.object, "one var names both ends");
        assert!(inv.object.as_deref().is_some_and(|v| v.starts_with('v')));
        assert_eq!(inv.location, None, "no location inside pulse");
        per_branch
            .entry(name(iv.thread))
            .or_default()
            .push(inv.op.clone());
        // What the operation did: its thread's events between the two ends, each an
        // access to the counter.
        let inside: Vec<_> = trace.events[iv.invoke + 1..iv.response.unwrap()]
            .iter()
            .filter(|e| e.thread == iv.thread)
            .collect();
        match inv.op.as_str() {
            "Incr" => {
                assert_eq!(resp.value.as_deref(), Some("Done"));
                assert!(inside.iter().any(|e| e.kind == EventKind::Load));
                assert!(inside.iter().any(|e| e.kind == EventKind::Store));
            }
            "Get" => {
                assert!(resp
                    .value
                    .as_deref()
                    .is_some_and(|v| v.starts_with("Value(")));
                assert!(inside.iter().any(|e| e.kind == EventKind::Load));
                assert!(!inside.iter().any(|e| e.kind == EventKind::Store));
            }
            other => panic!("{other}"),
        }
    }
    let mut branches: Vec<Vec<String>> = per_branch
        .iter()
        .filter(|(n, _)| n.starts_with("branch-"))
        .map(|(_, ops)| ops.clone())
        .collect();
    branches.sort_by_key(Vec::len);
    let mut expected: Vec<Vec<String>> = commands[1..].to_vec();
    expected.sort_by_key(Vec::len);
    assert_eq!(
        branches, expected,
        "each branch's operations on its own thread"
    );
    for e in &trace.events {
        assert!(
            e.location
                .as_deref()
                .is_none_or(|l| !l.contains("statem/exec.rs")),
            "pulse's own lines are no user's: {e:?}"
        );
    }
    // The failing event is the response of the operation no linearization could place.
    let fail = trace.failing_event.expect("a failing event") as usize;
    assert_eq!(
        trace.events[fail].kind,
        EventKind::Response,
        "{:?}",
        trace.events[fail]
    );
    assert!(trace.message.contains("cannot follow"), "{}", trace.message);
}

#[test]
fn an_atomic_incr_passes_a_thousand_generated_tests() {
    let outcome = statem::run(
        &CounterModel { atomic: true },
        Config::default().tests(1000).seed(1),
    );
    assert!(
        matches!(
            outcome,
            Outcome::Passed {
                tests: 1000,
                undecided: 0
            }
        ),
        "{outcome:?}"
    );
}

#[test]
fn the_replay_token_reproduces_the_shrunk_case() {
    let model = CounterModel { atomic: false };
    let Outcome::Failed {
        token,
        commands,
        kind,
        ..
    } = statem::run(&model, Config::default().seed(11))
    else {
        panic!("not found");
    };
    let again = statem::replay(&model, Config::default(), &token);
    let Outcome::Failed {
        commands: replayed,
        kind: replayed_kind,
        report,
        ..
    } = again
    else {
        panic!("the replay passed");
    };
    assert_eq!((replayed, replayed_kind), (commands, kind), "{report}");
    assert!(
        report.starts_with(&format!("pulse statem: replaying {token}")),
        "{report}"
    );
}

/// What `cargo pulse test` does to a statem test: its body runs inside the harness's
/// search, and the property asks to run outside it instead.
#[test]
fn under_the_test_harness_a_property_runs_its_own_search() {
    let meta = |name| pulse::__private::TestMeta {
        module_path: "statem_counter",
        name,
        should_panic: false,
    };
    pulse::__private::run_test(meta("atomic"), || {
        statem::check(
            &CounterModel { atomic: true },
            Config::default().tests(50).seed(3),
        )
    });
    let failed = std::panic::catch_unwind(|| {
        pulse::__private::run_test(meta("non_atomic"), || {
            statem::check(&CounterModel { atomic: false }, Config::default().seed(3))
        })
    });
    let payload = failed.expect_err("the lost update passed under the harness");
    let text = payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        text.contains("not linearizable") && text.contains("PULSE_STATEM_REPLAY=s1:3:"),
        "{text}"
    );
}

/// A counter whose `get` is wrong from 2 on, and one whose third `incr` panics.
struct Faulty {
    panics: bool,
}

impl StateMachine for Faulty {
    type State = u64;
    type Command = Cmd;
    type Response = Resp;
    type Sut = AtomicU64;

    fn initial_state(&self) -> u64 {
        0
    }
    fn commands(&self, _: &u64) -> BoxedStrategy<Cmd> {
        pulse::statem::proptest::prop_oneof![Just(Cmd::Incr), Just(Cmd::Get)].boxed()
    }
    fn next_state(&self, n: &u64, cmd: &Cmd, _: Var) -> u64 {
        CounterModel { atomic: true }.next_state(n, cmd, Var(0))
    }
    fn expected(&self, n: &u64, cmd: &Cmd, env: &Env<'_, Resp>) -> Option<Resp> {
        CounterModel { atomic: true }.expected(n, cmd, env)
    }
    fn setup(&self) -> AtomicU64 {
        AtomicU64::new(0)
    }
    fn run(&self, counter: &AtomicU64, cmd: &Cmd, _: &Env<'_, Resp>) -> Resp {
        match cmd {
            Cmd::Incr => {
                let before = counter.fetch_add(1, SeqCst);
                assert!(!(self.panics && before == 2), "the third incr panics");
                Resp::Done
            }
            Cmd::Get => {
                let n = counter.load(SeqCst);
                Resp::Value(if n >= 2 && !self.panics { n + 1 } else { n })
            }
        }
    }
}

#[test]
fn sequential_cases_shrink_to_the_shortest_failing_sequence() {
    let outcome = statem::run(
        &Faulty { panics: false },
        Config::default().sequential().seed(5),
    );
    let Outcome::Failed {
        report,
        kind,
        commands,
        branches,
        ..
    } = outcome
    else {
        panic!("not found: {outcome:?}");
    };
    assert_eq!(kind, "postcondition", "{report}");
    assert!(branches.is_empty(), "{report}");
    assert_eq!(
        commands,
        vec![vec!["Incr".to_string(), "Incr".into(), "Get".into()]],
        "{report}"
    );
}

#[test]
fn a_command_that_panics_fails_its_case_with_the_panic() {
    let outcome = statem::run(&Faulty { panics: true }, Config::default().seed(5));
    let Outcome::Failed {
        report,
        kind,
        commands,
        ..
    } = outcome
    else {
        panic!("not found: {outcome:?}");
    };
    assert_eq!(kind, "execution", "{report}");
    assert!(report.contains("the third incr panics"), "{report}");
    let total: usize = commands.iter().map(Vec::len).sum();
    assert_eq!(total, 3, "three incrs, nothing else: {report}");
}

#[test]
fn three_branches_work_alike() {
    let three = || Config::default().threads(3).max_branch(3);
    let outcome = statem::run(&CounterModel { atomic: true }, three().tests(200).seed(2));
    assert!(
        matches!(
            outcome,
            Outcome::Passed {
                tests: 200,
                undecided: 0
            }
        ),
        "{outcome:?}"
    );
    let outcome = statem::run(&CounterModel { atomic: false }, three().seed(2));
    let Outcome::Failed {
        report, commands, ..
    } = outcome
    else {
        panic!("not found: {outcome:?}");
    };
    let total: usize = commands.iter().map(Vec::len).sum();
    assert_eq!(total, 3, "{report}");
}
