//! Parallel state-machine testing with a linearizability oracle: QuickCheck's
//! `eqc_par_statem` on pulse's scheduler (Claessen et al., ICFP 2009, §3–4).
//!
//! A user writes one sequential model of an API ([`StateMachine`]): its state, the commands a
//! state allows (proptest strategies), how each command changes the state, and what it may
//! return. A test case is a sequential prefix plus K parallel branches (K = 2 by default),
//! chosen so every interleaving of the branches satisfies the preconditions, and a scheduler
//! seed. The case runs under pulse's scheduler with the branches on virtual threads; its
//! history passes when some order of the branch commands, consistent with real time, is one
//! the model allows (`pulse-lincheck`). A failing case is shrunk to a minimally parallel one
//! (commands deleted, moved from the branches into the prefix, empty branches dropped,
//! arguments shrunk), each candidate run under several seeds, and reported with its history
//! drawn per thread, why no linearization exists, and one line that replays it.
//!
//! Enabled by `pulse`'s cargo feature `statem`.

use std::fmt::Debug;
use std::hash::Hash;

pub use proptest;
pub use proptest::strategy::{BoxedStrategy, Just, Strategy};
pub use pulse_lincheck as lincheck;
/// The trace file's format (a failure's [`Outcome::Failed`] `trace`).
pub use pulse_protocol::trace;

mod case;
mod exec;
mod report;
mod runner;

pub use runner::{Config, Outcome, REPLAY_ENV};

/// The name of a command's result, for later commands to use (`{var, N}` in eqc_statem).
/// While test cases are generated, results are symbolic: a model's state holds `Var`s; when a
/// case runs, [`Env`] maps each to the value the system returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Var(pub usize);

/// The results of the commands run so far (by [`Var`]).
pub struct Env<'a, R> {
    values: &'a [Option<R>],
}

impl<R> Env<'_, R> {
    /// The result of the command named `var`, if it has run (in this thread or before the
    /// branches started).
    pub fn get(&self, var: Var) -> Option<&R> {
        self.values.get(var.0).and_then(Option::as_ref)
    }
}

/// A sequential model of an API and the system under test that implements it.
///
/// The model half is symbolic and deterministic: `initial_state`, `commands`,
/// `precondition`, `next_state`, and either `postcondition` or `expected` (the response the
/// model predicts). The system half runs the real thing: `setup`, `run`, `teardown`. `run`
/// is called from several virtual threads at once on one shared `Sut`.
pub trait StateMachine: Sync {
    /// The model state. Equal states must behave the same (the checker caches on them).
    type State: Clone + Debug + Eq + Hash;
    type Command: Clone + Debug + Send + Sync + 'static;
    /// What the system returns for a command.
    type Response: Clone + Debug + PartialEq + Send + Sync;
    /// The system under test, shared by the branches.
    type Sut: Sync;

    fn initial_state(&self) -> Self::State;

    /// The commands worth trying in `state` (a proptest strategy, so its values shrink).
    fn commands(&self, state: &Self::State) -> BoxedStrategy<Self::Command>;

    /// Whether `cmd` may run in `state` (checked while generating and shrinking, in every
    /// interleaving of the branches). Also where a command using a [`Var`] checks that the
    /// var is known in `state` (its producer may have been shrunk away).
    fn precondition(&self, _state: &Self::State, _cmd: &Self::Command) -> bool {
        true
    }

    /// The state after `cmd`, whose result is named `var`.
    fn next_state(&self, state: &Self::State, cmd: &Self::Command, var: Var) -> Self::State;

    /// The response the model predicts for `cmd` in `state`, if it predicts one (used by the
    /// default `postcondition`).
    fn expected(
        &self,
        _state: &Self::State,
        _cmd: &Self::Command,
        _env: &Env<'_, Self::Response>,
    ) -> Option<Self::Response> {
        None
    }

    /// Whether `resp` is a correct response to `cmd` in `state`. By default: equal to
    /// [`expected`](Self::expected) when there is a prediction.
    fn postcondition(
        &self,
        state: &Self::State,
        cmd: &Self::Command,
        resp: &Self::Response,
        env: &Env<'_, Self::Response>,
    ) -> bool {
        self.expected(state, cmd, env).is_none_or(|e| &e == resp)
    }

    /// A fresh system under test (called inside the execution, so it may create pulse's or
    /// instrumented std's locks and threads).
    fn setup(&self) -> Self::Sut;

    /// Runs one command on the system.
    fn run(
        &self,
        sut: &Self::Sut,
        cmd: &Self::Command,
        env: &Env<'_, Self::Response>,
    ) -> Self::Response;

    /// Called after each case with the system (by default it is dropped).
    fn teardown(&self, _sut: Self::Sut) {}
}

/// Runs parallel state-machine tests of `model` with `config` and panics with the shrunk
/// counterexample's report if one fails. A `#[test]` calling this is an ordinary test:
/// `cargo test` runs it, and so does `cargo pulse test`.
#[track_caller]
pub fn check<M: StateMachine>(model: &M, config: Config) {
    if let Outcome::Failed { report, .. } = run(model, config) {
        panic!("{report}");
    }
}

/// As [`check`], returning the outcome instead of panicking.
pub fn run<M: StateMachine>(model: &M, config: Config) -> Outcome {
    runner::run(model, config)
}

/// Replays the counterexample `token` names (the `PULSE_STATEM_REPLAY=<token>` of a report)
/// with the same model and configuration: the same case, shrunk the same way, under the same
/// scheduler seed.
pub fn replay<M: StateMachine>(model: &M, config: Config, token: &str) -> Outcome {
    runner::replay(model, &config, token)
}
