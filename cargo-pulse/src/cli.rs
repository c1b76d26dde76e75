//! The command line: `cargo pulse test` and `cargo pulse instrument`.
//!
//! Flags follow `cargo test` and libtest where they mean the same thing, so that a user's habits
//! carry over; the pulse-specific ones (`--schedules`, `--seed`, `--replay`, ...) configure the
//! search. libtest flags given after `--` are folded into the same options by
//! [`TestArgs::absorb_passthrough`].

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use pulse_protocol::{Cleanup, Detached, Isolation, Memory, Strategy, TimeMode, WeakCas};

use crate::seeds::SeedRange;

#[derive(Debug, Parser)]
#[command(
    name = "cargo-pulse",
    bin_name = "cargo pulse",
    version,
    about = "Run a crate's own tests under pulse's controlled scheduler, many seeded schedules each",
    after_help = "Typical use:\n  cargo pulse test                 run every #[test] under 1000 schedules\n  cargo pulse test NAME --exact --replay SCHEDULE   replay one failure"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Mirror, instrument and build the workspace, then run its tests under many schedules.
    Test(Box<TestArgs>),
    /// Instrument one crate (a workspace member or a dependency) into DIR and print the report.
    Instrument(InstrumentArgs),
    /// Check recorded histories for linearizability against a built-in model.
    CheckHistory(crate::check_history::CheckHistoryArgs),
    /// Draw one execution's trace file: text, PULSE's happens-before diagram (dot, svg), or
    /// a self-contained HTML viewer.
    Trace(crate::trace_cmd::TraceArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MessageFormat {
    Human,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Runner {
    /// One process per test, driven by cargo-pulse: progress bars, summary table.
    Pulse,
    /// Hand the built mirror to `cargo nextest run` (use with `--seeds` to spread a search).
    Nextest,
}

/// What a run in which no test was selected says (nextest's `--no-tests`): no verdict is
/// not a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NoTests {
    /// An error: exit 4, as cargo-nextest.
    Fail,
    /// A warning; exit 0.
    Warn,
    /// Nothing said; exit 0, as `cargo test`.
    Pass,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Default, Args)]
pub struct CargoArgs {
    /// Path to Cargo.toml of the workspace or package to test.
    #[arg(long, value_name = "PATH", help_heading = "Package selection")]
    pub manifest_path: Option<PathBuf>,
    /// Package(s) to test.
    #[arg(
        short = 'p',
        long = "package",
        value_name = "SPEC",
        help_heading = "Package selection"
    )]
    pub packages: Vec<String>,
    /// Test all packages in the workspace.
    #[arg(long, alias = "all", help_heading = "Package selection")]
    pub workspace: bool,
    /// Exclude packages from the test (with --workspace).
    #[arg(long, value_name = "SPEC", help_heading = "Package selection")]
    pub exclude: Vec<String>,
    /// Space or comma separated features to activate.
    #[arg(
        short = 'F',
        long,
        value_name = "FEATURES",
        help_heading = "Feature selection"
    )]
    pub features: Vec<String>,
    /// Activate all available features.
    #[arg(long, help_heading = "Feature selection")]
    pub all_features: bool,
    /// Do not activate the `default` feature.
    #[arg(long, help_heading = "Feature selection")]
    pub no_default_features: bool,
    /// Build in release mode, with optimizations.
    #[arg(short = 'r', long, help_heading = "Compilation options")]
    pub release: bool,
    /// Build with the given profile.
    #[arg(long, value_name = "NAME", help_heading = "Compilation options")]
    pub profile: Option<String>,
    /// Directory for all generated artifacts: the mirror, failure files and the instrumented
    /// build go under DIR/pulse [env: CARGO_TARGET_DIR].
    #[arg(long, value_name = "DIR", help_heading = "Compilation options")]
    pub target_dir: Option<PathBuf>,
    /// Number of parallel build jobs.
    #[arg(
        short = 'j',
        long,
        value_name = "N",
        help_heading = "Compilation options"
    )]
    pub jobs: Option<u32>,
    /// Run without accessing the network.
    #[arg(long, help_heading = "Manifest options")]
    pub offline: bool,
    /// Directory for the instrumented build's artifacts [env: CARGO_PULSE_TARGET_DIR]
    /// (default: target/pulse/target). Share one across workspaces to build pulse once.
    #[arg(long, value_name = "DIR", help_heading = "Compilation options")]
    pub pulse_target_dir: Option<PathBuf>,
    /// Registry dependencies to instrument (copied into the mirror and patched in): `auto`
    /// (default: every crate of the test's graph that uses std's sync/thread/time or core's
    /// atomics), `none`, or crate names (`a,b`; with `auto`, in addition).
    /// `--instrument-dep NAME` is the same.
    #[arg(
        long = "instrument-deps",
        visible_alias = "instrument-dep",
        value_name = "auto|none|CRATE,..",
        value_delimiter = ',',
        help_heading = "Instrumentation"
    )]
    pub instrument_deps: Vec<String>,
}

