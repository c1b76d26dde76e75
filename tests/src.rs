//! End-to-end tests of `cargo pulse`, in `tests/e2e.rs`: they install cargo-pulse from this
//! repository into a scratch root (`cargo install --path cargo-pulse --root ...`) and run the
//! installed `cargo pulse` on the fixture crates under `fixtures/` and on `../examples/`, each
//! copied to a scratch directory first. The fixtures' instrumented builds share one target dir
//! (`CARGO_PULSE_TARGET_DIR`) so pulse itself is compiled once per suite.
