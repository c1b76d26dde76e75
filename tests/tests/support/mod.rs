//! Shared machinery of the end-to-end tests: install cargo-pulse once, copy a fixture to a
//! scratch directory, run the installed `cargo pulse` there, snapshot trees.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Scratch space of the suite (inside cargo's target dir, kept between runs so installs and
/// builds are incremental).
pub fn scratch() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pulse-e2e")
}

/// Where fixtures are copied and run: outside any cargo workspace (the repository's own
/// target dir is inside its workspace, and a fixture's path dependency without a
/// `[workspace]` table would be taken for a member of it). One per checkout and target dir,
/// so two people testing one checkout with their own `CARGO_TARGET_DIR` never share a fixture.
pub fn work_dir() -> PathBuf {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    repo().hash(&mut h);
    scratch().hash(&mut h);
    std::env::temp_dir().join(format!("pulse-e2e-work-{:x}", h.finish()))
}

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Builds of fixtures and registry crates share one target dir across the suite; full debug
/// info made it grow past 20 GB. Line tables keep every file:line a report or backtrace shows.
pub fn lean_debug_info(cmd: &mut Command) -> &mut Command {
    cmd.env("CARGO_PROFILE_DEV_DEBUG", "line-tables-only")
        .env("CARGO_PROFILE_TEST_DEBUG", "line-tables-only")
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// `cargo install --path cargo-pulse --root <scratch>/install`, once per test process;
/// returns the directory holding the installed `cargo-pulse`.
pub fn installed_bin_dir() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let root = scratch().join("install");
        let t = Instant::now();
        let install = |locked: bool| {
            let mut cmd = Command::new(cargo());
            cmd.args(["install", "--path"])
                .arg(repo().join("cargo-pulse"));
            cmd.arg("--root")
                .arg(&root)
                .arg("--target-dir")
                .arg(scratch().join("install-target"));
            // A debug build compiles in half the time; the tool's own speed is not under test.
            cmd.args(["--debug", "--force", "--quiet"]);
            if locked {
                cmd.arg("--locked");
            }
            cmd.env_remove("CARGO_TARGET_DIR");
            lean_debug_info(&mut cmd);
            cmd.status().expect("running cargo install")
        };
        if !install(true).success() {
            assert!(
                install(false).success(),
                "cargo install --path cargo-pulse failed"
            );
        }
        eprintln!(
            "installed cargo-pulse into {} in {:.1}s",
            root.display(),
            t.elapsed().as_secs_f64()
        );
        root.join("bin")
    })
}

/// A copy of a fixture crate, and this test's turn at that fixture.
///
/// Copies of one fixture build the same package at the same place in its workspace, so in the
/// shared mirror target dir they share its binaries: one test's build could replace the test
/// binary another test is about to run (an edited copy's binary once ran for the unedited
/// copy: CI failed on it). Tests of one fixture therefore take turns; a test must not hold
/// two copies of one fixture at once.
pub struct Fixture {
    dir: PathBuf,
    _turn: std::sync::MutexGuard<'static, ()>,
}

impl std::ops::Deref for Fixture {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.dir
    }
}

impl AsRef<Path> for Fixture {
    fn as_ref(&self) -> &Path {
        &self.dir
    }
}

/// A fresh copy of `src` (a fixture crate or another directory) at `<work dir>/<slot>`, once
/// no other test holds a copy of `src`.
pub fn copy_fixture(src: &Path, slot: &str) -> Fixture {
    static TURNS: Mutex<BTreeMap<PathBuf, &'static Mutex<()>>> = Mutex::new(BTreeMap::new());
    let turn: &'static Mutex<()> = TURNS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(src.to_path_buf())
        .or_insert_with(|| Box::leak(Box::new(Mutex::new(()))));
    // Blocking is bounded: every holder's own runs have deadlines.
    let turn = turn.lock().unwrap_or_else(|e| e.into_inner());
    let dst = work_dir().join(slot);
    if dst.exists() {
        std::fs::remove_dir_all(&dst).unwrap();
    }
    copy_dir(src, &dst);
    Fixture {
        dir: dst,
        _turn: turn,
    }
}

/// A fresh copy of `tests/fixtures/<name>` at `<work dir>/<slot>` (see `copy_fixture`).
pub fn fixture(name: &str, slot: &str) -> Fixture {
    copy_fixture(&repo().join("tests/fixtures").join(name), slot)
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if name == "target" {
            continue;
        }
        let (from, to) = (e.path(), dst.join(&name));
        if e.file_type().unwrap().is_dir() {
            copy_dir(&from, &to);
        } else {
            std::fs::copy(&from, &to).unwrap();
        }
    }
}

#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub secs: f64,
}

