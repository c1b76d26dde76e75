//! Linearizability checking: is there an order of a concurrent history's operations that
//! respects real time (an operation that returned before another was called comes first) and
//! that a sequential model accepts?
//!
//! The algorithm is Wing & Gong's backtracking search with Lowe's memoisation of visited
//! configurations (`check`), run per partition when the model splits its history into
//! independent parts (`Model::partition`, Horn & Kroening's P-compositionality, as porcupine
//! does for key-value stores). A deadline turns a search that runs too long into
//! [`Verdict::Unknown`], never into a wrong answer. Operations whose outcome is unknown (Jepsen's
//! `:info`, an operation cut short) have no return time: they may take effect anywhere after
//! their call, or never.
//!
//! This crate knows nothing of pulse's scheduler: `pulse::statem` runs test cases and hands it
//! the histories, and `cargo pulse check-history` hands it recorded files (`history` parses the
//! two formats, `models` has the built-in register and key-value models).

use std::fmt::{self, Debug, Write as _};
use std::hash::Hash;
use std::time::{Duration, Instant};

mod cache;
mod check;
pub mod history;
pub mod models;
mod states;

/// A sequential specification.
pub trait Model {
    /// What an operation was asked to do.
    type Input;
    /// What it returned.
    type Output;
    /// The model's state. Equal states must behave the same (the search caches on them).
    type State: Clone + Eq + Hash;

    fn init(&self) -> Self::State;

    /// The state after `input` in `state`, if the model allows `output` as its result there.
    /// `output` is `None` when the outcome is unknown (the operation may or may not have taken
    /// effect): a model should then accept, returning the state as if it took effect.
    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: Option<&Self::Output>,
    ) -> Option<Self::State>;

    /// Whether this operation, with this observed output, leaves the state unchanged in every
    /// state the model accepts it in (a read; a compare-and-set that failed). The search then
    /// places it as soon as it can and tries nothing else at that point, which is exact for
    /// such operations and prunes most of a read-heavy history's search. `false` by default.
    fn read_only(&self, _input: &Self::Input, _output: Option<&Self::Output>) -> bool {
        false
    }

    /// Whether `step` would return `Some`. The search asks this instead of `step` for a
    /// read-only operation, whose resulting state it does not need (it is `state`); a model
    /// whose states are costly to clone can answer without building one.
    fn accepts(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: Option<&Self::Output>,
    ) -> bool {
        self.step(state, input, output).is_some()
    }

    /// Splits the history (indices into it) into parts that can be checked independently
    /// (e.g. per key). `None`: one part.
    fn partition(
        &self,
        _history: &[Operation<Self::Input, Self::Output>],
    ) -> Option<Vec<Vec<usize>>> {
        None
    }
}

/// One operation of a concurrent history. Times are any increasing clock (a logical counter
/// or line numbers); only their order matters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operation<I, O> {
    /// The thread or client that ran it (for display).
    pub client: usize,
    pub input: I,
    /// When it was called.
    pub call: u64,
    /// What it returned, `None` when the outcome is unknown.
    pub output: Option<O>,
    /// When it returned, `None` when it never did (unknown outcome).
    pub ret: Option<u64>,
}

/// Why a history is not linearizable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Explanation {
    /// The operations (indices into the history) of the partition that failed.
    pub partition: Vec<usize>,
    /// The longest prefix of a linearization the search found, in order (history indices).
    pub longest_prefix: Vec<usize>,
    /// An operation that cannot follow that prefix: it returned before it could be placed.
    pub cannot_follow: Option<usize>,
}

/// The checker's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Linearizable,
    NotLinearizable(Explanation),
    /// The search was stopped (its deadline passed) before it decided.
    Unknown(String),
}

impl Verdict {
    pub fn is_linearizable(&self) -> bool {
        matches!(self, Verdict::Linearizable)
    }
}

/// Checks `history` against `model` with no time limit.
pub fn check<M: Model>(model: &M, history: &[Operation<M::Input, M::Output>]) -> Verdict {
    check::check(model, history, None)
}

