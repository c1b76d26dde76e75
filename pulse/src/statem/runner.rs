//! The property loop: generate cases from a seed, run each under its scheduler seed(s),
//! shrink the first failure (each candidate under several seeds, the paper's `?ALWAYS`), and
//! replay a printed token exactly.
//!
//! A replay token `s1:<generation seed>:<case>:<shrink decisions>:<scheduler seed>` names a
//! counterexample without serialising the user's commands: case `<case>` is generated again
//! from the seed, the shrinking decisions (one bit per candidate tried: failed or not) are
//! applied again without running anything, and the result runs under the scheduler seed.

use std::time::Duration;

use proptest::test_runner::{Config as PropConfig, RngAlgorithm, TestRng, TestRunner};
use pulse_protocol::env;

use super::case::{self, shrink_layouts, valid, Case, Layout, Sizes};
use super::exec::{run_case, run_case_traced, Failure, Run};
use super::report;
use super::StateMachine;

/// The environment variable that makes a statem property replay one counterexample (the
/// token its report prints) instead of searching.
pub const REPLAY_ENV: &str = "PULSE_STATEM_REPLAY";

/// How a statem property searches. `Config::default()`: 100 cases, 2 branches of at most 5
/// commands after a prefix of at most 5, one scheduler seed per case, 32 per shrinking
/// candidate.
#[derive(Clone, Debug)]
pub struct Config {
    /// Test cases to generate.
    pub tests: u64,
    /// Parallel branches (0: sequential cases only).
    pub threads: usize,
    pub max_prefix: usize,
    /// Commands per branch at most: the interleavings to check grow as
    /// (threads x max_branch)! / (max_branch!)^threads.
    pub max_branch: usize,
    /// The generation seed (`PULSE_SEED` overrides; random when neither is set).
    pub seed: Option<u64>,
    /// Scheduler seeds each generated case runs under.
    pub schedules_per_case: u64,
    /// Scheduler seeds each shrinking candidate runs under before it counts as passing.
    pub shrink_schedules: u64,
    /// Candidates run at most while shrinking.
    pub max_shrink_runs: u64,
    /// Time one linearizability check may take (then the case counts as undecided).
    pub check_timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            tests: 100,
            threads: 2,
            max_prefix: 5,
            max_branch: 5,
            seed: None,
            schedules_per_case: 1,
            shrink_schedules: 32,
            max_shrink_runs: 2000,
            check_timeout: Duration::from_secs(10),
        }
    }
}

impl Config {
    pub fn tests(mut self, n: u64) -> Self {
        self.tests = n;
        self
    }
    pub fn threads(mut self, k: usize) -> Self {
        self.threads = k;
        self
    }
    /// Sequential cases only (no branches): eqc_statem rather than eqc_par_statem.
    pub fn sequential(self) -> Self {
        self.threads(0)
    }
    pub fn max_prefix(mut self, n: usize) -> Self {
        self.max_prefix = n;
        self
    }
    pub fn max_branch(mut self, n: usize) -> Self {
        self.max_branch = n;
        self
    }
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }
    pub fn schedules_per_case(mut self, n: u64) -> Self {
        self.schedules_per_case = n.max(1);
        self
    }
    pub fn shrink_schedules(mut self, n: u64) -> Self {
        self.shrink_schedules = n.max(1);
        self
    }
    pub fn max_shrink_runs(mut self, n: u64) -> Self {
        self.max_shrink_runs = n;
        self
    }
    pub fn check_timeout(mut self, d: Duration) -> Self {
        self.check_timeout = d;
        self
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            threads: self.threads,
            max_prefix: self.max_prefix,
            max_branch: self.max_branch.max(1),
        }
    }
}

