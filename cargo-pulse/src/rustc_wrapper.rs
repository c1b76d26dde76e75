//! cargo-pulse as cargo's `RUSTC_WRAPPER` for the mirror's build: it gives the instrumented
//! registry crates back the `--cap-lints allow` cargo gives every registry crate.
//!
//! pulse patches each instrumented dependency in as a path dependency (its copy under
//! `target/pulse/deps/`), and cargo treats path packages as local: it stops capping their
//! lints, so a dependency with `#![deny(warnings)]` (wait-timeout, which every `proptest` user
//! pulls in; try-lock) or a user's `RUSTFLAGS=-Dwarnings` fails a build that `cargo test`
//! passes. Neither `[patch]` nor a profile can mark a path package as foreign, so the cap is
//! added here, per rustc invocation, for packages whose manifest dir is under that directory
//! (or pulse's own support crates, which a registry install would cap too). A wrapper the
//! user set in `RUSTC_WRAPPER` (sccache) is run in turn.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Set on the mirror's cargo: the directories whose packages get their lints capped.
const CAP_UNDER_VAR: &str = "CARGO_PULSE_CAP_LINTS_UNDER";
/// The user's own `RUSTC_WRAPPER`, run by this one.
const INNER_VAR: &str = "CARGO_PULSE_INNER_RUSTC_WRAPPER";

/// Makes `cmd` (a cargo building the mirror) compile through this executable, capping lints
/// of the packages under `dirs`.
pub fn install(cmd: &mut Command, dirs: &[PathBuf]) {
    let dirs = dirs
        .iter()
        .map(|d| d.canonicalize().unwrap_or_else(|_| d.clone()));
    let (Ok(me), Ok(dirs)) = (std::env::current_exe(), std::env::join_paths(dirs)) else {
        return; // (no wrapper: lints stay uncapped)
    };
    if let Some(user) = std::env::var_os("RUSTC_WRAPPER").filter(|w| !w.is_empty()) {
        cmd.env(INNER_VAR, user);
    }
    cmd.env("RUSTC_WRAPPER", me).env(CAP_UNDER_VAR, dirs);
}

/// When cargo started this process as its rustc wrapper (`cargo-pulse RUSTC ARGS..`), runs
/// the compiler and returns its exit code.
pub fn run_if_wrapping(argv: &[OsString]) -> Option<i32> {
    let cap_under: Vec<PathBuf> =
        std::env::split_paths(&std::env::var_os(CAP_UNDER_VAR)?).collect();
    let (rustc, args) = argv.split_first()?;
    if rustc == "pulse" {
        return None; // `cargo pulse ...` run from a build script: not a compiler call
    }
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    let mut args = args.to_vec();
    if needs_cap(manifest_dir.as_deref(), &cap_under, &args) {
        args.extend(["--cap-lints".into(), "allow".into()]);
    }
    let mut cmd = match std::env::var_os(INNER_VAR) {
        Some(inner) => {
            let mut c = Command::new(inner);
            c.arg(rustc);
            c
        }
        None => Command::new(rustc),
    };
    cmd.args(&args).env_remove(INNER_VAR);
    Some(exec(cmd))
}

/// A compilation of a package under one of `cap_under` that does not set its own cap.
fn needs_cap(manifest_dir: Option<&Path>, cap_under: &[PathBuf], args: &[OsString]) -> bool {
    let Some(dir) = manifest_dir else {
        return false; // cargo's probes (`rustc -vV`, `--print`)
    };
    let canonical = dir.canonicalize().ok();
    let under = cap_under
        .iter()
        .any(|c| dir.starts_with(c) || canonical.as_ref().is_some_and(|d| d.starts_with(c)));
    under
        && !args
            .iter()
            .any(|a| a == "--cap-lints" || a.to_string_lossy().starts_with("--cap-lints="))
}

#[cfg(unix)]
fn exec(mut cmd: Command) -> i32 {
    use std::os::unix::process::CommandExt;
    let err = cmd.exec();
    eprintln!("error: cargo-pulse could not run the compiler: {err}");
    crate::exit_code::TOOL_ERROR
}

#[cfg(not(unix))]
fn exec(mut cmd: Command) -> i32 {
    match cmd.status() {
        Ok(s) => s.code().unwrap_or(crate::exit_code::TOOL_ERROR),
        Err(err) => {
            eprintln!("error: cargo-pulse could not run the compiler: {err}");
            crate::exit_code::TOOL_ERROR
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    #[test]
    fn caps_only_packages_under_the_deps_dir() {
        let deps = &[PathBuf::from("/s"), PathBuf::from("/w/target/pulse/deps")];
        let compile = args(&["--crate-name", "wait_timeout", "src/lib.rs"]);
        let dep = Path::new("/w/target/pulse/deps/wait-timeout-0.2.0");
        assert!(needs_cap(Some(dep), deps, &compile));
        let member = Path::new("/w/target/pulse/mirror/foo");
        assert!(!needs_cap(Some(member), deps, &compile));
        assert!(!needs_cap(None, deps, &args(&["-vV"])));
        assert!(needs_cap(Some(Path::new("/s/shim-std")), deps, &compile));
    }

    #[test]
    fn keeps_a_cap_cargo_already_set() {
        let deps = &[PathBuf::from("/d")];
        let dep = Path::new("/d/x-1.0.0");
        assert!(!needs_cap(
            Some(dep),
            deps,
            &args(&["--cap-lints", "warn", "src/lib.rs"])
        ));
        assert!(!needs_cap(
            Some(dep),
            deps,
            &args(&["--cap-lints=warn", "src/lib.rs"])
        ));
    }
}
