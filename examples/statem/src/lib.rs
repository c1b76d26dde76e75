//! Components tested with `pulse::statem`: each has one sequential model (in `tests/`), a
//! buggy version whose race breaks linearizability, and a correct twin. Written against plain
//! std; `cargo pulse test` schedules them.
//!
//! - [`table`]: a sharded table after the ETS/DETS thesis (`insert`, `delete_all`, `get`,
//!   `to_vec`) whose `to_vec` is not atomic with concurrent inserts, its fixed twin, and a
//!   file-backed variant whose disk writes are one atomic step each.
//! - [`queue`]: a FIFO queue whose `pop` claims a slot in two steps, and a locked one.
//! - [`kv`]: a key-value store whose `append` reads and writes under separate locks, and one
//!   that appends under one lock.
//! - The process registry is `proc-reg`'s (the PULSE paper's, with the client-side check).

pub mod kv;
pub mod queue;
pub mod table;
