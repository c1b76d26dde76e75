//! Catches a virtual thread that stops reaching pulse operations: it is blocked outside
//! pulse's control (another crate's lock or channel, a blocking system call, code that
//! was not instrumented), and since all virtual threads share one OS thread, the whole
//! run would hang. The search thread publishes a heartbeat through atomics (two relaxed
//! stores per scheduling point, and only when a timeout is configured); a monitor thread
//! reports where it stopped and ends the process instead of hanging.

use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::config::{BlockedFn, ProgressFn};

/// The watchdog thread's name (the kernel keeps the first 15 bytes).
pub(crate) const THREAD_NAME: &str = "pulse-watchdog";

/// Exit status of a process the watchdog ends.
pub const BLOCKED_EXIT_CODE: i32 = 3;

#[derive(Default)]
pub(crate) struct Heartbeat {
    beats: AtomicU64,
    thread: AtomicU32,
    location: AtomicPtr<Location<'static>>,
    /// Names of the current execution's threads, updated at spawn (rare).
    names: Mutex<Vec<String>>,
    done: AtomicBool,
    /// Set while the test's code runs (`Watch`): only then can it stall. pulse's own work
    /// (a failure's report for a 100-million-step execution takes seconds, waiting for an
    /// isolated run's process) is never taken for a stall.
    watching: AtomicBool,
    /// Set at each decision: who else could run while the chosen thread does (`Company`).
    /// Alone, a stall is the program's own wait, not a hang.
    company: AtomicU8,
    /// The search's last progress report (executions, planned), repeated as a sign of life
    /// to the driver while the program waits on its own.
    reported: [AtomicU64; 2],
    /// The OS thread running the executions (signalled for a backtrace when it stalls).
    #[cfg(unix)]
    os_thread: std::sync::OnceLock<libc::pthread_t>,
}

/// Who else could run while the chosen thread runs, as its decision left them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Company {
    /// Another thread is runnable, awaits a descriptor, or the test has returned.
    Others = 0,
    /// Others only sleep on pulse's clock, which stands still while this thread runs.
    Sleepers = 1,
    /// No other thread could run.
    Alone = 2,
}

impl Heartbeat {
    #[inline]
    pub fn beat(&self, thread: u32, location: Option<&'static Location<'static>>) {
        self.beats.fetch_add(1, Ordering::Relaxed);
        self.thread.store(thread, Ordering::Relaxed);
        if let Some(l) = location {
            self.location
                .store(l as *const _ as *mut _, Ordering::Relaxed);
        }
    }

    #[inline]
    pub fn set_company(&self, company: Company) {
        self.company.store(company as u8, Ordering::Relaxed);
    }

    fn company(&self) -> Company {
        match self.company.load(Ordering::Relaxed) {
            c if c == Company::Alone as u8 => Company::Alone,
            c if c == Company::Sleepers as u8 => Company::Sleepers,
            _ => Company::Others,
        }
    }

    pub fn reported(&self, done: u64, planned: u64) {
        self.reported[0].store(done, Ordering::Relaxed);
        self.reported[1].store(planned, Ordering::Relaxed);
    }

    pub fn set_name(&self, thread: u32, name: String) {
        let mut names = self.names.lock().unwrap_or_else(|e| e.into_inner());
        let i = thread as usize;
        if names.len() <= i {
            names.resize(i + 1, String::new());
        }
        names[i] = name;
    }
}

