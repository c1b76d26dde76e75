//! The process's OS threads, to notice a test that starts threads pulse does not schedule
//! (code that was not instrumented: a dependency, FFI, a path the rewrite missed). All of a
//! run's virtual threads share one OS thread, so any other thread that appears while it runs
//! escapes the scheduler: its interleavings are not explored and failures may not replay.

use std::collections::BTreeMap;

/// OS thread id to its name, as the kernel knows them.
#[derive(Clone, Debug, Default)]
pub(crate) struct Snapshot(BTreeMap<u64, String>);

impl Snapshot {
    /// The threads alive now; empty where the platform does not say.
    pub(crate) fn take() -> Snapshot {
        #[cfg(target_os = "linux")]
        {
            let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
                return Snapshot::default();
            };
            let threads = tasks
                .flatten()
                .filter_map(|task| {
                    let tid = task.file_name().to_str()?.parse().ok()?;
                    let name =
                        std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
                    Some((tid, name.trim().to_string()))
                })
                .collect();
            Snapshot(threads)
        }
        #[cfg(not(target_os = "linux"))]
        Snapshot::default()
    }

    /// Names of threads alive now that were not in `self` (pulse's own watchdog left out).
    pub(crate) fn started_since(&self) -> Vec<String> {
        let mut now = Snapshot::take();
        now.0.retain(|tid, name| {
            !self.0.contains_key(tid) && name != crate::process::watchdog::THREAD_NAME
        });
        // A thread names itself once it runs; until then it shows its creator's name.
        for _ in 0..20 {
            if !now
                .0
                .values()
                .any(|name| self.0.values().any(|old| old == name))
            {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
            let again = Snapshot::take();
            for (tid, name) in &mut now.0 {
                if let Some(renamed) = again.0.get(tid) {
                    name.clone_from(renamed);
                }
            }
        }
        now.0
            .into_iter()
            .map(|(tid, name)| {
                if name.is_empty() {
                    format!("tid {tid}")
                } else {
                    name
                }
            })
            .collect()
    }
}

/// Shim operations made on an OS thread pulse does not schedule, on an object a running
/// execution was using (`ObjectCell::outside`), one line each, for the next run's warnings.
static OUTSIDE_USES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// At most this many distinct lines are kept (a busy foreign thread repeats itself).
const OUTSIDE_USES_KEPT: usize = 8;

/// Notes that `op` on a `kind` ran at `at` on this (unscheduled) OS thread while an execution
/// was using the object.
pub(crate) fn note_outside_use(op: &str, kind: &str, at: &'static std::panic::Location<'static>) {
    let thread = std::thread::current();
    let message = format!(
        "`{op}` at {} ran on OS thread '{}', which pulse does not schedule, on a {kind} a \
         running execution was using: the scheduled threads and that thread are not mutually \
         exclusive on it and wake-ups between them are lost, so what the test checked there \
         is not what it checks under std (the thread was started by code that was not \
         instrumented: a dependency held back or not parsed, FFI, a `std::thread` path the \
         rewrite did not reach)",
        crate::report::trace::location_string(at),
        thread.name().unwrap_or("<unnamed>")
    );
    let mut uses = OUTSIDE_USES.lock().unwrap_or_else(|e| e.into_inner());
    if uses.len() < OUTSIDE_USES_KEPT && !uses.contains(&message) {
        uses.push(message);
    }
}

/// The outside uses noted since the last call.
pub(crate) fn take_outside_uses() -> Vec<String> {
    std::mem::take(&mut *OUTSIDE_USES.lock().unwrap_or_else(|e| e.into_inner()))
}