#[derive(Debug, Clone, Default, Args)]
pub struct TargetArgs {
    /// Test only this package's library.
    #[arg(long, help_heading = "Target selection")]
    pub lib: bool,
    /// Test only the specified binary.
    #[arg(long = "bin", value_name = "NAME", help_heading = "Target selection")]
    pub bins_named: Vec<String>,
    /// Test all binaries.
    #[arg(long, help_heading = "Target selection")]
    pub bins: bool,
    /// Test only the specified integration test target.
    #[arg(long = "test", value_name = "NAME", help_heading = "Target selection")]
    pub tests_named: Vec<String>,
    /// Test all integration tests.
    #[arg(long, help_heading = "Target selection")]
    pub tests: bool,
}

impl TargetArgs {
    /// No target named: `cargo test` would build every test target and run the doctests.
    pub fn is_default(&self) -> bool {
        !self.lib
            && !self.bins
            && !self.tests
            && self.bins_named.is_empty()
            && self.tests_named.is_empty()
    }
}

#[derive(Debug, Clone, Args)]
pub struct TestArgs {
    /// Run only tests whose name contains this string (as libtest).
    #[arg(value_name = "TESTNAME")]
    pub filters: Vec<String>,

    /// Match TESTNAME exactly instead of as a substring.
    #[arg(long, help_heading = "Test selection")]
    pub exact: bool,
    /// Skip tests whose name contains this string.
    #[arg(long, value_name = "FILTER", help_heading = "Test selection")]
    pub skip: Vec<String>,
    /// Run only #[ignore]d tests.
    #[arg(
        long,
        conflicts_with = "include_ignored",
        help_heading = "Test selection"
    )]
    pub ignored: bool,
    /// Run #[ignore]d tests too.
    #[arg(long, help_heading = "Test selection")]
    pub include_ignored: bool,
    /// Let tests print straight to the terminal (disables progress bars).
    #[arg(long, help_heading = "Test selection")]
    pub nocapture: bool,
    /// How many test processes run at once (default: number of CPUs).
    #[arg(long, value_name = "N", help_heading = "Test selection")]
    pub test_threads: Option<usize>,
    /// Instrument and compile, but don't run the tests (prints the test executables).
    #[arg(long, help_heading = "Test selection")]
    pub no_run: bool,
    /// Doctests are not run under pulse: refused, with the reason.
    #[arg(long, help_heading = "Test selection")]
    pub doc: bool,
    /// Run every test even after one fails. This is what pulse always does (each test's
    /// search is its own process); accepted so `cargo test` habits carry over.
    #[arg(long, help_heading = "Test selection")]
    pub no_fail_fast: bool,
    /// When no test is selected (the packages have none, or the filters match none): `fail`
    /// (exit 4, as cargo-nextest), `warn` or `pass` (exit 0, as `cargo test`).
    #[arg(long, value_enum, value_name = "WHAT", default_value_t = NoTests::Fail, help_heading = "Test selection")]
    pub no_tests: NoTests,

    /// Schedules (executions) per test (at least 1).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1000,
        value_parser = clap::value_parser!(u64).range(1..),
        help_heading = "Search"
    )]
    pub schedules: u64,
    /// First seed; schedule i of every test uses seed S+i (default: random, printed).
    #[arg(
        long,
        value_name = "S",
        conflicts_with = "seeds",
        help_heading = "Search"
    )]
    pub seed: Option<u64>,
    /// Run exactly the seeds FROM..TO (end exclusive): one shard of a search spread over machines.
    #[arg(long, value_name = "FROM..TO", help_heading = "Search")]
    pub seeds: Option<SeedRange>,
    /// Step bound per execution.
    #[arg(long, value_name = "N", help_heading = "Search")]
    pub max_steps: Option<u64>,
    /// Scheduling strategy: `portfolio` (default: POS, PCT, roles and random by turns),
    /// `random`, `pct:D` (probabilistic concurrency testing, depth D; `pct:D:K` draws its change
    /// points below a fixed K instead of the longest execution seen), `pos` (partial order
    /// sampling), `roles:D` (PCT over spawn sites: threads spawned at one call site share a
    /// priority; `roles:D:R` draws change points' roles below a fixed R), `dfs:B` (every
    /// schedule with at most B preemptions; `dfs` = `dfs:2`, `dfs:inf` = no bound) or
    /// `dpor:B` (the same verdict from fewer executions, by partial-order reduction; `dpor` =
    /// `dpor:2`; `dpor:inf` verifies a small test for every schedule).
    #[arg(long, value_name = "STRATEGY", value_parser = clap::value_parser!(Strategy), help_heading = "Search")]
    pub strategy: Option<Strategy>,
    /// How virtual time passes (pulse_time's modes): `portfolio` (default: each schedule
    /// `infinitely-fast` or `quite-slow-random=50ms`, drawn from its seed), `infinitely-fast`,
    /// `infinitely-slow`, `time-random`, `quite-slow=DURATION`, `quite-slow-random=DURATION`,
    /// each optionally followed by `,jitter=DURATION` and `,increment=DURATION`.
    #[arg(long, value_name = "MODE", value_parser = clap::value_parser!(TimeMode), help_heading = "Search")]
    pub time: Option<TimeMode>,
    /// Where each schedule runs: `auto` (in the test's process; one process per schedule once
    /// a test is found to keep state in statics), `off`, or `always` (a fresh process per
    /// schedule: a crash is caught and recorded with its seed).
    #[arg(long, value_name = "MODE", value_parser = clap::value_parser!(Isolation), help_heading = "Search")]
    pub isolation: Option<Isolation>,
    /// What happens to threads a failing schedule leaves behind: `leak` (default) or `unwind`
    /// (their destructors run).
    #[arg(long, value_name = "MODE", value_parser = clap::value_parser!(Cleanup), help_heading = "Search")]
    pub cleanup: Option<Cleanup>,
    /// Threads the test never joined that panic, stay blocked or keep running after it
    /// returns: `warn` (default: as under std, where such a test passes) or `fail`.
    #[arg(long, value_name = "MODE", value_parser = clap::value_parser!(Detached), help_heading = "Search")]
    pub detached: Option<Detached>,
    /// How atomics behave: `sc` (every ordering as `SeqCst`), `relaxed` (Rust's orderings:
    /// a `Relaxed`/`Acquire` load may read an older store) or `portfolio` (default: one
    /// execution in four relaxed, drawn from its seed, the rest `sc`; `dfs` and `dpor`
    /// search under `relaxed`).
    #[arg(long, value_name = "MODEL", value_parser = clap::value_parser!(Memory), help_heading = "Search")]
    pub memory: Option<Memory>,
    /// Whether `compare_exchange_weak` may fail when the value matches: `spurious` (default:
    /// a scheduler choice, as std allows and ARM, RISC-V and POWER do) or `strong` (never, as
    /// on x86-64, and as loom and shuttle run it).
    #[arg(long, value_name = "MODE", value_parser = clap::value_parser!(WeakCas), help_heading = "Search")]
    pub weak_cas: Option<WeakCas>,
    /// Replay one schedule (as printed in a failure report), or a failure file (.json): its
    /// schedule, or when that no longer fits the program (the code changed), its seed.
    #[arg(long, value_name = "SCHEDULE|FILE", help_heading = "Search")]
    pub replay: Option<String>,
    /// Set from a `--replay FILE`: the recorded failure, and its strategy and seed to fall
    /// back to.
    #[arg(skip)]
    pub replay_record: Option<pulse_protocol::FailureRecord>,
    /// Write every test's trace file to DIR (`<test>.trace.json`, for `cargo pulse trace`):
    /// the failing execution, or for a test that passed its last execution, replayed with
    /// tracing.
    #[arg(long, value_name = "DIR", help_heading = "Search")]
    pub trace_out: Option<PathBuf>,
    /// Seconds a thread may run without reaching a pulse operation before it is reported as
    /// blocked outside pulse's control.
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 10.0,
        help_heading = "Search"
    )]
    pub blocking_timeout: f64,
    /// Time one test's search may take (`60s`, `10m`, or `none`): no schedule starts after
    /// it, and a test that passed the schedules it ran passes with a warning saying how many
    /// it ran. A stress test of a second per schedule would otherwise take 1,000 seconds. A
    /// schedule still running then is cut: a step-limit failure past its step bound, else
    /// not counted (the test's first: no verdict).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = crate::stop::parse_limit, help_heading = "Search")]
    pub test_time: crate::stop::Limit,
    /// Steps (scheduling points, over all its schedules) one test's search may take
    /// (`100000000`, `100M`, or `none`): no schedule starts after it, and a test that passed
    /// the schedules it ran passes with a warning saying how many it ran. Unlike
    /// `--test-time` it ends the same search on any machine: a test whose schedules take
    /// millions of steps (1,000 threads) runs fewer of them.
    #[arg(long, value_name = "STEPS", default_value = "100M", value_parser = crate::stop::parse_steps, help_heading = "Search")]
    pub test_steps: crate::stop::Steps,
    /// Kill a test process that runs longer than this many seconds in all.
    #[arg(long, value_name = "SECS", help_heading = "Search")]
    pub timeout: Option<f64>,
    /// Time for the whole run, build included (`90s`, `10m`, `1h`): when it runs out no test
    /// starts, the running ones are stopped, and the summary shows what ran (`STOPPED`).
    /// SIGINT and SIGTERM do the same (a second one ends at once).
    #[arg(long, value_name = "DURATION", value_parser = crate::stop::parse_duration, help_heading = "Search")]
    pub time_budget: Option<std::time::Duration>,

    #[command(flatten)]
    pub cargo: CargoArgs,
    #[command(flatten)]
    pub targets: TargetArgs,

    /// Output format: human text on stderr, or JSON lines on stdout for CI.
    #[arg(long, value_enum, default_value_t = MessageFormat::Human, help_heading = "Output")]
    pub message_format: MessageFormat,
    /// Which test runner drives the test binaries.
    #[arg(long, value_enum, default_value_t = Runner::Pulse, help_heading = "Output")]
    pub runner: Runner,
    /// Coloring.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, help_heading = "Output")]
    pub color: ColorChoice,
    /// Show compiler warnings, the instrumentation report and each test's output.
    #[arg(short, long, help_heading = "Output")]
    pub verbose: bool,
    /// Only print failures and the summary.
    #[arg(short, long, help_heading = "Output")]
    pub quiet: bool,

    /// Arguments after `--`: libtest flags (filters, --exact, --skip, --nocapture,
    /// --test-threads, --ignored, --include-ignored) are understood; others are passed to each
    /// test binary (or to cargo-nextest with --runner nextest).
    #[arg(last = true, value_name = "ARGS")]
    pub passthrough: Vec<String>,
}