/// What a statem run found.
#[derive(Clone, Debug)]
pub enum Outcome {
    Passed {
        tests: u64,
        /// Cases whose linearizability check timed out (neither passed nor failed).
        undecided: u64,
    },
    Failed {
        /// The whole human report (what `check` panics with).
        report: String,
        /// The replay token (`PULSE_STATEM_REPLAY=<token>`).
        token: String,
        /// Commands in the shrunk counterexample: prefix length and each branch's.
        prefix: usize,
        branches: Vec<usize>,
        /// What the counterexample's commands are, in the model's `Debug` form, by place:
        /// the prefix then each branch.
        commands: Vec<Vec<String>>,
        /// `execution`, `postcondition` or `linearizability`.
        kind: &'static str,
        /// The failing execution's trace file (`pulse_protocol::trace`): every event, and each
        /// command's call and return as an `invoke` and a `response` event on the thread that
        /// ran it (branch `k` on the thread named `branch-k`). Under `cargo pulse test` it is
        /// written beside the failure record.
        trace: Option<Box<pulse_protocol::trace::Trace>>,
    },
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The generator of case `index` of a run seeded `seed`: each case has its own, so a replay
/// regenerates one case without the others.
fn case_runner(seed: u64, index: u64) -> TestRunner {
    let mut bytes = [0u8; 32];
    for (k, chunk) in bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&splitmix(seed ^ splitmix(index) ^ (k as u64)).to_le_bytes());
    }
    TestRunner::new_with_rng(
        PropConfig::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    )
}

fn generation_seed(config: &Config) -> u64 {
    let from_env = std::env::var(env::SEED)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok());
    from_env.or(config.seed).unwrap_or_else(|| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        splitmix(t ^ u64::from(std::process::id())) % 1_000_000_000
    })
}

/// The decisions of one shrink: a bit per candidate tried.
#[derive(Default, Clone, Debug, PartialEq, Eq)]
struct Decisions(Vec<bool>);

impl Decisions {
    fn encode(&self) -> String {
        let mut hex = String::new();
        for chunk in self.0.chunks(4) {
            let mut nibble = 0u8;
            for (i, &b) in chunk.iter().enumerate() {
                nibble |= u8::from(b) << i;
            }
            hex.push(char::from_digit(u32::from(nibble), 16).unwrap_or('0'));
        }
        format!("{}.{hex}", self.0.len())
    }

    fn decode(text: &str) -> Option<Decisions> {
        let (len, hex) = text.split_once('.')?;
        let len: usize = len.parse().ok()?;
        let mut bits = Vec::with_capacity(len);
        for c in hex.chars() {
            let nibble = c.to_digit(16)?;
            for i in 0..4 {
                bits.push(nibble & (1 << i) != 0);
            }
        }
        if bits.len() < len {
            return None;
        }
        bits.truncate(len);
        Some(Decisions(bits))
    }
}

/// Runs shrinking candidates, within the run budget.
struct RunOracle<'a, M: StateMachine> {
    model: &'a M,
    config: &'a Config,
    runs: u64,
}

impl<M: StateMachine> RunOracle<'_, M> {
    /// `None`: the budget is spent; `Some(Some(seed))`: `layout` fails under `seed`;
    /// `Some(None)`: it passed under every seed tried.
    fn fails(&mut self, case: &Case<M::Command>, layout: &Layout) -> Option<Option<u64>> {
        if self.runs >= self.config.max_shrink_runs {
            return None;
        }
        self.runs += 1;
        for k in 0..self.config.shrink_schedules {
            let seed = case.seed.wrapping_add(k);
            if let Run::Failed(_) = run_case(
                self.model,
                &case.pool,
                layout,
                seed,
                self.config.check_timeout,
            ) {
                return Some(Some(seed));
            }
        }
        Some(None)
    }
}

/// Answers whether a shrinking candidate still fails: `None` stop (budget spent, or a
/// replay's record exhausted), `Some(Some(seed))` it fails under `seed`, `Some(None)` it
/// passes.
type Oracle<'a, C> = dyn FnMut(&Case<C>, &Layout) -> Option<Option<u64>> + 'a;

