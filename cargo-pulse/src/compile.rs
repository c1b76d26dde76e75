//! Builds the mirror's test binaries with `cargo test --no-run --message-format json`, passing
//! the user's cargo flags through, and shows the compiler's messages with paths, columns and
//! source text mapped back to the user's files ([`crate::diagnostic_map`]).
//!
//! The list of test executables comes from cargo's own artifact messages, so every kind of test
//! target (unit tests of lib and bins, `tests/*.rs`) is found the way cargo finds it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result};
use cargo_metadata::{Message, TargetKind};

use crate::cli::{CargoArgs, TargetArgs};
use crate::console::Console;
use crate::diagnostic_map::DiagnosticMap;
use crate::mirror::Mirror;
use crate::rustc_wrapper;

/// One test executable of the instrumented build.
#[derive(Debug, Clone)]
pub struct TestBinary {
    pub package: String,
    /// The package's version when another package of the graph has its name (async-io
    /// testing itself beside an async-io 2.5 its dev-dependencies pull in): `-p name` is
    /// then ambiguous to cargo, and replay lines say `-p name@version`.
    pub version_if_ambiguous: Option<String>,
    /// Target name (`bank`, `it`, ...).
    pub target: String,
    /// `lib`, `bin`, `test`, `bench` or `example`.
    pub kind: String,
    pub executable: PathBuf,
    /// The package's directory in the mirror: tests run there, as cargo runs them in theirs.
    pub mirror_dir: PathBuf,
    /// Directories the dynamic loader must search (see [`toolchain_lib_dirs`]).
    pub lib_dirs: Vec<PathBuf>,
    /// A library's source directory in the mirror, when `cargo test` would run its
    /// doctests (`doctests::any`).
    pub doc_src: Option<PathBuf>,
    /// `harness = false`: the target runs its own `main`, which has no libtest `--list`.
    pub own_main: bool,
}

impl TestBinary {
    /// A command starting this binary as `cargo test` would: with the toolchain's and the
    /// build's library directories on the loader's path (a proc-macro crate's test binary
    /// links std dynamically and does not start without them).
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.executable);
        let mut dirs: Vec<PathBuf> = self
            .executable
            .parent()
            .into_iter()
            .map(Into::into)
            .collect();
        dirs.extend(self.lib_dirs.iter().cloned());
        let var = dylib_path_var();
        dirs.extend(std::env::var_os(var).iter().flat_map(std::env::split_paths));
        if let Ok(joined) = std::env::join_paths(dirs) {
            cmd.env(var, joined);
        }
        cmd
    }

    /// The cargo flags that select exactly this binary (for replay lines).
    pub fn selector(&self) -> String {
        let target = match self.kind.as_str() {
            "lib" => "--lib".to_string(),
            "bin" => format!("--bin {}", self.target),
            "test" => format!("--test {}", self.target),
            "bench" => format!("--bench {}", self.target),
            "example" => format!("--example {}", self.target),
            _ => String::new(),
        };
        let spec = match &self.version_if_ambiguous {
            Some(version) => format!("{}@{version}", self.package),
            None => self.package.clone(),
        };
        format!("-p {spec} {target}").trim_end().to_string()
    }

    /// Short name for people: `pkg` for a lib, `pkg::bin/name`, `pkg::test/name`.
    pub fn display(&self) -> String {
        match self.kind.as_str() {
            "lib" => self.package.clone(),
            k => format!("{}::{k}/{}", self.package, self.target),
        }
    }

    /// A file-name-safe identity, unique within a workspace.
    pub fn slug(&self) -> String {
        format!("{}.{}-{}", self.package, self.kind, self.target)
    }
}

