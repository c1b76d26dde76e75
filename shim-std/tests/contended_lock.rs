//! A released `Mutex` (or an `RwLock` only writers wait for) wakes one waiter, which one a
//! scheduler choice, to race for it (as a futex does); an `RwLock` readers wait for wakes
//! them all, and those that have not run when it is taken again wait again without a step
//! (`ExecState::reblock_contenders`). Either way every acquisition order stays reachable, a
//! lock n threads contend costs decisions in proportion to n, not n², and its cost per
//! decision does not grow with its waiters.

use std::collections::BTreeSet;

use pulse_runtime::{Builder, Isolation, Strategy};
use pulse_shim_std::sync::{Arc, Mutex, RwLock};
use pulse_shim_std::thread;

/// Three threads each take a `Mutex` once and note their turn: the order they took it.
fn mutex_order() -> Vec<usize> {
    let lock = Arc::new(Mutex::new(Vec::new()));
    let hs: Vec<_> = (0..3)
        .map(|i| {
            let lock = lock.clone();
            thread::spawn(move || lock.lock().unwrap().push(i))
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
    let order = lock.lock().unwrap().clone();
    order
}

/// `mutex_order` with an `RwLock` taken for writing.
fn rwlock_order() -> Vec<usize> {
    let lock = Arc::new(RwLock::new(Vec::new()));
    let hs: Vec<_> = (0..3)
        .map(|i| {
            let lock = lock.clone();
            thread::spawn(move || lock.write().unwrap().push(i))
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
    let order = lock.read().unwrap().clone();
    order
}

/// The orders `body` returned under `strategy`.
fn orders(strategy: Strategy, schedules: u64, body: fn() -> Vec<usize>) -> BTreeSet<Vec<usize>> {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(BTreeSet::new()));
    let s = seen.clone();
    let report = Builder::new()
        .strategy(strategy)
        .schedules(schedules)
        .seed(3)
        .isolation(Isolation::Off)
        .run(move || {
            s.lock().unwrap().insert(body());
        });
    assert!(report.failure.is_none(), "{:?}", report.failure);
    let seen = seen.lock().unwrap().clone();
    seen
}

#[test]
fn every_acquisition_order_of_a_contended_lock_stays_reachable() {
    let all: BTreeSet<Vec<usize>> = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ]
    .iter()
    .map(|o| o.to_vec())
    .collect();
    for (lock, body) in [
        ("mutex", mutex_order as fn() -> _),
        ("rwlock", rwlock_order),
    ] {
        for (strategy, schedules) in [
            (Strategy::Dfs { bound: 20 }, 100_000),
            (Strategy::Dpor { bound: 20 }, 100_000),
            (Strategy::Random, 2_000),
            (Strategy::Pos, 2_000),
            (Strategy::Pct { depth: 3, k: None }, 2_000),
        ] {
            assert_eq!(
                orders(strategy, schedules, body),
                all,
                "{strategy} ({lock})"
            );
        }
    }
}

/// A random search of `schedules` executions in which `n` threads each run `work` on one
/// shared lock.
fn contend<L: Default + Send + Sync + 'static>(
    n: usize,
    schedules: u64,
    work: fn(&L),
) -> pulse_runtime::Report {
    let report = Builder::new()
        .strategy(Strategy::Random)
        .schedules(schedules)
        .seed(1)
        .isolation(Isolation::Off)
        .run(move || {
            let lock = Arc::new(L::default());
            let hs: Vec<_> = (0..n)
                .map(|_| {
                    let lock = lock.clone();
                    thread::spawn(move || work(&lock))
                })
                .collect();
            hs.into_iter().for_each(|h| h.join().unwrap());
        });
    assert!(report.failure.is_none(), "{:?}", report.failure);
    report
}

/// Decisions per execution of `n` threads that each take one lock, then release it.
fn decisions_per_execution(n: usize) -> f64 {
    let report = contend(n, 20, |lock: &Mutex<usize>| {
        let mut held = lock.lock().unwrap();
        // Steps while holding it: the others pile up waiting.
        thread::yield_now();
        thread::yield_now();
        *held += 1;
    });
    report.decisions as f64 / report.executions as f64
}

#[test]
fn a_contended_lock_costs_decisions_in_proportion_to_its_threads() {
    let small = decisions_per_execution(32);
    let large = decisions_per_execution(128);
    // 4x the threads: ~4x the decisions (spawns, locks, yields, unlocks, joins): 259 and
    // 1,027. With every woken waiter taking a step to find the lock taken again it was
    // 545 and 5,757 (10.6x), and grew as n².
    assert!(
        large / small < 6.0,
        "32 threads: {small:.0} decisions, 128 threads: {large:.0}"
    );
}

/// Wall time per decision of executions in which `n` threads each run `work` (ten
/// executions, so that making the threads' stacks, once per search, does not decide it):
/// the best of five searches.
fn ns_per_decision<L: Default + Send + Sync + 'static>(n: usize, work: fn(&L)) -> f64 {
    let once = || {
        let started = std::time::Instant::now();
        let report = contend(n, 10, work);
        started.elapsed().as_nanos() as f64 / report.decisions as f64
    };
    (0..5).map(|_| once()).fold(f64::INFINITY, f64::min)
}

#[test]
fn a_lock_costs_about_as_much_per_decision_with_400_waiters_as_with_25() {
    fn mutex(lock: &Mutex<usize>) {
        for _ in 0..10 {
            *lock.lock().unwrap() += 1;
        }
    }
    fn rwlock_writers(lock: &RwLock<usize>) {
        for _ in 0..10 {
            *lock.write().unwrap() += 1;
        }
    }
    for (lock, small, large) in [
        (
            "Mutex",
            ns_per_decision(25, mutex),
            ns_per_decision(400, mutex),
        ),
        (
            "RwLock, writers",
            ns_per_decision(25, rwlock_writers),
            ns_per_decision(400, rwlock_writers),
        ),
    ] {
        eprintln!("{lock}: 25 threads {small:.0} ns per decision, 400 threads {large:.0}");
        // Waking all its waiters at every release, and putting back those that had not
        // run when it was taken again, cost O(waiters) per release: 1,000 threads took
        // 2,720 ns per decision against 65 ns for 2 (random strategy, bench's release
        // build).
        assert!(
            large / small < 4.0,
            "{lock}: 25 threads {small:.0} ns per decision, 400 threads {large:.0}"
        );
    }
}
