//! `pulse-bench`: pulse vs loom vs shuttle on the same programs, in one run, as markdown.
//!
//! ```text
//! cargo run --release -p pulse-bench -- [--quick] [--only physical,throughput,bugs]
//!     [--programs a,b] [--tools pulse,loom,shuttle] [--reps N] [--execs N]
//!     [--seeds N] [--budget N] [--budget-secs S] [--list]
//! ```
//! Tables go to stdout, progress to stderr.

mod bugs;
mod machine;
mod peer;
mod physical;
mod programs;
mod runners;
mod scaling;
mod stats;
mod throughput;

use std::time::{Duration, Instant};

const USAGE: &str = "\
pulse-bench: pulse vs loom vs shuttle on the same programs (markdown on stdout)

  --quick               small sizes: fewer executions, reps, seeds and a smaller budget
  --only LIST           sections: physical,throughput,scaling,bugs (default: all)
  --programs LIST       only these programs (names as in --list), any section
  --tools LIST          pulse,loom,shuttle (default: all)
  --reps N              timed repetitions per throughput cell (default 5, quick 3)
  --execs N             executions per throughput repetition (default per program)
  --seeds N             seeds per bug-finding cell (default 10, quick 3)
  --budget N            schedules per bug-finding run (default 10000, quick 1000)
  --budget-secs S       seconds per bug-finding run (default 10, quick 2)
  --warm                bug finding in a warm process: each child first runs the
                        program's fixed twin under the same tool (20 schedules), then
                        the measured run, so no tool pays the process's first page
                        faults of its own code (default: cold, the measured run first)
  --readme PATH         also write the tables into PATH between the markers
                        <!-- pulse-bench:begin --> and <!-- pulse-bench:end -->
  --list                list the programs and exit