impl TestArgs {
    /// Folds libtest flags given after `--` into the options, as `cargo test -- ...` would hand
    /// them to libtest; returns an error for a malformed one.
    pub fn absorb_passthrough(&mut self) -> anyhow::Result<()> {
        let mut rest = Vec::new();
        let mut it = std::mem::take(&mut self.passthrough).into_iter();
        while let Some(arg) = it.next() {
            let mut value_of = |flag: &str| -> anyhow::Result<String> {
                if let Some(v) = arg.strip_prefix(&format!("{flag}=")) {
                    return Ok(v.to_string());
                }
                it.next()
                    .ok_or_else(|| anyhow::anyhow!("`{flag}` after `--` needs a value"))
            };
            match arg.split('=').next().unwrap_or("") {
                "--exact" => self.exact = true,
                "--nocapture" | "--no-capture" => self.nocapture = true,
                "--ignored" => self.ignored = true,
                "--include-ignored" => self.include_ignored = true,
                "--skip" => {
                    let v = value_of("--skip")?;
                    self.skip.push(v)
                }
                "--test-threads" => {
                    let v = value_of("--test-threads")?;
                    self.test_threads = Some(
                        v.parse()
                            .map_err(|_| anyhow::anyhow!("bad --test-threads value `{v}`"))?,
                    )
                }
                // libtest flags with a value we do not interpret: keep the pair together.
                "--color" | "--format" | "--logfile" | "--shuffle-seed" | "-Z"
                    if !arg.contains('=') =>
                {
                    rest.push(arg);
                    rest.extend(it.next());
                }
                _ if !arg.starts_with('-') && self.runner == Runner::Pulse => {
                    self.filters.push(arg)
                }
                _ => rest.push(arg),
            }
        }
        if self.ignored && self.include_ignored {
            anyhow::bail!("--ignored and --include-ignored cannot be used together");
        }
        if self.doc {
            anyhow::bail!("{DOCTESTS}");
        }
        self.passthrough = rest;
        Ok(())
    }
}

