//! pulse_time §2.1.8's experiment, on this repository's time examples: which treatment of
//! time finds which bug, and which correct program each one wrongly flags. The table this
//! test prints is the one in README ("Time"); the assertions pin it.

use pulse::{Builder, TimeMode};
use pulse_corpus_tests as corpus;

/// Under 256, the count after which a run whose executions leave threads blocked forever
/// (auto-update's worker) moves to one process per schedule: a re-run of this test binary
/// would replay every earlier run of this test first.
const SCHEDULES: u64 = 200;

/// The modes of the table, as `--time` spells them.
const MODES: &[&str] = &[
    "infinitely-fast",
    "infinitely-slow",
    "time-random",
    "quite-slow=250us",
    "quite-slow=5ms",
    "quite-slow-random=5ms",
    "quite-slow-random=50ms",
    "portfolio",
];

/// (program, expected verdict per mode: true = a failure is reported).
type Row = (&'static str, fn(), [bool; 8]);

const ROWS: &[Row] = &[
    // Boot not finished before the first command (the lift example's bug).
    (
        "boot-race",
        corpus::boot_race::scenario_buggy,
        [false, true, true, false, true, true, true, true],
    ),
    (
        "boot-race fixed",
        corpus::boot_race::scenario_fixed,
        [false; 8],
    ),
    // A reader descheduled across the worker's 10 ms delay (dejafu's auto-update).
    (
        "auto-update",
        corpus::auto_update::scenario_buggy,
        [false, true, true, false, false, false, true, true],
    ),
    (
        "auto-update fixed",
        corpus::auto_update::scenario_fixed,
        [false; 8],
    ),
    // A 4 ms answer missing a 10 ms timeout, then taken for the next request's.
    (
        "late-reply",
        corpus::late_reply::scenario_buggy,
        [false, true, true, false, false, false, true, true],
    ),
    (
        "late-reply fixed",
        corpus::late_reply::scenario_fixed,
        [false; 8],
    ),
    // `sleep(10ms)` used to wait for a worker.
    (
        "sleep-ordering",
        corpus::sleep_ordering::scenario_buggy,
        [false, true, true, false, false, false, true, true],
    ),
    (
        "sleep-ordering fixed",
        corpus::sleep_ordering::scenario_fixed,
        [false; 8],
    ),
    // A 10 s timeout answered at once: only modes with unbounded slowness expire it.
    (
        "10 s timeout",
        corpus::late_reply::scenario_generous,
        [false, true, true, false, false, false, false, false],
    ),
    // Fischer's mutex with D >= T: wrong on every machine.
    (
        "fischer D>=T",
        corpus::fischer_mutex::scenario_buggy,
        [true; 8],
    ),
    // D < T: right wherever a step takes less than (T - D) / 2 = 150 ms.
    (
        "fischer D<T",
        corpus::fischer_mutex::scenario_fixed,
        [false, true, true, false, false, false, false, false],
    ),
];

fn found(mode: &str, f: fn()) -> bool {
    let mode: TimeMode = mode.parse().expect("a listed mode");
    !Builder::new()
        .schedules(SCHEDULES)
        .seed(218)
        .time(mode)
        .run(f)
        .passed()
}

#[test]
fn which_mode_finds_which_timing_bug() {
    let mut table = format!("{:<20}", "program");
    for m in MODES {
        table.push_str(&format!(" | {m:<21}"));
    }
    table.push('\n');
    let mut wrong = Vec::new();
    for (name, f, expected) in ROWS {
        table.push_str(&format!("{name:<20}"));
        for (i, mode) in MODES.iter().enumerate() {
            let got = found(mode, *f);
            table.push_str(&format!(" | {:<21}", if got { "found" } else { "-" }));
            if got != expected[i] {
                wrong.push(format!(
                    "{name} under {mode}: expected {}, got {got}",
                    expected[i]
                ));
            }
        }
        table.push('\n');
    }
    println!("{table}");
    assert!(wrong.is_empty(), "{}\n{table}", wrong.join("\n"));
}

/// A systematic search replays prefixes of earlier executions, so all of them run under one
/// treatment of time (the portfolio's loaded machine, whose schedules include the exact
/// machine's): no fixed twin is flagged (a prefix replayed under another mode would diverge),
/// and a bug that needs one late timer is found.
#[test]
fn dfs_explores_timed_programs_under_one_time_mode() {
    let dfs = |f: fn()| {
        Builder::new()
            .schedules(2_000)
            .seed(218)
            .strategy(pulse::Strategy::Dfs { bound: 2 })
            .run(f)
    };
    for (name, fixed) in [
        ("boot-race", corpus::boot_race::scenario_fixed as fn()),
        ("late-reply", corpus::late_reply::scenario_fixed),
        ("auto-update", corpus::auto_update::scenario_fixed),
    ] {
        let report = dfs(fixed);
        assert!(report.passed(), "{name} fixed: {}", report.failure.unwrap());
        assert!(
            report.exhaustive.is_some() || report.executions == 2_000,
            "{name} fixed: the search stopped early"
        );
    }
    // A late timer is one more choice, costing a preemption: within the bound for these.
    // (boot-race's needs more schedules than 2,000 before dfs reaches it.)
    for (name, buggy) in [
        ("late-reply", corpus::late_reply::scenario_buggy as fn()),
        ("auto-update", corpus::auto_update::scenario_buggy),
    ] {
        assert!(!dfs(buggy).passed(), "{name}: not found by dfs:2");
    }
}
