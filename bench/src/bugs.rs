//! Bug finding: schedules and seconds to the first failure, per tool and strategy, on the
//! examples corpus (../examples/*), each run in its own child process.
//!
//! Why a child process per run: loom aborts the process on a deadlock (a second panic during
//! cleanup, SIGABRT), and a hung or crashing run must cost one cell, not the table. The child
//! prints a `RESULT` line; for loom it prints it from the panic hook, before any abort.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
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
    pub seconds: f64,
    /// exhaustive search finished (loom)
    pub complete: bool,
    pub message: String,
    /// the child crashed (signal) after or instead of reporting
    pub crashed: Option<String>,
    /// the run hit a tool limit rather than a bug (loom max_branches, shuttle max_steps,...)
    pub limit: bool,
    /// pulse: seconds of the executions before the failing one, without the failure report
    pub search_seconds: Option<f64>,
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

static FIRST_PANIC: Mutex<Option<String>> = Mutex::new(None);
static START: OnceLock<Instant> = OnceLock::new();
static PRINTED: AtomicBool = AtomicBool::new(false);

fn result_line(found: bool, execs: u64, secs: f64, complete: bool, msg: &str) -> String {
    let msg: String = msg
        .replace(['\n', '\t', '\r'], " ")
        .chars()
        .take(300)
        .collect();
    format!(
        "RESULT\t{}\t{execs}\t{secs:.6}\t{}\t{msg}\n",
        found as u8, complete as u8
    )
}

fn print_once(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(line.as_bytes());
    let _ = out.flush();
}

/// `pulse-bench __bug-child <program> <tool-key> <buggy|fixed> <seed> <schedules> <max-ms>`
pub fn child(args: &[String]) -> ! {
    let [prog, tool, which, seed, schedules, max_ms] = args else {
        eprintln!("usage: __bug-child <program> <tool> <buggy|fixed> <seed> <schedules> <max-ms>");
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
    std::panic::set_hook(Box::new(move |info| {
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
            *first = Some(msg.clone());
            if is_loom && !PRINTED.swap(true, Ordering::SeqCst) {
                // loom may abort right after this panic (deadlock -> double panic): report now.
                let secs = START
                    .get()
                    .map(|s| s.elapsed().as_secs_f64())
                    .unwrap_or(0.0);
                print_once(&result_line(
                    true,
                    EXECS.load(Ordering::SeqCst),
                    secs,
                    false,
                    &msg,
                ));
            }
        }
    }));
    START.get_or_init(Instant::now);
    let r = runners::run(tool, f, &lim);
    if let (Some(search), Some(_)) = (r.search, &r.failure) {
        // pulse's elapsed time includes its failure report (a traced replay of the failing
        // schedule); `Report::search_time` is the search alone.
        print_once(&format!("SEARCH\t{:.6}\n", search.as_secs_f64()));
    }
    let first = FIRST_PANIC
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let msg = match (&r.failure, first) {
        (Some(_), Some(first)) if tool.family() != "pulse" => first,
        (Some(m), _) => m.clone(),
        (None, _) => String::new(),
    };
    print_once(&result_line(
        r.failure.is_some(),
        r.executions,
        r.elapsed.as_secs_f64(),
        r.complete,
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
    let search_seconds = lines
        .iter()
        .find_map(|l| l.strip_prefix("SEARCH\t"))
        .and_then(|v| v.trim().parse::<f64>().ok());
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
            let f: Vec<&str> = l.splitn(6, '\t').collect();
            let message = f.get(5).unwrap_or(&"").to_string();
            Outcome {
                found: f[1] == "1",
                executions: f[2].parse().unwrap_or(0),
                seconds: f[3].parse().unwrap_or(0.0),
                complete: f[4] == "1",
                limit: f[1] == "1" && is_limit_message(&message),
                message,
                crashed,
                search_seconds,
            }
        }
        None => {
            let tail: String = stderr.lines().rev().take(3).collect::<Vec<_>>().join(" | ");
            Outcome {
                found: false,
                executions: 0,
                seconds: 0.0,
                complete: false,
                message: tail,
                crashed: Some(crashed.unwrap_or_else(|| "no RESULT line".into())),
                limit: false,
                search_seconds: None,
            }
        }
    }
}

/// Cell text for a tool/strategy on one program over all its seeds.
struct CellStats {
    sched: String,
    time: String,
}

