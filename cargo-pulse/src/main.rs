//! `cargo pulse`: run a crate's own tests under pulse's controlled scheduler.
//!
//! The pipeline, one module per stage: [`workspace`] (what to mirror) → [`mirror`] with
//! [`copy_tree`], [`manifest`], [`instrumenting`] and [`support`] (the instrumented copy under
//! `target/pulse/`) → [`compile`] (`cargo test --no-run`) → [`list`] → [`run`] with [`process`]
//! (one process per test; [`nextest`] for `--runner nextest`) → [`events`], one stream shown by
//! [`console`] and [`output`] (people and CI) → [`exit_code`].

mod check_history;
mod cli;
mod compile;
mod console;
mod copy_tree;
mod diagnostic_map;
mod doctests;
mod events;
mod exit_code;
mod harness_env;
mod instrument_cmd;
mod instrumenting;
mod list;
mod manifest;
mod mirror;
mod module_tree;
mod nextest;
mod outcome;
mod output;
mod path_map;
mod process;
mod run;
mod rustc_wrapper;
mod seeds;
mod stop;
mod support;
mod test_cmd;
mod trace_cmd;
mod workspace;

fn main() {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if argv.first().is_some_and(|a| a == nextest::WRAP_ARG) {
        // nextest starting one test process through us (its target runner).
        let argv: Vec<String> = argv.iter().map(|a| a.to_string_lossy().into()).collect();
        std::process::exit(nextest::wrap(&argv[1..]));
    }
    if let Some(code) = rustc_wrapper::run_if_wrapping(&argv) {
        // cargo compiling the mirror through us (its rustc wrapper).
        std::process::exit(code);
    }
    let cli = cli::parse();
    if !matches!(cli.command, cli::Command::Test(_)) {
        end_quietly_on_a_closed_pipe();
    }
    let json = matches!(&cli.command, cli::Command::Test(t) if t.message_format == cli::MessageFormat::Json);
    let result = match cli.command {
        cli::Command::Test(args) => test_cmd::run(*args),
        cli::Command::Instrument(args) => instrument_cmd::run(args),
        cli::Command::CheckHistory(args) => check_history::run(args),
        cli::Command::Trace(args) => trace_cmd::run(args),
    };
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            if json {
                output::JsonOutput { enabled: true }.tool_error(&format!("{e:#}"));
            }
            exit_code::TOOL_ERROR
        }
    };
    std::process::exit(code);
}

/// `cargo pulse trace FILE | head`: a reader that has gone ends the output, as it does for
/// other Unix tools, instead of a panic (Rust ignores SIGPIPE, so `print!` panics on EPIPE).
/// Not for `test`, which has test processes and a build to end first.
fn end_quietly_on_a_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: restoring a signal's default action, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