/// The flags that select what to build, shared by the build, the nextest bridge and replay
/// lines.
pub fn cargo_selection_args(cargo: &CargoArgs, targets: &TargetArgs) -> Vec<String> {
    let mut args = Vec::new();
    for p in &cargo.packages {
        args.extend(["-p".to_string(), p.clone()]);
    }
    if cargo.workspace {
        args.push("--workspace".into());
    }
    for e in &cargo.exclude {
        args.extend(["--exclude".to_string(), e.clone()]);
    }
    if targets.lib {
        args.push("--lib".into());
    }
    for b in &targets.bins_named {
        args.extend(["--bin".to_string(), b.clone()]);
    }
    if targets.bins {
        args.push("--bins".into());
    }
    for t in &targets.tests_named {
        args.extend(["--test".to_string(), t.clone()]);
    }
    if targets.tests {
        args.push("--tests".into());
    }
    args.extend(profile_and_feature_args(cargo));
    args
}

/// Flags that change what is compiled (and so must be repeated to replay a failure).
pub fn profile_and_feature_args(cargo: &CargoArgs) -> Vec<String> {
    let mut args = Vec::new();
    if cargo.release {
        args.push("--release".into());
    }
    if let Some(p) = &cargo.profile {
        args.extend(["--profile".to_string(), p.clone()]);
    }
    for f in &cargo.features {
        args.extend(["--features".to_string(), f.clone()]);
    }
    if cargo.all_features {
        args.push("--all-features".into());
    }
    if cargo.no_default_features {
        args.push("--no-default-features".into());
    }
    args
}

/// pulse's runtime (the scheduler, the execution's bookkeeping) and the shims' non-generic
/// code are optimised in every profile: in a debug test build they are otherwise most of an
/// execution's time (std, which the shims stand in for, is always a release build). So are
/// the protocol and its JSON writer, which write a failure's record and trace in the test's
/// process: at opt-level 0 serde-json-core wrote crossbeam-channel 0.4.4's
/// 100,000,000-choice schedule (a 260 MB record) a character at a time for 20 s and more,
/// twice, and the driver took the silence for a stall.
const OPTIMIZED_RUNTIME: [&str; 12] = [
    "profile.dev.package.pulse-runtime.opt-level=3",
    "profile.dev.package.pulse-runtime.debug-assertions=false",
    "profile.dev.package.pulse-runtime.overflow-checks=false",
    "profile.dev.package.pulse-shim-std.opt-level=3",
    "profile.dev.package.pulse-shim-std.debug-assertions=false",
    "profile.dev.package.pulse-shim-std.overflow-checks=false",
    "profile.dev.package.pulse-protocol.opt-level=3",
    "profile.dev.package.pulse-protocol.debug-assertions=false",
    "profile.dev.package.pulse-protocol.overflow-checks=false",
    "profile.dev.package.serde-json-core.opt-level=3",
    "profile.dev.package.serde-json-core.debug-assertions=false",
    "profile.dev.package.serde-json-core.overflow-checks=false",
];

/// `--config` arguments for `OPTIMIZED_RUNTIME`, given after the subcommand: given before
/// `nextest`, cargo hands them to nextest in a way that hid pulse's target runner from it.
pub fn optimized_runtime_args() -> Vec<&'static str> {
    OPTIMIZED_RUNTIME
        .iter()
        .flat_map(|setting| ["--config", setting])
        .collect()
}

/// The environment every cargo invocation on the mirror gets.
pub fn cargo_command(mirror: &Mirror) -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&mirror.root);
    cmd.env("CARGO_TARGET_DIR", &mirror.target_dir);
    rustc_wrapper::install(&mut cmd, &mirror.foreign_dirs());
    cmd
}