/// Watches `heartbeat` until the run ends; on a stall longer than `timeout`, reports and
/// exits the process, unless the stalled thread is the only one that could run: then the
/// program waits as it would outside pulse (trybuild's `cargo build`, a child process), said
/// once, with `progress` repeated as a sign of life to the driver.
pub(crate) fn start(
    heartbeat: Arc<Heartbeat>,
    timeout: Duration,
    on_blocked: Option<BlockedFn>,
    progress: Option<ProgressFn>,
    crates: KnownCrates,
) -> Guard {
    #[cfg(unix)]
    {
        // SAFETY: pthread_self has no preconditions.
        let _ = heartbeat.os_thread.set(unsafe { libc::pthread_self() });
    }
    let hb = heartbeat.clone();
    let (ready_tx, ready) = std::sync::mpsc::sync_channel::<()>(1);
    let spawned = std::thread::Builder::new()
        .name(THREAD_NAME.into())
        .spawn(move || {
            // A thread's first allocation makes glibc map it an arena (64 MiB of address
            // space, reserved as 128 and trimmed): done here, before the test runs, so a test
            // that measures its process (`/proc/self/statm`) does not see it happen.
            drop(std::hint::black_box(Box::new(0u64)));
            let _ = ready_tx.send(());
            let mut last = hb.beats.load(Ordering::Relaxed);
            let mut since = Instant::now();
            // Per stall: whether it is the program's own wait (decided once), whether that
            // was said, and the stalled thread's frames if they were captured to decide.
            let mut own_wait: Option<bool> = None;
            let mut said = false;
            let mut frames: Option<String> = None;
            while !hb.done.load(Ordering::Relaxed) {
                // (Parked, not asleep: the guard wakes it to end it at once.)
                std::thread::park_timeout(Duration::from_millis(50).min(timeout));
                let now = hb.beats.load(Ordering::Relaxed);
                if now != last || !hb.watching.load(Ordering::Relaxed) {
                    last = now;
                    since = Instant::now();
                    (own_wait, said, frames) = (None, false, None);
                    continue;
                }
                if since.elapsed() < timeout || hb.done.load(Ordering::Relaxed) {
                    continue;
                }
                let own = *own_wait.get_or_insert_with(|| {
                    let company = hb.company();
                    if company == Company::Sleepers {
                        frames = blocked_frames(&hb);
                    }
                    waits_on_its_own(company, frames.as_deref())
                });
                if own {
                    if !said {
                        eprintln!("{}", waiting_on_its_own(&hb, since.elapsed()));
                        said = true;
                    }
                    if let Some(progress) = &progress {
                        progress(
                            hb.reported[0].load(Ordering::Relaxed),
                            hb.reported[1].load(Ordering::Relaxed),
                        );
                    }
                    since = Instant::now();
                    continue;
                }
                let mut report = describe(&hb, since.elapsed());
                if let Some(frames) = frames.take().or_else(|| blocked_frames(&hb)) {
                    if let Some(advice) = advice(&frames, &crates) {
                        report.push_str(&advice);
                    }
                    report.push_str("\n  where it is blocked (innermost first):\n");
                    for line in frames.lines() {
                        report.push_str("    ");
                        report.push_str(line);
                        report.push('\n');
                    }
                }
                if let Some(f) = &on_blocked {
                    f(&report);
                }
                eprintln!("{report}");
                std::process::exit(BLOCKED_EXIT_CODE);
            }
        });
    let thread = match spawned {
        Ok(thread) => {
            let _ = ready.recv_timeout(Duration::from_secs(1));
            Some(thread)
        }
        Err(e) => {
            eprintln!("pulse: could not start the blocking watchdog: {e}");
            None
        }
    };
    Guard(heartbeat, thread)
}

/// Whether a stall is the program's own wait, as it would be under `cargo test`: no other
/// thread could run meanwhile, or the others only sleep on pulse's clock while this one
/// waits for a child process (trybuild's `cargo build`, with its lock file's keep-alive
/// thread asleep). A child cannot need a thread of ours that only sleeps; a runnable one it
/// may (one that writes to its stdin), so that is still reported.
/// `frames` are the stalled thread's, captured only when the others are sleepers.
fn waits_on_its_own(company: Company, frames: Option<&str>) -> bool {
    match company {
        Company::Alone => true,
        Company::Sleepers => frames.and_then(std_wait) == Some(CHILD_PROCESS),
        Company::Others => false,
    }
}

/// The stalled thread's frames (`user_frames` lines, innermost first), where the platform
/// lets the watchdog capture them.
fn blocked_frames(hb: &Heartbeat) -> Option<String> {
    #[cfg(unix)]
    {
        let bt = hb.os_thread.get().and_then(|t| stack::capture(*t))?;
        Some(crate::report::backtrace::user_frames_of(
            &bt,
            stack::HANDLER_FRAMES,
        ))
    }
    #[cfg(not(unix))]
    {
        let _ = hb;
        None
    }
}

/// The note for a thread that waits outside pulse on its own (`waits_on_its_own`).
fn waiting_on_its_own(hb: &Heartbeat, stalled: Duration) -> String {
    let (name, last) = stalled_at(hb);
    let others = match hb.company() {
        Company::Sleepers => {
            "the other threads only sleep on pulse's clock, which waits for it, so pulse \
             waits for the child"
        }
        _ => "no other thread could run meanwhile, so pulse waits for it",
    };
    format!(
        "pulse: thread '{name}' has run for {:.1}s without reaching a pulse operation{}; \
         {others}, as `cargo test` would (`--timeout` bounds the test)",
        stalled.as_secs_f64(),
        last.map(|l| format!(" since its last pulse operation at {l}"))
            .unwrap_or_default(),
    )
}

