//! Test data drawn as a scheduling choice (`Ctx::choose_data`: a proptest test's input seed
//! under `cargo pulse`). It differs from one execution to the next, a failing schedule's
//! replay draws the same value, minimization keeps it, and DFS explores one input.

use std::collections::BTreeSet;
use std::sync::Mutex as StdMutex;
use std::time::Duration;

use pulse_runtime::{Builder, Strategy};
use pulse_shim_std::sync::atomic::{AtomicU32, Ordering};
use pulse_shim_std::sync::Arc;
use pulse_shim_std::thread;

/// Every value drawn, in order (a std mutex: bookkeeping outside the program under test).
static DRAWN: StdMutex<Vec<u64>> = StdMutex::new(Vec::new());

fn draw() -> u64 {
    let x = pulse_runtime::current()
        .expect("inside an execution")
        .choose_data();
    DRAWN.lock().unwrap().push(x);
    x
}

/// A lost update between two threads, reachable only for inputs divisible by 4 (so both an
/// input and an interleaving are needed).
fn input_dependent_race() {
    let x = draw();
    if !x.is_multiple_of(4) {
        return;
    }
    let n = Arc::new(AtomicU32::new(0));
    let bump = {
        let n = n.clone();
        move || {
            let v = n.load(Ordering::SeqCst);
            n.store(v + 1, Ordering::SeqCst);
        }
    };
    let t = thread::spawn(bump.clone());
    bump();
    t.join().unwrap();
    assert_eq!(n.load(Ordering::SeqCst), 2, "lost update for input {x}");
}

fn last_drawn() -> u64 {
    *DRAWN.lock().unwrap().last().expect("a value was drawn")
}

#[test]
fn data_varies_between_executions_and_replays_with_the_schedule() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    DRAWN.lock().unwrap().clear();
    let report = Builder::new()
        .strategy(Strategy::Random)
        .seed(11)
        .schedules(500)
        .minimize(Duration::from_secs(5))
        .run(input_dependent_race);
    let failure = report.failure.expect("the input-dependent race is found");
    let drawn: BTreeSet<u64> = DRAWN.lock().unwrap().iter().copied().collect();
    assert!(
        drawn.len() > 4,
        "inputs differ between executions: {drawn:?}"
    );
    let input = failure
        .message
        .split("for input ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|w| w.parse::<u64>().ok())
        .expect("the message names the input");
    assert!(input.is_multiple_of(4));
    // The reported (minimized) schedule and the search's own both replay with that input.
    let schedules = [Some(&failure.schedule), failure.original_schedule.as_ref()];
    for schedule in schedules.into_iter().flatten() {
        let replayed = Builder::new()
            .replay(&schedule.to_string())
            .unwrap()
            .run(input_dependent_race);
        assert_eq!(last_drawn(), input, "{schedule}");
        let again = replayed.failure.expect("the replay fails again");
        assert_eq!(again.message, failure.message);
    }
}

#[test]
fn dfs_explores_the_schedules_of_one_input() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    DRAWN.lock().unwrap().clear();
    let report = Builder::new()
        .strategy("dfs:inf".parse().unwrap())
        .schedules(1_000)
        .run(|| {
            draw();
            let t = thread::spawn(|| {});
            t.join().unwrap();
        });
    assert!(report.failure.is_none());
    assert!(report.exhaustive.is_some(), "the search ends exhausted");
    let drawn = DRAWN.lock().unwrap().clone();
    assert!(
        drawn.len() > 1 && drawn.iter().all(|&x| x == 0),
        "{drawn:?}"
    );
}

/// The tests share `DRAWN`.
static SERIAL: StdMutex<()> = StdMutex::new(());