/// Checks `history` against `model`, giving up with [`Verdict::Unknown`] after `timeout`.
pub fn check_with_timeout<M: Model>(
    model: &M,
    history: &[Operation<M::Input, M::Output>],
    timeout: Duration,
) -> Verdict {
    check::check(model, history, Some(Instant::now() + timeout))
}

/// As [`check_with_timeout`], with the partitions spread over `threads` OS threads (the
/// first illegal partition stops the others). The verdict is the same; which violation an
/// illegal history's explanation names may differ from run to run.
pub fn check_parallel<M>(
    model: &M,
    history: &[Operation<M::Input, M::Output>],
    timeout: Duration,
    threads: usize,
) -> Verdict
where
    M: Model + Sync,
    M::Input: Sync,
    M::Output: Sync,
    M::State: Send,
{
    check::check_parallel(model, history, Some(Instant::now() + timeout), threads)
}

/// Draws a history as one line per client with each operation an interval on a shared time
/// axis (`|--- op -> out ---|`), ordered by call time, then what the checker found.
pub fn render<I: Debug, O: Debug>(history: &[Operation<I, O>], verdict: &Verdict) -> String {
    let mut out = String::new();
    // Columns: every distinct time point gets one slot.
    let mut times: Vec<u64> = history
        .iter()
        .flat_map(|o| std::iter::once(o.call).chain(o.ret))
        .collect();
    times.sort_unstable();
    times.dedup();
    let col = |t: u64| times.binary_search(&t).unwrap_or(0);
    let labels: Vec<String> = history
        .iter()
        .map(|o| match &o.output {
            Some(out) => format!("{:?} -> {:?}", o.input, out),
            None => format!("{:?} -> ?", o.input),
        })
        .collect();
    // Every operation spans at least two time points (its call and its return), so half a
    // label per point fits every label inside its interval.
    let width = labels
        .iter()
        .map(|l| l.chars().count() / 2 + 3)
        .max()
        .unwrap_or(4)
        .min(24);
    let mut clients: Vec<usize> = history.iter().map(|o| o.client).collect();
    clients.sort_unstable();
    clients.dedup();
    for c in clients {
        let mut line = vec![' '; (times.len() + 1) * width];
        for (i, o) in history.iter().enumerate().filter(|(_, o)| o.client == c) {
            let start = col(o.call) * width;
            let end = o
                .ret
                .map(|r| col(r) * width + width - 1)
                .unwrap_or(line.len() - 1);
            for ch in &mut line[start..=end] {
                *ch = '-';
            }
            line[start] = '|';
            if o.ret.is_some() {
                line[end] = '|';
            } else {
                line[end] = '>';
            }
            let label: Vec<char> = format!(" {} ", labels[i]).chars().collect();
            for (k, ch) in label.into_iter().enumerate() {
                if start + 1 + k < end {
                    line[start + 1 + k] = ch;
                }
            }
        }
        let text: String = line.into_iter().collect();
        let _ = writeln!(out, "  thread {c:>2}  {}", text.trim_end());
    }
    match verdict {
        Verdict::Linearizable => out.push_str("  linearizable\n"),
        Verdict::Unknown(why) => {
            let _ = writeln!(out, "  unknown ({why})");
        }
        Verdict::NotLinearizable(e) => {
            out.push_str("  not linearizable: the longest linearizable prefix is\n");
            if e.longest_prefix.is_empty() {
                out.push_str("    (empty)\n");
            }
            for (k, &i) in e.longest_prefix.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "    {}. thread {}: {}",
                    k + 1,
                    history[i].client,
                    labels[i]
                );
            }
            if let Some(i) = e.cannot_follow {
                let _ = writeln!(
                    out,
                    "  and no operation can follow it before thread {}'s {} returns",
                    history[i].client, labels[i]
                );
            }
        }
    }
    out
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Linearizable => f.write_str("linearizable"),
            Verdict::NotLinearizable(_) => f.write_str("not linearizable"),
            Verdict::Unknown(why) => write!(f, "unknown ({why})"),
        }
    }
}
