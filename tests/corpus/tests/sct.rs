//! The SCTBench-style corpus (`tests/sct/`) under pulse's strategies: the default finds every
//! bug within the default budget and passes every fixed twin; `dfs` verifies the small fixed
//! twins exhaustively; `strategy_table` (ignored; run with `--release -- --ignored
//! --nocapture`) measures every strategy on every program, the table ARCHITECTURE.md
//! quotes.

use pulse::{Builder, Isolation, Report, Strategy};
use pulse_corpus_tests::sct;

/// A corpus program at one size.
struct Program {
    name: &'static str,
    buggy: fn(usize),
    fixed: fn(usize),
    n: usize,
}

macro_rules! program {
    ($name:literal, $module:ident) => {
        program!($name, $module, 0)
    };
    ($name:literal, $module:ident, $n:expr) => {
        Program {
            name: $name,
            buggy: sct::$module::buggy,
            fixed: sct::$module::fixed,
            n: $n,
        }
    };
}

fn corpus() -> Vec<Program> {
    vec![
        program!("account", account),
        program!("deadlock01", deadlock01),
        program!("lazy01", lazy01),
        program!("reorder_3", reorder, 3),
        program!("reorder_5", reorder, 5),
        program!("reorder_10", reorder, 10),
        program!("reorder_20", reorder, 20),
        program!("twostage_2", twostage, 2),
        program!("twostage_20", twostage, 20),
        program!("twostage_100", twostage, 100),
        program!("wronglock_3", wronglock, 3),
        program!("wronglock_10", wronglock, 10),
        program!("circular_buffer", circular_buffer),
        program!("queue", queue),
        program!("stack", stack),
        program!("token_ring", token_ring),
        program!("dining_philosophers", dining_philosophers),
        program!("carter", carter),
        program!("bluetooth_driver", bluetooth_driver),
        program!("lost_wakeup", lost_wakeup),
        program!("spinlock", spinlock),
        program!("double_checked", double_checked),
    ]
}

/// In this process: a fresh process per check of a failure would re-run this whole test up
/// to the run that asked (isolation re-runs the test binary), and these programs keep no
/// state between executions.
fn builder() -> Builder {
    Builder::new().isolation(Isolation::Off)
}

fn search(strategy: Strategy, schedules: u64, seed: u64, f: impl Fn()) -> Report {
    builder()
        .strategy(strategy)
        .schedules(schedules)
        .seed(seed)
        .run(f)
}

/// The verdict of a search that passed having explored its whole space, each schedule once.
fn exhausted(name: &str, report: &Report) -> pulse::Exhaustive {
    if let Some(failure) = &report.failure {
        panic!("{name}: {failure}");
    }
    let exhaustive = report
        .exhaustive
        .unwrap_or_else(|| panic!("{name}: not exhausted in {}", report.executions));
    assert_eq!(exhaustive.schedules, report.executions);
    exhaustive
}

/// The acceptance test of issue #9: the default strategy with the default budget (1,000
/// schedules) finds every bug and passes every fixed twin.
#[test]
fn the_default_finds_every_bug_and_passes_every_fixed_twin() {
    let budget = Builder::new().config.schedules;
    assert_eq!(Builder::new().config.strategy, Strategy::Portfolio);
    for p in corpus() {
        let (buggy, n) = (p.buggy, p.n);
        let report = builder().seed(20261123).run(move || buggy(n));
        let failure = report
            .failure
            .unwrap_or_else(|| panic!("{}: not found within {budget}", p.name));
        assert!(failure.reproduced, "{}: {failure}", p.name);
        let fixed = p.fixed;
        let report = builder().seed(20261123).run(move || fixed(n));
        if let Some(failure) = report.failure {
            panic!("{}: the fixed twin failed\n{failure}", p.name);
        }
        assert_eq!(report.executions, budget, "{}", p.name);
    }
}

/// PCT over roles finds "one thread inside another's window while many copies of a third
/// could close it" in about as many schedules with 100 copies as with 2, where PCT's chance
/// falls with every thread (ARCHITECTURE.md, "Search").
#[test]
fn roles_find_the_window_bugs_whatever_the_thread_count() {
    let roles = Strategy::Roles {
        depth: 4,
        roles: None,
    };
    for name in [
        "reorder_3",
        "reorder_20",
        "twostage_2",
        "twostage_20",
        "twostage_100",
    ] {
        let p = corpus().into_iter().find(|p| p.name == name).unwrap();
        let (buggy, n) = (p.buggy, p.n);
        let mut schedules = Vec::new();
        for seed in (0..5).map(spread_seed) {
            let report = search(roles, 400, seed, move || buggy(n));
            assert!(report.failure.is_some(), "{name}: missed at seed {seed}");
            schedules.push(report.executions);
        }
        println!("{name}: found by roles:4 in {schedules:?} schedules");
    }
    // PCT, for contrast, at the same seeds and budget.
    let p = corpus()
        .into_iter()
        .find(|p| p.name == "twostage_100")
        .unwrap();
    let (buggy, n) = (p.buggy, p.n);
    let pct = Strategy::Pct { depth: 4, k: None };
    let found = (0..5)
        .map(spread_seed)
        .filter(|&seed| search(pct, 400, seed, move || buggy(n)).failure.is_some())
        .count();
    assert!(found <= 1, "pct:4 found twostage_100 at {found} of 5 seeds");
}

