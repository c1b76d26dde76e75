//! The examples/ crates, instrumented (see build.rs). Each module exposes
//! `scenario_buggy` and `scenario_fixed`.
include!(concat!(env!("OUT_DIR"), "/corpus.rs"));

/// The SCTBench-style programs of `tests/sct/` (see its README), instrumented. Each module
/// exposes `buggy(n)` and `fixed(n)`.
pub mod sct {
    include!(concat!(env!("OUT_DIR"), "/sct.rs"));
}
