//! What people read: the trace of an execution, what failed and why, backtraces.

pub(crate) mod backtrace;
pub(crate) mod explain;
pub(crate) mod failure;
pub(crate) mod trace;
pub(crate) mod trace_file;