/// Bounded DFS finds every bug whose preemption count is within its bound, and the first
/// failure it finds has the fewest preemptions; on a small fixed twin it ends with a proof.
#[test]
fn dfs_finds_the_bugs_and_verifies_small_fixed_twins() {
    for p in corpus().iter().filter(|p| p.n <= 5) {
        let (buggy, n) = (p.buggy, p.n);
        let report = search(Strategy::Dfs { bound: 2 }, 5_000, 0, move || buggy(n));
        assert!(report.failure.is_some(), "{}: dfs:2 missed it", p.name);
    }
    for name in [
        "account",
        "deadlock01",
        "lazy01",
        "queue",
        "stack",
        "carter",
    ] {
        let p = corpus().into_iter().find(|p| p.name == name).unwrap();
        let (fixed, n) = (p.fixed, p.n);
        let report = search(Strategy::Dfs { bound: 2 }, 100_000, 0, move || fixed(n));
        let exhaustive = exhausted(name, &report);
        assert_eq!(exhaustive.bound, 2);
        assert!(
            exhaustive.to_string().starts_with(&format!(
                "exhaustive: all {} schedules within preemption bound 2 explored, no failure",
                report.executions
            )),
            "{exhaustive}"
        );
    }
}

/// DPOR under the same bound finds the same bugs (not as early: its order is depth-first, not
/// fewest preemptions first) and proves the same fixed twins, in no more executions than DFS.
#[test]
fn dpor_finds_the_bugs_and_verifies_small_fixed_twins_in_fewer_executions() {
    for p in corpus().iter().filter(|p| p.n <= 5) {
        let (buggy, n) = (p.buggy, p.n);
        let report = search(Strategy::Dpor { bound: 2 }, 1_000_000, 0, move || buggy(n));
        println!(
            "{}: dpor:2 found it in {} executions",
            p.name, report.executions
        );
        assert!(report.failure.is_some(), "{}: dpor:2 missed it", p.name);
    }
    let (mut dfs_total, mut dpor_total) = (0, 0);
    // Every small fixed twin dfs:2 exhausts within 100,000 schedules (`wronglock_3` needs
    // more).
    for name in [
        "account",
        "deadlock01",
        "lazy01",
        "reorder_3",
        "twostage_2",
        "circular_buffer",
        "queue",
        "stack",
        "token_ring",
        "dining_philosophers",
        "carter",
        "bluetooth_driver",
        "lost_wakeup",
        "spinlock",
        "double_checked",
    ] {
        let p = corpus().into_iter().find(|p| p.name == name).unwrap();
        let (fixed, n) = (p.fixed, p.n);
        let dfs = search(Strategy::Dfs { bound: 2 }, 100_000, 0, move || fixed(n));
        let report = search(Strategy::Dpor { bound: 2 }, 100_000, 0, move || fixed(n));
        let exhaustive = exhausted(name, &report);
        assert!(
            exhaustive.to_string().starts_with(&format!(
                "exhaustive: all {} schedules within preemption bound 2 explored, no failure",
                report.executions
            )),
            "{exhaustive}"
        );
        println!(
            "{name}: dfs:2 {} executions, dpor:2 {}",
            dfs.executions, report.executions
        );

        assert!(report.executions <= dfs.executions, "{name}");
        dfs_total += dfs.executions;
        dpor_total += report.executions;
    }
    println!("total: dfs:2 {dfs_total}, dpor:2 {dpor_total}");
    assert!(dpor_total < dfs_total);
}

/// A DFS run that is not exhaustive says nothing of the kind, and one without a bound on a
/// tiny program explores it entirely (`pruned` false).
#[test]
fn dfs_reports_exhaustion_only_when_it_happened() {
    let p = corpus().into_iter().find(|p| p.name == "account").unwrap();
    let fixed = p.fixed;
    let report = search(Strategy::Dfs { bound: 2 }, 2, 0, move || fixed(0));
    assert!(report.passed() && report.exhaustive.is_none());
    let report = search(Strategy::Dfs { bound: 50 }, 100_000, 0, move || fixed(0));
    let exhaustive = report.exhaustive.expect("a tiny program is exhausted");
    assert!(!exhaustive.pruned, "{exhaustive}");
}

