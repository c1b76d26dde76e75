//! The runtime as shim code sees it.
pub(crate) use pulse_runtime::{current, Ctx};
