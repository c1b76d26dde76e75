//! Throughput: executions per second and ns per scheduling decision, every tool on the same
//! program bodies (programs.rs), measured in one process run and interleaved repetition by
//! repetition so that drift on a shared machine hits every tool alike.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::programs::{self, Program};
use crate::runners::{self, Limits, Tool};
use crate::stats::{median_duration, ratio, sig3, thousands};

pub struct Config {
    pub quick: bool,
    pub reps: usize,
    /// override of every program's executions per repetition
    pub executions: Option<u64>,
    pub programs: Option<Vec<String>>,
    pub tools: Vec<&'static str>,
}

/// The tool configurations measured, in column order.
pub fn tools(families: &[&str]) -> Vec<Tool> {
    let mut v = Vec::new();
    if families.contains(&"pulse") && cfg!(feature = "pulse") {
        v.push(Tool::PulseRandom);
        v.push(Tool::PulsePct(3));
    }
    if families.contains(&"loom") {
        v.push(Tool::Loom(None));
        v.push(Tool::Loom(Some(2)));
    }
    if families.contains(&"shuttle") {
        v.push(Tool::ShuttleRandom);
        v.push(Tool::ShuttlePct(3));
    }
    v
}

fn program_fn(p: &Program, tool: Tool) -> Result<fn(), &'static str> {
    match tool.family() {
        #[cfg(feature = "pulse")]
        "pulse" => Ok(p.pulse),
        "loom" => p.loom,
        "shuttle" => p.shuttle,
        _ => Err("not built"),
    }
}

struct Cell {
    executions: u64,
    decisions: Option<u64>,
    median: Duration,
    complete: bool,
}

impl Cell {
    fn execs_per_sec(&self) -> f64 {
        self.executions as f64 / self.median.as_secs_f64()
    }
}

pub struct Results {
    pub markdown: String,
    /// (program, pulse random ns/decision), for the physical-limit comparison
    pub pulse_ns_per_decision: Vec<(String, f64)>,
}

