//! The options a run is configured with, as cargo-pulse's flags and the `PULSE_*` variables
//! spell them: one parser and one `Display` each, so a value cargo-pulse accepts is one the
//! test process understands, and a bad one is refused before anything is built.

use std::fmt;
use std::str::FromStr;

/// A value an option does not take, and the values it does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseOptionError {
    pub option: &'static str,
    pub value: String,
    pub expected: &'static [&'static str],
}

impl fmt::Display for ParseOptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let expected: Vec<String> = self.expected.iter().map(|v| format!("`{v}`")).collect();
        write!(
            f,
            "unknown {} `{}` (expected one of {})",
            self.option,
            self.value,
            expected.join(", ")
        )
    }
}

impl std::error::Error for ParseOptionError {}

/// Which strategy picks the next thread at each scheduling point.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Strategy {
    /// PULSE's: at every point, pick uniformly among runnable threads.
    Random,
    /// Probabilistic concurrency testing (Burckhardt et al., ASPLOS'10) with bug depth `depth`.
    /// Its `depth - 1` change points are drawn below `k`, the execution length: given
    /// (`pct:D:K`), every execution uses it, so each depends on its seed alone; not given
    /// (`pct:D`), `k` is the longest execution seen so far in the search, and a failing
    /// execution is reported as the `pct:D:K` that replays it from its seed.
    Pct { depth: usize, k: Option<u64> },
    /// Partial order sampling (Yuan, Yang and Gu, CAV 2018): random priorities per thread,
    /// re-drawn for the thread that ran and for every thread whose next operation touches the
    /// same object.
    Pos,
    /// PCT over roles: threads spawned at the same call site share a priority, and each of
    /// the `depth - 1` change points demotes a whole role when its first thread reaches a
    /// given step of its own. Finds "one thread inside another's window while many copies
    /// of a third could close it" whatever the number of copies. The change points' roles
    /// are drawn below `roles`: given (`roles:D:R`) or the most an execution has shown so
    /// far (`roles:D`, reported per failing execution as the `roles:D:R` that replays it).
    Roles { depth: usize, roles: Option<u32> },
    /// Exhaustive depth-first search under iterative preemption bounding (CHESS; dejafu's
    /// default bound 2): every schedule with at most `bound` preemptions, fewest first. A
    /// spin loop that yields (or runs long) gives way without costing a preemption (fair
    /// bounding), so the search ends.
    Dfs { bound: usize },
    /// Dynamic partial-order reduction under the same preemption bound: explores only the
    /// interleavings whose dependent operations (same object, or an operation that may touch
    /// anything) come in a different order; reaches every outcome `dfs` reaches, in fewer
    /// executions. Exhaustive like `dfs`; its order is not fewest preemptions first.
    Dpor { bound: usize },
    /// The default: executions rotate over POS, PCT at depths 3 and 5, roles at depth 4 and
    /// random, so one test's budget covers what each finds best. Each execution replays from
    /// its seed.
    #[default]
    Portfolio,
}

impl Strategy {
    pub const VALUES: &'static [&'static str] = &[
        "portfolio",
        "random",
        "pct",
        "pct:DEPTH",
        "pct:DEPTH:K",
        "pos",
        "roles",
        "roles:DEPTH",
        "roles:DEPTH:R",
        "dfs",
        "dfs:BOUND",
        "dfs:inf",
        "dpor",
        "dpor:BOUND",
        "dpor:inf",
    ];

    /// The preemption bound `dfs` uses when none is given (dejafu's default).
    pub const DFS_BOUND: usize = 2;
}

impl FromStr for Strategy {
    type Err = ParseOptionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let refuse = |other: &str| ParseOptionError {
            option: "strategy",
            value: other.to_string(),
            expected: Self::VALUES,
        };
        match s.trim() {
            "random" => Ok(Strategy::Random),
            "pct" => Ok(Strategy::Pct { depth: 3, k: None }),
            "pos" => Ok(Strategy::Pos),
            "roles" => Ok(Strategy::Roles {
                depth: 3,
                roles: None,
            }),
            "dfs" => Ok(Strategy::Dfs {
                bound: Self::DFS_BOUND,
            }),
            "dpor" => Ok(Strategy::Dpor {
                bound: Self::DFS_BOUND,
            }),
            "portfolio" => Ok(Strategy::Portfolio),
            other => {
                if let Some(spec) = other.strip_prefix("pct:") {
                    let (depth, k) = depth_and_range(spec).ok_or_else(|| refuse(other))?;
                    Ok(Strategy::Pct { depth, k })
                } else if let Some(spec) = other.strip_prefix("roles:") {
                    let (depth, roles) = depth_and_range(spec).ok_or_else(|| refuse(other))?;
                    let roles = roles.map(u32::try_from).transpose();
                    let roles = roles.map_err(|_| refuse(other))?;
                    Ok(Strategy::Roles { depth, roles })
                } else if let Some(bound) = other.strip_prefix("dfs:") {
                    let bound = preemption_bound(bound).ok_or_else(|| refuse(other))?;
                    Ok(Strategy::Dfs { bound })
                } else if let Some(bound) = other.strip_prefix("dpor:") {
                    let bound = preemption_bound(bound).ok_or_else(|| refuse(other))?;
                    Ok(Strategy::Dpor { bound })
                } else {
                    Err(refuse(other))
                }
            }
        }
    }
}

