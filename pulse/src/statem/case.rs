//! A test case: commands (each with the proptest value tree it came from, so its arguments
//! shrink) laid out as a sequential prefix and parallel branches; generating one from the
//! model, deciding whether a layout is valid (preconditions hold in the prefix and in every
//! interleaving of the branches), and the structural shrinking steps.

use std::collections::HashSet;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;

use super::{StateMachine, Var};

/// Which commands run where: indices (`Var`s) into the case's pool.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(crate) struct Layout {
    pub prefix: Vec<Var>,
    pub branches: Vec<Vec<Var>>,
}

impl Layout {
    pub fn len(&self) -> usize {
        self.prefix.len() + self.branches.iter().map(Vec::len).sum::<usize>()
    }
}

/// Every command ever generated for this case, by var; shrinking changes the layout and
/// simplifies the trees, never renumbers.
pub(crate) struct Pool<C> {
    pub trees: Vec<Box<dyn ValueTree<Value = C>>>,
}

impl<C: std::fmt::Debug> Pool<C> {
    pub fn cmd(&self, v: Var) -> C {
        self.trees[v.0].current()
    }
}

pub(crate) struct Case<C> {
    pub pool: Pool<C>,
    pub layout: Layout,
    /// The scheduler seed this case runs (first) under.
    pub seed: u64,
}

/// How big generated cases are.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sizes {
    pub threads: usize,
    pub max_prefix: usize,
    pub max_branch: usize,
}

fn below(runner: &mut TestRunner, n: usize) -> usize {
    (0..n.max(1))
        .new_tree(runner)
        .map(|t| t.current())
        .unwrap_or(0)
}

/// Generates a command valid in `state`, with up to 20 tries.
fn command<M: StateMachine>(
    model: &M,
    runner: &mut TestRunner,
    state: &M::State,
) -> Option<Box<dyn ValueTree<Value = M::Command>>> {
    for _ in 0..20 {
        let tree = model.commands(state).new_tree(runner).ok()?;
        if model.precondition(state, &tree.current()) {
            return Some(Box::new(tree));
        }
    }
    None
}

/// A random case: a prefix of up to `max_prefix` commands, then up to `max_branch` commands
/// per branch, generated in sequence from the model state and dealt round-robin; a command
/// that would make some interleaving violate a precondition is dropped.
pub(crate) fn generate<M: StateMachine>(
    model: &M,
    runner: &mut TestRunner,
    sizes: Sizes,
    seed: u64,
) -> Case<M::Command> {
    let mut pool = Pool { trees: Vec::new() };
    let mut layout = Layout {
        prefix: Vec::new(),
        branches: vec![Vec::new(); sizes.threads],
    };
    let mut state = model.initial_state();
    let prefix_len = below(runner, sizes.max_prefix + 1);
    for _ in 0..prefix_len {
        let Some(tree) = command(model, runner, &state) else {
            break;
        };
        let v = Var(pool.trees.len());
        state = model.next_state(&state, &tree.current(), v);
        pool.trees.push(tree);
        layout.prefix.push(v);
    }
    if sizes.threads > 0 {
        let total = sizes.threads
            + below(
                runner,
                sizes.threads * sizes.max_branch.saturating_sub(1) + 1,
            );
        for k in 0..total.min(sizes.threads * sizes.max_branch) {
            let Some(tree) = command(model, runner, &state) else {
                break;
            };
            let v = Var(pool.trees.len());
            let next = model.next_state(&state, &tree.current(), v);
            pool.trees.push(tree);
            layout.branches[k % sizes.threads].push(v);
            if valid(model, &pool, &layout) {
                state = next;
            } else {
                layout.branches[k % sizes.threads].pop();
            }
        }
    }
    Case { pool, layout, seed }
}

/// Whether the prefix's preconditions hold in sequence and, after it, in every interleaving
/// of the branches (a search over interleavings that remembers (positions, state) pairs it
/// has seen).
pub(crate) fn valid<M: StateMachine>(model: &M, pool: &Pool<M::Command>, layout: &Layout) -> bool {
    let mut state = model.initial_state();
    for &v in &layout.prefix {
        let cmd = pool.cmd(v);
        if !model.precondition(&state, &cmd) {
            return false;
        }
        state = model.next_state(&state, &cmd, v);
    }
    let branches: Vec<Vec<(Var, M::Command)>> = layout
        .branches
        .iter()
        .map(|b| b.iter().map(|&v| (v, pool.cmd(v))).collect())
        .collect();
    let mut seen = HashSet::new();
    let mut pos = vec![0usize; branches.len()];
    all_interleavings_valid(model, &branches, &mut pos, &state, &mut seen)
}

fn all_interleavings_valid<M: StateMachine>(
    model: &M,
    branches: &[Vec<(Var, M::Command)>],
    pos: &mut Vec<usize>,
    state: &M::State,
    seen: &mut HashSet<(Vec<usize>, M::State)>,
) -> bool {
    if !seen.insert((pos.clone(), state.clone())) {
        return true;
    }
    for b in 0..branches.len() {
        let Some((v, cmd)) = branches[b].get(pos[b]) else {
            continue;
        };
        if !model.precondition(state, cmd) {
            return false;
        }
        let next = model.next_state(state, cmd, *v);
        pos[b] += 1;
        let ok = all_interleavings_valid(model, branches, pos, &next, seen);
        pos[b] -= 1;
        if !ok {
            return false;
        }
    }
    true
}

/// The structural shrinking steps from `layout`, smallest change first within each kind:
/// delete a branch command, delete a prefix command, move a branch's first command to the
/// end of the prefix (less parallel), drop an empty branch.
pub(crate) fn shrink_layouts(layout: &Layout) -> Vec<Layout> {
    let mut out = Vec::new();
    for b in 0..layout.branches.len() {
        for j in (0..layout.branches[b].len()).rev() {
            let mut l = layout.clone();
            l.branches[b].remove(j);
            out.push(l);
        }
    }
    for j in (0..layout.prefix.len()).rev() {
        let mut l = layout.clone();
        l.prefix.remove(j);
        out.push(l);
    }
    for b in 0..layout.branches.len() {
        if !layout.branches[b].is_empty() {
            let mut l = layout.clone();
            let v = l.branches[b].remove(0);
            l.prefix.push(v);
            out.push(l);
        }
    }
    for b in 0..layout.branches.len() {
        if layout.branches[b].is_empty() {
            let mut l = layout.clone();
            l.branches.remove(b);
            out.push(l);
        }
    }
    out
}
