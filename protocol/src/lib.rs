//! The contract between cargo-pulse, which starts test processes and reads what they leave
//! behind, and the test processes (pulse's harness and runtime), which read their
//! configuration from the environment and write failure records. Defined once, here:
//! the variable names ([`env`]), the typed options with their parsers and `Display`, the
//! schedule text, and the failure record with its trace. serde and serde-json-core only:
//! linked into the user's crate, it must add no trait impls on std types (`json`).

pub mod env;
pub mod json;
mod options;
mod record;
mod schedule;
pub mod time;
pub mod trace;
pub mod warnings;

pub use options::{
    mix as seed_mix, Cleanup, Detached, Isolation, Memory, ParseOptionError, SeedReplay, Strategy,
    WeakCas,
};
pub use record::{FailureKind, FailureRecord, TraceEvent, FELL_BACK_TO_SEED, FORMAT_VERSION};
pub use schedule::{ParseScheduleError, Schedule};
pub use time::{TimeMode, TimeParams};