/// Why `--doc` is refused.
const DOCTESTS: &str = "pulse does not run doctests: rustdoc compiles each one from the text of its doc \
     comment, which pulse neither rewrites nor wraps in the scheduler, so a doctest would run once on \
     real threads and its passing would say nothing about interleavings. Run them with `cargo test \
     --doc`, and test concurrent code in #[test] functions, which pulse runs under many schedules";

#[derive(Debug, Clone, Args)]
pub struct InstrumentArgs {
    /// The crate to instrument: a workspace member or a (registry) dependency.
    #[arg(long = "crate", value_name = "NAME")]
    pub krate: String,
    /// Directory to write the instrumented, buildable crate to.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Print the instrument report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Path to Cargo.toml of the workspace whose crate is meant.
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// Run without accessing the network.
    #[arg(long)]
    pub offline: bool,
    /// Write into DIR even if it holds files pulse did not put there (never into the crate
    /// being instrumented).
    #[arg(long)]
    pub force: bool,
    /// Which registry dependencies count as instrumented, as for `cargo pulse test`
    /// (`auto`, `none`, crate names); the report lists each decision.
    #[arg(
        long = "instrument-deps",
        visible_alias = "instrument-dep",
        value_name = "auto|none|CRATE,..",
        value_delimiter = ','
    )]
    pub instrument_deps: Vec<String>,
}

