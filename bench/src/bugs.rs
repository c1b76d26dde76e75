//! Bug finding: schedules and seconds to the first failure, per tool and strategy, on the
//! examples corpus (../examples/*), each run in its own child process.
//!
//! Why a child process per run: loom aborts the process on a deadlock (a second panic during
//! cleanup, SIGABRT), and a hung or crashing run must cost one cell, not the table. The child
//! prints a `RESULT` line; for loom it prints it from the panic hook, before any abort.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::runners::{self, Limits, Tool, EXECS};
use crate::stats::{secs, thousands};

pub enum Variant {
    Run { buggy: fn(), fixed: fn() },
    Na(&'static str),
}

pub struct BugProgram {
    pub name: &'static str,
    pub summary: &'static str,
    pub pulse: Variant,
    pub loom: Variant,
    pub shuttle: Variant,
    /// (tool family, note) for cells that need an explanation
    pub notes: &'static [(&'static str, &'static str)],
}

mod generated {
    #![allow(clippy::all)]
    use super::{BugProgram, Variant};
    include!(concat!(env!("OUT_DIR"), "/bug_programs.rs"));
}
pub use generated::{PROGRAMS, SKIPPED};

impl BugProgram {
    pub fn variant(&self, tool: Tool) -> &Variant {
        match tool.family() {
            "pulse" => &self.pulse,
            "loom" => &self.loom,
            _ => &self.shuttle,
        }
    }
}

pub struct Config {
    pub seeds: usize,
    pub budget: u64,
    pub budget_time: Duration,
    pub fixed_budget: u64,
    /// Each child first runs the program's fixed twin (`WARM_UP_SCHEDULES`), then the
    /// measured run: time to the failure in a process whose tool code is already paged in.
    pub warm: bool,
    pub programs: Option<Vec<String>>,
    pub tools: Vec<&'static str>,
    pub exe: std::path::PathBuf,
}

/// The strategies of the table, in column order.
pub fn strategies(families: &[&str]) -> Vec<Tool> {
    let mut v = Vec::new();
    if families.contains(&"pulse") {
        v.push(Tool::PulseRandom);
        v.push(Tool::PulsePct(3));
        v.push(Tool::PulseRandomTime);
        v.push(Tool::PulsePos);
        v.push(Tool::PulseRoles(4));
        v.push(Tool::PulseDfs(2));
        v.push(Tool::PulseDpor(2));
        v.push(Tool::PulsePortfolio);
    }
    if families.contains(&"shuttle") {
        v.push(Tool::ShuttleRandom);
        v.push(Tool::ShuttlePct(3));
    }
    if families.contains(&"loom") {
        v.push(Tool::Loom(None));
        v.push(Tool::Loom(Some(2)));
        v.push(Tool::Loom(Some(3)));
    }
    v
}

/// Seed k of a run: spread far apart, because pulse runs execution i of a run with seed S+i,
/// so consecutive seeds would replay each other's schedules shifted by one.
pub fn seed(k: usize) -> u64 {
    (k as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 1
}

#[derive(Clone, Debug)]
pub struct Outcome {
    /// a failure was found
    pub found: bool,
    /// executions run, including the failing one
    pub executions: u64,
    /// wall time of the whole run (entry point to return, the tool's failure report
    /// included); None when the child aborted after reporting (loom's deadlock)
    pub run_seconds: Option<f64>,
    /// time to the failure's detection, from the same instant: pulse `Report::search_time`
    /// (+ `run_for`'s setup), loom and shuttle the first panic (their failures are panics)
    pub detect_seconds: Option<f64>,
    /// exhaustive search finished (loom)
    pub complete: bool,
    pub message: String,
    /// the child crashed (signal) after or instead of reporting
    pub crashed: Option<String>,
    /// the run hit a tool limit rather than a bug (loom max_branches, shuttle max_steps,...)
    pub limit: bool,
}

fn is_limit_message(m: &str) -> bool {
    let m = m.to_ascii_lowercase();
    m.contains("maximum number of branches")
        || m.contains("max_steps")
        || m.contains("max_threads")
        || m.contains("steplimit")
        || m.contains("step limit")
        || m.contains("max steps")
}

// ---------------------------------------------------------------- child side

/// The first panic of the child: its message and the time since the run's start
/// (`runners::since_start`), taken first thing in the hook.
static FIRST_PANIC: Mutex<Option<(String, Option<f64>)>> = Mutex::new(None);
static PRINTED: AtomicBool = AtomicBool::new(false);

fn opt_secs(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{x:.7}"))
}

/// `RESULT <found> <executions> <run s|-> <complete> <detect s|-> <message>`
fn result_line(
    found: bool,
    execs: u64,
    run: Option<f64>,
    complete: bool,
    detect: Option<f64>,
    msg: &str,
) -> String {
    let msg: String = msg
        .replace(['\n', '\t', '\r'], " ")
        .chars()
        .take(300)
        .collect();
    format!(
        "RESULT\t{}\t{execs}\t{}\t{}\t{}\t{msg}\n",
        found as u8,
        opt_secs(run),
        complete as u8,
        opt_secs(detect)
    )
}

fn print_once(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(line.as_bytes());
    let _ = out.flush();
}

/// Schedules of the fixed twin a warm child runs before the measured run: as an earlier
/// test of the same binary would, it pages in every strategy the tool rotates through.
const WARM_UP_SCHEDULES: u64 = 20;

/// `pulse-bench __bug-child <program> <tool-key> <buggy|fixed> <seed> <schedules> <max-ms> [warm]`
pub fn child(args: &[String]) -> ! {
    let (args, warm) = match args {
        [rest @ .., last] if last == "warm" => (rest, true),
        _ => (args, false),
    };
    let [prog, tool, which, seed, schedules, max_ms] = args else {
        eprintln!(
            "usage: __bug-child <program> <tool> <buggy|fixed> <seed> <schedules> <max-ms> [warm]"
        );
        std::process::exit(2);
    };
    let tool = Tool::parse_key(tool).expect("unknown tool key");
    let p = PROGRAMS
        .iter()
        .find(|p| p.name == prog)
        .expect("unknown program");
    let Variant::Run { buggy, fixed } = p.variant(tool) else {
        eprintln!("{prog} is n/a for {}", tool.label());
        std::process::exit(3);
    };
    let f = if which == "fixed" { *fixed } else { *buggy };
    let lim = Limits {
        schedules: schedules.parse().unwrap(),
        max_time: Some(Duration::from_millis(max_ms.parse().unwrap())),
        seed: seed.parse().unwrap(),
        // tokio's loom CI setting; loom's default 1,000 trips on short spin loops
        loom_max_branches: Some(10_000),
    };
    let is_loom = matches!(tool, Tool::Loom(_));
    // Installed before the run. shuttle installs its own hook at its first execution (once
    // per process), which prints two lines to stderr and then calls the hook it replaced,
    // this one (shuttle-engine 0.1.7, runtime/failure.rs `init_panic_hook`); panics its
    // teardown ignores never reach this hook. loom installs none. pulse installs its own;
    // its time comes from `Report::search_time` instead.
    std::panic::set_hook(Box::new(move |info| {
        let at = runners::since_start().map(|d| d.as_secs_f64());
        let msg = match info.payload().downcast_ref::<&str>() {
            Some(s) => s.to_string(),
            None => info
                .payload()
                .downcast_ref::<String>()
                .cloned()
                .unwrap_or_else(|| "(panic)".into()),
        };
        let mut first = FIRST_PANIC.lock().unwrap_or_else(|e| e.into_inner());
        if first.is_none() {
            *first = Some((msg.clone(), at));
            if is_loom && !PRINTED.swap(true, Ordering::SeqCst) {
                // loom may abort right after this panic (deadlock -> double panic): report
                // now, without a whole-run time; a run that returns reports again below.
                print_once(&result_line(
                    true,
                    EXECS.load(Ordering::SeqCst),
                    None,
                    false,
                    at,
                    &msg,
                ));
            }
        }
    }));
    if warm {
        // The fixed twin passes: its run pages in the tool's code (and the program's) the
        // way an earlier test of the same binary would. Another seed, so no schedule is
        // rehearsed; nothing of it is reported.
        let warm_up = Limits {
            schedules: WARM_UP_SCHEDULES,
            seed: lim.seed ^ 1,
            ..lim
        };
        let _ = runners::run(tool, *fixed, &warm_up);
        *FIRST_PANIC.lock().unwrap_or_else(|e| e.into_inner()) = None;
        PRINTED.store(false, Ordering::SeqCst);
    }
    let r = runners::run(tool, f, &lim);
    let first = FIRST_PANIC
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let (msg, detect) = match (&r.failure, first) {
        (None, _) => (String::new(), None),
        // pulse: the search alone, without the report (traced replay, minimization, naming)
        (Some(m), _) if tool.family() == "pulse" => (m.clone(), r.search.map(|d| d.as_secs_f64())),
        (Some(_), Some((first, at))) => (first, at),
        (Some(m), None) => (m.clone(), None),
    };
    print_once(&result_line(
        r.failure.is_some(),
        r.executions,
        Some(r.elapsed.as_secs_f64()),
        r.complete,
        detect,
        &msg,
    ));
    std::process::exit(0)
}

// ---------------------------------------------------------------- parent side

fn run_child(
    cfg: &Config,
    prog: &str,
    tool: Tool,
    which: &str,
    seed: u64,
    schedules: u64,
) -> Outcome {
    let max_ms = cfg.budget_time.as_millis() as u64;
    let mut child = Command::new(&cfg.exe)
        .args([
            "__bug-child",
            prog,
            &tool.key(),
            which,
            &seed.to_string(),
            &schedules.to_string(),
            &max_ms.to_string(),
        ])
        .args(cfg.warm.then_some("warm"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn child");
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            lines.push(l);
        }
        lines
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stderr.read_to_end(&mut s);
        String::from_utf8_lossy(&s).to_string()
    });
    // The child bounds itself (schedules, and time where the tool can); pulse's builder has no
    // time bound, so the parent enforces one, with slack.
    let deadline = Instant::now() + cfg.budget_time * 3 + Duration::from_secs(10);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let lines = reader.join().unwrap();
    let stderr = err_reader.join().unwrap();
    let result = lines.iter().rev().find(|l| l.starts_with("RESULT\t"));
    let crashed = match status {
        None => Some("killed at the parent's deadline".to_string()),
        Some(st) if st.success() => None,
        Some(st) => {
            use std::os::unix::process::ExitStatusExt;
            Some(match st.signal() {
                Some(6) => "aborted (SIGABRT)".to_string(),
                Some(sig) => format!("killed by signal {sig}"),
                None => format!("exit code {}", st.code().unwrap_or(-1)),
            })
        }
    };
    match result {
        Some(l) => {
            let f: Vec<&str> = l.splitn(7, '\t').collect();
            let message = f.get(6).unwrap_or(&"").to_string();
            let num = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok());
            Outcome {
                found: f[1] == "1",
                executions: f[2].parse().unwrap_or(0),
                run_seconds: num(3),
                complete: f.get(4) == Some(&"1"),
                detect_seconds: num(5),
                limit: f[1] == "1" && is_limit_message(&message),
                message,
                crashed,
            }
        }
        None => {
            let tail: String = stderr.lines().rev().take(3).collect::<Vec<_>>().join(" | ");
            Outcome {
                found: false,
                executions: 0,
                run_seconds: None,
                detect_seconds: None,
                complete: false,
                message: tail,
                crashed: Some(crashed.unwrap_or_else(|| "no RESULT line".into())),
                limit: false,
            }
        }
    }
}