/// The stalled thread's name, and its last pulse operation's location.
fn stalled_at(hb: &Heartbeat) -> (String, Option<String>) {
    let tid = hb.thread.load(Ordering::Relaxed);
    let name = hb
        .names
        .lock()
        .ok()
        .and_then(|n| n.get(tid as usize).cloned())
        .unwrap_or_else(|| format!("thread-{tid}"));
    let loc = hb.location.load(Ordering::Relaxed);
    // SAFETY: only ever set from `&'static Location`.
    let last = (!loc.is_null()).then(|| {
        let loc = crate::report::trace::location_string(unsafe { &*loc });
        pulse_protocol::trace::display_location(&loc)
    });
    (name, last)
}

fn describe(hb: &Heartbeat, stalled: Duration) -> String {
    let (name, last) = stalled_at(hb);
    format!(
        "pulse found a thread blocked outside pulse's control\n  \
         thread '{name}' has run for {:.1}s without reaching a pulse operation{}.\n  \
         It is probably blocked in code pulse does not schedule: a lock or channel from another \
         crate (parking_lot, crossbeam, tokio, ...), a blocking system call (I/O, sockets), or a \
         dependency that was not instrumented. Since every virtual thread shares one OS thread, \
         nothing else can run.\n  \
         Fix: mark the call #[pulse::atomic] if it is a self-contained side effect, or instrument \
         the dependency (`cargo pulse test --instrument-dep <crate>`).",
        stalled.as_secs_f64(),
        last.map(|l| format!(" since its last pulse operation at {l}"))
            .unwrap_or_default(),
    )
}

/// What to do about the crate a stalled thread stops in (`frames` innermost first).
/// What the run knows of the crates a thread may be blocked in (names as in symbols).
#[derive(Default)]
pub(crate) struct KnownCrates {
    /// The test's own crate.
    pub home: Option<String>,
    /// Crates pulse instrumented or replaced: dependencies and the user's own packages.
    pub instrumented: Vec<String>,
    /// Synchronising dependencies a file of which does not parse.
    pub not_instrumented: Vec<String>,
}

fn advice(frames: &str, crates: &KnownCrates) -> Option<String> {
    if let Some(wait) = std_wait(frames) {
        return Some(wait.to_string());
    }
    let culprit = blocking_crate(frames)?;
    Some(if crates.home.as_deref() == Some(culprit.as_str()) {
        // The test's own crate is instrumented: it loops or blocks there without a
        // synchronising operation.
        format!(
            "\n  It stops in the test's own crate `{culprit}`: a loop that never reaches a \
             synchronising operation (`loop {{}}`, a spin on a plain variable) cannot be \
             preempted, and a blocking call there is outside pulse: mark it #[pulse::atomic] if \
             it is a self-contained side effect."
        )
    } else if crates.instrumented.contains(&culprit) {
        format!(
            "\n  It blocks inside `{culprit}`, which pulse instrumented: in a call pulse does not \
             schedule (a system call, a foreign function, a wait of its own on plain memory). Mark \
             the call into it #[pulse::atomic] if it is a self-contained side effect."
        )
    } else if crates.not_instrumented.contains(&culprit) {
        format!(
            "\n  It blocks inside `{culprit}`, which pulse could not instrument: a file of it does \
             not parse for pulse's instrumenter (the Dependencies line names it). Mark the call \
             into it #[pulse::atomic] if it is a self-contained side effect, or use a version of \
             `{culprit}` that parses."
        )
    } else {
        format!(
            "\n  It blocks inside `{culprit}`: instrument it (`cargo pulse test --instrument-dep \
             {culprit}`), or mark the call into it #[pulse::atomic] if it is a self-contained side effect."
        )
    })
}

const CHILD_PROCESS: &str = "\n  It waits for a child process (`std::process`) while another \
     thread could run (runnable, or awaiting a descriptor), which it cannot while pulse's one \
     OS thread waits. If the child only takes long, `--blocking-timeout SECS` gives it the \
     time.";

const STD_SYNC: &str = "\n  It waits in a lock or lazy value of std's own (`std::sync`) that \
     pulse did not rewrite: code a macro wrote (a proc-macro's output, such as an attribute's, \
     is not instrumented) or a crate left as it is. The thread that holds it is one of pulse's \
     and cannot run while this one blocks the OS thread. Mark the call #[pulse::atomic] if it \
     is a self-contained side effect.";

/// What the thread waits in when std's own frames, before any crate's, say so: a child
/// process, or a lock or lazy value of std's that pulse did not rewrite.
fn std_wait(frames: &str) -> Option<&'static str> {
    for symbol in frame_symbols(frames).filter(|s| s.contains("::")) {
        if symbol.starts_with("std::process::") {
            return Some(CHILD_PROCESS);
        }
        if symbol.starts_with("std::sync::") || symbol.starts_with("std::sys::sync::") {
            return Some(STD_SYNC);
        }
        if !["std::", "core::", "alloc::"]
            .iter()
            .any(|p| symbol.starts_with(p))
        {
            return None;
        }
    }
    None
}

