//! The human report of a counterexample: the case as prefix and branches with what each
//! command returned, the branches' history drawn as per-thread intervals, why no
//! linearization exists, and the line that replays it.

use std::fmt::Write as _;

use super::case::Case;
use super::exec::{Failure, Observed};
use super::runner::REPLAY_ENV;
use super::{StateMachine, Var};

fn observed_of<R>(failure: Option<&Failure<R>>) -> Option<&Observed<R>> {
    match failure? {
        Failure::Execution(_) => None,
        Failure::Postcondition { observed, .. } | Failure::NotLinearizable { observed, .. } => {
            Some(observed)
        }
    }
}

pub(crate) fn render<M: StateMachine>(
    model: &M,
    case: &Case<M::Command>,
    failure: Option<&Failure<M::Response>>,
    token: &str,
    intro: &str,
) -> String {
    let _ = model;
    let mut out = String::new();
    let _ = writeln!(out, "{intro}");
    let observed = observed_of(failure);
    let line = |out: &mut String, v: Var| {
        let result = observed
            .and_then(|o| o.results.get(v.0).cloned().flatten())
            .map(|r| format!(" -> {r:?}"))
            .unwrap_or_default();
        let _ = writeln!(out, "      v{} = {:?}{result}", v.0, case.pool.cmd(v));
    };
    let _ = writeln!(out, "  prefix:");
    if case.layout.prefix.is_empty() {
        let _ = writeln!(out, "      (empty)");
    }
    for &v in &case.layout.prefix {
        line(&mut out, v);
    }
    for (b, branch) in case.layout.branches.iter().enumerate() {
        let _ = writeln!(out, "  branch {}:", b + 1);
        for &v in branch {
            line(&mut out, v);
        }
    }
    match failure {
        None => {
            let _ = writeln!(
                out,
                "  the shrunk case passed when run again under seed {}: the failure depends on \
                 more than the case and its seed (state outside the execution?)",
                case.seed
            );
        }
        Some(Failure::Execution(text)) => {
            let _ = writeln!(out, "  the execution failed: {text}");
        }
        Some(Failure::Postcondition { var, .. }) => {
            let _ = writeln!(
                out,
                "  postcondition failed: v{} = {:?} in the prefix (run alone, in sequence)",
                var.0,
                case.pool.cmd(*var)
            );
        }
        Some(Failure::NotLinearizable {
            history, verdict, ..
        }) => {
            let _ = writeln!(out, "  history (branch threads; time runs left to right):");
            let labelled: Vec<pulse_lincheck::Operation<String, M::Response>> = history
                .iter()
                .map(|op| pulse_lincheck::Operation {
                    client: op.client,
                    input: format!("v{} {:?}", op.input.0, case.pool.cmd(op.input)),
                    call: op.call,
                    output: op.output.clone(),
                    ret: op.ret,
                })
                .collect();
            out.push_str(&render_history(&labelled, verdict));
        }
    }
    let _ = writeln!(out, "  scheduler seed: {}", case.seed);
    let (label, line) = replay_line(token);
    let _ = writeln!(out, "  {label}: {line}");
    out
}

/// `Debug` of the input is a quoted string here; show it bare.
fn render_history<R: std::fmt::Debug>(
    history: &[pulse_lincheck::Operation<String, R>],
    verdict: &pulse_lincheck::Verdict,
) -> String {
    struct Bare(String);
    impl std::fmt::Debug for Bare {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(&self.0)
        }
    }
    let bare: Vec<pulse_lincheck::Operation<Bare, &R>> = history
        .iter()
        .map(|op| pulse_lincheck::Operation {
            client: op.client,
            input: Bare(op.input.clone()),
            call: op.call,
            output: op.output.as_ref(),
            ret: op.ret,
        })
        .collect();
    pulse_lincheck::render(&bare, verdict)
}

/// The one line that replays a counterexample: under `cargo pulse test` (which sets the
/// replay-command template, and prints its own `replay:` line, the search again from its
/// seed) or plain `cargo test`.
fn replay_line(token: &str) -> (&'static str, String) {
    let test = std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .map(str::to_string);
    let under_pulse = std::env::var_os(pulse_protocol::env::REPLAY_COMMAND).is_some();
    match (test, under_pulse) {
        (Some(t), true) => (
            "replay this case",
            format!("{REPLAY_ENV}={token} cargo pulse test {t} --exact"),
        ),
        (Some(t), false) => (
            "replay",
            format!("{REPLAY_ENV}={token} cargo test -- {t} --exact"),
        ),
        (None, _) => ("replay", format!("{REPLAY_ENV}={token} <the same command>")),
    }
}