/// A preemption bound: a number, or `inf` for none (`usize::MAX`).
fn preemption_bound(spec: &str) -> Option<usize> {
    match spec {
        "inf" => Some(usize::MAX),
        n => n.parse::<usize>().ok().filter(|&b| b != usize::MAX),
    }
}

/// Writes a preemption bound as `preemption_bound` reads it.
struct Bound(usize);

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            usize::MAX => f.write_str("inf"),
            b => write!(f, "{b}"),
        }
    }
}

/// `D` or `D:N` (PCT's depth and change-point range, roles' depth and role count): both at
/// least 1.
fn depth_and_range(spec: &str) -> Option<(usize, Option<u64>)> {
    let (depth, range) = match spec.split_once(':') {
        Some((depth, range)) => (depth, Some(range)),
        None => (spec, None),
    };
    let range = match range.map(str::parse::<u64>) {
        None => None,
        Some(Ok(n)) if n >= 1 => Some(n),
        Some(_) => return None,
    };
    match depth.parse::<usize>() {
        Ok(depth) if depth >= 1 => Some((depth, range)),
        _ => None,
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Strategy::Random => f.write_str("random"),
            Strategy::Pct { depth, k: None } => write!(f, "pct:{depth}"),
            Strategy::Pct { depth, k: Some(k) } => write!(f, "pct:{depth}:{k}"),
            Strategy::Pos => f.write_str("pos"),
            Strategy::Roles { depth, roles: None } => write!(f, "roles:{depth}"),
            Strategy::Roles {
                depth,
                roles: Some(r),
            } => write!(f, "roles:{depth}:{r}"),
            Strategy::Dfs { bound } => write!(f, "dfs:{}", Bound(*bound)),
            Strategy::Dpor { bound } => write!(f, "dpor:{}", Bound(*bound)),
            Strategy::Portfolio => f.write_str("portfolio"),
        }
    }
}

impl Strategy {
    /// Whether one execution of this strategy depends on its seed alone, so the seed (with
    /// this spelling of the strategy) replays it in a fresh run: `random`, `pos` and PCT
    /// with a fixed `k` (`pct:D:K`). Adaptive PCT and the portfolio report each failing
    /// execution as one of those (the runtime's `Scheduler::strategy_for`).
    pub fn replays_by_seed(&self) -> bool {
        matches!(
            self,
            Strategy::Random
                | Strategy::Pos
                | Strategy::Pct { k: Some(_), .. }
                | Strategy::Roles { roles: Some(_), .. }
        )
    }
}

/// One seeded execution: the per-execution strategy and its seed, `STRATEGY@SEED`
/// (`pct:5:137@42`). What a failure file keeps besides its exact schedule, so `--replay
/// FILE` can replay from the seed when the schedule no longer fits an edited program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeedReplay {
    pub strategy: Strategy,
    pub seed: u64,
}

impl SeedReplay {
    pub const VALUES: &'static [&'static str] = &["STRATEGY@SEED"];
}

impl FromStr for SeedReplay {
    type Err = ParseOptionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let refuse = || ParseOptionError {
            option: "seed replay",
            value: s.to_string(),
            expected: Self::VALUES,
        };
        let (strategy, seed) = s.trim().rsplit_once('@').ok_or_else(refuse)?;
        let strategy: Strategy = strategy.parse().map_err(|_| refuse())?;
        let seed: u64 = seed.parse().map_err(|_| refuse())?;
        if !strategy.replays_by_seed() {
            return Err(refuse());
        }
        Ok(SeedReplay { strategy, seed })
    }
}

impl fmt::Display for SeedReplay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.strategy, self.seed)
    }
}

/// An enum whose values are plain words: `VALUES`, `FromStr` and `Display` from one list.
macro_rules! word_option {
    ($ty:ident, $option:literal, $($variant:ident = $word:literal),+ $(,)?) => {
        impl $ty {
            pub const VALUES: &'static [&'static str] = &[$($word),+];
        }

        impl FromStr for $ty {
            type Err = ParseOptionError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s.trim() {
                    $($word => Ok($ty::$variant),)+
                    other => Err(ParseOptionError { option: $option, value: other.to_string(), expected: Self::VALUES }),
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(match self {
                    $($ty::$variant => $word,)+
                })
            }
        }
    };
}