/// The frames' symbols, innermost first, from `user_frames` lines (`  N: symbol`, each
/// followed by its `at` line), with a leading `<`, `&` or `mut ` taken off:
/// `<parking_lot::RawMutex as lock_api::RawMutex>::lock` is parking_lot's.
fn frame_symbols(frames: &str) -> impl Iterator<Item = &str> {
    frames.lines().filter_map(|line| {
        let (n, symbol) = line.trim_start().split_once(": ")?;
        n.chars().all(|c| c.is_ascii_digit()).then(|| {
            symbol
                .trim_start_matches('<')
                .trim_start_matches('&')
                .trim_start_matches("mut ")
        })
    })
}

/// The crate of the innermost frame that is neither std's nor pulse's: where the thread
/// blocks. Frames are `user_frames` lines (`  N: symbol`, innermost first).
fn blocking_crate(frames: &str) -> Option<String> {
    const NOT_A_CULPRIT: &[&str] = &[
        "std",
        "core",
        "alloc",
        "libc",
        "__rustc",
        "test",
        "corosensei",
    ];
    frame_symbols(frames).find_map(|symbol| {
        // A symbol without a path is C's (`syscall`, `read`, `pthread_cond_wait`), not a crate.
        if !symbol.contains("::") {
            return None;
        }
        let krate = symbol.split("::").next()?.trim();
        let ours =
            krate.starts_with("pulse") || krate.starts_with('_') || NOT_A_CULPRIT.contains(&krate);
        (!ours && !krate.is_empty() && krate.chars().all(|c| c.is_alphanumeric() || c == '_'))
            .then(|| krate.to_string())
    })
}

/// Marks the test's code running (an execution's threads, their teardown) until it is
/// dropped: the only time the watchdog watches.
pub(crate) struct Watch(Arc<Heartbeat>);

impl Watch {
    pub(crate) fn new(heartbeat: Arc<Heartbeat>) -> Watch {
        heartbeat.watching.store(true, Ordering::Relaxed);
        Watch(heartbeat)
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.0.watching.store(false, Ordering::Relaxed);
    }
}

/// Stops the monitor when the run ends, and waits for its thread to end: a thread that
/// ended later would change the process (its stack and TLS unmapped) under the next test.
pub(crate) struct Guard(Arc<Heartbeat>, Option<std::thread::JoinHandle<()>>);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.done.store(true, Ordering::Relaxed);
        if let Some(thread) = self.1.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

/// The stalled thread's own backtrace. std cannot capture another thread's stack, so the
/// watchdog signals the stalled OS thread and its handler captures where it is. A handler
/// that allocates is not async-signal-safe in general; the thread is stalled in a blocking
/// call (not in the allocator) nearly always, and the watchdog gives up after a moment
/// otherwise, so the worst case is a report without the backtrace.
#[cfg(unix)]
mod stack {
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    /// Frames of the signal machinery at the top of a captured backtrace.
    pub const HANDLER_FRAMES: &[&str] = &["watchdog::stack::", "__restore_rt", "<unknown>"];

    static CAPTURED: Mutex<Option<String>> = Mutex::new(None);

    extern "C" fn on_signal(_: libc::c_int) {
        let bt = std::backtrace::Backtrace::force_capture().to_string();
        if let Ok(mut slot) = CAPTURED.try_lock() {
            *slot = Some(bt);
        }
    }