/// Parses `std::env::args`, dropping the `pulse` that cargo inserts when it runs us as
/// `cargo pulse ...`.
pub fn parse() -> Cli {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "pulse") {
        args.remove(1);
    }
    Cli::parse_from(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_args(argv: &[&str]) -> TestArgs {
        let cli = Cli::try_parse_from(["cargo-pulse"].iter().chain(argv)).expect("parses");
        match cli.command {
            Command::Test(mut t) => {
                t.absorb_passthrough().unwrap();
                *t
            }
            _ => panic!("not test"),
        }
    }

    #[test]
    fn libtest_flags_after_double_dash_are_understood() {
        let t = test_args(&[
            "test",
            "--schedules",
            "5",
            "--",
            "bank",
            "--exact",
            "--skip=slow",
            "--test-threads",
            "3",
            "--color",
            "never",
        ]);
        assert_eq!(t.filters, vec!["bank"]);
        assert!(t.exact);
        assert_eq!(t.skip, vec!["slow"]);
        assert_eq!(t.test_threads, Some(3));
        assert_eq!(t.schedules, 5);
        assert_eq!(t.passthrough, vec!["--color", "never"]);
    }

    #[test]
    fn cargo_flags_parse() {
        let t = test_args(&[
            "test",
            "-p",
            "a",
            "-p",
            "b",
            "--release",
            "-F",
            "x,y",
            "--test",
            "it",
            "--seeds",
            "10..20",
            "foo",
        ]);
        assert_eq!(t.cargo.packages, vec!["a", "b"]);
        assert!(t.cargo.release);
        assert_eq!(t.cargo.features, vec!["x,y"]);
        assert_eq!(t.targets.tests_named, vec!["it"]);
        assert_eq!(t.seeds.unwrap(), SeedRange { from: 10, to: 20 });
        assert_eq!(t.filters, vec!["foo"]);
    }

    #[test]
    fn cargo_test_habits_parse() {
        let t = test_args(&[
            "test",
            "--no-run",
            "--no-fail-fast",
            "--lib",
            "--bins",
            "--tests",
            "--test",
            "it",
            "--all-features",
            "--no-default-features",
            "--target-dir",
            "elsewhere",
            "-j",
            "3",
        ]);
        assert!(t.no_run && t.no_fail_fast);
        assert!(t.targets.lib && t.targets.bins && t.targets.tests);
        assert_eq!(t.targets.tests_named, ["it"]);
        assert!(t.cargo.all_features && t.cargo.no_default_features);
        assert_eq!(
            t.cargo.target_dir.as_deref(),
            Some(std::path::Path::new("elsewhere"))
        );
        assert_eq!(t.cargo.jobs, Some(3));
    }

    #[test]
    fn doctests_are_refused_with_the_reason() {
        let Command::Test(mut t) = Cli::try_parse_from(["cargo-pulse", "test", "--doc"])
            .unwrap()
            .command
        else {
            panic!("not test")
        };
        let err = t.absorb_passthrough().unwrap_err().to_string();
        assert!(
            err.contains("does not run doctests") && err.contains("cargo test --doc"),
            "{err}"
        );
    }

    #[test]
    fn zero_schedules_are_refused() {
        let err = Cli::try_parse_from(["cargo-pulse", "test", "--schedules", "0"]).unwrap_err();
        assert_eq!(err.exit_code(), 2, "{err}");
        assert_eq!(test_args(&["test", "--schedules", "1"]).schedules, 1);
    }

    #[test]
    fn memory_model_is_validated_before_anything_runs() {
        let err = Cli::try_parse_from(["cargo-pulse", "test", "--memory", "tso"]).unwrap_err();
        assert_eq!(err.exit_code(), 2, "{err}");
        assert!(err.to_string().contains("`sc`, `relaxed`"), "{err}");
        let t = test_args(&["test", "--memory", "relaxed"]);
        assert_eq!(t.memory, Some(Memory::Relaxed));
    }

    #[test]
    fn seed_and_seeds_conflict() {
        assert!(
            Cli::try_parse_from(["cargo-pulse", "test", "--seed", "1", "--seeds", "1..2"]).is_err()
        );
    }

    #[test]
    fn cargo_inserts_subcommand_name() {
        // `cargo pulse test` runs `cargo-pulse pulse test`; parse() strips it, here by hand.
        assert!(Cli::try_parse_from(["cargo-pulse", "test", "--workspace"]).is_ok());
        assert!(Cli::try_parse_from([
            "cargo-pulse",
            "instrument",
            "--crate",
            "x",
            "--out",
            "d",
            "--json"
        ])
        .is_ok());
    }
}
