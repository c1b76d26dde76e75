//! The process exit codes `cargo pulse` promises, in one place so that the runner, the nextest
//! bridge and `main` agree (and so scripts can rely on them).

/// Every selected test passed every schedule.
pub const SUCCESS: i32 = 0;
/// The tool itself could not run: bad flags, the workspace could not be mirrored or
/// instrumented, or the instrumented crate failed to build.
pub const TOOL_ERROR: i32 = 2;
/// Exit code of a test process whose watchdog found a thread blocked outside pulse's control
/// (`PULSE_BLOCKING_TIMEOUT_MS` in the harness contract).
pub const TEST_BLOCKED: i32 = 3;
/// No test was selected to run (`--no-tests fail`, the default); cargo-nextest's code for it.
pub const NO_TESTS_RUN: i32 = 4;
/// At least one test failed under some schedule; the same code `cargo test` uses.
pub const FAILURE: i32 = 101;
/// cargo-nextest's exit code for "some tests failed".
pub const NEXTEST_TEST_FAILED: i32 = 100;