/// Asks the oracle about a candidate (if it is valid) and records the answer.
fn ask<M: StateMachine>(
    model: &M,
    case: &Case<M::Command>,
    layout: &Layout,
    oracle: &mut Oracle<'_, M::Command>,
    decisions: &mut Decisions,
) -> Option<Option<u64>> {
    if !valid(model, &case.pool, layout) {
        return Some(None);
    }
    let answer = oracle(case, layout)?;
    decisions.0.push(answer.is_some());
    Some(answer)
}

/// Shrinks a failing case in place, greedily: the first candidate that still fails is
/// taken and the candidates are listed again from it. Structural steps first (delete,
/// move into the prefix, drop empty branches), then each command's arguments through its
/// proptest value tree. Returns the decisions made, one bit per candidate run.
fn shrink<M: StateMachine>(
    model: &M,
    case: &mut Case<M::Command>,
    oracle: &mut Oracle<'_, M::Command>,
) -> Decisions {
    let mut decisions = Decisions::default();
    'outer: loop {
        for candidate in shrink_layouts(&case.layout) {
            match ask(model, case, &candidate, oracle, &mut decisions) {
                None => break 'outer,
                Some(Some(seed)) => {
                    case.layout = candidate;
                    case.seed = seed;
                    continue 'outer;
                }
                Some(None) => {}
            }
        }
        let vars: Vec<_> = case
            .layout
            .prefix
            .iter()
            .chain(case.layout.branches.iter().flatten())
            .copied()
            .collect();
        let layout = case.layout.clone();
        let mut improved = false;
        for v in vars {
            while case.pool.trees[v.0].simplify() {
                match ask(model, case, &layout, oracle, &mut decisions) {
                    None => break 'outer,
                    Some(Some(seed)) => {
                        case.seed = seed;
                        improved = true;
                    }
                    Some(None) => {
                        // The simpler value passes: step back towards the failing one.
                        let mut found = false;
                        while case.pool.trees[v.0].complicate() {
                            match ask(model, case, &layout, oracle, &mut decisions) {
                                None => break 'outer,
                                Some(Some(seed)) => {
                                    case.seed = seed;
                                    improved = true;
                                    found = true;
                                    break;
                                }
                                Some(None) => {}
                            }
                        }
                        if !found {
                            break;
                        }
                    }
                }
            }
        }
        if !improved {
            break;
        }
    }
    decisions
}

pub(crate) fn run<M: StateMachine>(model: &M, config: Config) -> Outcome {
    if pulse_runtime::current().is_some() {
        if crate::harness::inside_run_test() {
            // Under `cargo pulse test`: the harness runs this test again outside.
            panic!("{}", crate::harness::OWN_SEARCH);
        }
        panic!(
            "pulse::statem runs executions of its own: call it from a test, not from inside \
             pulse::check or another execution"
        );
    }
    if let Ok(token) = std::env::var(REPLAY_ENV) {
        if !token.trim().is_empty() {
            return replay(model, &config, token.trim());
        }
    }
    let gen_seed = generation_seed(&config);
    let sizes = config.sizes();
    let progress = progress_file();
    let mut undecided = 0;
    for index in 0..config.tests {
        if let Some(path) = &progress {
            let _ = std::fs::write(path, format!("{index} {}\n", config.tests));
        }
        let mut runner = case_runner(gen_seed, index);
        let base = splitmix(gen_seed.wrapping_add(index));
        let mut case = case::generate(model, &mut runner, sizes, base);
        let mut failed_seed = None;
        for k in 0..config.schedules_per_case {
            match run_case(
                model,
                &case.pool,
                &case.layout,
                base.wrapping_add(k),
                config.check_timeout,
            ) {
                Run::Passed => {}
                Run::Unknown => undecided += 1,
                Run::Failed(_) => {
                    failed_seed = Some(base.wrapping_add(k));
                    break;
                }
            }
        }
        let Some(seed) = failed_seed else { continue };
        case.seed = seed;
        let original = case.layout.len();
        let mut oracle = RunOracle {
            model,
            config: &config,
            runs: 0,
        };
        let decisions = shrink(model, &mut case, &mut |c, l| oracle.fails(c, l));
        let runs = oracle.runs;
        let token = format!("s1:{gen_seed}:{index}:{}:{}", decisions.encode(), case.seed);
        let intro = format!(
            "pulse statem: a failing case after {} test case(s) (generation seed {gen_seed}); \
             shrunk from {original} to {} command(s) in {runs} run(s) of up to {} seed(s) each",
            index + 1,
            case.layout.len(),
            config.shrink_schedules
        );
        return failed(model, &config, &case, &token, &intro);
    }
    if let Some(path) = &progress {
        let _ = std::fs::write(path, format!("{0} {0}\n", config.tests));
    }
    Outcome::Passed {
        tests: config.tests,
        undecided,
    }
}

