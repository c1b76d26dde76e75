//! Guards of the process running the search: the panic hook, stack overflow reporting, the
//! watchdog for threads blocked outside pulse, and fresh processes for isolated executions
//! (with the journal that outlives one that crashes).

pub(crate) mod isolate;
pub(crate) mod journal;
pub(crate) mod os_threads;
pub(crate) mod overflow;
pub(crate) mod panic_hook;
pub(crate) mod watchdog;