/// Whether executions run in the test's process or each in a fresh one (a re-run of the test
/// binary that executes just that schedule).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Isolation {
    /// In process (fast); if a failure appears after the first schedule but not when its
    /// seed runs in a fresh process, the test keeps state in statics: warn, and run the rest
    /// of the search one process per schedule.
    #[default]
    Auto,
    /// Always in process.
    Off,
    /// Every schedule in its own process (~6 ms each; for tests known to keep state).
    Always,
}

word_option!(
    Isolation,
    "isolation",
    Auto = "auto",
    Off = "off",
    Always = "always"
);

/// What happens to threads still alive when a (failing) execution ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Cleanup {
    /// They are never resumed again: their stacks and what they hold are leaked. Only
    /// failing executions leave threads behind (at most two per run: the search's and its
    /// replay's), so the leak is small, and it can never abort the process, which unwinding
    /// through library code that asserts invariants in `Drop` can (crossbeam-channel does).
    #[default]
    Leak,
    /// They are unwound (newest first) so their destructors run and resources are freed.
    Unwind,
}

word_option!(Cleanup, "cleanup", Leak = "leak", Unwind = "unwind");

/// What happens to threads the test did not wait for (never joined) when they panic, stay
/// blocked after the test returns, or keep running after it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Detached {
    /// As under std, where such a test passes (its threads die with the process): the run
    /// warns, and a thread still running when the test returns gets a bounded number of
    /// further steps, then is let go.
    #[default]
    Warn,
    /// Any of these fails the test: strict checking for code that must clean up after itself.
    Fail,
}

word_option!(
    Detached,
    "detached-thread policy",
    Warn = "warn",
    Fail = "fail"
);

/// Whether `compare_exchange_weak` may fail when the value matches. std allows it on every
/// target, and LL/SC hardware (ARM without LSE, RISC-V, POWER) does it; x86-64 never does, and
/// neither do loom and shuttle. `Spurious`, the default, makes it a scheduler choice (one in
/// eight under the randomised strategies); `Strong` runs it as `compare_exchange`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WeakCas {
    #[default]
    Spurious,
    Strong,
}

word_option!(
    WeakCas,
    "weak compare-exchange behaviour",
    Spurious = "spurious",
    Strong = "strong"
);

/// How atomics behave: `Sc` runs every ordering as `SeqCst` (each load reads the latest
/// store); `Relaxed` follows Rust's (C++20's) orderings, so a load may read an older store
/// happens-before and coherence allow (a recorded scheduler choice); `Portfolio`, the
/// default, runs one execution in `PORTFOLIO_RELAXED_ONE_IN` under `Relaxed`, drawn from
/// its seed, the rest under `Sc` (ARCHITECTURE decision 27).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Memory {
    Sc,
    Relaxed,
    #[default]
    Portfolio,
}

word_option!(
    Memory,
    "memory model",
    Sc = "sc",
    Relaxed = "relaxed",
    Portfolio = "portfolio"
);

/// Under `Memory::Portfolio`, one execution in this many runs the relaxed model.
pub const PORTFOLIO_RELAXED_ONE_IN: u64 = 4;

impl Memory {
    /// Whether the execution run from `seed` uses the relaxed model.
    pub fn relaxed_for(self, seed: u64) -> bool {
        match self {
            Memory::Sc => false,
            Memory::Relaxed => true,
            Memory::Portfolio => {
                mix(seed ^ 0x6D65_6D6F_7279).is_multiple_of(PORTFOLIO_RELAXED_ONE_IN)
            }
        }
    }

    /// The one model a systematic search (whose executions replay each other's prefixes)
    /// explores: relaxed under the portfolio, since its outcomes include sc's.
    pub fn relaxed_for_systematic_search(self) -> bool {
        self != Memory::Sc
    }
}

