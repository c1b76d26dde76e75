//! Everything people see on the terminal: cargo-style status lines, a progress bar per running
//! test, one line per finished test, each failure's report, and the summary table.
//!
//! All of it goes to stderr (stdout carries `--message-format json`), and through indicatif's
//! `MultiProgress` so lines never tear the bars. Colours carry meaning only: green passed, red
//! failed or crashed, yellow ignored, not scheduled or warned, dim for secondary facts.
//!
//! [`Console`] is the terminal (status lines, warnings, colours, bars), shared by every stage;
//! [`ConsoleReporter`] shows a run's [`TestEvent`]s on it.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::{ColorChoice, NoTests};
use crate::events::{Reporter, TestEvent};
use crate::outcome::{Outcome, TestResult};

#[derive(Clone)]
pub struct Console {
    inner: Arc<Inner>,
}

struct Inner {
    color: bool,
    quiet: bool,
    verbose: bool,
    bars: bool,
    multi: MultiProgress,
    /// Text printed while recording (`record`): a failed build's messages for the JSON.
    recording: Mutex<Option<String>>,
}

impl Console {
    pub fn new(color: ColorChoice, quiet: bool, verbose: bool, allow_bars: bool) -> Console {
        let tty = std::io::stderr().is_terminal();
        let color = match color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => tty && std::env::var_os("NO_COLOR").is_none(),
        };
        let bars = allow_bars && tty && !quiet;
        let multi = MultiProgress::with_draw_target(if bars {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        });
        Console {
            inner: Arc::new(Inner {
                color,
                quiet,
                verbose,
                bars,
                multi,
                recording: Mutex::new(None),
            }),
        }
    }

    pub fn quiet(&self) -> bool {
        self.inner.quiet
    }
    pub fn verbose(&self) -> bool {
        self.inner.verbose
    }
    pub fn color_stderr(&self) -> bool {
        self.inner.color
    }

    /// Starts keeping a copy of everything printed, until `take_recording`.
    pub fn record(&self) {
        *self.inner.recording.lock().unwrap() = Some(String::new());
    }

    /// What was printed since `record`, without colour codes.
    pub fn take_recording(&self) -> String {
        strip_ansi(
            &self
                .inner
                .recording
                .lock()
                .unwrap()
                .take()
                .unwrap_or_default(),
        )
    }

    fn keep(&self, text: &str) {
        if let Some(r) = self.inner.recording.lock().unwrap().as_mut() {
            r.push_str(text);
        }
    }

    /// Prints a line to stderr without disturbing progress bars.
    pub fn eprintln(&self, line: &str) {
        self.keep(line);
        self.keep("\n");
        if self.inner.bars {
            self.inner.multi.suspend(|| eprintln!("{line}"));
        } else {
            eprintln!("{line}");
        }
    }

    /// Prints text (which carries its own newlines) to stderr.
    pub fn eprint(&self, text: &str) {
        self.keep(text);
        if self.inner.bars {
            self.inner.multi.suspend(|| eprint!("{text}"));
        } else {
            eprint!("{text}");
        }
    }

    /// A cargo-style status line: right-aligned bold green verb, then the message.
    pub fn status(&self, verb: &str, message: &str) {
        if !self.inner.quiet {
            self.eprintln(&format!(
                "{} {message}",
                self.paint("1;32", &format!("{verb:>12}"))
            ));
        }
    }

    pub fn warning(&self, message: &str) {
        self.eprintln(&format!("{}: {message}", self.paint("1;33", "warning")));
    }

    fn paint(&self, code: &str, s: &str) -> String {
        if self.inner.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    pub fn error(&self, s: &str) -> String {
        format!("{}: {s}", self.paint("1;31", "error"))
    }
    pub fn red(&self, s: &str) -> String {
        self.paint("1;31", s)
    }
    pub fn green(&self, s: &str) -> String {
        self.paint("1;32", s)
    }
    pub fn yellow(&self, s: &str) -> String {
        self.paint("1;33", s)
    }
    pub fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }
    pub fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }

    /// A progress bar for one running test (hidden when stderr is not a terminal).
    pub fn test_bar(&self, name: &str, total: u64) -> ProgressBar {
        if !self.inner.bars {
            return ProgressBar::hidden();
        }
        let bar = self.inner.multi.add(ProgressBar::new(total));
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner:.green} {elapsed:>4} [{bar:30.cyan/blue}] {pos:>7}/{len:7} {msg}",
            )
            .unwrap()
            .progress_chars("=> "),
        );
        bar.set_message(name.to_string());
        bar.enable_steady_tick(Duration::from_millis(120));
        bar
    }

    pub fn remove_bar(&self, bar: &ProgressBar) {
        bar.finish_and_clear();
        self.inner.multi.remove(bar);
    }
}

