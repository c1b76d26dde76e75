//! Executions in fresh processes, for tests that keep state in statics (a counter, a cache,
//! a registry): run many times in one process, a later schedule sees what earlier ones left
//! and fails for that reason alone.
//!
//! A fresh process is a re-run of the test binary itself, never a `fork`. Forking a
//! multi-threaded process (libtest runs tests on several threads; users call `pulse::check`
//! from them) copies every lock another thread held at that moment, held forever in the
//! child: std's backtrace lock, stdout's, a user's `static` lock. A re-run is safe by
//! construction and costs ~2 ms (`exec` plus libtest's start) instead of a fork's ~0.1 ms,
//! paid only by tests that need isolation (ARCHITECTURE.md, decision 14).
//!
//! The re-run is told through `WORKER_ENV` which run should execute which job: the run
//! started by the thread of the same name, the same number of runs into that thread's life
//! (runs before it in the re-run go as usual, in process). That run executes the job, writes
//! its outcome to the reply file, and ends the process. Every wait has a deadline: a re-run
//! that takes longer is killed and reported, never waited for forever.
//!
//! A job may come with bytes, and an answer go back with some (a systematic search's
//! position, which can be megabytes): they travel in files beside the order and the reply,
//! not inside the JSON, which a test's debug build writes and reads a character at a time.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use pulse_protocol::{env, json};
use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::process::journal::{self, Journal, Kept};
use crate::report::explain::KEPT_TRACE;

/// The order a re-run reads: which run serves which job, and where the answer goes.
const WORKER_ENV: &str = env::ISOLATED_WORKER;
/// What the parent's harness writes to; a worker must not touch it.
const PARENT_ONLY_ENV: &[&str] = &[env::PROGRESS, env::WARNINGS];

/// How long a worker may take on top of twice the run's blocking timeout (its own watchdog
/// ends a stalled execution after one) before it is killed: starting the test binary and
/// reaching the run.
const STARTUP_GRACE: Duration = Duration::from_secs(5);
/// The blocking timeout assumed when the run has none.
const DEFAULT_BLOCKING_TIMEOUT: Duration = Duration::from_secs(60);

/// Which run of the process this is: the thread that started it and how many runs that
/// thread had started before it. The same program re-run names the same run the same way.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Debug)]
pub(crate) struct RunId {
    thread: Option<String>,
    ordinal: u64,
}