/// Builds the test binaries; on a compile error returns `Ok(None)` after showing the
/// compiler's messages (mapped to the user's files).
pub fn build(
    mirror: &Mirror,
    cargo: &CargoArgs,
    targets: &TargetArgs,
    console: &Console,
) -> Result<Option<Vec<TestBinary>>> {
    let mut cmd = cargo_command(mirror);
    let format = if console.color_stderr() {
        "json-diagnostic-rendered-ansi"
    } else {
        "json"
    };
    cmd.arg("test").args(optimized_runtime_args());
    cmd.args(["--no-run", "--message-format", format, "--manifest-path"]);
    cmd.arg(&mirror.manifest);
    cmd.args(cargo_selection_args(cargo, targets));
    if let Some(j) = cargo.jobs {
        cmd.args(["--jobs", &j.to_string()]);
    }
    if cargo.offline {
        cmd.arg("--offline");
    }
    if console.color_stderr() {
        cmd.args(["--color", "always"]);
    }
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .context("running `cargo test --no-run` on the mirror")?;

    // cargo's own status lines ("Compiling ...") and errors, mapped and passed on.
    let stderr = child.stderr.take().unwrap();
    let paths = mirror.paths.clone();
    let show_status = !console.quiet();
    let verbose = console.verbose();
    let stderr_console = console.clone();
    let stderr_thread = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let line = paths.map_text(&line);
            let first = line.split_whitespace().next().unwrap_or("");
            // Progress people expect from `cargo test`; the resolver's chatter only with -v.
            let progress = matches!(first, "Compiling" | "Finished");
            let chatter = matches!(
                first,
                "Updating"
                    | "Locking"
                    | "Adding"
                    | "Downloading"
                    | "Downloaded"
                    | "Blocking"
                    | "Fresh"
                    | "Running"
                    | "Removing"
                    | "Unpacking"
                    | "Checking"
                    | "Updated"
                    | "Executable"
            );
            let show = if progress {
                show_status
            } else if chatter {
                verbose
            } else {
                !line.trim().is_empty()
            };
            if show {
                stderr_console.eprintln(&line);
            }
        }
    });

    let lib_dirs = toolchain_lib_dirs(&mirror.root);
    let to_user = |p: &Path| PathBuf::from(mirror.paths.map_text(&p.display().to_string()));
    let mut diagnostics = DiagnosticMap::new(&mirror.root, &to_user);
    let mut binaries = Vec::new();
    let mut manifests = std::collections::HashMap::new();
    let mut errors = 0usize;
    let mut support_errors = 0usize;
    let mut warnings = 0usize;
    let support_root = crate::support::Support::root_marker();
    // Instrumented registry crates live here; how many of them cargo compiled is their cost.
    let deps_root = format!("{}/", mirror.pulse_dir.join("deps").display());
    let mut deps_compiled = std::collections::BTreeSet::new();
    // The instrumented crates this build uses, fresh or not, by their directory.
    let mut deps_built = std::collections::BTreeSet::new();
    let mut dep_errors = std::collections::BTreeSet::new();
    // Registry and git crates pulse left as they are, with errors: what they use of an
    // instrumented (or shimmed) crate does not fit them.
    let mut untouched_errors = std::collections::BTreeSet::new();
    let mut own_shown = 0usize;
    // The lib and its test harness build report the same error twice; show it once.
    let mut shown = std::collections::HashSet::new();
    // Every package the build compiled, as (name, version).
    let mut compiled = std::collections::BTreeSet::new();
    let stdout = child.stdout.take().unwrap();
    for message in Message::parse_stream(BufReader::new(stdout)) {
        let message = message.context("reading cargo's JSON messages")?;
        match message {
            Message::CompilerArtifact(a) => {
                compiled.insert((
                    package_name(&a.package_id.repr),
                    package_version(&a.package_id.repr),
                ));
                if let Some(dir) = a.manifest_path.as_str().strip_prefix(&deps_root) {
                    if !a.fresh {
                        deps_compiled.insert(a.package_id.repr.clone());
                    }
                    if let Some((dir, _)) = dir.split_once('/') {
                        deps_built.insert(dir.to_string());
                    }
                }
                let (Some(exe), true) = (a.executable, a.profile.test) else {
                    continue;
                };
                let kind = a.target.kind.first().map(kind_name).unwrap_or_default();
                let package = package_name(&a.package_id.repr);
                let own_main = harness_off(
                    &mut manifests,
                    a.manifest_path.as_std_path(),
                    &kind,
                    &a.target.name,
                );
                let doc_src = (kind == "lib" && a.target.doctest)
                    .then(|| {
                        a.target
                            .src_path
                            .parent()
                            .map(|d| d.as_std_path().to_path_buf())
                    })
                    .flatten();
                binaries.push(TestBinary {
                    version_if_ambiguous: package_version(&a.package_id.repr),
                    package,
                    target: a.target.name.clone(),
                    kind,
                    executable: exe.into_std_path_buf(),
                    mirror_dir: a
                        .manifest_path
                        .parent()
                        .unwrap()
                        .to_path_buf()
                        .into_std_path_buf(),
                    lib_dirs: lib_dirs.clone(),
                    doc_src,
                    own_main,
                });
            }
            Message::CompilerMessage(m) => {
                let level = m.message.level;
                let is_error = matches!(
                    level,
                    cargo_metadata::diagnostic::DiagnosticLevel::Error
                        | cargo_metadata::diagnostic::DiagnosticLevel::Ice
                );
                if is_error && m.package_id.repr.contains(&support_root) {
                    support_errors += 1;
                } else if is_error && m.package_id.repr.contains(&deps_root) {
                    dep_errors.insert(package_name(&m.package_id.repr));
                } else if is_error && !m.package_id.repr.contains("path+") {
                    untouched_errors.insert(package_name(&m.package_id.repr));
                } else if is_error {
                    errors += 1;
                } else if matches!(level, cargo_metadata::diagnostic::DiagnosticLevel::Warning)
                    && !m.package_id.repr.contains(&deps_root)
                {
                    // (A registry crate's warnings are cargo's business to cap, not the user's.)
                    warnings += 1;
                }
                let own_error = is_error
                    && m.package_id.repr.contains("path+")
                    && !m.package_id.repr.contains(&deps_root)
                    && !m.package_id.repr.contains(&support_root);
                if is_error || console.verbose() {
                    if let Some(rendered) = &m.message.rendered {
                        if shown.insert(rendered.clone()) {
                            own_shown += usize::from(own_error);
                            let rendered = diagnostics.map(rendered);
                            console.eprint(&mirror.paths.map_text(&rendered));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let status = child.wait().context("waiting for cargo")?;
    let _ = stderr_thread.join();
    let report = &mirror.deps_report;
    if report.mode != "none" || !mirror.deps.is_empty() {
        console.status(
            "Dependencies",
            &format!(
                "{}; {} of them compiled",
                report.line(status.success().then_some(&deps_built)),
                deps_compiled.len()
            ),
        );
    }
    if !status.success() {
        if !dep_errors.is_empty() {
            let names: Vec<&str> = dep_errors.iter().map(String::as_str).collect();
            let instrumented: Vec<&str> = mirror.deps.iter().map(|d| d.name.as_str()).collect();
            console.eprintln(&console.error(&format!(
                "the instrumented copy of the dependency {} does not compile (see above): a bug in \
                 pulse's shims or instrumenter. To test without scheduling it, pass \
                 `--instrument-deps {}`",
                names.join(", "),
                instrument_deps_without(&names, &instrumented, &report.held_back)
            )));
        } else if support_errors > 0 {
            console.eprintln(&console.error(
                "pulse's own support crates failed to build: this is a bug in cargo-pulse, not in your code",
            ));
        } else if !untouched_errors.is_empty() {
            let names: Vec<&str> = untouched_errors.iter().map(String::as_str).collect();
            let own = if errors > 0 {
                format!(" (and {} in your own files)", own_shown.clamp(1, errors))
            } else {
                String::new()
            };
            let deps: Vec<&str> = mirror.deps.iter().map(|d| d.name.as_str()).collect();
            let hint = if deps.is_empty() {
                String::new()
            } else {
                format!(
                    ". To test without scheduling the instrumented dependencies ({}), pass \
                     `--instrument-deps none`",
                    deps.join(", ")
                )
            };
            console.eprintln(&console.error(&format!(
                "the instrumented build failed in {}, which pulse does not instrument{own}: \
                 something it uses from an instrumented crate does not fit there, a bug in \
                 pulse's shims or instrumenter{hint}",
                names.join(", ")
            )));
        } else if errors > 0 {
            let errors = own_shown.clamp(1, errors);
            // With dependencies left as they are, the user's rewritten std types meet their
            // APIs unrewritten (parking_lot's `park` takes std's `Instant`).
            let hint = if report.mode.starts_with("auto") {
                String::new()
            } else {
                format!(
                    ". With `--instrument-deps {}`, dependencies that synchronise are left as \
                     they are, so std types your code passes them (`Instant`, `Mutex`, ...) \
                     are pulse's where they expect std's: the default, `--instrument-deps \
                     auto`, instruments them too",
                    report.mode
                )
            };
            console.eprintln(&console.error(&format!(
                "the instrumented build failed with {errors} error(s); the locations above are in your own files{hint}"
            )));
        } else {
            console.eprintln(
                &console
                    .error("`cargo test --no-run` failed on the instrumented mirror (see above)"),
            );
        }
        return Ok(None);
    }
    if warnings > 0 && !console.verbose() && !console.quiet() {
        console.eprintln(&console.dim(&format!(
            "({warnings} compiler warning(s) in the instrumented build; -v shows them)"
        )));
    }
    for b in &mut binaries {
        let versions = compiled
            .iter()
            .filter(|(name, _)| *name == b.package)
            .count();
        if versions < 2 {
            b.version_if_ambiguous = None;
        }
    }
    binaries
        .sort_by(|a, b| (&a.package, &a.kind, &a.target).cmp(&(&b.package, &b.kind, &b.target)));
    binaries.dedup_by(|a, b| a.executable == b.executable);
    Ok(Some(binaries))
}

/// The variable the platform's dynamic loader searches, as cargo sets it when it runs tests.
fn dylib_path_var() -> &'static str {
    if cfg!(windows) {
        "PATH"
    } else if cfg!(target_os = "macos") {
        "DYLD_FALLBACK_LIBRARY_PATH"
    } else {
        "LD_LIBRARY_PATH"
    }
}

/// The toolchain's library directories (`<sysroot>/lib` and the host target's lib dir), asked
/// of the rustc cargo uses in `dir` (so a rustup override there applies). Empty if rustc
/// cannot be asked: binaries that need no dynamic std still run.
pub fn toolchain_lib_dirs(dir: &Path) -> Vec<PathBuf> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let ask = |what: &str| -> Option<PathBuf> {
        let out = Command::new(&rustc)
            .args(["--print", what])
            .current_dir(dir)
            .stderr(Stdio::null())
            .output()
            .ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        let line = text.lines().next()?.trim();
        (out.status.success() && !line.is_empty()).then(|| PathBuf::from(line))
    };
    let mut dirs = Vec::new();
    dirs.extend(ask("target-libdir"));
    dirs.extend(ask("sysroot").map(|s| s.join("lib")));
    dirs
}

/// Whether the target turns libtest's harness off (`manifest::harness_off`), each manifest
/// read once; one that cannot be read leaves the harness on (`--list` then says why).
fn harness_off(
    manifests: &mut std::collections::HashMap<PathBuf, Option<toml_edit::DocumentMut>>,
    manifest: &Path,
    kind: &str,
    name: &str,
) -> bool {
    let doc = manifests.entry(manifest.to_path_buf()).or_insert_with(|| {
        let text = std::fs::read_to_string(manifest).ok()?;
        crate::manifest::parse(&text, manifest).ok()
    });
    doc.as_ref()
        .is_some_and(|d| crate::manifest::harness_off(d, kind, name))
}

fn kind_name(k: &TargetKind) -> String {
    match k {
        TargetKind::Lib
        | TargetKind::RLib
        | TargetKind::DyLib
        | TargetKind::CDyLib
        | TargetKind::StaticLib
        | TargetKind::ProcMacro => "lib".into(),
        TargetKind::Bin => "bin".into(),
        TargetKind::Test => "test".into(),
        TargetKind::Bench => "bench".into(),
        TargetKind::Example => "example".into(),
        other => other.to_string(),
    }
}

/// Package name from a package id: `path+file:///dir#name@0.1.0` or `path+file:///dir/name#0.1.0`
/// (cargo's spec forms) or the old `name 0.1.0 (path+...)`.
/// The version in a package id (`path+file:///w/x#app@0.2.0`, `path+file:///w/app#0.2.0`,
/// `app 0.2.0 (path+file:///w)`).
fn package_version(id: &str) -> Option<String> {
    let version = match id.rsplit_once('#') {
        Some((_, frag)) => frag.rsplit_once('@').map_or(frag, |(_, v)| v),
        None => id.split_whitespace().nth(1)?,
    };
    Some(version.to_string())
}

fn package_name(id: &str) -> String {
    if let Some((url, frag)) = id.rsplit_once('#') {
        if let Some((name, _)) = frag.split_once('@') {
            return name.to_string();
        }
        return url.rsplit('/').next().unwrap_or(url).to_string();
    }
    id.split_whitespace().next().unwrap_or(id).to_string()
}

/// The `--instrument-deps` list that leaves out the crates in `failing`: every other one
/// `instrumented`, each name once. A name stands for every version of it, and pulse refuses
/// to instrument a crate it depends on itself (`held_back`, `name version`), so such a name
/// (getrandom 0.4 instrumented beside pulse's own 0.3) is left out too.
fn instrument_deps_without(
    failing: &[&str],
    instrumented: &[&str],
    held_back: &[String],
) -> String {
    let pulse_needs = |n: &str| {
        held_back
            .iter()
            .any(|h| h.split_whitespace().next() == Some(n))
    };
    let mut others: Vec<&str> = instrumented
        .iter()
        .copied()
        .filter(|n| !failing.contains(n) && !pulse_needs(n))
        .collect();
    others.sort_unstable();
    others.dedup();
    if others.is_empty() {
        "none".to_string()
    } else {
        others.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::instrument_deps_without;

    #[test]
    fn the_advice_names_each_other_crate_once_and_none_pulse_depends_on() {
        let held_back = vec!["getrandom 0.3.4".to_string()];
        assert_eq!(
            instrument_deps_without(
                &["saa"],
                &["saa", "getrandom", "rand", "getrandom", "bytes"],
                &held_back
            ),
            "bytes,rand"
        );
        assert_eq!(instrument_deps_without(&["saa"], &["saa"], &[]), "none");
    }

    use super::*;

    #[test]
    fn package_names_from_ids() {
        assert_eq!(
            package_name("path+file:///w/bank-account#0.1.0"),
            "bank-account"
        );
        assert_eq!(package_name("path+file:///w/crates/x#app@0.2.0"), "app");
        assert_eq!(package_name("foo 0.1.0 (path+file:///w)"), "foo");
        assert_eq!(
            package_version("path+file:///w/bank-account#0.1.0").as_deref(),
            Some("0.1.0")
        );
        assert_eq!(
            package_version("path+file:///w/crates/x#app@0.2.0").as_deref(),
            Some("0.2.0")
        );
        assert_eq!(
            package_version("foo 0.1.0 (path+file:///w)").as_deref(),
            Some("0.1.0")
        );
    }

    #[test]
    fn an_ambiguous_package_is_selected_with_its_version() {
        let mut b = TestBinary {
            package: "async-io".into(),
            version_if_ambiguous: Some("2.6.0".into()),
            target: "timer".into(),
            kind: "test".into(),
            executable: "/nonexistent".into(),
            mirror_dir: "/nonexistent".into(),
            lib_dirs: Vec::new(),
            doc_src: None,
            own_main: false,
        };
        assert_eq!(b.selector(), "-p async-io@2.6.0 --test timer");
        b.version_if_ambiguous = None;
        assert_eq!(b.selector(), "-p async-io --test timer");
    }

    #[test]
    fn selection_args_follow_cargo() {
        let cargo = CargoArgs {
            packages: vec!["a".into()],
            release: true,
            features: vec!["x".into()],
            ..Default::default()
        };
        let targets = TargetArgs {
            tests_named: vec!["it".into()],
            ..Default::default()
        };
        assert_eq!(
            cargo_selection_args(&cargo, &targets),
            ["-p", "a", "--test", "it", "--release", "--features", "x"]
        );
    }
}
