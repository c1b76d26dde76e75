//! A process registry after `proc_reg`, the Erlang registry in which PULSE found races
//! (Claessen et al., "Finding Race Conditions in Erlang with QuickCheck and PULSE",
//! ICFP 2009, section 6).
//!
//! The registry maps names to processes and holds only live processes: a name whose
//! holder has died counts as free and may be registered again. `register` fails with
//! `AlreadyRegistered` only if the name is held by a live process, and registering a dead
//! process succeeds without effect (proc_reg's specification).
//!
//! `buggy::Registry::register` asks `whereis` whether the name is free and then inserts,
//! in a separate critical section. Two clients registering the same name race: both see
//! the name free (here: held by a dead process, as in the paper's failing test), both
//! insert, both are told they succeeded, and the first registration is silently
//! overwritten. `fixed::Registry::register` checks and inserts under one lock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

/// A stand-in for an Erlang process: an id and an "alive" flag.
#[derive(Clone, Debug)]
pub struct Pid(Arc<Process>);

#[derive(Debug)]
struct Process {
    id: u64,
    alive: AtomicBool,
}

impl Pid {
    /// A new, live process.
    pub fn spawn(id: u64) -> Pid {
        Pid(Arc::new(Process { id, alive: AtomicBool::new(true) }))
    }

    pub fn id(&self) -> u64 {
        self.0.id
    }

    pub fn kill(&self) {
        self.0.alive.store(false, Ordering::SeqCst);
    }

    pub fn is_alive(&self) -> bool {
        self.0.alive.load(Ordering::SeqCst)
    }
}

impl PartialEq for Pid {
    fn eq(&self, other: &Pid) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegError {
    /// The name is held by a live process.
    AlreadyRegistered,
    /// The name is not held by a live process.
    NotRegistered,
}

pub mod buggy {
    use super::{Pid, RegError};
    use std::collections::HashMap;
    use std::sync::Mutex;

    #[derive(Default)]
    pub struct Registry {
        table: Mutex<HashMap<String, Pid>>,
    }

    impl Registry {
        pub fn new() -> Self {
            Self::default()
        }

        pub fn register(&self, name: &str, pid: &Pid) -> Result<(), RegError> {
            if !pid.is_alive() {
                return Ok(());
            }
            // Critical section 1 (inside `whereis`): is the name free? A dead holder
            // does not count.
            if self.whereis(name).is_some() {
                return Err(RegError::AlreadyRegistered);
            }
            // BUG: the table was unlocked in between; another client may have registered
            // `name` since we checked. We overwrite its entry and both report success.
            // Critical section 2: insert, replacing any dead holder.
            self.table.lock().unwrap().insert(name.to_owned(), pid.clone());
            Ok(())
        }

        /// The live process registered under `name`, if any.
        pub fn whereis(&self, name: &str) -> Option<Pid> {
            let table = self.table.lock().unwrap();
            table.get(name).filter(|pid| pid.is_alive()).cloned()
        }

        pub fn unregister(&self, name: &str) -> Result<(), RegError> {
            let mut table = self.table.lock().unwrap();
            match table.remove(name) {
                Some(pid) if pid.is_alive() => Ok(()),
                _ => Err(RegError::NotRegistered),
            }
        }
    }
}

pub mod fixed {
    use super::{Pid, RegError};
    use std::collections::HashMap;
    use std::sync::Mutex;

    #[derive(Default)]
    pub struct Registry {
        table: Mutex<HashMap<String, Pid>>,
    }

    impl Registry {
        pub fn new() -> Self {
            Self::default()
        }

        pub fn register(&self, name: &str, pid: &Pid) -> Result<(), RegError> {
            if !pid.is_alive() {
                return Ok(());
            }
            // The check and the insert happen under one lock.
            let mut table = self.table.lock().unwrap();
            if table.get(name).is_some_and(|holder| holder.is_alive()) {
                return Err(RegError::AlreadyRegistered);
            }
            table.insert(name.to_owned(), pid.clone());
            Ok(())
        }

        /// The live process registered under `name`, if any.
        pub fn whereis(&self, name: &str) -> Option<Pid> {
            let table = self.table.lock().unwrap();
            table.get(name).filter(|pid| pid.is_alive()).cloned()
        }

        pub fn unregister(&self, name: &str) -> Result<(), RegError> {
            let mut table = self.table.lock().unwrap();
            match table.remove(name) {
                Some(pid) if pid.is_alive() => Ok(()),
                _ => Err(RegError::NotRegistered),
            }
        }
    }
}

/// What the scenario needs from a registry, so one scenario drives both twins.
trait Names: Send + Sync + 'static {
    fn register(&self, name: &str, pid: &Pid) -> Result<(), RegError>;
    fn whereis(&self, name: &str) -> Option<Pid>;
}

impl Names for buggy::Registry {
    fn register(&self, name: &str, pid: &Pid) -> Result<(), RegError> {
        buggy::Registry::register(self, name, pid)
    }
    fn whereis(&self, name: &str) -> Option<Pid> {
        buggy::Registry::whereis(self, name)
    }
}

impl Names for fixed::Registry {
    fn register(&self, name: &str, pid: &Pid) -> Result<(), RegError> {
        fixed::Registry::register(self, name, pid)
    }
    fn whereis(&self, name: &str) -> Option<Pid> {
        fixed::Registry::whereis(self, name)
    }
}

/// The paper's shape of test: a sequential prefix registers a process under "db" and
/// kills it; then two clients, A on the main thread and B on another, register two fresh
/// live processes under "db" in parallel.
/// Exactly one must succeed, and `whereis("db")` must name the winner.
fn scenario<R: Names>(registry: R) {
    let registry = Arc::new(registry);

    let old = Pid::spawn(0);
    assert_eq!(registry.register("db", &old), Ok(()));
    old.kill();

    // Client B registers on another thread, client A on this one.
    let client_b = {
        let registry = Arc::clone(&registry);
        thread::spawn(move || {
            let pid = Pid::spawn(2);
            let result = registry.register("db", &pid);
            (pid, result)
        })
    };
    let pid_a = Pid::spawn(1);
    let result_a = registry.register("db", &pid_a);
    let results = [(pid_a, result_a), client_b.join().expect("client B panicked")];

    let winners: Vec<&Pid> =
        results.iter().filter(|(_, result)| result.is_ok()).map(|(pid, _)| pid).collect();
    assert_eq!(
        winners.len(),
        1,
        "two clients registered \"db\" concurrently; exactly one should win, got {results:?}"
    );
    for (pid, result) in &results {
        if result.is_err() {
            assert_eq!(*result, Err(RegError::AlreadyRegistered), "loser {pid:?}");
        }
    }
    let holder = registry.whereis("db").expect("\"db\" is registered to nobody");
    assert_eq!(&holder, winners[0], "whereis(\"db\") is not the process that was told it won");
}

/// Runs the scenario against `buggy::Registry`; panics when the race fires.
pub fn scenario_buggy() {
    scenario(buggy::Registry::new());
}

/// Runs the scenario against `fixed::Registry`; never panics.
pub fn scenario_fixed() {
    scenario(fixed::Registry::new());
}