";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("__bug-child") {
        bugs::child(&args[1..]);
    }

    let mut quick = false;
    let mut only: Vec<String> = vec![
        "physical".into(),
        "throughput".into(),
        "scaling".into(),
        "bugs".into(),
    ];
    let mut programs: Option<Vec<String>> = None;
    let mut tools: Vec<&'static str> = vec!["pulse", "loom", "shuttle"];
    let (mut reps, mut execs, mut seeds, mut budget, mut budget_secs) =
        (None, None, None, None, None);
    let mut readme: Option<String> = None;
    let mut warm = false;
    let mut it = args.iter();
    let list = |s: &str| {
        s.split(',')
            .map(|x| x.trim().to_string())
            .filter(|x| !x.is_empty())
            .collect::<Vec<_>>()
    };
    while let Some(a) = it.next() {
        let mut val = || {
            it.next()
                .cloned()
                .unwrap_or_else(|| die(&format!("{a} needs a value")))
        };
        match a.as_str() {
            "--quick" => quick = true,
            "--warm" => warm = true,
            "--only" => only = list(&val()),
            "--programs" => programs = Some(list(&val())),
            "--tools" => {
                let v = list(&val());
                tools = ["pulse", "loom", "shuttle"]
                    .into_iter()
                    .filter(|t| v.iter().any(|x| x == t))
                    .collect();
            }
            "--reps" => reps = Some(num(&val())),
            "--execs" => execs = Some(num(&val())),
            "--seeds" => seeds = Some(num(&val())),
            "--budget" => budget = Some(num(&val())),
            "--budget-secs" => {
                budget_secs = Some(
                    val()
                        .parse::<f64>()
                        .unwrap_or_else(|_| die("bad --budget-secs")),
                )
            }
            "--readme" => readme = Some(val()),
            "--list" => {
                println!("throughput programs:");
                for p in programs::all() {
                    println!("  {:<18} {}", p.name, p.what);
                }
                println!("bug-finding programs (../examples):");
                for p in bugs::PROGRAMS {
                    println!("  {:<22} {}", p.name, p.summary);
                }
                for (n, why) in bugs::SKIPPED {
                    println!("  {n:<22} (skipped: {why})");
                }
                return;
            }
            "-h" | "--help" => {
                print!("{USAGE}");
                return;
            }
            other => die(&format!("unknown argument {other}\n\n{USAGE}")),
        }
    }
    if !cfg!(feature = "pulse") {
        tools.retain(|t| *t != "pulse");
    }

    let started = Instant::now();
    let mut out = String::new();
    macro_rules! outln {
        ($o:ident, $($t:tt)*) => {{
            $o.push_str(&format!($($t)*));
            $o.push('\n');
        }};
    }
    let cmdline = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    outln!(out, "## pulse vs loom vs shuttle\n");
    outln!(
        out,
        "Measured by `pulse-bench {cmdline}` in one process run.\n"
    );
    out.push_str(&machine::describe());
    out.push('\n');

    let mut coroutine_ns = None;
    let mut pulse_ns: Vec<(String, f64)> = Vec::new();
    let mut physical_res = None;
    if only.iter().any(|s| s == "physical") {
        let (md, r) = physical::run(quick, if quick { 3 } else { 5 });
        outln!(
            out,
            "### Physical reference: one hand-off between two flows of control\n"
        );
        out.push_str(&format!("{md}\n"));
        coroutine_ns = Some(r.coroutine_switch_ns);
        physical_res = Some(r);
    }
    if only.iter().any(|s| s == "throughput") {
        let cfg = throughput::Config {
            quick,
            reps: reps.unwrap_or(if quick { 3 } else { 5 }) as usize,
            executions: execs,
            programs: programs.clone(),
            tools: tools.clone(),
        };
        let r = throughput::run(&cfg, coroutine_ns);
        outln!(out, "## Throughput\n");
        out.push_str(&format!("{}\n", r.markdown));
        pulse_ns = r.pulse_ns_per_decision;
    }
    if let (Some(phys), false) = (&physical_res, pulse_ns.is_empty()) {
        outln!(out, "### pulse against the physical limit\n");
        outln!(out, "| program | pulse random ns / decision | ÷ coroutine switch | ÷ OS-thread hand-off |\n|---|---:|---:|---:|");
        for (name, ns) in &pulse_ns {
            outln!(
                out,
                "| {name} | {} | {} | {} |",
                stats::sig3(*ns),
                stats::ratio(ns / phys.coroutine_switch_ns),
                stats::ratio(ns / phys.thread_handoff_ns)
            );
        }
        outln!(out,
            "\nA decision that switches threads costs at least one coroutine switch; the rest is the scheduler's \
             bookkeeping. An OS-thread scheduler would pay the hand-off instead (÷ < 1 means pulse decides faster than \
             two OS threads can hand off once).\n"
        );
    }
    #[cfg(feature = "pulse")]
    if only.iter().any(|s| s == "scaling") && tools.contains(&"pulse") {
        outln!(
            out,
            "### Thread scaling: pulse's cost per decision, 2 to 1,000 threads\n"
        );
        let reps = reps.unwrap_or(if quick { 3 } else { 5 }) as usize;
        for (heading, program) in [
            (None, scaling::Program::Independent),
            (
                Some("The same, every thread on one object: n threads at one barrier"),
                scaling::Program::Barrier,
            ),
            (
                Some("The same, every thread contending one lock: n threads at one mutex"),
                scaling::Program::Mutex,
            ),
        ] {
            if let Some(heading) = heading {
                outln!(out, "#### {heading}\n");
            }
            out.push_str(&format!("{}\n", scaling::run(program, quick, reps)));
        }
    }
    if only.iter().any(|s| s == "bugs") {
        let cfg = bugs::Config {
            seeds: seeds.unwrap_or(if quick { 3 } else { 10 }) as usize,
            budget: budget.unwrap_or(if quick { 1_000 } else { 10_000 }),
            budget_time: Duration::from_secs_f64(budget_secs.unwrap_or(if quick {
                2.0
            } else {
                10.0
            })),
            fixed_budget: if quick { 200 } else { 1_000 },
            warm,
            programs: programs.clone(),
            tools: tools.clone(),
            exe: std::env::current_exe().expect("current_exe"),
        };
        outln!(out, "## Bug finding\n");
        out.push_str(&format!("{}\n", bugs::run(&cfg)));
    }
    outln!(
        out,
        "Total wall time of this run: {:.0} s.",
        started.elapsed().as_secs_f64()
    );
    print!("{out}");
    if let Some(path) = readme {
        splice_readme(&path, &out).unwrap_or_else(|e| die(&format!("--readme {path}: {e}")));
        eprintln!("wrote the tables into {path}");
    }
}

const BEGIN: &str = "<!-- pulse-bench:begin -->";
const END: &str = "<!-- pulse-bench:end -->";

/// Replaces the text between the markers in `path` with `tables` (headings demoted one level).
fn splice_readme(path: &str, tables: &str) -> std::io::Result<()> {
    let text = std::fs::read_to_string(path)?;
    let (Some(b), Some(e)) = (text.find(BEGIN), text.find(END)) else {
        return Err(std::io::Error::other(format!(
            "markers {BEGIN} / {END} not found"
        )));
    };
    let demoted: String = tables
        .lines()
        .map(|l| {
            if l.starts_with('#') {
                format!("#{l}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let new = format!("{}{BEGIN}\n{demoted}{}", &text[..b], &text[e..]);
    std::fs::write(path, new)
}

fn num(s: &str) -> u64 {
    s.replace('_', "")
        .parse()
        .unwrap_or_else(|_| die(&format!("not a number: {s}")))
}

fn die(msg: &str) -> ! {
    eprintln!("pulse-bench: {msg}");
    std::process::exit(2)
}