/// `text` without ANSI colour sequences.
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The closing line's note on tests whose search ended short of their schedules, by what
/// ended it: `(2 at the time limit, short of their schedules)`.
fn cut_short_note(outcomes: &[Outcome]) -> String {
    let count = |what| {
        outcomes
            .iter()
            .filter(|o| o.cut_short() == Some(what))
            .count()
    };
    let parts: Vec<String> = ["time limit", "step budget"]
        .into_iter()
        .filter_map(|what| match count(what) {
            0 => None,
            n => Some(format!("{n} at the {what}")),
        })
        .collect();
    match parts.is_empty() {
        true => String::new(),
        false => format!(" ({}, short of their schedules)", parts.join(", ")),
    }
}

/// Shows a run's events to people: a progress bar per running test, a line per finished one,
/// each failure's report, then the summary table, the replay lines and the verdict.
pub struct ConsoleReporter {
    console: Console,
    bars: HashMap<usize, ProgressBar>,
    /// Each warning shown, with the test it was shown for: a `static` shared by a binary's
    /// tests raises the same warning in every one of them, shown once in full.
    shown: HashMap<String, String>,
}

impl ConsoleReporter {
    pub fn new(console: Console) -> ConsoleReporter {
        ConsoleReporter {
            console,
            bars: HashMap::new(),
            shown: HashMap::new(),
        }
    }
}

impl Reporter for ConsoleReporter {
    fn report(&mut self, event: &TestEvent<'_>) {
        let c = &self.console;
        match event {
            TestEvent::RunStarted(info) => {
                let what = match &info.replay {
                    Some(_) => "replaying 1 schedule each".to_string(),
                    None if info.shard => format!("seeds {}", info.seeds),
                    None => format!(
                        "{} schedules each, seed {}",
                        info.seeds.len(),
                        info.seeds.from
                    ),
                };
                let s = if info.tests == 1 { "" } else { "s" };
                c.status(
                    "Running",
                    &format!("{} test{s} under pulse ({what})", info.tests),
                );
            }
            TestEvent::TestStarted(test) => {
                let bar = c.test_bar(
                    &format!("{} {}", test.binary_display, test.name),
                    test.planned,
                );
                self.bars.insert(test.index, bar);
            }
            TestEvent::TestProgress { test, done, total } => {
                if let Some(bar) = self.bars.get(&test.index) {
                    bar.set_length((*total).max(1));
                    bar.set_position(*done);
                }
            }
            TestEvent::TestFinished { test, outcome } => {
                if let Some(bar) = self.bars.remove(&test.index) {
                    c.remove_bar(&bar);
                }
                c.test_finished(outcome, &self.shown);
                c.failure(outcome);
                if !c.quiet() || outcome.failed() {
                    for w in &outcome.warnings {
                        self.shown
                            .entry(w.clone())
                            .or_insert_with(|| outcome.full_name());
                    }
                }
            }
            TestEvent::BuildFailed { .. } => {}
            TestEvent::RunFinished {
                info,
                outcomes,
                counts,
                secs,
                ..
            } => {
                let found = counts.findings() + counts.tool_errors;
                if !c.quiet() || found > 0 {
                    c.summary_table(outcomes);
                }
                if found > 0 {
                    c.eprintln(&format!(
                        "\n{}",
                        c.bold("not passed (run each again with the line shown):")
                    ));
                    for o in outcomes.iter().filter(|o| o.failed()) {
                        c.eprintln(&format!(
                            "    {}  {}",
                            c.painted_status(&o.result),
                            o.full_name()
                        ));
                        if let Some(r) = o.result.failure().and_then(|f| f.replay.as_ref()) {
                            c.eprintln(&format!("      {}", c.dim(r)));
                        }
                    }
                }
                let verdict = if counts.findings() > 0 {
                    c.red("FAILED")
                } else if counts.tool_errors > 0 {
                    c.red("TOOL ERROR")
                } else if counts.stopped > 0 {
                    c.yellow("STOPPED")
                } else {
                    match &info.no_tests {
                        Some((why, NoTests::Fail)) => {
                            c.eprintln(&format!(
                                "\n{} no test ran: {why} (`--no-tests warn` or `pass` accepts that)",
                                c.red("error:")
                            ));
                            c.red("NO TESTS")
                        }
                        Some((why, NoTests::Warn)) => {
                            c.eprintln(&format!("\n{} no test ran: {why}", c.yellow("warning:")));
                            c.yellow("no tests")
                        }
                        _ => c.green("ok"),
                    }
                };
                if let Some(reason) = outcomes.iter().find_map(|o| match &o.result {
                    TestResult::Stopped { stop, .. } => Some(stop),
                    _ => None,
                }) {
                    c.eprintln(&format!(
                        "\n{} {reason}: {} test(s) did not finish (their schedules so far passed); \
                         the table shows what ran",
                        c.yellow("run stopped:"),
                        counts.stopped
                    ));
                }
                let limited = cut_short_note(outcomes);
                let mut tally = format!(
                    "{} passed{limited}; {} failed",
                    counts.passed, counts.failed
                );
                for (n, what) in [
                    (counts.crashed, "crashed"),
                    (counts.not_scheduled, "not scheduled"),
                    (counts.tool_errors, "tool error(s)"),
                    (counts.stopped, "stopped before the end"),
                ] {
                    if n > 0 {
                        tally.push_str(&format!("; {n} {what}"));
                    }
                }
                let seed_note = match (&info.replay, info.shard) {
                    (Some(_), _) => "replay".to_string(),
                    (None, true) => format!("seeds {}", info.seeds),
                    (None, false) => format!("seed {}", info.seeds.from),
                };
                let doctests = match info.doctests_not_run.as_slice() {
                    [] => String::new(),
                    packages => format!(
                        "; doctests of {} not run (`cargo test --doc` runs them)",
                        packages.join(", ")
                    ),
                };
                c.eprintln(&format!(
                    "\ntest result: {verdict}. {tally}; {} ignored{doctests}; {seed_note}; finished \
                     in {secs:.2}s",
                    counts.ignored
                ));
            }
        }
    }
}