/// Cell text for a tool/strategy on one program over all its seeds, and what the summary needs.
struct CellStats {
    sched: String,
    time: String,
    /// the median seed found the bug (deterministic searches: the one run found it)
    found: bool,
    /// median time to the failure's detection (+infinity when not found)
    detect: f64,
}

/// Median over seeds, a missing value counting as +infinity.
fn median_inf(xs: impl Iterator<Item = Option<f64>>) -> f64 {
    let v: Vec<f64> = xs.map(|x| x.unwrap_or(f64::INFINITY)).collect();
    if v.is_empty() {
        return f64::INFINITY;
    }
    crate::stats::median(v)
}

fn bug(o: &Outcome) -> bool {
    o.found && !o.limit
}

/// `0.10 ms (run 0.31 ms)`: time to detection, then the whole run's wall time.
fn time_cell(detect: f64, run: f64, aborted: bool) -> String {
    let d = if detect.is_finite() {
        secs(detect)
    } else {
        "?".into()
    };
    if aborted {
        format!("{d} (run aborted)")
    } else if run.is_finite() {
        format!("{d} (run {})", secs(run))
    } else {
        format!("{d} (run -)")
    }
}

fn summarize(
    tool: Tool,
    outs: &[Outcome],
    budget: u64,
    notes: &mut Vec<String>,
    prog: &str,
) -> CellStats {
    let n = outs.len();
    let k = outs.iter().filter(|o| bug(o)).count();
    for o in outs {
        let mut note = |t: String| {
            if !notes.contains(&t) {
                notes.push(t);
            }
        };
        if let Some(c) = &o.crashed {
            let what = if o.found {
                "after reporting its failure"
            } else {
                "without reporting"
            };
            note(format!(
                "{prog} / {}: child process {c} {what}",
                tool.label()
            ));
        }
        if o.limit {
            note(format!(
                "{prog} / {}: stopped by a tool limit, not a bug: {}",
                tool.label(),
                o.message
            ));
        }
        if bug(o) && o.detect_seconds.is_none() {
            note(format!(
                "{prog} / {}: a failure without a recorded detection time (counted as not found in the time median)",
                tool.label()
            ));
        }
    }
    if tool.is_deterministic_search() {
        let o = &outs[0];
        let run = o.run_seconds.unwrap_or(f64::INFINITY);
        return if bug(o) {
            let detect = o.detect_seconds.unwrap_or(f64::INFINITY);
            CellStats {
                sched: thousands(o.executions),
                time: time_cell(detect, run, o.run_seconds.is_none()),
                found: true,
                detect,
            }
        } else {
            let (sched, time) = if o.limit {
                ("limit hit".into(), "-".into())
            } else if o.complete {
                (
                    format!(
                        "not found: space exhausted after {}",
                        thousands(o.executions)
                    ),
                    format!("(run {})", secs(run)),
                )
            } else if o.crashed.is_some() && o.executions == 0 {
                ("crashed".into(), "-".into())
            } else {
                (
                    format!(
                        "not found in {}",
                        thousands(o.executions.max(budget.min(o.executions)))
                    ),
                    format!("(run > {})", secs(run)),
                )
            };
            CellStats {
                sched,
                time,
                found: false,
                detect: f64::INFINITY,
            }
        };
    }
    // medians over seeds, a seed that did not find the bug counting as +infinity
    let me = median_inf(outs.iter().map(|o| bug(o).then_some(o.executions as f64)));
    let md = median_inf(outs.iter().map(|o| o.detect_seconds.filter(|_| bug(o))));
    let mr = median_inf(outs.iter().map(|o| o.run_seconds.filter(|_| bug(o))));
    let frac = format!("{k}/{n}");
    if k == 0 {
        CellStats {
            sched: format!("not found ({frac})"),
            time: "-".into(),
            found: false,
            detect: f64::INFINITY,
        }
    } else if !me.is_finite() {
        CellStats {
            sched: format!("> {} ({frac})", thousands(budget)),
            time: "-".into(),
            found: false,
            detect: f64::INFINITY,
        }
    } else {
        let me = if me.fract() == 0.0 {
            thousands(me as u64)
        } else {
            format!("{me:.1}")
        };
        CellStats {
            sched: format!("{me} ({frac})"),
            time: time_cell(md, mr, false),
            found: true,
            detect: md,
        }
    }
}