fn summarize(
    tool: Tool,
    outs: &[Outcome],
    budget: u64,
    notes: &mut Vec<String>,
    prog: &str,
) -> CellStats {
    let n = outs.len();
    let bugs: Vec<&Outcome> = outs.iter().filter(|o| o.found && !o.limit).collect();
    let k = bugs.len();
    for o in outs {
        if let Some(c) = &o.crashed {
            let what = if o.found {
                "after reporting its failure"
            } else {
                "without reporting"
            };
            let note = format!("{prog} / {}: child process {c} {what}", tool.label());
            if !notes.contains(&note) {
                notes.push(note);
            }
        }
        if o.limit {
            let note = format!(
                "{prog} / {}: stopped by a tool limit, not a bug: {}",
                tool.label(),
                o.message
            );
            if !notes.contains(&note) {
                notes.push(note);
            }
        }
    }
    if tool.is_deterministic_search() {
        let o = &outs[0];
        return if o.found && !o.limit {
            CellStats {
                sched: thousands(o.executions),
                time: secs(o.seconds),
            }
        } else if o.limit {
            CellStats {
                sched: "limit hit".into(),
                time: "-".into(),
            }
        } else if o.complete {
            CellStats {
                sched: format!(
                    "not found: space exhausted after {}",
                    thousands(o.executions)
                ),
                time: secs(o.seconds),
            }
        } else if o.crashed.is_some() && o.executions == 0 {
            CellStats {
                sched: "crashed".into(),
                time: "-".into(),
            }
        } else {
            CellStats {
                sched: format!(
                    "not found in {}",
                    thousands(o.executions.max(budget.min(o.executions)))
                ),
                time: format!("> {}", secs(o.seconds)),
            }
        };
    }
    // median over seeds, a seed that did not find counting as +infinity
    let mut ex: Vec<f64> = outs
        .iter()
        .map(|o| {
            if o.found && !o.limit {
                o.executions as f64
            } else {
                f64::INFINITY
            }
        })
        .collect();
    let mut tm: Vec<f64> = outs
        .iter()
        .map(|o| {
            if o.found && !o.limit {
                o.seconds
            } else {
                f64::INFINITY
            }
        })
        .collect();
    ex.sort_by(|a, b| a.partial_cmp(b).unwrap());
    tm.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let med = |v: &[f64]| {
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    };
    let (me, mt) = (med(&ex), med(&tm));
    let frac = format!("{k}/{n}");
    if k == 0 {
        CellStats {
            sched: format!("not found ({frac})"),
            time: "-".into(),
        }
    } else if !me.is_finite() {
        CellStats {
            sched: format!("> {} ({frac})", thousands(budget)),
            time: "-".into(),
        }
    } else {
        let me = if me.fract() == 0.0 {
            thousands(me as u64)
        } else {
            format!("{me:.1}")
        };
        let mut time = secs(mt);
        if tool.family() == "pulse" {
            // search-only time; a failure in the first execution has no search before it
            let mut st: Vec<f64> = outs
                .iter()
                .map(|o| match (o.found && !o.limit, o.search_seconds) {
                    (true, Some(s)) => s,
                    (true, None) if o.executions <= 1 => 0.0,
                    _ => f64::INFINITY,
                })
                .collect();
            st.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let ms = med(&st);
            if ms.is_finite() {
                time = format!("{time} (search {})", secs(ms));
            }
        }
        CellStats {
            sched: format!("{me} ({frac})"),
            time,
        }
    }
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
        for &tool in &strategies {
            match p.variant(tool) {
                Variant::Na(why) => {
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
    md.push_str("\n### Seconds to first failure (median over the same runs; wall time of the whole run up to the failure, including the tool's failure report)\n\n");
    md.push_str(&time_tab);
    md.push_str(&format!(
        "\n### Fixed twins: no false alarm within {} schedules (seed {}; loom bound 3)\n\n",
        thousands(cfg.fixed_budget),
        seed(0)
    ));
    md.push_str(&fixed_tab);
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
         - pulse's seconds include its failure report: a traced replay of the failing schedule, which captures a backtrace at the panic (`Backtrace::force_capture`, symbolized); \
         deadlocks have no panic and so no backtrace. \"search\" is the median time until the failing execution ended, without pulse's failure report (`Report::search_time`).\n\
         - pulse: `Builder::new().schedules(budget).seed(seed).strategy(Random | Pct { depth: 3, k: None } | Pos | Dfs { bound: 2 } | Dpor { bound: 2 } | Portfolio).run_for(budget time, f)`, everything else default \
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