/// The `k`-th of a run of seeds far apart (a search's executions use consecutive seeds).
fn spread_seed(k: u64) -> u64 {
    (k + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 1
}

/// Schedules to the first failure, median over seeds (`None`: fewer than half found it), and
/// how many seeds found it.
fn median_to_failure(
    strategy: Strategy,
    p: &Program,
    seeds: u64,
    budget: u64,
) -> (Option<u64>, usize) {
    let mut counts: Vec<u64> = (0..seeds)
        .map(|k| {
            let (buggy, n) = (p.buggy, p.n);
            let r = search(strategy, budget, spread_seed(k), move || buggy(n));
            if r.failure.is_some() {
                r.executions
            } else {
                u64::MAX
            }
        })
        .collect();
    counts.sort();
    let m = counts[counts.len() / 2];
    let found = counts.iter().filter(|&&c| c != u64::MAX).count();
    ((m != u64::MAX).then_some(m), found)
}

#[test]
#[ignore = "a measurement (minutes in debug): run with --release -- --ignored --nocapture \
            (SCT_STRATEGIES, SCT_SEEDS, SCT_BUDGET change what it measures)"]
fn strategy_table() {
    let strategies: Vec<Strategy> = std::env::var("SCT_STRATEGIES")
        .unwrap_or_else(|_| "random,pct:3,pos,dfs:2,portfolio".to_string())
        .split(',')
        .map(|s| s.parse().unwrap())
        .collect();
    let seeds: u64 = std::env::var("SCT_SEEDS").map_or(10, |s| s.parse().unwrap());
    let budget: u64 = std::env::var("SCT_BUDGET").map_or(1000, |s| s.parse().unwrap());
    let mut header = "| program |".to_string();
    for s in &strategies {
        header += &format!(" {s} |");
    }
    println!("{header}");
    println!("|---|{}", "---:|".repeat(strategies.len()));
    let mut found = vec![0; strategies.len()];
    for p in corpus() {
        let mut row = format!("| {} |", p.name);
        for (i, &s) in strategies.iter().enumerate() {
            // DFS and DPOR are deterministic: one run.
            let seeds = if matches!(s, Strategy::Dfs { .. } | Strategy::Dpor { .. }) {
                1
            } else {
                seeds
            };
            match median_to_failure(s, &p, seeds, budget) {
                (Some(m), k) => {
                    found[i] += 1;
                    row += &format!(" {m} ({k}/{seeds}) |");
                }
                (None, k) => row += &format!(" - ({k}/{seeds}) |"),
            }
        }
        println!("{row}");
    }
    let total: Vec<String> = found.iter().map(|f| format!(" {f} |")).collect();
    println!("| found (of {}) |{}", corpus().len(), total.concat());
}

/// Without a bound (`dpor:inf`), DPOR reverses every race (source sets): a fixed twin it
/// exhausts has passed every schedule, up to reordering independent operations; and it
/// finds each buggy twin. `lost_wakeup` and `bluetooth_driver` wait on a condvar in a loop,
/// which spurious wakeups would turn for ever: the search lets an execution have one
/// (`UNBOUNDED_SPURIOUS`) and says so. `circular_buffer`, the corpus's other program of at
/// most five threads, spins until another thread acts: a class for every number of turns,
/// so only a bound ends its search.
#[test]
fn unbounded_dpor_proves_small_fixed_twins_and_finds_their_bugs() {
    let unbounded = Strategy::Dpor { bound: usize::MAX };
    for name in [
        "account",
        "deadlock01",
        "lazy01",
        "reorder_3",
        "reorder_5",
        "twostage_2",
        "wronglock_3",
        "queue",
        "stack",
        "token_ring",
        "dining_philosophers",
        "carter",
        "double_checked",
        "spinlock",
        "lost_wakeup",
        "bluetooth_driver",
    ] {
        let p = corpus().into_iter().find(|p| p.name == name).unwrap();
        let (fixed, buggy, n) = (p.fixed, p.buggy, p.n);
        let report = search(unbounded, 20_000, 0, move || fixed(n));
        let exhaustive = exhausted(name, &report);
        let waits = ["lost_wakeup", "bluetooth_driver"].contains(&name);
        let which = if waits {
            "with at most one spurious wakeup or weak compare-exchange failure"
        } else {
            "of the program"
        };
        assert_eq!(
            exhaustive.to_string(),
            format!(
                "exhaustive: all {} schedules explored without a preemption bound, no failure \
                 (every schedule {which}, up to reordering independent operations)",
                report.executions
            )
        );
        let found = search(unbounded, 20_000, 0, move || buggy(n));
        assert!(found.failure.is_some(), "{name}: dpor:inf missed it");
        println!(
            "{name}: fixed twin proved in {} executions, bug found in {}",
            report.executions, found.executions
        );
    }
}