impl RunId {
    /// Names the run the calling thread is starting (call once per run).
    pub(crate) fn next() -> RunId {
        thread_local! {
            static RUNS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
        }
        let ordinal = RUNS.with(|r| {
            let n = r.get();
            r.set(n + 1);
            n
        });
        RunId {
            thread: std::thread::current().name().map(str::to_string),
            ordinal,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct Order<J> {
    run: RunId,
    job: J,
    reply: PathBuf,
    /// The run's date (`ExecState::wall_clock`) in ns since the Unix epoch: the worker's
    /// execution reads the dates the parent's would have.
    wall_clock_ns: u64,
    /// The job's bytes are in the file `bytes_in(reply)`.
    #[serde(default)]
    bytes: bool,
    /// What is left of the test's time limit: the worker cuts its execution there.
    #[serde(default)]
    time_left_ms: Option<u64>,
}

/// Where a job's bytes go, beside its reply file.
fn bytes_in(reply: &Path) -> PathBuf {
    reply.with_extension("in")
}

/// Where an answer's bytes go, beside its reply file.
fn bytes_out(reply: &Path) -> PathBuf {
    reply.with_extension("out")
}

/// What this process is asked to do for one run.
pub(crate) enum Role<J> {
    /// An ordinary process: search, isolating when needed.
    Search,
    /// A worker, and this is the run it was started for: execute `job`, then send the
    /// outcome to `reply`.
    Serve {
        job: J,
        /// The bytes that came with it.
        bytes: Option<Vec<u8>>,
        reply: ReplyTo,
        /// The parent run's date (`ExecState::wall_clock`).
        wall_clock: SystemTime,
        /// What is left of the test's time limit (`Order::time_left_ms`).
        time_left: Option<Duration>,
    },
    /// A worker, but not this run: run as usual, in process, without isolation.
    Bystander,
}

/// Where a worker's answer goes.
pub(crate) struct ReplyTo(PathBuf);

/// This run's role, read from the environment.
pub(crate) fn role<J: DeserializeOwned>(run: &RunId) -> Role<J> {
    let Some(order) = std::env::var_os(WORKER_ENV) else {
        return Role::Search;
    };
    let order = env::unspill(&order.to_string_lossy())
        .unwrap_or_else(|e| panic!("pulse: {WORKER_ENV} names a file pulse cannot read ({e})"));
    let order: Order<J> = match json::from_str(&order) {
        Ok(order) => order,
        Err(e) => panic!("pulse: {WORKER_ENV} is not an order pulse wrote ({e})"),
    };
    if order.run != *run {
        return Role::Bystander;
    }
    // Tells the parent the run was reached (its report names the phase on a timeout).
    let _ = std::fs::File::create(&order.reply);
    let bytes = order.bytes.then(|| {
        std::fs::read(bytes_in(&order.reply)).unwrap_or_else(|e| {
            panic!("pulse: an isolated run could not read the bytes of its order ({e})")
        })
    });
    Role::Serve {
        job: order.job,
        bytes,
        reply: ReplyTo(order.reply),
        wall_clock: UNIX_EPOCH + Duration::from_nanos(order.wall_clock_ns),
        time_left: order.time_left_ms.map(Duration::from_millis),
    }
}

impl ReplyTo {
    /// The journal this worker keeps of its execution (read by the parent if it dies).
    pub(crate) fn journal(&self) -> Option<Journal> {
        Journal::create(&self.0)
    }

    /// Writes the outcome (and `bytes`, if any) where the parent reads it and ends this
    /// process at once: nothing else of the re-run (the test's other code, libtest's
    /// report) should run.
    pub(crate) fn send<T: Serialize>(self, outcome: &T, bytes: Option<&[u8]>) -> ! {
        let part = self.0.with_extension("part");
        let written = bytes
            .map_or(Ok(()), |b| std::fs::write(bytes_out(&self.0), b))
            .and_then(|()| std::fs::write(&part, json::to_string(outcome)))
            .and_then(|()| std::fs::rename(&part, &self.0));
        if let Err(e) = &written {
            eprintln!(
                "pulse: an isolated execution could not write its outcome to {}: {e}",
                self.0.display()
            );
        }
        exit_now(if written.is_ok() { 0 } else { 1 })
    }
}

/// Ends the process without running exit handlers or flushing stdout (whose lock another
/// thread of the test may hold; the parent does not read this process's stdout).
fn exit_now(code: i32) -> ! {
    #[cfg(unix)]
    // SAFETY: _exit has no preconditions.
    unsafe {
        libc::_exit(code)
    }
    #[cfg(not(unix))]
    std::process::exit(code)
}

/// A worker's answer.
pub(crate) enum Reply<T> {
    /// The outcome, and the bytes that came with it.
    Done(T, Option<Vec<u8>>),
    /// The execution ended its process (a crash, an abort, `process::exit`); what it wrote
    /// to stderr, and what its journal kept of it.
    Died {
        how: String,
        stderr: String,
        kept: Option<Box<Kept>>,
    },
    /// The worker's watchdog found a thread blocked outside pulse; it reported it itself.
    Blocked,
    /// The re-run ended without reaching this run: the test cannot be re-run this way.
    Unreachable { how: String },
    /// The worker did not finish in time and was killed; what it wrote to stderr.
    TimedOut {
        phase: &'static str,
        after: Duration,
        stderr: String,
    },
}

/// A file removed when this goes out of scope (a spilled order, once its worker is done).
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Runs jobs of one run, each in a fresh re-run of this process.
pub(crate) struct Isolator {
    command: (PathBuf, Vec<OsString>),
    run: RunId,
    /// The run's date, passed to every worker.
    wall_clock: SystemTime,
    deadline: Duration,
    /// Reply files are this with a counter appended.
    reply_stem: PathBuf,
    next_reply: u64,
}

impl Isolator {
    /// How to re-run `run` of this process; `None` if it cannot be re-run alone. libtest names
    /// each test's thread after the test, so that test can run by itself (an ignored one too,
    /// if that is how it was started). A run on `main` or an unnamed thread belongs to a
    /// program of its own: running it again would repeat everything it did before (the bench
    /// re-ran itself this way, ~100 ms per failure), side effects included, so it is not.
    pub(crate) fn new(
        run: RunId,
        blocking_timeout: Option<Duration>,
        wall_clock: SystemTime,
    ) -> Option<Isolator> {
        let test = run.thread.as_deref().filter(|name| *name != "main")?;
        let exe = current_exe()?;
        let args = [test, "--exact", "--test-threads=1", "--include-ignored"]
            .map(OsString::from)
            .to_vec();
        let reply_stem = std::env::temp_dir().join(format!(
            "pulse-isolated-{}-{}",
            std::process::id(),
            unique()
        ));
        let deadline = STARTUP_GRACE + 2 * blocking_timeout.unwrap_or(DEFAULT_BLOCKING_TIMEOUT);
        Some(Isolator {
            command: (exe, args),
            run,
            wall_clock,
            deadline,
            reply_stem,
            next_reply: 0,
        })
    }

    /// Runs `job` (with `bytes`) in a fresh process and waits (with a deadline) for its
    /// answer.
    pub(crate) fn run<J: Serialize, T: DeserializeOwned>(
        &mut self,
        job: &J,
        bytes: Option<&[u8]>,
        time_left: Option<Duration>,
        alive: &dyn Fn(),
    ) -> Reply<T> {
        let file = |ext: &str| {
            let mut name = self.reply_stem.clone().into_os_string();
            name.push(format!("-{}.{ext}", self.next_reply));
            PathBuf::from(name)
        };
        let (reply, stderr) = (file("json"), file("stderr"));
        self.next_reply += 1;
        let order = Order {
            run: self.run.clone(),
            job,
            reply: reply.clone(),
            wall_clock_ns: self
                .wall_clock
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
            bytes: bytes.is_some(),
            time_left_ms: time_left.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
        };
        let _remove_bytes = [bytes_in(&reply), bytes_out(&reply)].map(RemoveOnDrop);
        let _remove_journal = journal::files(&reply).map(RemoveOnDrop);
        if let Some(Err(e)) = bytes.map(|b| std::fs::write(bytes_in(&reply), b)) {
            return Reply::Unreachable {
                how: format!("could not write its order's bytes: {e}"),
            };
        }
        let order = json::to_string(&order);
        // A long schedule goes through a file (`E2BIG`), next to the reply.
        let dir = reply
            .parent()
            .map_or_else(std::env::temp_dir, Path::to_path_buf);
        let (order, spilled) = match env::spill(&order, &dir) {
            Ok(spilled) => spilled,
            Err(e) => {
                return Reply::Unreachable {
                    how: format!("could not write its order: {e}"),
                }
            }
        };
        let _remove = spilled.map(RemoveOnDrop);
        let spawned = std::fs::File::create(&stderr).and_then(|err| self.spawn(&order, err));
        // What the worker said on stderr: part of the report when it died, else passed on.
        let said = || {
            let text = std::fs::read_to_string(&stderr).unwrap_or_default();
            let _ = std::fs::remove_file(&stderr);
            text
        };
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                said();
                return Reply::Unreachable {
                    how: format!("could not start {}: {e}", self.command.0.display()),
                };
            }
        };
        // A worker cuts its execution when the test's time runs out: wait that long more.
        let deadline = self.deadline + time_left.unwrap_or_default();
        let status = match wait_until(&mut child, Instant::now() + deadline, alive) {
            Some(status) => status,
            None => {
                kill(&mut child);
                let phase = if std::fs::remove_file(&reply).is_ok() {
                    "was running the execution"
                } else {
                    "was starting and had not reached the test's pulse run"
                };
                return Reply::TimedOut {
                    phase,
                    after: deadline,
                    stderr: said(),
                };
            }
        };
        let answer = std::fs::read(&reply).ok();
        let _ = std::fs::remove_file(&reply);
        let stderr = said();
        let pass_on = |text: &str| {
            let _ = std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes());
        };
        match answer {
            Some(text) if !text.is_empty() => {
                pass_on(&stderr);
                let back = std::fs::read(bytes_out(&reply)).ok();
                match json::from_str(&String::from_utf8_lossy(&text)) {
                    Ok(outcome) => Reply::Done(outcome, back),
                    Err(e) => Reply::Died {
                        how: format!("its answer could not be read ({e})"),
                        stderr: String::new(),
                        kept: None,
                    },
                }
            }
            // Reached, but no answer: the execution took the process down.
            Some(_) if exited_with(status, crate::process::watchdog::BLOCKED_EXIT_CODE) => {
                pass_on(&stderr);
                Reply::Blocked
            }
            Some(_) => Reply::Died {
                how: describe(status),
                stderr,
                kept: journal::read(&reply, KEPT_TRACE).map(Box::new),
            },
            None => {
                pass_on(&stderr);
                Reply::Unreachable {
                    how: describe(status),
                }
            }
        }
    }

