//! `cargo pulse test`: mirror and instrument the workspace, build its tests, run each under the
//! scheduler, report, and choose the exit code. Each stage is its own module; this one only
//! strings them together and talks to the user between them.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use pulse_protocol::Schedule;

use crate::cli::{NoTests, Runner, TestArgs};
use crate::compile;
use crate::console::{Console, ConsoleReporter};
use crate::events::{Reporter, Reporters, RunInfo, TestEvent};
use crate::exit_code;
use crate::list::{self, Filters, TestCase};
use crate::mirror::{Mirror, MirrorOptions};
use crate::outcome::{self, Counts, Outcome};
use crate::output::{JsonOutput, JsonReporter};
use crate::run::{self, RunPlan};
use crate::seeds;
use crate::workspace::UserWorkspace;

pub fn run(mut args: TestArgs) -> Result<i32> {
    args.absorb_passthrough()?;
    let json = JsonOutput {
        enabled: args.message_format == crate::cli::MessageFormat::Json,
    };
    let console = Console::new(
        args.color,
        args.quiet,
        args.verbose,
        !args.nocapture && !json.enabled,
    );
    // Refused before anything is built, like every other bad flag value (exit 2).
    if let Err(e) = resolve_replay_file(&mut args).and_then(|_| resolve_trace_out(&mut args)) {
        console.eprintln(&console.error(&format!("{e:#}")));
        json.tool_error(&format!("{e:#}"));
        return Ok(exit_code::TOOL_ERROR);
    }
    let mut reporter = Reporters::new(vec![
        Box::new(ConsoleReporter::new(console.clone())),
        Box::new(JsonReporter(json)),
    ]);

    let started = Instant::now();
    if let Some(budget) = args.time_budget {
        crate::stop::set_budget(started, budget);
    }
    let user = UserWorkspace::discover(
        args.cargo.manifest_path.as_deref(),
        args.cargo.target_dir.as_deref(),
    )?;
    // What this build compiles (features, target cfgs), so `#[cfg]`s are evaluated as it will.
    crate::instrumenting::configure(&user, &args.cargo)?;
    let mirror = prepare_mirror(user, &args, &console)?;
    let seeds = seeds::resolve(args.seed, args.seeds, args.schedules);

    // The build's messages are kept for the JSON event of a failed build.
    console.record();
    let built = compile::build(&mirror, &args.cargo, &args.targets, &console)?;
    let build_output = console.take_recording();
    let Some(binaries) = built else {
        let message = compiler_messages(&build_output);
        reporter.report(&TestEvent::BuildFailed { message: &message });
        return Ok(exit_code::TOOL_ERROR);
    };
    if args.no_run {
        // As `cargo test --no-run`: what was built, where, and nothing run.
        for b in &binaries {
            console.status(
                "Executable",
                &format!("{} ({})", b.display(), b.executable.display()),
            );
        }
        return Ok(exit_code::SUCCESS);
    }

    let filters = Filters {
        names: args.filters.clone(),
        exact: args.exact,
        skip: args.skip.clone(),
        ignored: args.ignored,
        include_ignored: args.include_ignored,
    };
    // What `cargo test` would also have run: with a name filter, libtest's names, not the
    // doctests' (`src/lib.rs - Foo (line 12)`), are meant.
    let mut doctests_not_run: Vec<String> = Vec::new();
    if args.targets.is_default() && args.replay.is_none() && args.filters.is_empty() {
        for b in &binaries {
            if b.doc_src.as_deref().is_some_and(crate::doctests::any)
                && !doctests_not_run.contains(&b.package)
            {
                doctests_not_run.push(b.package.clone());
            }
        }
    }
    let mut cases: Vec<TestCase> = Vec::new();
    for b in binaries {
        cases.extend(list::list(&Arc::new(b), &filters)?);
    }
    let tests = cases.iter().filter(|c| c.run).count();
    let info = RunInfo {
        seeds,
        shard: args.seeds.is_some(),
        replay: args.replay.clone(),
        tests,
        no_tests: (tests == 0).then(|| (why_no_tests(cases.len(), &filters), args.no_tests)),
        doctests_not_run,
    };
    let plan = RunPlan {
        seeds,
        shard: args.seeds.is_some(),
        replay: args.replay.clone(),
        replay_fallback: args.replay_record.as_ref().and_then(run::seed_replay_of),
        replay_recorded: args.replay_record.clone(),
        max_steps: args.max_steps,
        strategy: args.strategy,
        time: args.time,
        isolation: args.isolation,
        cleanup: args.cleanup,
        detached: args.detached,
        weak_cas: args.weak_cas,
        memory: args.memory,
        blocking_timeout: Duration::from_secs_f64(args.blocking_timeout.max(0.1)),
        test_time: args.test_time.0,
        test_steps: args.test_steps.0,
        timeout: args.timeout.map(Duration::from_secs_f64),
        nocapture: args.nocapture,
        jobs: args
            .test_threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        test_args: args.passthrough.clone(),
        replay_flags: replay_flags(&args),
        failures_dir: mirror.failures_dir.clone(),
        run_dir: mirror.pulse_dir.join("run"),
        target_dir: mirror.target_dir.clone(),
        paths: mirror.paths.clone(),
        uninstrumented: mirror
            .user
            .packages
            .iter()
            .filter(|p| p.proc_macro)
            .map(|p| p.name.clone())
            .collect(),
        trace_out: args.trace_out.clone(),
        not_instrumented: mirror.deps_report.not_parsed_crates(),
        instrumented: instrumented_crates(&mirror),
        unparsed: unparsed_files(&mirror),
    };

    reporter.report(&TestEvent::RunStarted(&info));
    crate::stop::install_handlers();
    let outcomes: Vec<Outcome> = match args.runner {
        Runner::Pulse => run::run_all(&cases, &plan, args.verbose, &mut reporter)?,
        Runner::Nextest => {
            crate::nextest::run(&mirror, &args, &cases, &plan, &console, &mut reporter)?
        }
    };
    if let Some(dir) = &plan.trace_out {
        crate::trace_cmd::map_dir(dir, |l| plan.paths.map_text(l))?;
    }
    let counts = Counts::of(&outcomes);
    // Interrupted: the shell's code for the signal, after the summary. A budget that ran out
    // leaves the verdict on what ran.
    let code = crate::stop::requested()
        .and_then(|s| s.exit_code())
        .unwrap_or_else(|| counts.exit_code());
    let code = match info.no_tests {
        Some((_, NoTests::Fail)) if code == exit_code::SUCCESS => exit_code::NO_TESTS_RUN,
        _ => code,
    };
    reporter.report(&TestEvent::RunFinished {
        info: &info,
        outcomes: &outcomes,
        counts,
        secs: started.elapsed().as_secs_f64(),
        exit_code: code,
    });
    Ok(code)
}

