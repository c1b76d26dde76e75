//! A shim object used by an OS thread pulse does not schedule while an execution uses it: the
//! two sides run different implementations (the execution's logical lock, the thread's real
//! one), so they are not mutually exclusive and wake-ups between them are lost. The run says
//! so, naming the operation, its place and the thread (ARCHITECTURE decision 18). One test in
//! this binary: the notes are process-wide.

use pulse_runtime::Builder;
use pulse_shim_std::sync::{Condvar, Mutex};

#[test]
fn a_shim_object_shared_with_an_unscheduled_os_thread_is_reported() {
    static M: Mutex<u32> = Mutex::new(0);
    static CV: Condvar = Condvar::new();
    let report = Builder::new().schedules(3).seed(1).run(|| {
        // The execution claims both objects...
        *M.lock().unwrap() += 1;
        CV.notify_all();
        // ...and a thread started by code pulse did not instrument uses them.
        std::thread::Builder::new()
            .name("foreign".into())
            .spawn(|| {
                *M.lock().unwrap() += 1;
                CV.notify_one();
            })
            .unwrap()
            .join()
            .unwrap();
    });
    assert!(report.passed());
    let outside: Vec<&String> = report
        .warnings
        .iter()
        .filter(|w| w.contains("not mutually exclusive"))
        .collect();
    assert!(
        outside.iter().any(|w| w.contains("`Mutex::lock` at ")
            && w.contains("outside_use.rs")
            && w.contains("OS thread 'foreign'")),
        "{:?}",
        report.warnings
    );
    assert!(
        outside.iter().any(|w| w.contains("`Condvar::notify_one`")),
        "{outside:?}"
    );

    // Outside any execution the same objects are plain std: nothing to say.
    *M.lock().unwrap() += 1;
    let quiet = Builder::new().schedules(1).seed(1).run(|| {});
    assert!(
        !quiet
            .warnings
            .iter()
            .any(|w| w.contains("not mutually exclusive")),
        "{:?}",
        quiet.warnings
    );
}
