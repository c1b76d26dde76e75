//! The examples/ crates, instrumented (see build.rs). Each module exposes
//! `scenario_buggy` and `scenario_fixed`.
include!(concat!(env!("OUT_DIR"), "/corpus.rs"));
