//! std's hash collections, with the hash keys a scheduler choice.
//!
//! A `HashMap`'s iteration order follows its `RandomState`'s keys, which std draws from the
//! OS once per thread and then counts up: the order differs from one process to the next
//! and from one map to the next, so a test whose threads take work in a map's order could
//! fail once and never again on replay. Instrumented code's `HashMap::new()`,
//! `HashSet::with_capacity(n)`, `RandomState::new()`... are rewritten to the functions in
//! [`hash_ops`], which build std's own types (values keep crossing into uninstrumented code)
//! with keys drawn from the execution's choices: each execution orders its maps anew, and
//! a replay orders them as the failing run did.

pub mod hash_ops;
mod keys;