/// splitmix64's finalizer: consecutive seeds draw without a pattern. Also the runtime's
/// per-seed draws that must leave a strategy's own generator alone (`RunLength`).
pub fn mix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trips<T: FromStr<Err = ParseOptionError> + fmt::Display + PartialEq + fmt::Debug>(
        values: &[&str],
    ) {
        for v in values
            .iter()
            .filter(|v| !v.contains("DEPTH") && !v.contains("BOUND"))
        {
            let parsed: T = v.parse().unwrap();
            assert_eq!(parsed.to_string().parse::<T>().unwrap(), parsed, "{v}");
        }
    }

    #[test]
    fn every_listed_value_parses_and_prints_back() {
        round_trips::<Strategy>(Strategy::VALUES);
        round_trips::<Isolation>(Isolation::VALUES);
        round_trips::<Cleanup>(Cleanup::VALUES);
        round_trips::<Detached>(Detached::VALUES);
        round_trips::<Memory>(Memory::VALUES);
        round_trips::<WeakCas>(WeakCas::VALUES);
        let relaxed = (0..4000)
            .filter(|&s| Memory::Portfolio.relaxed_for(s))
            .count();
        assert!((800..1200).contains(&relaxed), "{relaxed} of 4000 relaxed");
        assert!(Memory::Portfolio.relaxed_for_systematic_search());
        assert_eq!(
            "pct:5".parse::<Strategy>().unwrap(),
            Strategy::Pct { depth: 5, k: None }
        );
        let fixed = "pct:5:137".parse::<Strategy>().unwrap();
        assert_eq!(
            fixed,
            Strategy::Pct {
                depth: 5,
                k: Some(137)
            }
        );
        assert_eq!(fixed.to_string(), "pct:5:137");
        let roles = "roles:4:3".parse::<Strategy>().unwrap();
        assert_eq!(
            roles,
            Strategy::Roles {
                depth: 4,
                roles: Some(3)
            }
        );
        assert!(roles.replays_by_seed());
        assert_eq!(roles.to_string(), "roles:4:3");
        for bad in [
            "roles:0",
            "roles:3:0",
            "roles:3:x",
            "roles:3:99999999999",
            "pct:2:0",
        ] {
            assert!(bad.parse::<Strategy>().is_err(), "{bad}");
        }
        assert_eq!(
            "dfs".parse::<Strategy>().unwrap(),
            Strategy::Dfs { bound: 2 }
        );
        assert_eq!(
            "dfs:0".parse::<Strategy>().unwrap(),
            Strategy::Dfs { bound: 0 }
        );
        assert_eq!(
            "dpor:3".parse::<Strategy>().unwrap(),
            Strategy::Dpor { bound: 3 }
        );
        // No bound: `inf`, both ways; the number it stands for is not a spelling of it.
        let unbounded = Strategy::Dpor { bound: usize::MAX };
        assert_eq!("dpor:inf".parse::<Strategy>().unwrap(), unbounded);
        assert_eq!(unbounded.to_string(), "dpor:inf");
        let dfs = "dfs:inf".parse::<Strategy>().unwrap();
        assert_eq!(dfs, Strategy::Dfs { bound: usize::MAX });
        assert_eq!(dfs.to_string(), "dfs:inf");
        for bad in ["dpor:18446744073709551615", "dfs:-1", "dpor:infinity"] {
            assert!(bad.parse::<Strategy>().is_err(), "{bad}");
        }
        assert_eq!(Strategy::default(), Strategy::Portfolio);
    }

    #[test]
    fn a_seed_replay_names_a_strategy_that_replays_by_seed() {
        let r: SeedReplay = "pct:5:137@42".parse().unwrap();
        assert_eq!(
            r,
            SeedReplay {
                strategy: Strategy::Pct {
                    depth: 5,
                    k: Some(137)
                },
                seed: 42
            }
        );
        assert_eq!(r.to_string(), "pct:5:137@42");
        assert_eq!("pos@7".parse::<SeedReplay>().unwrap().seed, 7);
        for bad in [
            "pct:5@1",
            "roles:4@1",
            "portfolio@1",
            "dfs@1",
            "random@",
            "random",
            "random@x",
        ] {
            assert!(bad.parse::<SeedReplay>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_bad_value_is_refused_with_the_valid_ones() {
        let e = "nosuch".parse::<Strategy>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown strategy `nosuch` (expected one of `portfolio`, `random`, `pct`, \
             `pct:DEPTH`, `pct:DEPTH:K`, `pos`, `roles`, `roles:DEPTH`, `roles:DEPTH:R`, `dfs`, \
             `dfs:BOUND`, `dfs:inf`, `dpor`, `dpor:BOUND`, `dpor:inf`)"
        );
        assert!("pct:0".parse::<Strategy>().is_err());
        for bad in [
            "pct:3:0",
            "pct:3:",
            "pct:3:x",
            "pct:0:10",
            "pct:3:10:1",
            "pct::5",
        ] {
            assert!(bad.parse::<Strategy>().is_err(), "{bad}");
        }
        assert!("dfs:x".parse::<Strategy>().is_err());
        assert!("dpor:x".parse::<Strategy>().is_err());
        assert!("pos:2".parse::<Strategy>().is_err());
        let e = "sometimes".parse::<Isolation>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown isolation `sometimes` (expected one of `auto`, `off`, `always`)"
        );
    }
}