    fn spawn(&self, order: &str, stderr: std::fs::File) -> std::io::Result<Child> {
        let (exe, args) = &self.command;
        let mut command = Command::new(exe);
        command
            .args(args)
            .env(WORKER_ENV, order)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        for name in PARENT_ONLY_ENV {
            command.env_remove(name);
        }
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            // Its own group, so a kill reaches whatever it started too.
            command.process_group(0);
            #[cfg(target_os = "linux")]
            // SAFETY: prctl is async-signal-safe; it runs between fork and exec.
            unsafe {
                command.pre_exec(|| {
                    // No worker outlives the thread waiting for it.
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
        }
        command.spawn()
    }
}

/// Waits for `child` to exit until `deadline`; `None` if it is still running then. `alive` is
/// called every second meanwhile: the worker's progress is not the driver's to see (it has
/// no `PULSE_PROGRESS`), and a long one (a step limit's traced replay, a minute of steps)
/// was taken for a stall and the test killed.
fn wait_until(child: &mut Child, deadline: Instant, alive: &dyn Fn()) -> Option<ExitStatus> {
    // Short naps first: most workers answer within a few milliseconds.
    let mut nap = Duration::from_micros(50);
    let mut told = Instant::now();
    loop {
        if told.elapsed() >= Duration::from_secs(1) {
            alive();
            told = Instant::now();
        }
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) => {}
            // Not ours to wait for any more (cannot happen for a child we spawned): treat
            // as gone rather than loop.
            Err(_) => return None,
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::sleep(nap.min(deadline - now));
        nap = (nap * 2).min(Duration::from_millis(5));
    }
}

fn kill(child: &mut Child) {
    #[cfg(unix)]
    // SAFETY: signals our own child's process group (it leads it: `process_group(0)`).
    unsafe {
        libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
    }
    let _ = child.kill();
    // Reaped at once: SIGKILL cannot be caught, so this wait is short.
    let _ = child.wait();
}

fn exited_with(status: ExitStatus, code: i32) -> bool {
    status.code() == Some(code)
}

fn describe(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!(
                "the execution crashed its process ({})",
                signal_name(signal)
            );
        }
    }
    match status.code() {
        Some(code) => format!("the execution ended its process with exit status {code}"),
        None => "the execution's process ended abnormally".to_string(),
    }
}

#[cfg(unix)]
fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGABRT => "SIGABRT, an abort",
        libc::SIGSEGV => "SIGSEGV, an invalid memory access",
        libc::SIGBUS => "SIGBUS, an invalid memory access",
        libc::SIGILL => "SIGILL, an illegal instruction",
        libc::SIGFPE => "SIGFPE, an arithmetic fault",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        _ => return format!("signal {signal}"),
    };
    format!("signal {signal}: {name}")
}

/// A number no other isolator of this process has.
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// This process's executable, read once: `current_exe` is a `readlink` of `/proc/self/exe`,
/// an eighth of a one-execution search's time when it was read per search.
fn current_exe() -> Option<PathBuf> {
    static EXE: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    EXE.get_or_init(|| std::env::current_exe().ok()).clone()
}