impl Console {
    /// A status word in its colour.
    fn painted_status(&self, result: &TestResult) -> String {
        let word = result.status();
        match result {
            TestResult::Passed => self.green(word),
            TestResult::Failed(_) | TestResult::Crashed(_) | TestResult::ToolError(_) => {
                self.red(word)
            }
            TestResult::NotScheduled(_) | TestResult::Ignored | TestResult::Stopped { .. } => {
                self.yellow(word)
            }
        }
    }

    /// One line per finished test, nextest style: `PASS [ 0.512s] 1000 schedules  name`,
    /// then its warnings; those `shown` for an earlier test are one line together.
    fn test_finished(&self, o: &Outcome, shown: &HashMap<String, String>) {
        if self.inner.quiet && !o.failed() {
            return;
        }
        let word = match &o.result {
            TestResult::Passed => "PASS",
            TestResult::Failed(_) => "FAIL",
            TestResult::Crashed(_) => "CRASH",
            TestResult::NotScheduled(_) => "NOT SCHEDULED",
            TestResult::ToolError(_) => "TOOL ERROR",
            TestResult::Ignored => "SKIP",
            TestResult::Stopped { .. } => "STOPPED",
        };
        let painted = match &o.result {
            TestResult::Passed => self.green(word),
            TestResult::NotScheduled(_) | TestResult::Ignored | TestResult::Stopped { .. } => {
                self.yellow(word)
            }
            _ => self.red(word),
        };
        let pad = " ".repeat(13usize.saturating_sub(word.len()));
        let runs = match &o.result {
            TestResult::Ignored => "ignored".to_string(),
            _ => format!("{}/{} schedules", o.schedules_run, o.schedules_planned),
        };
        self.eprintln(&format!(
            "{pad}{painted} [{:>8.3}s] {:>22}  {} {}",
            o.time.as_secs_f64(),
            self.dim(&runs),
            self.dim(&o.binary_display),
            self.bold(&o.name)
        ));
        let mut earlier = Vec::new();
        // A failure's report, printed next, says its own warnings.
        let reported = |w: &str| o.result.failure().is_some_and(|f| f.report.contains(w));
        for w in o.warnings.iter().filter(|w| !reported(w)) {
            if w.starts_with("exhaustive:") {
                // An exhaustive search's verdict (see `env::WARNINGS`), not a warning.
                self.eprintln(&format!("{:>13}  {}", "", self.green(w)));
            } else if let Some(first) = shown.get(w) {
                earlier.push(first.as_str());
            } else {
                self.eprintln(&format!("{:>13}  {} {w}", "", self.yellow("warning:")));
            }
        }
        if let Some(&first) = earlier.first() {
            let n = earlier.len();
            let s = if n == 1 { "" } else { "s" };
            let whose = if earlier.iter().all(|&t| t == first) {
                format!("`{first}`")
            } else {
                "earlier tests".to_string()
            };
            self.eprintln(&format!(
                "{:>13}  {} {}",
                "",
                self.yellow("warning:"),
                self.dim(&format!("{n} warning{s} as for {whose} above"))
            ));
        }
    }