impl Run {
    /// The JSON lines of `--message-format json`.
    pub fn json(&self) -> Vec<serde_json::Value> {
        self.stdout
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// `(test name, event)` of every finished test in the JSON output.
    pub fn test_events(&self) -> Vec<(String, String)> {
        self.json()
            .into_iter()
            .filter(|v| v["type"] == "test")
            .map(|v| {
                (
                    v["name"].as_str().unwrap_or("").to_string(),
                    v["event"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    pub fn event_of(&self, test: &str) -> Option<String> {
        self.test_events()
            .into_iter()
            .find(|(n, _)| n == test)
            .map(|(_, e)| e)
    }

    /// The `replay: cargo pulse test ...` line of the first failure.
    pub fn replay_line(&self) -> Option<String> {
        self.stderr
            .lines()
            .find_map(|l| {
                l.trim()
                    .strip_prefix("replay:")
                    .map(|s| s.trim().to_string())
            })
            .filter(|l| l.starts_with("cargo pulse test"))
    }
}

/// Runs the installed `cargo pulse <args>` in `dir`.
pub fn cargo_pulse(dir: &Path, args: &[&str]) -> Run {
    let bin = installed_bin_dir();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new(cargo());
    cmd.arg("pulse").args(args).current_dir(dir);
    configure(&mut cmd, &path);
    let t = Instant::now();
    let out = cmd.output().expect("running cargo pulse");
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        secs: t.elapsed().as_secs_f64(),
    };
    eprintln!(
        "$ cargo pulse {} (in {}) -> exit {} in {:.1}s\n{}",
        args.join(" "),
        dir.display(),
        run.code,
        run.secs,
        run.stderr
    );
    run
}

/// Runs a shell command line (a replay line as printed) with the installed binary on PATH.
pub fn shell(dir: &Path, line: &str) -> Run {
    let bin = installed_bin_dir();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("sh");
    cmd.args(["-c", line]).current_dir(dir);
    configure(&mut cmd, &path);
    let t = Instant::now();
    let out = cmd.output().expect("running sh");
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        secs: t.elapsed().as_secs_f64(),
    };
    eprintln!(
        "$ {line} -> exit {} in {:.1}s\n{}",
        run.code, run.secs, run.stderr
    );
    run
}

fn configure(cmd: &mut Command, path: &str) {
    lean_debug_info(cmd);
    cmd.env("PATH", path)
        // Fixtures use their own target/ (as a user's crate would); their instrumented
        // builds share one target dir so pulse and its dependencies compile once.
        .env_remove("CARGO_TARGET_DIR")
        .env("CARGO_PULSE_TARGET_DIR", scratch().join("mirror-target"))
        .env("CARGO_PULSE_SUPPORT_DIR", scratch().join("support"))
        .env("CARGO_TERM_COLOR", "never")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_MAKEFLAGS");
    for (k, _) in std::env::vars() {
        // The outer `cargo test` run's own package variables must not leak into the fixtures'.
        if k.starts_with("CARGO_PKG_")
            || k == "CARGO_MANIFEST_DIR"
            || k == "CARGO_PRIMARY_PACKAGE"
            || k.starts_with(pulse_protocol::env::PREFIX)
        {
            cmd.env_remove(k);
        }
    }
}

/// Every file under `dir` except in `target/` directories, with its bytes.
pub fn snapshot(dir: &Path) -> Snapshot {
    let mut out = BTreeMap::new();
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                if e.file_name() != "target" {
                    walk(root, &p, out);
                }
            } else {
                out.insert(
                    p.strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    walk(dir, dir, &mut out);
    Snapshot(out)
}

/// A tree's files and contents; `Debug` names files only, so a failed comparison is readable.
#[derive(PartialEq, Eq)]
pub struct Snapshot(BTreeMap<PathBuf, Vec<u8>>);

impl Snapshot {
    pub fn len(&self) -> usize {
        self.0.len()
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(
                self.0
                    .iter()
                    .map(|(p, b)| format!("{} ({} bytes)", p.display(), b.len())),
            )
            .finish()
    }
}

// ---- outside programs the trace tests drive (Graphviz, headless Chromium) ----

/// Runs `cmd` with a deadline; `None` if it did not finish in time (it is killed). Its
/// output is read as it comes (a page's DOM can be far larger than a pipe's buffer).
#[allow(dead_code)] // (e2e.rs drives no outside program)
pub fn run_with_deadline(cmd: &mut Command, limit: Duration) -> Option<std::process::Output> {
    use std::io::Read;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let out = drain(Box::new(child.stdout.take()?));
    let err = drain(Box::new(child.stderr.take()?));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().ok()? {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    Some(std::process::Output {
        status,
        stdout: out.join().ok()?,
        stderr: err.join().ok()?,
    })
}

/// `bin`, installing Debian's `package` with apt when it is missing (every wait under a
/// deadline); `Err` says why it could not be had, for the test to skip with.
#[allow(dead_code)] // (e2e.rs drives no outside program)
pub fn apt_installed(package: &str, bin: &str) -> Result<PathBuf, String> {
    let bin = PathBuf::from(bin);
    if bin.exists() {
        return Ok(bin);
    }
    let apt = |args: &[&str]| {
        run_with_deadline(
            Command::new("apt-get")
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive"),
            Duration::from_secs(900),
        )
    };
    let install = apt(&["install", "-y", "--no-install-recommends", package]);
    if !bin.exists() {
        let _ = apt(&["update"]);
        let _ = apt(&["install", "-y", "--no-install-recommends", package]);
    }
    if bin.exists() {
        Ok(bin)
    } else {
        Err(format!(
            "{} is missing and `apt-get install {package}` did not install it ({})",
            bin.display(),
            install.map_or_else(
                || "apt-get could not run or timed out".to_string(),
                |o| String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
                    .to_string()
            )
        ))
    }
}

/// `/usr/bin/chromium`, installing Debian's `chromium` package when it is missing.
#[allow(dead_code)] // (e2e.rs drives no outside program)
pub fn chromium() -> Result<PathBuf, String> {
    apt_installed("chromium", "/usr/bin/chromium").map_err(|why| format!("no browser: {why}"))
}

/// A browser profile dir for one launch, removed when dropped (each is a few MB).
#[allow(dead_code)] // (e2e.rs drives no outside program)
pub struct Profile(PathBuf);

impl std::ops::Deref for Profile {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Profile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh, empty browser profile dir for one launch.
#[allow(dead_code)] // (e2e.rs drives no outside program)
pub fn fresh_profile() -> Profile {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "pulse-chromium-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Profile(dir)
}

#[allow(dead_code)] // (e2e.rs drives no outside program)
pub fn headless(bin: &Path, profile: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
        "--window-size=1400,500",
        "--virtual-time-budget=5000",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    cmd
}