/// The workspace's files that did not parse, each with the package it belongs to (the one
/// whose directory holds it most closely).
fn unparsed_files(mirror: &Mirror) -> Vec<(String, String)> {
    let s = &mirror.summary;
    (s.parse_errors.iter())
        .filter_map(|(path, line, col, msg)| {
            let package = (mirror.user.packages.iter())
                .filter(|p| Path::new(path).starts_with(&p.dir))
                .max_by_key(|p| p.dir.components().count())?;
            Some((package.name.clone(), format!("{path}:{line}:{col} ({msg})")))
        })
        .collect()
}

/// The compiler's messages out of what the build printed: without cargo's progress lines.
fn compiler_messages(printed: &str) -> String {
    printed
        .lines()
        .filter(|l| {
            let first = l.split_whitespace().next().unwrap_or("");
            !matches!(first, "Compiling" | "Finished" | "Instrumented")
        })
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

/// Mirrors and instruments, telling the user what was done and what the instrumenter noticed.
pub fn prepare_mirror(user: UserWorkspace, args: &TestArgs, console: &Console) -> Result<Mirror> {
    let t = Instant::now();
    let opts = MirrorOptions {
        instrument_deps: args.cargo.instrument_deps.clone(),
        offline: args.cargo.offline,
        build_target_dir: args.cargo.pulse_target_dir.clone(),
    };
    let mirror = Mirror::prepare(user, &opts)?;
    let s = &mirror.summary;
    // A dependency a file of which does not parse is left as it is (the Dependencies line
    // says so): not named here.
    let instrumented: Vec<String> = mirror
        .deps
        .iter()
        .map(|d| format!("{} {}", d.name, d.version))
        .filter(|d| {
            !mirror
                .deps_report
                .not_parsed
                .iter()
                .any(|n| n.starts_with(&format!("{d} ")))
        })
        .collect();
    let deps = if instrumented.is_empty() {
        String::new()
    } else {
        format!(" and of {}", instrumented.join(", "))
    };
    console.status(
        "Instrumented",
        &format!(
            "{} rewrites in {} files of the workspace{deps} ({} updated) into {} in {:.2}s",
            s.rewrites,
            s.files,
            mirror.stats.written,
            relative(&mirror.pulse_dir.join("mirror"), &mirror.user.root),
            t.elapsed().as_secs_f64()
        ),
    );
    for (path, line, col, msg) in &s.parse_errors {
        console.warning(&format!(
            "{path}:{line}:{col}: could not be parsed for instrumentation, left as is: {msg}"
        ));
    }
    // Findings in the user's own code; a use of a crate now instrumented is no longer news.
    let findings: Vec<_> = s
        .findings
        .iter()
        .filter(|(path, ..)| {
            !mirror
                .deps
                .iter()
                .any(|d| Path::new(path).starts_with(&d.src))
        })
        .filter(|(.., msg)| {
            !mirror
                .deps
                .iter()
                .any(|d| msg.contains(&format!("{}::", d.name.replace('-', "_"))))
        })
        .collect();
    let shown = if args.verbose { usize::MAX } else { 5 };
    for (path, line, col, msg) in findings.iter().take(shown) {
        console.warning(&format!(
            "{}:{line}:{col}: {msg}",
            relative(Path::new(path), &mirror.user.root)
        ));
    }
    if findings.len() > shown {
        console.eprintln(&console.dim(&format!(
            "    ... and {} more findings (-v shows them all; {})",
            findings.len() - shown,
            relative(
                &mirror.pulse_dir.join("instrument-report.json"),
                &mirror.user.root
            )
        )));
    }
    Ok(mirror)
}

fn relative(p: &Path, base: &Path) -> String {
    p.strip_prefix(base).unwrap_or(p).display().to_string()
}

/// `--replay path/to/failure.json`: replay the schedule of a failure file, for its test.
fn resolve_replay_file(args: &mut TestArgs) -> Result<()> {
    let Some(r) = &args.replay else { return Ok(()) };
    let path = Path::new(r);
    if !(r.ends_with(".json") && path.is_file()) {
        r.parse::<Schedule>().with_context(|| {
            format!("--replay takes a schedule as printed (`p1:...`) or a failure file (.json), not `{r}`")
        })?;
        return Ok(());
    }
    let record = outcome::read_record_file(path).map_err(anyhow::Error::msg)?;
    if args.filters.is_empty() && !record.test.is_empty() {
        // The record's name may carry a crate prefix; the file's name is the test's.
        let from_name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .and_then(test_of_failure_file);
        args.filters.push(from_name.unwrap_or(record.test.clone()));
        args.exact = true;
    }
    args.replay = Some(record.schedule.clone());
    args.replay_record = Some(record);
    Ok(())
}

/// The test named by a failure file's stem: `<package>.<kind>-<target>.<test>`, with
/// `.replay` after it for a replay's record (see `run::failure_file_name`).
fn test_of_failure_file(stem: &str) -> Option<String> {
    let stem = stem.strip_suffix(run::REPLAY_SUFFIX).unwrap_or(stem);
    let (_, rest) = stem.split_once('.')?;
    let (_, test) = rest.split_once('.')?;
    Some(test.to_string())
}

/// The flags a replay line must repeat to build the same thing.
/// The crates a stalled thread may stop in that pulse instrumented, as symbols spell them:
/// the dependencies, and the user's own packages. A thread blocked in its package's library,
/// called from an integration test (jobserver's `read` on its pipe), was advised to
/// `--instrument-dep` that library, a flag that then exits 2.
fn instrumented_crates(mirror: &Mirror) -> Vec<String> {
    let mut out = mirror.deps_report.instrumented_crates();
    let own = mirror.user.packages.iter().filter(|p| !p.proc_macro);
    out.extend(own.map(|p| p.name.replace('-', "_")));
    out.sort();
    out.dedup();
    out
}

/// Why no test was selected: `listed` tests matched the filters, none of them to run.
fn why_no_tests(listed: usize, filters: &Filters) -> String {
    if listed > 0 {
        let s = if listed == 1 { " is" } else { "s are all" };
        return format!("the {listed} selected test{s} #[ignore]d (`--include-ignored` runs them)");
    }
    if filters.names.is_empty() && filters.skip.is_empty() && !filters.ignored {
        return "the selected targets have no tests".to_string();
    }
    let mut asked: Vec<String> = filters.names.iter().map(|n| format!("`{n}`")).collect();
    asked.extend(filters.skip.iter().map(|n| format!("`--skip {n}`")));
    if filters.ignored {
        asked.push("`--ignored`".to_string());
    }
    format!("no test matches {}", asked.join(", "))
}

fn replay_flags(args: &TestArgs) -> Vec<String> {
    let mut f = Vec::new();
    if let Some(m) = &args.cargo.manifest_path {
        f.extend(["--manifest-path".to_string(), m.display().to_string()]);
    }
    if let Some(d) = &args.cargo.target_dir {
        f.extend(["--target-dir".to_string(), d.display().to_string()]);
    }
    f.extend(compile::profile_and_feature_args(&args.cargo));
    for d in &args.cargo.instrument_deps {
        f.extend(["--instrument-dep".to_string(), d.clone()]);
    }
    // The failing test may be an #[ignore]d one the run was asked to include.
    if args.ignored || args.include_ignored {
        f.push("--include-ignored".to_string());
    }
    if let Some(n) = args.max_steps {
        f.extend(["--max-steps".to_string(), n.to_string()]);
    }
    // Time mode changes which choices a schedule holds; cleanup what a failure leaves.
    if let Some(t) = args.time {
        f.extend(["--time".to_string(), t.to_string()]);
    }
    if let Some(c) = args.cleanup {
        f.extend(["--cleanup".to_string(), c.to_string()]);
    }
    // Whether a detached thread's trouble fails the test.
    if let Some(d) = args.detached {
        f.extend(["--detached".to_string(), d.to_string()]);
    }
    // The memory model decides which choices a schedule holds (which store a load read).
    if let Some(m) = args.memory {
        f.extend(["--memory".to_string(), m.to_string()]);
    }
    // Whether a weak compare-exchange is a choice in the schedule.
    if let Some(w) = args.weak_cas {
        f.extend(["--weak-cas".to_string(), w.to_string()]);
    }
    f
}

/// `--trace-out DIR`: created now (a dir that cannot be is a bad flag, exit 2) and made
/// absolute, since test processes run elsewhere.
fn resolve_trace_out(args: &mut TestArgs) -> Result<()> {
    if let Some(dir) = &args.trace_out {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--trace-out: cannot create {}", dir.display()))?;
        let abs = dir
            .canonicalize()
            .with_context(|| format!("--trace-out: {}", dir.display()))?;
        args.trace_out = Some(abs);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_without_tests_says_why() {
        let filters = |names: &[&str], skip: &[&str]| Filters {
            names: names.iter().map(|n| n.to_string()).collect(),
            exact: false,
            skip: skip.iter().map(|n| n.to_string()).collect(),
            ignored: false,
            include_ignored: false,
        };
        assert_eq!(
            why_no_tests(0, &filters(&[], &[])),
            "the selected targets have no tests"
        );
        assert_eq!(
            why_no_tests(0, &filters(&["racy"], &["slow"])),
            "no test matches `racy`, `--skip slow`"
        );
        assert_eq!(
            why_no_tests(2, &filters(&[], &[])),
            "the 2 selected tests are all #[ignore]d (`--include-ignored` runs them)"
        );
    }

    #[test]
    fn failure_files_name_their_test_and_a_replay_has_its_own() {
        let search = run::failure_file_name("app.lib-app", "tests::racy", false);
        let replay = run::failure_file_name("app.lib-app", "tests::racy", true);
        assert_ne!(
            search, replay,
            "a replay never overwrites the search's record"
        );
        for name in [search, replay] {
            let stem = name.strip_suffix(".json").unwrap();
            assert_eq!(test_of_failure_file(stem).as_deref(), Some("tests::racy"));
        }
    }
}
