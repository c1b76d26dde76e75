//! A failure is handed out (`Builder::on_found`) before its traced replay runs, so a replay
//! that takes the process down leaves its seed and schedule behind.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use pulse_runtime::{Builder, Isolation};

const OUT: &str = "SHIM_STD_TEST_REPLAY_CRASH_OUT";

#[test]
fn a_failure_whose_replay_crashes_the_process_was_handed_out_first() {
    if let Some(out) = std::env::var_os(OUT) {
        static RUNS: AtomicUsize = AtomicUsize::new(0);
        Builder::new()
            .schedules(10)
            .seed(3)
            .isolation(Isolation::Off)
            .on_found(move |f| {
                std::fs::write(
                    &out,
                    format!("{} {} {:?}", f.seed.unwrap(), f.schedule, f.message),
                )
                .unwrap()
            })
            .run(|| {
                // The search's execution fails; its replay (the next one) aborts.
                if RUNS.fetch_add(1, SeqCst) == 0 {
                    panic!("found it");
                }
                std::process::abort();
            });
        unreachable!("the replay aborted the process");
    }
    let dir = std::env::temp_dir().join(format!("pulse-replay-crash-{}", std::process::id()));
    let child = common::run_with_deadline(
        std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "a_failure_whose_replay_crashes_the_process_was_handed_out_first",
                "--exact",
                "--nocapture",
            ])
            .env(OUT, &dir),
        std::time::Duration::from_secs(60),
    );
    assert!(
        !child.status.success(),
        "the child aborted: {}",
        child.status
    );
    let said = std::fs::read_to_string(&dir).expect("the failure was handed out before the replay");
    let _ = std::fs::remove_file(&dir);
    assert_eq!(said, "3 p1: \"found it\"");
}
