//! `cargo pulse check-history`: checks recorded histories (Jepsen's etcd register logs, the
//! EDN-like key-value format) for linearizability against a built-in model, with the checker
//! `pulse::statem` uses (`pulse-lincheck`), and without building or running anything else.
//!
//! One line per file (`FILE: linearizable`, `FILE: not linearizable`, `FILE: unknown
//! (reason)`), then the total time; `--json` prints one JSON object per file and a summary.
//! Exit status: 0 every file linearizes, 1 one does not, 2 otherwise (a file that cannot be
//! read, named with its line, or a check that ran out of time).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use pulse_lincheck::history::{parse_jepsen_register, parse_kv};
use pulse_lincheck::models::{Kv, Register};
use pulse_lincheck::{check_parallel, Explanation, Model, Operation, Verdict};
use serde_json::json;

use crate::exit_code;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HistoryModel {
    /// A read/write/compare-and-set register: Jepsen's etcd log format.
    Register,
    /// A key-value store with get/put/append, checked per key: the EDN-like format.
    Kv,
}

#[derive(Debug, Clone, Args)]
pub struct CheckHistoryArgs {
    /// The sequential model (and file format) the histories are checked against.
    #[arg(long, value_enum)]
    pub model: HistoryModel,
    /// History files.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// One JSON object per file, then a summary, instead of text.
    #[arg(long)]
    pub json: bool,
    /// Seconds each file's check may take before its answer is `unknown`.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub timeout: f64,
    /// kv: check the whole history at once instead of key by key (much slower).
    #[arg(long)]
    pub no_partition: bool,
    /// Threads that check a file's partitions (kv keys) at once (default 1: on this project's
    /// shared 2-vCPU machines, 2 threads measured no faster).
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
}

/// One file's answer.
enum FileResult {
    Checked {
        verdict: Verdict,
        /// For a violation: a sentence on where the search got stuck.
        why: Option<String>,
    },
    Unreadable(String),
}

pub fn run(args: CheckHistoryArgs) -> anyhow::Result<i32> {
    if !(args.timeout > 0.0 && args.timeout.is_finite()) {
        anyhow::bail!("--timeout must be a positive number of seconds");
    }
    let timeout = Duration::from_secs_f64(args.timeout);
    let started = Instant::now();
    let mut slowest: Option<(Duration, String)> = None;
    let (mut not_linearizable, mut other) = (0usize, 0usize);
    for file in &args.files {
        let name = file.display().to_string();
        let t = Instant::now();
        let result = check_file(&args, file, timeout);
        let took = t.elapsed();
        if slowest.as_ref().is_none_or(|(d, _)| took > *d) {
            slowest = Some((took, name.clone()));
        }
        let (verdict, reason, why) = match &result {
            FileResult::Checked { verdict, why } => match verdict {
                Verdict::Linearizable => ("linearizable", None, None),
                Verdict::NotLinearizable(_) => {
                    not_linearizable += 1;
                    ("not_linearizable", None, why.clone())
                }
                Verdict::Unknown(reason) => {
                    other += 1;
                    ("unknown", Some(reason.clone()), None)
                }
            },
            FileResult::Unreadable(reason) => {
                other += 1;
                ("unreadable", Some(reason.clone()), None)
            }
        };
        if args.json {
            println!(
                "{}",
                json!({
                    "file": name,
                    "verdict": verdict,
                    "reason": reason,
                    "explanation": why,
                    "seconds": took.as_secs_f64(),
                })
            );
        } else {
            match (verdict, reason) {
                ("unknown", Some(r)) => println!("{name}: unknown ({r})"),
                ("unreadable", Some(r)) => println!("{r} (unreadable)"),
                (v, _) => println!("{name}: {}", v.replace('_', " ")),
            }
        }
    }
    let total = started.elapsed();
    let code = if not_linearizable > 0 {
        1
    } else if other > 0 {
        exit_code::TOOL_ERROR
    } else {
        0
    };
    let files = args.files.len();
    if args.json {
        println!(
            "{}",
            json!({
                "files": files,
                "not_linearizable": not_linearizable,
                "unknown_or_unreadable": other,
                "total_seconds": total.as_secs_f64(),
                "slowest_file": slowest.as_ref().map(|(_, n)| n),
                "slowest_seconds": slowest.as_ref().map(|(d, _)| d.as_secs_f64()),
                "exit_code": code,
            })
        );
    } else {
        let slowest = slowest
            .map(|(d, n)| format!(" (slowest {n}: {:.3}s)", d.as_secs_f64()))
            .unwrap_or_default();
        println!(
            "checked {files} file(s) in {:.3}s{slowest}",
            total.as_secs_f64()
        );
    }
    Ok(code)
}