pub fn run(cfg: &Config, coroutine_switch_ns: Option<f64>) -> Results {
    let tools = tools(&cfg.tools);
    let mut out = String::new();
    let mut summary = String::new();
    let mut pulse_ns = Vec::new();
    let progs: Vec<Program> = programs::all()
        .into_iter()
        .filter(|p| {
            cfg.programs
                .as_ref()
                .is_none_or(|sel| sel.iter().any(|s| s == p.name))
        })
        .collect();

    out.push_str(
        "| program | tool / strategy | executions | decisions / exec | median time | exec/s | ns / decision | pulse ÷ tool (exec/s) |\n\
         |---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    summary.push_str(
        "| program | pulse random exec/s | loom (no bound) exec/s | shuttle random exec/s | pulse ÷ loom | pulse ÷ shuttle random | pulse pct ÷ shuttle pct |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );

    for p in &progs {
        let n = cfg.executions.unwrap_or(if cfg.quick {
            (p.executions / 10).max(10)
        } else {
            p.executions
        });
        let lim = Limits {
            schedules: n,
            max_time: None,
            seed: 1,
            loom_max_branches: None,
        };
        let warm = Limits {
            schedules: (n / 10).clamp(1, 200),
            ..lim.clone()
        };
        let runnable: Vec<(Tool, fn())> = tools
            .iter()
            .filter_map(|&t| program_fn(p, t).ok().map(|f| (t, f)))
            .collect();

        // warm-up: page in code, grow allocator pools, fill shuttle/loom lazy state
        for &(t, f) in &runnable {
            let r = runners::run(t, f, &warm);
            if let Some(msg) = r.failure {
                panic!(
                    "{} failed under {} during warm-up: {msg}",
                    p.name,
                    t.label()
                );
            }
        }
        let mut times: BTreeMap<String, Vec<Duration>> = BTreeMap::new();
        let mut last: BTreeMap<String, runners::Run> = BTreeMap::new();
        for rep in 0..cfg.reps {
            for &(t, f) in &runnable {
                eprintln!(
                    "[throughput] {} rep {}/{} {}",
                    p.name,
                    rep + 1,
                    cfg.reps,
                    t.label()
                );
                let r = runners::run(t, f, &lim);
                if let Some(msg) = &r.failure {
                    panic!("{} failed under {}: {msg}", p.name, t.label());
                }
                if let Some(prev) = last.get(&t.key()) {
                    assert_eq!(
                        prev.executions,
                        r.executions,
                        "{} under {}: nondeterministic count",
                        p.name,
                        t.label()
                    );
                }
                times.entry(t.key()).or_default().push(r.elapsed);
                last.insert(t.key(), r);
            }
        }
        let cells: BTreeMap<String, Cell> = last
            .iter()
            .map(|(k, r)| {
                (
                    k.clone(),
                    Cell {
                        executions: r.executions,
                        decisions: r.decisions,
                        median: median_duration(&times[k]),
                        complete: r.complete,
                    },
                )
            })
            .collect();

        // decisions per execution measured by pulse random, borrowed for loom (no counter)
        let pulse_dpe = cells
            .get(&Tool::PulseRandom.key())
            .and_then(|c| c.decisions.map(|d| d as f64 / c.executions as f64));
        let pulse_eps = |pct: bool| {
            let k = if pct {
                Tool::PulsePct(3).key()
            } else {
                Tool::PulseRandom.key()
            };
            cells.get(&k).map(|c| c.execs_per_sec())
        };

        for &t in &tools {
            let label = t.label();
            let Some(c) = cells.get(&t.key()) else {
                let why = program_fn(p, t).err().unwrap_or("not run");
                out.push_str(&format!(
                    "| {} | {label} | n/a: {why} | | | | | |\n",
                    p.name
                ));
                continue;
            };
            let (dpe, borrowed) = match c.decisions {
                Some(d) => (Some(d as f64 / c.executions as f64), false),
                None => (pulse_dpe, true),
            };
            let ns_per_dec = dpe.map(|d| c.median.as_nanos() as f64 / (c.executions as f64 * d));
            let mark = if borrowed { "†" } else { "" };
            let ratio_cell = match t {
                Tool::PulseRandom
                | Tool::PulsePct(_)
                | Tool::PulseRandomTime
                | Tool::PulsePos
                | Tool::PulseDfs(_)
                | Tool::PulseDpor(_)
                | Tool::PulsePortfolio => String::new(),
                Tool::ShuttlePct(_) => pulse_eps(true)
                    .map(|e| ratio(e / c.execs_per_sec()))
                    .unwrap_or_default(),
                _ => pulse_eps(false)
                    .map(|e| ratio(e / c.execs_per_sec()))
                    .unwrap_or_default(),
            };
            let execs = if c.complete {
                format!("{} (space exhausted)", thousands(c.executions))
            } else {
                thousands(c.executions)
            };
            out.push_str(&format!(
                "| {} | {label} | {execs} | {}{mark} | {} | {} | {}{mark} | {ratio_cell} |\n",
                p.name,
                dpe.map(sig3).unwrap_or_else(|| "-".into()),
                crate::stats::secs(c.median.as_secs_f64()),
                sig3(c.execs_per_sec()),
                ns_per_dec.map(sig3).unwrap_or_else(|| "-".into()),
            ));
            if t == Tool::PulseRandom {
                if let Some(ns) = ns_per_dec {
                    pulse_ns.push((p.name.to_string(), ns));
                }
            }
        }

        let eps = |t: Tool| cells.get(&t.key()).map(|c| c.execs_per_sec());
        let na = |t: Tool| match program_fn(p, t) {
            Err(_) => "n/a".to_string(),
            Ok(_) => "-".to_string(),
        };
        let cell = |t: Tool| eps(t).map(sig3).unwrap_or_else(|| na(t));
        let div = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => ratio(a / b),
            _ => "-".into(),
        };
        summary.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            p.name,
            cell(Tool::PulseRandom),
            cell(Tool::Loom(None)),
            cell(Tool::ShuttleRandom),
            div(eps(Tool::PulseRandom), eps(Tool::Loom(None))),
            div(eps(Tool::PulseRandom), eps(Tool::ShuttleRandom)),
            div(eps(Tool::PulsePct(3)), eps(Tool::ShuttlePct(3))),
        ));
    }

    let mut md = String::new();
    md.push_str("### Summary (executions per second, higher is better; ratio > 1 means pulse is faster)\n\n");
    md.push_str(&summary);
    md.push_str("\n### All measurements\n\n");
    md.push_str(&out);
    md.push_str(
        "\nNotes:\n\
         - executions: per timed repetition; the same count every repetition (fixed seed 1 for pulse and shuttle; loom's DFS is deterministic). \
         \"space exhausted\": loom's bounded DFS finished before the cap, so the row times the whole search.\n\
         - median time: median over the repetitions of the wall time of one whole run (builder call to return), \
         repetitions interleaved tool by tool.\n\
         - decisions / exec: pulse = `Report::decisions / Report::executions`; shuttle = `shuttle::current::context_switches()` \
         read at the end of each body (its scheduling points up to the end of the main thread, including those where it kept the running task); \
         † loom exposes no count, so loom's decisions/exec is **borrowed from pulse random on the same program** and loom's \
         ns/decision = time / (executions x that number). Each tool places its scheduling points differently, \
         so exec/s is the comparable number; ns/decision is each tool's cost per own scheduling point.\n\
         - pulse ÷ tool: pulse exec/s divided by the row's exec/s (pulse random against loom and shuttle random, pulse pct:3 against shuttle pct(3)).\n\
         - loom runs through `loom::model::Builder::check` with `max_permutations = n + 1` and `checkpoint_interval = 1` \
         (loom checks its bounds only every `checkpoint_interval` iterations), no tracing subscriber; \
         shuttle runs `Runner::new(RandomScheduler::new_from_seed(1, n) | PctScheduler::new_from_seed(1, 3, n), Config)`, \
         which is `check_random` / `check_pct` with a fixed seed, with `silence_warnings = true`.\n",
    );
    if let Some(co) = coroutine_switch_ns {
        md.push_str(&format!(
            "- physical limit on this machine: one coroutine switch = {} ns (see the physical reference table).\n",
            sig3(co)
        ));
    }
    Results {
        markdown: md,
        pulse_ns_per_decision: pulse_ns,
    }
}
