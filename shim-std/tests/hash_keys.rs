//! A hash map's iteration order under pulse is a scheduler choice: it differs from one
//! execution to the next, a failing schedule's replay orders the maps as the search did,
//! and DFS explores one order. (`HashMap::new()` in instrumented code is `<HashMap<_, _> as KeyedMap>::new()`.)

use std::collections::{BTreeSet, HashMap};
use std::hash::BuildHasher;
use std::sync::Mutex as StdMutex;
use std::time::Duration;

use pulse_runtime::{Builder, Strategy};
use pulse_shim_std::collections::hash_ops::{random_state, KeyedMap};
use pulse_shim_std::sync::{Arc, Mutex};
use pulse_shim_std::thread;

/// Every order the program saw, in order (a std mutex: bookkeeping outside the program).
static ORDERS: StdMutex<Vec<Vec<u32>>> = StdMutex::new(Vec::new());
/// The tests share `ORDERS`.
static SERIAL: StdMutex<()> = StdMutex::new(());

fn jobs() -> HashMap<u32, &'static str> {
    let mut jobs = <HashMap<_, _> as KeyedMap>::new();
    for (i, name) in ["write", "flush", "a", "b", "c", "d"]
        .into_iter()
        .enumerate()
    {
        jobs.insert(i as u32, name);
    }
    ORDERS.lock().unwrap().push(jobs.keys().copied().collect());
    jobs
}

/// Threads spawned in a map's order log themselves; `flush` must follow `write`, which only
/// the spawn order gives (the threads are joined one by one, so no preemption is needed).
fn spawned_in_map_order(fixed: bool) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut jobs: Vec<_> = jobs().into_iter().collect();
    if fixed {
        jobs.sort();
    }
    for (_, name) in jobs {
        let log = log.clone();
        thread::spawn(move || log.lock().unwrap().push(name))
            .join()
            .unwrap();
    }
    let log = log.lock().unwrap();
    let at = |job| log.iter().position(|n| *n == job).unwrap();
    assert!(at("write") < at("flush"), "flush before write: {log:?}");
}

#[test]
fn orders_differ_between_executions_and_replay_with_the_schedule() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    ORDERS.lock().unwrap().clear();
    let report = Builder::new()
        .strategy(Strategy::Random)
        .seed(3)
        .schedules(200)
        .minimize(Duration::from_secs(5))
        .run(|| spawned_in_map_order(false));
    let failure = report.failure.expect("an order with flush first is drawn");
    for schedule in [Some(&failure.schedule), failure.original_schedule.as_ref()]
        .into_iter()
        .flatten()
    {
        for _ in 0..2 {
            let again = Builder::new()
                .replay(&schedule.to_string())
                .unwrap()
                .run(|| spawned_in_map_order(false))
                .failure
                .expect("the replay fails again");
            assert_eq!(again.message, failure.message, "{schedule}");
        }
    }
    assert_eq!(
        failure.preemptions,
        Some(0),
        "the map's order alone makes it fail: {}",
        failure.schedule
    );

    ORDERS.lock().unwrap().clear();
    let fixed = Builder::new()
        .strategy(Strategy::Random)
        .seed(3)
        .schedules(200)
        .run(|| spawned_in_map_order(true));
    assert!(fixed.failure.is_none(), "sorted, the twin passes");
    let orders: BTreeSet<Vec<u32>> = ORDERS.lock().unwrap().iter().cloned().collect();
    // 200 uniform draws of 720 orders give ~173 distinct ones (170 here).
    assert!(
        orders.len() > 120,
        "orders differ between executions as uniform draws would: {orders:?}"
    );
}

#[test]
fn dfs_explores_the_schedules_of_one_order() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    ORDERS.lock().unwrap().clear();
    let report = Builder::new()
        .strategy("dfs:inf".parse().unwrap())
        .schedules(1_000)
        .run(|| {
            jobs();
            thread::spawn(|| {}).join().unwrap();
        });
    assert!(report.failure.is_none());
    let orders = ORDERS.lock().unwrap().clone();
    assert!(
        orders.len() > 1 && orders.iter().all(|o| *o == orders[0]),
        "{orders:?}"
    );
}

#[test]
fn maps_of_one_execution_have_their_own_keys() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let report = Builder::new().schedules(20).run(|| {
        let (a, b) = (random_state(), random_state());
        assert_ne!(a.hash_one(7u32), b.hash_one(7u32), "two maps, two keys");
        let set = <std::collections::HashSet<_> as KeyedMap>::from([1, 2, 3]);
        assert_eq!(set.len(), 3);
    });
    assert!(report.failure.is_none(), "{:?}", report.failure);
}