fn check_file(args: &CheckHistoryArgs, file: &PathBuf, timeout: Duration) -> FileResult {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) => return FileResult::Unreadable(format!("{}: {e}", file.display())),
    };
    let name = file.display();
    let jobs = args.jobs.unwrap_or(1).max(1);
    match args.model {
        HistoryModel::Register => match parse_jepsen_register(&text) {
            Ok(h) => checked(&Register, &h, timeout, jobs),
            Err(e) => FileResult::Unreadable(format!("{name}:{}: {}", e.line, e.message)),
        },
        HistoryModel::Kv => match parse_kv(&text) {
            Ok(h) => checked(
                &Kv {
                    partitioned: !args.no_partition,
                },
                &h,
                timeout,
                jobs,
            ),
            Err(e) => FileResult::Unreadable(format!("{name}:{}: {}", e.line, e.message)),
        },
    }
}

fn checked<M>(
    model: &M,
    history: &[Operation<M::Input, M::Output>],
    timeout: Duration,
    jobs: usize,
) -> FileResult
where
    M: Model + Sync,
    M::Input: std::fmt::Debug + Sync,
    M::Output: Sync,
    M::State: Send,
{
    let verdict = check_parallel(model, history, timeout, jobs);
    let why = match &verdict {
        Verdict::NotLinearizable(e) => Some(explain(history, e)),
        _ => None,
    };
    FileResult::Checked { verdict, why }
}

/// Where the search got stuck, in the file's terms (an operation's call time is the line
/// of its invocation).
fn explain<I: std::fmt::Debug, O>(history: &[Operation<I, O>], e: &Explanation) -> String {
    let prefix = e.longest_prefix.len();
    match e.cannot_follow {
        Some(i) => format!(
            "the longest linearizable prefix has {prefix} operation(s); process {}'s {:?} \
             (invoked at line {}) cannot follow it",
            history[i].client, history[i].input, history[i].call
        ),
        None => format!("the longest linearizable prefix has {prefix} operation(s)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(model: HistoryModel, files: Vec<PathBuf>) -> CheckHistoryArgs {
        CheckHistoryArgs {
            model,
            files,
            json: false,
            timeout: 10.0,
            no_partition: false,
            jobs: None,
        }
    }

    fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    const OK: &str = "INFO  jepsen.util - 0\t:invoke\t:write\t1\n\
                      INFO  jepsen.util - 0\t:ok\t:write\t1\n\
                      INFO  jepsen.util - 1\t:invoke\t:read\tnil\n\
                      INFO  jepsen.util - 1\t:ok\t:read\t1\n";
    const STALE: &str = "INFO  jepsen.util - 0\t:invoke\t:write\t1\n\
                         INFO  jepsen.util - 0\t:ok\t:write\t1\n\
                         INFO  jepsen.util - 1\t:invoke\t:read\tnil\n\
                         INFO  jepsen.util - 1\t:ok\t:read\tnil\n";

    #[test]
    fn exit_status_is_0_1_or_2() {
        let dir = tempfile::tempdir().unwrap();
        let ok = write(&dir, "ok.log", OK);
        let stale = write(&dir, "stale.log", STALE);
        let broken = write(
            &dir,
            "broken.log",
            "INFO  jepsen.util - 0\t:invoke\t:frob\t1\n",
        );
        let run_on = |files: Vec<PathBuf>| run(args(HistoryModel::Register, files)).unwrap();
        assert_eq!(run_on(vec![ok.clone()]), 0);
        assert_eq!(run_on(vec![ok.clone(), stale.clone()]), 1);
        assert_eq!(run_on(vec![ok.clone(), broken.clone()]), 2);
        // A violation outranks an unreadable file.
        assert_eq!(run_on(vec![broken, stale]), 1);
        assert_eq!(run_on(vec![dir.path().join("missing.log")]), 2);
    }

    #[test]
    fn an_unreadable_line_is_named_by_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let broken = write(
            &dir,
            "broken.log",
            "INFO  jepsen.util - 0\t:invoke\t:read\tnil\nnonsense\n",
        );
        let a = args(HistoryModel::Register, vec![broken.clone()]);
        match check_file(&a, &broken, Duration::from_secs(1)) {
            FileResult::Unreadable(reason) => {
                assert!(
                    reason.starts_with(&format!("{}:2: ", broken.display())),
                    "{reason}"
                )
            }
            FileResult::Checked { .. } => panic!("read a broken file"),
        }
    }

    #[test]
    fn a_violation_is_explained_by_the_operation_that_cannot_follow() {
        let dir = tempfile::tempdir().unwrap();
        let stale = write(&dir, "stale.log", STALE);
        let a = args(HistoryModel::Register, vec![stale.clone()]);
        let FileResult::Checked { why: Some(why), .. } =
            check_file(&a, &stale, Duration::from_secs(1))
        else {
            panic!("expected a violation");
        };
        assert!(
            why.contains("process 1's Read (invoked at line 3) cannot follow"),
            "{why}"
        );
    }
}