    pub fn capture(thread: libc::pthread_t) -> Option<String> {
        // SAFETY: installs a handler for a signal nothing else here uses, then signals one
        // live thread of this process.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(libc::SIGUSR2, &action, std::ptr::null_mut()) != 0 {
                return None;
            }
            if libc::pthread_kill(thread, libc::SIGUSR2) != 0 {
                return None;
            }
        }
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(2) {
            if let Some(bt) = CAPTURED.lock().ok().and_then(|mut s| s.take()) {
                return Some(bt);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_culprit_is_the_innermost_crate_that_is_neither_std_nor_pulse() {
        let frames = "  0: std::sys::pal::unix::futex::futex_wait\n         at /rustc/x/futex.rs:1:1\n  1: <parking_lot::raw_mutex::RawMutex as lock_api::mutex::RawMutex>::lock\n  2: my_crate::work\n  3: pulse_runtime::executor::thread_main\n";
        assert_eq!(
            super::blocking_crate(frames).as_deref(),
            Some("parking_lot")
        );
        assert_eq!(
            super::blocking_crate(
                "  0: std::thread::park\n  1: core::ops::function::FnOnce::call_once\n"
            ),
            None
        ); // The libc frame under a futex wait names no crate: the crate is further out.
        let frames = "  0: syscall\n  1: std::sys::pal::unix::futex::futex_wait\n  2: std::thread::park\n  3: saa::wait_queue::Entry::poll_result_sync\n";
        assert_eq!(super::blocking_crate(frames).as_deref(), Some("saa"));
    }

    #[test]
    fn a_child_s_wait_is_the_program_s_own_while_the_others_only_sleep() {
        use super::{waits_on_its_own, Company};
        let child = "  0: __GI___wait4\n  4: <std::process::Child>::wait\n  8: trybuild::cargo::build_dependencies\n";
        let read = "  0: read\n  3: <std::fs::File as std::io::Read>::read\n  5: app::load\n";
        assert!(waits_on_its_own(Company::Alone, None));
        assert!(waits_on_its_own(Company::Sleepers, Some(child)));
        // A sleeper may be what a read waits for; a runnable thread what the child does.
        assert!(!waits_on_its_own(Company::Sleepers, Some(read)));
        assert!(!waits_on_its_own(Company::Sleepers, None));
        assert!(!waits_on_its_own(Company::Others, Some(child)));
    }

    #[test]
    fn a_wait_in_std_s_own_code_is_named_before_any_crate() {
        // cached 4.1.0: `#[cached]` writes `::std::sync::LazyLock`, not rewritten.
        let lazy = "  0: syscall\n  1: std::sys::pal::unix::futex::futex_wait\n  2: <std::sys::sync::once::futex::Once>::call\n  4: std::sync::lazy_lock::LazyLock<T,F>::force\n  6: cached::time_store_tests::cached_sync_writes_by_key\n";
        let home = super::KnownCrates {
            home: Some("cached".to_string()),
            ..Default::default()
        };
        let advice = super::advice(lazy, &home).unwrap();
        assert!(
            advice.contains("`std::sync`") && !advice.contains("test's own crate"),
            "{advice}"
        );
        // trybuild waiting for `cargo build`.
        let child = "  0: __GI___wait4\n  4: <std::process::Child>::wait\n  8: trybuild::cargo::build_dependencies\n";
        let advice = super::advice(child, &home).unwrap();
        assert!(advice.contains("--blocking-timeout"), "{advice}");
        // A crate's frame first: the crate is the story (parking_lot under a futex wait).
        let lock = "  0: std::sys::pal::unix::futex::futex_wait\n  1: <parking_lot::raw_mutex::RawMutex as lock_api::mutex::RawMutex>::lock\n  2: std::sync::Mutex<T>::lock\n";
        assert_eq!(super::std_wait(lock), None);
    }

    #[test]
    fn the_test_s_own_crate_is_not_to_be_instrumented_again() {
        let frames = "  0: spin::once::Once<T>::call_once\n  1: spin::once::tests::try_no_wait\n";
        let home = |name: &str| super::KnownCrates {
            home: Some(name.to_string()),
            ..Default::default()
        };
        let own = super::advice(frames, &home("spin")).unwrap();
        assert!(
            own.contains("the test's own crate `spin`") && !own.contains("--instrument-dep"),
            "{own}"
        );
        let dep = super::advice(frames, &home("my_app")).unwrap();
        assert!(dep.contains("--instrument-dep spin"), "{dep}");
        // Instrumented already (rustix in a system call, a replaced parking_lot_core).
        let crates = super::KnownCrates {
            instrumented: vec!["spin".to_string()],
            ..home("my_app")
        };
        let instrumented = super::advice(frames, &crates).unwrap();
        assert!(
            instrumented.contains("`spin`, which pulse instrumented")
                && !instrumented.contains("--instrument-dep"),
            "{instrumented}"
        );
    }

    #[test]
    fn a_crate_that_could_not_be_instrumented_is_not_advised_to_be() {
        // chashmap 2.2.2's threads block in parking_lot_core 0.2, which does not parse.
        let frames = "  0: parking_lot_core::parking_lot::park
  1: chashmap::tests::spam
";
        let crates = super::KnownCrates {
            home: Some("chashmap".to_string()),
            not_instrumented: vec!["parking_lot_core".to_string()],
            ..Default::default()
        };
        let advice = super::advice(frames, &crates).unwrap();
        assert!(
            advice.contains("`parking_lot_core`, which pulse could not instrument")
                && !advice.contains("--instrument-dep"),
            "{advice}"
        );
    }
}