/// What the summary keeps of one cell.
#[derive(Clone, Copy)]
enum Cell {
    Na,
    NotFound,
    /// found by the median seed, with the median time to detection
    Found(f64),
}

/// The summary under the tables: found counts per column, and pulse's default against the best
/// peer on time to the first failure. Computed from the cells, not written by hand.
fn summary(strategies: &[Tool], progs: &[&BugProgram], cells: &[Vec<Cell>]) -> String {
    let mut md = String::new();
    let n = progs.len();
    md.push_str(&format!(
        "### Summary (computed by pulse-bench from the cells above)\n\n\
         Programs found by the median seed (a deterministic column: by its one run), of the {n} in the table:\n\n\
         | column | found | of the programs it can run |\n|---|---:|---:|\n"
    ));
    for (j, t) in strategies.iter().enumerate() {
        let found = cells
            .iter()
            .filter(|r| matches!(r[j], Cell::Found(_)))
            .count();
        let runnable = cells.iter().filter(|r| !matches!(r[j], Cell::Na)).count();
        md.push_str(&format!(
            "| {} | {found} of {n} | {runnable} |\n",
            t.label()
        ));
    }
    let Some(def) = strategies.iter().position(|t| *t == Tool::PulsePortfolio) else {
        return md;
    };
    let peers: Vec<usize> = (0..strategies.len())
        .filter(|&j| strategies[j].family() != "pulse")
        .collect();
    if peers.is_empty() {
        return md;
    }
    let peer_names = peers
        .iter()
        .map(|&j| strategies[j].label())
        .collect::<Vec<_>>()
        .join(", ");
    md.push_str(&format!(
        "\npulse's default (portfolio) against the best peer on time to the first failure (the seconds \
         table's first number: median time to detection). Peer columns: {peer_names}; a column that is n/a \
         for a program is left out of that program's peers. Best peer = the lowest median among the \
         program's peer columns that found it. Ratio = pulse default ÷ best peer (≤ 0.50x is \
         at most half). \"every peer found\": pulse's default and every peer column that can run the \
         program found it by the median seed (programs no peer can run are left out).\n\n\
         | program | pulse default | best peer | ratio | every peer found |\n|---|---:|---|---:|---|\n"
    ));
    // (ratio, every peer found, program, default, best, best label)
    let mut rows: Vec<(f64, bool)> = Vec::new();
    let mut slow: Vec<String> = Vec::new();
    let mut no_peer = Vec::new();
    let mut only_default = Vec::new();
    let mut only_peer = Vec::new();
    for (i, p) in progs.iter().enumerate() {
        let r = &cells[i];
        let Cell::Found(d) = r[def] else {
            if peers.iter().any(|&j| matches!(r[j], Cell::Found(_))) {
                only_peer.push(p.name);
            }
            continue;
        };
        let runnable: Vec<usize> = peers
            .iter()
            .copied()
            .filter(|&j| !matches!(r[j], Cell::Na))
            .collect();
        if runnable.is_empty() {
            no_peer.push(p.name);
            continue;
        }
        let best = runnable
            .iter()
            .filter_map(|&j| match r[j] {
                Cell::Found(t) if t.is_finite() => Some((t, j)),
                _ => None,
            })
            .min_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
        let Some((bt, bj)) = best else {
            only_default.push(p.name);
            continue;
        };
        let all = runnable
            .iter()
            .all(|&j| matches!(r[j], Cell::Found(t) if t.is_finite()));
        let ratio = d / bt;
        rows.push((ratio, all));
        if all && ratio > 0.5 {
            slow.push(format!(
                "`{}` {} against {} ({})",
                p.name,
                secs(d),
                secs(bt),
                strategies[bj].label()
            ));
        }
        md.push_str(&format!(
            "| {} | {} | {} ({}) | {} | {} |\n",
            p.name,
            secs(d),
            secs(bt),
            strategies[bj].label(),
            crate::stats::ratio(ratio),
            if all { "yes" } else { "no" }
        ));
    }
    let line = |what: &str, v: Vec<f64>| -> String {
        if v.is_empty() {
            return format!("- {what}: no such program\n");
        }
        let k = v.len();
        let half = v.iter().filter(|r| **r <= 0.5).count();
        let max = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        format!(
            "- {what}: {k} programs; median ratio {}, max {}; at most half (≤ 0.50x) on {half} of {k}\n",
            crate::stats::ratio(crate::stats::median(v)),
            crate::stats::ratio(max),
        )
    };
    md.push('\n');
    md.push_str(&line(
        "programs pulse's default and every peer column that can run them found (\"every peer found\" = yes)",
        rows.iter().filter(|r| r.1).map(|r| r.0).collect(),
    ));
    md.push_str(&line(
        "programs pulse's default and at least one peer column found (every row)",
        rows.iter().map(|r| r.0).collect(),
    ));
    if !slow.is_empty() {
        md.push_str(&format!(
            "- above 0.50x among \"every peer found\": {}\n",
            slow.join("; ")
        ));
    }
    let names = |v: &[&str]| {
        v.iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for (what, v) in [
        (
            "found by pulse's default and by no peer column",
            &only_default,
        ),
        (
            "found by a peer column but not by pulse's default",
            &only_peer,
        ),
        ("found by pulse's default, no peer column can run", &no_peer),
    ] {
        if !v.is_empty() {
            md.push_str(&format!("- {what}: {}\n", names(v)));
        }
    }
    md
}

pub fn run(cfg: &Config) -> String {
    let strategies = strategies(&cfg.tools);
    let progs: Vec<&BugProgram> = PROGRAMS
        .iter()
        .filter(|p| {
            cfg.programs
                .as_ref()
                .is_none_or(|sel| sel.iter().any(|s| s == p.name))
        })
        .collect();
    let mut notes: Vec<String> = Vec::new();
    let mut na_reasons: Vec<String> = Vec::new();
    let mut cell_notes: Vec<String> = Vec::new();
    let mut sched_tab = String::new();
    let mut time_tab = String::new();
    let mut fixed_tab = String::new();
    let mut cells: Vec<Vec<Cell>> = Vec::new();
    let header: Vec<String> = strategies.iter().map(|t| t.label()).collect();
    for tab in [&mut sched_tab, &mut time_tab] {
        tab.push_str(&format!(
            "| program | {} |\n|---|{}\n",
            header.join(" | "),
            "---:|".repeat(header.len())
        ));
    }
    // every randomized strategy, and loom at the bound its docs recommend
    let fixed_tools: Vec<Tool> = strategies
        .iter()
        .copied()
        .filter(|t| !matches!(t, Tool::Loom(None) | Tool::Loom(Some(2))))
        .collect();
    fixed_tab.push_str(&format!(
        "| program (fixed twin) | {} |\n|---|{}\n",
        fixed_tools
            .iter()
            .map(|t| t.label())
            .collect::<Vec<_>>()
            .join(" | "),
        "---|".repeat(fixed_tools.len())
    ));

    for p in &progs {
        let mut srow = vec![p.name.to_string()];
        let mut trow = vec![p.name.to_string()];
        let mut crow = Vec::new();
        for &tool in &strategies {
            match p.variant(tool) {
                Variant::Na(why) => {
                    crow.push(Cell::Na);
                    let idx = na_index(&mut na_reasons, why);
                    srow.push(format!("n/a [{idx}]"));
                    trow.push(format!("n/a [{idx}]"));
                }
                Variant::Run { .. } => {
                    let seeds = if tool.is_deterministic_search() {
                        1
                    } else {
                        cfg.seeds
                    };
                    let mut outs = Vec::new();
                    for k in 0..seeds {
                        eprintln!(
                            "[bugs] {} / {} seed {}/{}",
                            p.name,
                            tool.label(),
                            k + 1,
                            seeds
                        );
                        outs.push(run_child(cfg, p.name, tool, "buggy", seed(k), cfg.budget));
                    }
                    let c = summarize(tool, &outs, cfg.budget, &mut notes, p.name);
                    crow.push(if c.found {
                        Cell::Found(c.detect)
                    } else {
                        Cell::NotFound
                    });
                    let marks: Vec<String> = p
                        .notes
                        .iter()
                        .filter(|(fam, _)| *fam == tool.family())
                        .map(|(_, n)| format!("<sup>{}</sup>", na_index(&mut cell_notes, n)))
                        .collect();
                    srow.push(format!("{}{}", c.sched, marks.join("")));
                    trow.push(c.time);
                }
            }
        }
        sched_tab.push_str(&format!("| {} |\n", srow.join(" | ")));
        time_tab.push_str(&format!("| {} |\n", trow.join(" | ")));
        cells.push(crow);

        let mut frow = vec![p.name.to_string()];
        for &tool in &fixed_tools {
            match p.variant(tool) {
                Variant::Na(why) => frow.push(format!("n/a [{}]", na_index(&mut na_reasons, why))),
                Variant::Run { .. } => {
                    eprintln!("[bugs] {} (fixed) / {}", p.name, tool.label());
                    let o = run_child(cfg, p.name, tool, "fixed", seed(0), cfg.fixed_budget);
                    let short: String = o.message.chars().take(60).collect();
                    let short = if short.len() < o.message.len() {
                        format!("{short}...")
                    } else {
                        short
                    };
                    frow.push(if o.found && !o.limit {
                        format!(
                            "FALSE ALARM in execution {}: {short}",
                            thousands(o.executions)
                        )
                    } else if o.limit {
                        format!(
                            "limit hit in execution {}: {short}",
                            thousands(o.executions)
                        )
                    } else if let (Some(c), 0) = (&o.crashed, o.executions) {
                        format!("crashed: {c}")
                    } else if o.complete {
                        format!("clean (space exhausted, {})", thousands(o.executions))
                    } else {
                        format!("clean ({})", thousands(o.executions))
                    });
                }
            }
        }
        fixed_tab.push_str(&format!("| {} |\n", frow.join(" | ")));
    }

    let mut md = String::new();
    md.push_str(&format!(
        "### Schedules to first failure (median over {} seeds; (k/n) = seeds that found it; budget {} schedules or {} per run)\n\n",
        cfg.seeds,
        thousands(cfg.budget),
        secs(cfg.budget_time.as_secs_f64())
    ));
    md.push_str(&sched_tab);
    md.push_str(
        "\n### Seconds to first failure (median over the same runs): time to the failure's detection, then in parentheses the whole run's wall time\n\n\
         First number: from the run's start to the failure's detection, without any failure report: pulse `Report::detected_at` \
         (until the failing execution's first panic, or until it was found stuck), loom and shuttle the first panic (their assertion or deadlock panic). \
         \"run\": the same start to the tool's return, its failure report included (pulse: traced replay, schedule minimization, race naming). Both are medians over seeds; a seed that did not find the bug counts as +infinity.\n\n",
    );
    if cfg.warm {
        md.push_str(&format!(
            "Warm (`--warm`): each child first ran the program's fixed twin under the same tool ({WARM_UP_SCHEDULES} schedules, another seed), \
             then the measured run, as a later test of the same binary would run. The warm-up pays the first page faults of the tool's code.\n\n"
        ));
    }
    md.push_str(&time_tab);
    md.push_str(&format!(
        "\n### Fixed twins: no false alarm within {} schedules (seed {}; loom bound 3)\n\n",
        thousands(cfg.fixed_budget),
        seed(0)
    ));
    md.push_str(&fixed_tab);
    md.push('\n');
    md.push_str(&summary(&strategies, &progs, &cells));
    md.push_str(
        "\nn/a reasons (the program uses an API the tool does not have; nothing was faked):\n\n",
    );
    for (i, r) in na_reasons.iter().enumerate() {
        md.push_str(&format!("- [{}] {r}\n", i + 1));
    }
    if !cell_notes.is_empty() {
        md.push_str("\nCell notes (superscripts):\n\n");
        for (i, n) in cell_notes.iter().enumerate() {
            md.push_str(&format!("- <sup>{}</sup> {n}\n", i + 1));
        }
    }
    for (name, why) in SKIPPED {
        md.push_str(&format!("- example `{name}` not in the table: {why}\n"));
    }
    md.push_str(
        "\nNotes:\n\
         - Each cell is a separate child process per seed (loom: one deterministic run). A seed that did not find the bug counts as +infinity in the median; \"> budget\" means fewer than half the seeds found it.\n\
         - Seeds: seed k = ((k+1) x 0x9E3779B97F4A7C15) >> 1, k = 0..n, the same for pulse and shuttle.\n\
         - loom: `model::Builder` with `max_branches = 10,000` (tokio CI's value), `checkpoint_interval = 1`, `max_permutations`/`max_duration` = the budget; the count is loom's iteration number of the first failing execution. A loom deadlock aborts the process (double panic); the child reports from its panic hook first.\n\
         - Seconds, first number (time to first failure, i.e. to its detection): every tool's clock starts when the child calls the tool's entry point \
         (pulse `Builder::run_for`, shuttle `Runner::run`, loom `Builder::check`), in a fresh child process. \
         pulse: until `Report::detected_at` (the failing execution's first panic, when pulse's panic hook saw it, or the moment the scheduler found the execution stuck: deadlock, livelock), so `run_for`'s setup before the search counts. \
         loom and shuttle: the first panic, timestamped first thing in the child's panic hook; shuttle's own hook runs before it (it prints two short lines to stderr, then calls ours), loom installs none. \
         So every tool's number ends at the panic, before unwinding (a process's first unwind costs ~40 us); a deadlock ends where the tool detects it. \
         \"run\": the wall time of the whole run to the tool's return, its failure report included: pulse's report replays the failing schedule with tracing, minimizes it and names the race; \
         the peers report the panic they stopped at. \"run aborted\": loom aborted the process after the panic (a deadlock's double panic), so there is no whole-run time. \
         A deterministic column that did not find the bug shows \"(run > t)\": the time it searched.\n\
         - pulse: `Builder::new().schedules(budget).seed(seed).strategy(Random | Pct { depth: 3, k: None } | Pos | Roles { depth: 4, roles: None } | Dfs { bound: 2 } | Dpor { bound: 2 } | Portfolio).run_for(budget time, f)`, everything else default \
         (`max_steps` 100,000; spurious wakeups and weak-CAS failures each offered with odds 1 in 8 where they can happen; \
         the default time portfolio: each execution `infinitely-fast` (the clock jumps to the next deadline only when no thread can run) or `quite-slow-random=50ms` (a timer due within 50 ms may fire before a runnable step, on a 1-in-4 coin), by its seed). \
         \"time random\" adds `.time(TimeMode::TIME_RANDOM)`: a timed wait may expire at any scheduling point. \
         `dfs:2` and `dpor:2` are deterministic (one run, like loom); \"space exhausted\" means every schedule with at most 2 preemptions ran.\n\
         - shuttle: `Runner` with `RandomScheduler::new_from_seed` / `PctScheduler::new_from_seed(seed, 3, budget)` and `Config::max_time`; executions counted by a static counter at the start of each body.\n",
    );
    if !notes.is_empty() {
        md.push_str("\nRun notes:\n\n");
        for n in &notes {
            md.push_str(&format!("- {n}\n"));
        }
    }
    md.push_str("\nThe corpus:\n\n");
    for p in &progs {
        md.push_str(&format!("- `{}`: {}\n", p.name, p.summary));
    }
    md
}

fn na_index(v: &mut Vec<String>, why: &str) -> usize {
    if let Some(i) = v.iter().position(|r| r == why) {
        i + 1
    } else {
        v.push(why.to_string());
        v.len()
    }
}
