//! pulse's engine: runs a test body many times, each time under a different schedule
//! picked by a seeded scheduler, with every virtual thread a coroutine on one OS thread
//! and a scheduling point before every operation shim-std routes here.
//!
//! After Erlang PULSE (Claessen et al., ICFP 2009, `pulse-quickcheck-erlang.txt` §5): a
//! user-level scheduler that decides who runs next from a seed, so any schedule can be
//! replayed exactly.

// Roughly bottom-up; no module imports one that imports it back (tests/module_graph.rs).
mod atomics;
mod builder;
mod config;
mod ctx;
mod execution;
mod executor;
mod fast_hash;
mod fd_waiters;
mod memory;
mod minimize;
mod obj_ref;
mod object;
mod process;
mod progress;
mod registry;
mod report;
pub mod scheduler;
mod search;
mod stack_pool;
mod waiters;

pub use builder::{Builder, EnvError};
pub use config::{
    BlockedFn, Cleanup, Config, Detached, FoundFn, Isolation, Memory, ProgressFn, TimeMode, WeakCas,
};
pub use ctx::{current, Ctx, PulseAbort};
pub use execution::WakeReason;
pub use obj_ref::ObjRef;
pub use object::{Entry, ObjectCell, ObjectState};
pub use process::panic_hook::payload_message;
pub use process::watchdog::BLOCKED_EXIT_CODE;
pub use pulse_protocol::TimeParams;
pub use pulse_protocol::{seed_mix, ParseScheduleError, Schedule, SeedReplay};
pub use report::failure::{Exhaustive, Failure, FailureKind, Minimized, Report};
pub use report::trace::{format_table, TraceEvent, TraceKind};
pub use scheduler::{ChoiceKind, Strategy};

/// Whether the execution with this id (`Ctx::execution_id`) is still running somewhere in
/// the process: shims use it to tell work cut short by an ended execution from work in
/// progress.
pub fn is_execution_live(id: u64) -> bool {
    registry::is_live(id)
}

/// `ObjectCell::outside` for a handle that is not an object (a virtual thread's `Thread`,
/// unparked from an OS thread while its execution `id` runs).
#[track_caller]
pub fn note_outside_use(id: u64, op: &'static str, kind: &'static str) {
    if registry::is_live(id) {
        process::os_threads::note_outside_use(op, kind, std::panic::Location::caller());
    }
}

/// Runs `f` under the default configuration (overridable with `PULSE_*` environment
/// variables) and panics with a report if any schedule fails.
#[track_caller]
pub fn check<F: Fn()>(f: F) {
    Builder::from_env().check(f)
}

/// Runs exactly one schedule (as printed by a failure) and panics if it fails.
#[track_caller]
pub fn replay<F: Fn()>(schedule: &str, f: F) {
    Builder::from_env()
        .replay(schedule)
        .unwrap_or_else(|e| panic!("pulse: {e}"))
        .check(f)
}