    /// The full report of a test that did not pass.
    fn failure(&self, o: &Outcome) {
        let Some(f) = o.result.failure() else {
            return;
        };
        let mut out = String::new();
        out.push('\n');
        let header = match &o.result {
            TestResult::Crashed(_) => "--- CRASH:",
            TestResult::NotScheduled(_) => "--- NOT SCHEDULED:",
            TestResult::ToolError(_) => "--- TOOL ERROR:",
            _ => "--- FAIL:",
        };
        let header = match &o.result {
            TestResult::NotScheduled(_) => self.yellow(header),
            _ => self.red(header),
        };
        out.push_str(&format!(
            "{header} {} {}\n",
            self.bold(&o.name),
            self.dim(&format!("({})", o.binary_display))
        ));
        // The status line, unless the report's first words repeat it.
        if !matches!(o.result, TestResult::Failed(_)) && !f.report.starts_with(&f.reason) {
            out.push_str(&format!("  {}\n", o.status_line()));
        }
        let mut replay_shown = false;
        for line in f
            .report
            .trim_end()
            .lines()
            .filter(|l| !l.ends_with("--replay ''") && !l.ends_with("--replay 'p1:'"))
        {
            // The run's own replay line wins (it replays a long schedule from the file, a
            // crash by its seed).
            let by_seed = line.trim_start().strip_prefix("replay by seed: ");
            if by_seed.is_some() && by_seed == f.replay.as_deref() {
                // A crash's run replays it by its seed: one line says it.
                continue;
            }
            let line = match (line.trim_start().strip_prefix("replay: "), &f.replay) {
                (Some(_), Some(replay)) if !replay_shown => {
                    replay_shown = true;
                    format!("replay: {replay}")
                }
                (Some(_), _) => continue,
                _ => line.to_string(),
            };
            out.push_str("  ");
            out.push_str(&line);
            out.push('\n');
        }
        if let Some(file) = &f.failure_file {
            out.push_str(&format!(
                "  {} {}\n",
                self.dim("failure file:"),
                file.display()
            ));
            // The viewer to open, and the trace file for the other views.
            let viewer = file.with_extension("html");
            if viewer.is_file() {
                out.push_str(&format!("  {} {}\n", self.dim("viewer:"), viewer.display()));
            }
            let trace = file.with_extension("trace.json");
            if trace.is_file() {
                out.push_str(&format!(
                    "  {} {} (cargo pulse trace FILE --format text|dot|svg)\n",
                    self.dim("trace:"),
                    trace.display()
                ));
            }
        }
        if !replay_shown {
            if let Some(replay) = &f.replay {
                out.push_str(&format!("  {} {replay}\n", self.dim("replay:")));
            }
        }
        if let Some(output) = &f.output {
            if !output.trim().is_empty() {
                out.push_str(&format!("  {}\n", self.dim("test output:")));
                for line in output.trim_end().lines() {
                    out.push_str("    ");
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
        self.eprint(&out);
    }

    /// The table at the end: test, schedules run, time, result.
    fn summary_table(&self, outcomes: &[Outcome]) {
        if outcomes.is_empty() {
            return;
        }
        let name_w = outcomes
            .iter()
            .map(|o| o.full_name().chars().count())
            .max()
            .unwrap_or(4)
            .clamp(4, 100);
        let mut out = String::new();
        out.push('\n');
        out.push_str(&self.bold(&format!(
            "{:<name_w$}  {:>11}  {:>9}  result",
            "test", "schedules", "time"
        )));
        out.push('\n');
        for o in outcomes {
            let runs = match &o.result {
                TestResult::Ignored => "-".to_string(),
                _ => format!("{}/{}", o.schedules_run, o.schedules_planned),
            };
            let mut name = o.full_name();
            let len = name.chars().count();
            if len > name_w {
                let tail: String = name.chars().skip(len - (name_w - 1)).collect();
                name = format!("…{tail}");
            }
            let status = o.status_line();
            let word = o.result.status();
            let limited = match o.cut_short() {
                Some(what) => self.dim(&format!(" ({what})")),
                None => String::new(),
            };
            let painted = format!(
                "{}{}{limited}",
                self.painted_status(&o.result),
                &status[word.len()..]
            );
            out.push_str(&format!(
                "{name:<name_w$}  {runs:>11}  {:>8.2}s  {painted}\n",
                o.time.as_secs_f64()
            ));
        }
        self.eprint(&out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::TestId;

    #[test]
    fn strips_colour_codes() {
        assert_eq!(strip_ansi("\x1b[1;31merror\x1b[0m: x"), "error: x");
    }

    fn passed(name: &str, warnings: &[&str]) -> Outcome {
        Outcome {
            name: name.to_string(),
            package: "p".to_string(),
            binary_display: "p".to_string(),
            result: TestResult::Passed,
            schedules_run: 10,
            schedules_planned: 10,
            time: Duration::from_millis(5),
            warnings: warnings.iter().map(|w| w.to_string()).collect(),
        }
    }

    /// A warning every test of a binary raises (a shared `static`) is shown in full once;
    /// later tests say how many of theirs were shown before, and for which test.
    #[test]
    fn a_repeated_warning_is_shown_once() {
        let console = Console::new(ColorChoice::Never, false, false, false);
        let mut reporter = ConsoleReporter::new(console.clone());
        console.record();
        let shared = "the Mutex used at src/lib.rs:3:5 is shared between executions";
        let outcomes = [
            passed("a", &[shared]),
            passed("b", &[shared, "exhaustive: all 3 schedules explored"]),
            passed("c", &[shared, "something else"]),
        ];
        for (index, outcome) in outcomes.iter().enumerate() {
            let test = TestId {
                index,
                name: outcome.name.clone(),
                binary_display: "p".to_string(),
                planned: 10,
            };
            reporter.report(&TestEvent::TestFinished {
                test: &test,
                outcome,
            });
        }
        let out = console.take_recording();
        assert_eq!(out.matches(shared).count(), 1, "{out}");
        assert_eq!(
            // Named with its binary: two binaries may each have a test `a`.
            out.matches("1 warning as for `p a` above").count(),
            2,
            "{out}"
        );
        assert!(
            out.contains("exhaustive: all 3 schedules explored"),
            "{out}"
        );
        assert!(out.contains("warning: something else"), "{out}");
    }

    /// A failure's report says its warnings; the line above it no longer repeats them
    /// (flashmap's shared-static warnings were printed twice).
    #[test]
    fn a_failures_warnings_are_said_once() {
        let console = Console::new(ColorChoice::Never, false, false, false);
        let mut reporter = ConsoleReporter::new(console.clone());
        console.record();
        let shared = "the Once used at src/lib.rs:9:5 is shared between executions";
        let mut outcome = passed("racy", &[shared, "said only above"]);
        outcome.result = TestResult::Failed(Box::new(crate::outcome::Failure {
            reason: "panic".to_string(),
            record: None,
            report: format!("pulse found a panic\n  warning: {shared}\n"),
            seed: Some(1),
            failure_file: None,
            replay: Some("cargo pulse test racy".to_string()),
            output: None,
        }));
        let test = TestId {
            index: 0,
            name: outcome.name.clone(),
            binary_display: "p".to_string(),
            planned: 10,
        };
        reporter.report(&TestEvent::TestFinished {
            test: &test,
            outcome: &outcome,
        });
        let out = console.take_recording();
        assert_eq!(out.matches(shared).count(), 1, "{out}");
        assert!(out.contains("warning: said only above"), "{out}");
    }
}
