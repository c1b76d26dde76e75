//! Everything people see on the terminal: cargo-style status lines, a progress bar per running
//! test, one line per finished test, each failure's report, and the summary table.
//!
//! All of it goes to stderr (stdout carries `--message-format json`), and through indicatif's
//! `MultiProgress` so lines never tear the bars. Colours carry meaning only: green passed, red
//! failed, yellow ignored or warned, dim for secondary facts.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::ColorChoice;
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

    /// Prints a line to stderr without disturbing progress bars.
    pub fn eprintln(&self, line: &str) {
        if self.inner.bars {
            self.inner.multi.suspend(|| eprintln!("{line}"));
        } else {
            eprintln!("{line}");
        }
    }

    /// Prints text (which carries its own newlines) to stderr.
    pub fn eprint(&self, text: &str) {
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

    /// One line per finished test, nextest style: `PASS [ 0.512s] 1000 schedules  name`.
    pub fn test_finished(&self, o: &Outcome) {
        if self.inner.quiet && !matches!(o.result, TestResult::Failed(_)) {
            return;
        }
        let (word, painted) = match &o.result {
            TestResult::Passed => ("PASS", self.green("PASS")),
            TestResult::Failed(_) => ("FAIL", self.red("FAIL")),
            TestResult::Ignored => ("SKIP", self.yellow("SKIP")),
        };
        let pad = " ".repeat(12usize.saturating_sub(word.len()));
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
        for w in &o.warnings {
            self.eprintln(&format!("{:>12}  {} {w}", "", self.yellow("warning:")));
        }
    }

    /// The full report of one failure.
    pub fn failure(&self, o: &Outcome) {
        let TestResult::Failed(f) = &o.result else {
            return;
        };
        let mut out = String::new();
        out.push('\n');
        out.push_str(&format!(
            "{} {} {}\n",
            self.red("--- FAIL:"),
            self.bold(&o.name),
            self.dim(&format!("({})", o.binary_display))
        ));
        for line in f
            .report
            .trim_end()
            .lines()
            .filter(|l| !l.ends_with("--replay ''"))
        {
            // The run's own replay line wins (it replays a long schedule from the file).
            let line = match (line.strip_prefix("replay: "), &f.replay) {
                (Some(_), Some(replay)) => format!("replay: {replay}"),
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
            let timeline = file.with_extension("html");
            if timeline.is_file() {
                out.push_str(&format!(
                    "  {} {}\n",
                    self.dim("timeline:"),
                    timeline.display()
                ));
            }
        }
        if !f.report.contains("replay:") || f.report.contains("--replay ''") {
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

    /// The table at the end: test, schedules run, result, time.
    pub fn summary_table(&self, outcomes: &[Outcome]) {
        if outcomes.is_empty() {
            return;
        }
        let name_w = outcomes
            .iter()
            .map(|o| o.full_name().len())
            .max()
            .unwrap_or(4)
            .clamp(4, 100);
        let mut out = String::new();
        out.push('\n');
        out.push_str(&self.bold(&format!(
            "{:<name_w$}  {:>19}  {:<7}  {:>9}",
            "test", "schedules", "result", "time"
        )));
        out.push('\n');
        for o in outcomes {
            let (word, painted) = match &o.result {
                TestResult::Passed => ("ok", self.green("ok")),
                TestResult::Failed(_) => ("FAILED", self.red("FAILED")),
                TestResult::Ignored => ("ignored", self.yellow("ignored")),
            };
            let runs = match &o.result {
                TestResult::Ignored => "-".to_string(),
                _ => format!("{}/{}", o.schedules_run, o.schedules_planned),
            };
            let mut name = o.full_name();
            if name.len() > name_w {
                name = format!("…{}", &name[name.len() - (name_w - 1)..]);
            }
            let pad = " ".repeat(7usize.saturating_sub(word.len()));
            out.push_str(&format!(
                "{name:<name_w$}  {runs:>19}  {painted}{pad}  {:>8.2}s\n",
                o.time.as_secs_f64()
            ));
        }
        self.eprint(&out);
    }
}
