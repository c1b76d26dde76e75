//! Backtraces as people want to read them: only the user's frames, and only when
//! `RUST_BACKTRACE` asks for one (symbolising costs ~75 ms).

/// Whether the user asked for backtraces.
pub(crate) fn backtrace_wanted() -> bool {
    std::env::var("RUST_BACKTRACE").is_ok_and(|v| v != "0")
}

/// The frames of a backtrace that belong to the user: those after std's panic machinery
/// (and this hook) and before pulse's runtime, which called the user's code.
pub(crate) fn user_frames(backtrace: &str) -> String {
    user_frames_of(backtrace, &[])
}

/// As `user_frames`, also skipping leading frames whose symbol contains one of `machinery`
/// (e.g. a signal handler's).
pub(crate) fn user_frames_of(backtrace: &str, extra_machinery: &[&str]) -> String {
    // Split into frames: a frame starts with `  N: symbol` and owns the `at ...` lines after it.
    let mut frames: Vec<(String, Vec<&str>)> = Vec::new();
    for line in backtrace.lines() {
        let trimmed = line.trim_start();
        match trimmed.split_once(": ") {
            Some((n, symbol)) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => {
                frames.push((symbol.to_string(), Vec::new()));
            }
            _ => {
                if let Some(frame) = frames.last_mut() {
                    frame.1.push(trimmed);
                }
            }
        }
    }
    let machinery = |s: &str| {
        s.contains("panicking")
            || s.contains("begin_unwind")
            || s.contains("panic_hook")
            || s.contains("short_backtrace")
            || s.starts_with("pulse_runtime::ctx::Ctx::record_panic")
            || s.starts_with("core::bool")
            || s.starts_with("<alloc::boxed::Box<dyn for<")
            || s.contains("backtrace::Backtrace")
            || extra_machinery.iter().any(|m| s.contains(m))
    };
    // The runtime is optimised in users' builds (cargo-pulse's `OPTIMIZED_RUNTIME`): its
    // inlined frames have bare names (`{closure#1}`, `record`, `thread_main`), known by where
    // they are: pulse's sources as cargo-pulse installs them (`.../support-VERSION/`).
    let in_pulse = |a: &str, dir: &str| a.contains("/support-") && a.contains(dir);
    let machinery_at = |at: &[&str]| {
        at.iter().any(|a| {
            a.contains("/rustc/")
                || a.contains("runtime/src/process/")
                || a.contains("runtime/src/ctx.rs")
                || in_pulse(a, "/runtime/src/")
                || in_pulse(a, "/shim-std/src/")
        })
    };
    // Only the leading run: std's own catch_unwind frames deep in the stack look alike.
    let start = frames
        .iter()
        .position(|(s, at)| !machinery(s) && !machinery_at(at))
        .unwrap_or(frames.len());
    let mut end = frames[start..]
        .iter()
        .position(|(s, at)| {
            s.starts_with("pulse::harness")
                || s.starts_with("pulse::proptest_run")
                || s.starts_with("pulse_runtime::")
                || s.starts_with("pulse_shim_std::thread::spawn_virtual")
                || at.iter().any(|a| in_pulse(a, "/runtime/src/"))
        })
        .map_or(frames.len(), |i| start + i);
    // And the calls between a thread's entry and the user's closure (std's `call_once`,
    // the shim's spawn closure), which the optimised runtime no longer names.
    while end > start && machinery_at(&frames[end - 1].1) {
        end -= 1;
    }
    let mut out = String::new();
    for (i, (symbol, at)) in frames[start..end].iter().enumerate() {
        out.push_str(&format!("{i:>3}: {symbol}\n"));
        for a in at {
            out.push_str(&format!("         {a}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn keeps_only_the_users_frames() {
        let bt = "   0: pulse_runtime::panic_hook::record\n             at runtime/src/panic_hook.rs:30:46\n   1: std::panicking::panic_with_hook\n   2: core::panicking::assert_failed\n             at core/src/panicking.rs:394:5\n   3: bank_account::scenario\n             at ./src/lib.rs:134:5\n   4: bank_account::test::{{closure}}\n             at ./tests/t.rs:3:5\n   5: pulse::harness::run_test::{{closure}}\n   6: std::panicking::catch_unwind\n   7: std::rt::lang_start\n";
        let kept = super::user_frames(bt);
        assert_eq!(kept, "  0: bank_account::scenario\n         at ./src/lib.rs:134:5\n  1: bank_account::test::{{closure}}\n         at ./tests/t.rs:3:5\n");
    }

    /// The optimised runtime's inlined frames have bare names: known by their locations.
    #[test]
    fn skips_the_optimised_runtimes_bare_frames() {
        let bt = "   0: {closure#1}\n             at /s/runtime/src/process/panic_hook.rs:47:59\n   1: then<alloc::string::String, F>\n             at /rustc/abc/library/core/src/bool.rs:66:24\n   2: record_panic<F>\n             at /s/runtime/src/ctx.rs:721:26\n   3: record\n             at /s/runtime/src/process/panic_hook.rs:42:49\n   4: std::panicking::panic_with_hook\n             at /rustc/abc/library/std/src/panicking.rs:833:13\n   5: core::panicking::assert_failed::<u64, u64>\n             at /rustc/abc/library/core/src/panicking.rs:394:5\n   6: failing::tests::racy::{{closure}}\n             at ./src/lib.rs:39:9\n   7: pulse::harness::run_test\n";
        let kept = super::user_frames(bt);
        assert_eq!(
            kept,
            "  0: failing::tests::racy::{{closure}}\n         at ./src/lib.rs:39:9\n"
        );
    }

    /// A spawned thread's entry under the optimised runtime: the shim's closure, std's
    /// `call_once`s and `thread_main` have bare names, and none is the user's.
    #[test]
    fn ends_before_the_optimised_thread_entry() {
        let bt = "   0: syscall\n   1: once_cell::imp::wait\n             at once_cell-1.21.4/src/imp_std.rs:235:13\n   2: app::tests::t::{{closure}}\n             at ./src/lib.rs:37:42\n   3: {closure#0}<app::tests::t::{closure#0}, usize>\n             at /h/.cargo/pulse/support-0.1.0-ab/shim-std/src/thread/mod.rs:226:21\n   4: core::ops::function::FnOnce::call_once{{vtable.shim}}\n             at /rustc/abc/library/core/src/ops/function.rs:250:5\n   5: thread_main\n             at /h/.cargo/pulse/support-0.1.0-ab/runtime/src/executor.rs:360:18\n   6: {closure#0}\n             at corosensei-0.3.4/src/coroutine.rs:243:62\n";
        assert_eq!(
            super::user_frames_of(bt, &[]),
            "  0: syscall\n  1: once_cell::imp::wait\n         at once_cell-1.21.4/src/imp_std.rs:235:13\n  2: app::tests::t::{{closure}}\n         at ./src/lib.rs:37:42\n"
        );
    }
}