/// Runs the (shrunk) case once more under its seed and builds the outcome and report.
fn failed<M: StateMachine>(
    model: &M,
    config: &Config,
    case: &Case<M::Command>,
    token: &str,
    intro: &str,
) -> Outcome {
    let (run, trace) = run_case_traced(
        model,
        &case.pool,
        &case.layout,
        case.seed,
        config.check_timeout,
        true,
    );
    let trace = trace.map(|mut t| {
        t.test = std::thread::current().name().unwrap_or("").to_string();
        t.seed = Some(case.seed);
        crate::harness::hand_over_trace(&t);
        Box::new(t)
    });
    let failure: Option<Failure<M::Response>> = match run {
        Run::Failed(f) => Some(f),
        _ => None,
    };
    let kind = match &failure {
        Some(Failure::Execution(_)) => "execution",
        Some(Failure::Postcondition { .. }) => "postcondition",
        Some(Failure::NotLinearizable { .. }) => "linearizability",
        None => "flaky",
    };
    let report = report::render(model, case, failure.as_ref(), token, intro);
    let cmd = |v: &super::Var| format!("{:?}", case.pool.cmd(*v));
    let mut commands = vec![case.layout.prefix.iter().map(cmd).collect::<Vec<_>>()];
    commands.extend(
        case.layout
            .branches
            .iter()
            .map(|b| b.iter().map(cmd).collect()),
    );
    Outcome::Failed {
        report,
        token: token.to_string(),
        prefix: case.layout.prefix.len(),
        branches: case.layout.branches.iter().map(Vec::len).collect(),
        commands,
        kind,
        trace,
    }
}

/// Replays the counterexample a token names (what `PULSE_STATEM_REPLAY` does).
pub(crate) fn replay<M: StateMachine>(model: &M, config: &Config, token: &str) -> Outcome {
    let parts: Vec<&str> = token.split(':').collect();
    let parsed = match parts.as_slice() {
        ["s1", gen, index, decisions, seed] => (|| {
            Some((
                gen.parse::<u64>().ok()?,
                index.parse::<u64>().ok()?,
                Decisions::decode(decisions)?,
                seed.parse::<u64>().ok()?,
            ))
        })(),
        _ => None,
    };
    let Some((gen_seed, index, decisions, seed)) = parsed else {
        panic!("pulse statem: {REPLAY_ENV}={token} is not a replay token (s1:<seed>:<case>:<decisions>:<seed>)");
    };
    let mut runner = case_runner(gen_seed, index);
    let mut case = case::generate(model, &mut runner, config.sizes(), seed);
    let mut bits = decisions.0.into_iter();
    shrink(model, &mut case, &mut |_, _| {
        bits.next().map(|b| b.then_some(0))
    });
    case.seed = seed;
    let intro = format!("pulse statem: replaying {token}");
    failed(model, config, &case, token, &intro)
}

fn progress_file() -> Option<std::path::PathBuf> {
    std::env::var_os(env::PROGRESS)
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
}
