//! `Barrier`: std's behaviour outside an execution; inside one, on every schedule no
//! thread passes before all arrive and each generation has exactly one leader; and the
//! bugs pulse must find (too few threads, a race after the barrier).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

use pulse_runtime::{Builder, FailureKind};
use pulse_shim_std::sync::Barrier;
use pulse_shim_std::thread;

const SCHEDULES: u64 = 1000;

fn builder(seed: u64) -> Builder {
    Builder::new().schedules(SCHEDULES).seed(seed)
}

#[test]
fn outside_an_execution_it_behaves_like_std() {
    const N: usize = 4;
    const ROUNDS: usize = 3;
    let barrier = Arc::new(Barrier::new(N));
    let leaders = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..N)
        .map(|_| {
            let (barrier, leaders) = (barrier.clone(), leaders.clone());
            std::thread::spawn(move || {
                for _ in 0..ROUNDS {
                    if barrier.wait().is_leader() {
                        leaders.fetch_add(1, SeqCst);
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(leaders.load(SeqCst), ROUNDS);
    let alone = Barrier::new(1).wait();
    assert!(alone.is_leader());
    assert_eq!(
        format!("{alone:?}"),
        "BarrierWaitResult { is_leader: true }"
    );
    assert_eq!(format!("{barrier:?}"), "Barrier { .. }");
}

/// Three threads through three generations of one barrier: each checks that everyone
/// arrived in its generation before it passed, and each generation counts its leaders.
#[test]
fn nobody_passes_early_and_each_generation_has_one_leader() {
    const N: usize = 3;
    const ROUNDS: usize = 3;
    builder(1).check(|| {
        let barrier = Arc::new(Barrier::new(N));
        let arrived: Arc<[AtomicUsize; ROUNDS]> = Arc::new(Default::default());
        let leaders: Arc<[AtomicUsize; ROUNDS]> = Arc::new(Default::default());
        let handles: Vec<_> = (0..N)
            .map(|_| {
                let (barrier, arrived, leaders) =
                    (barrier.clone(), arrived.clone(), leaders.clone());
                thread::spawn(move || {
                    for round in 0..ROUNDS {
                        arrived[round].fetch_add(1, SeqCst);
                        let result = barrier.wait();
                        assert_eq!(
                            arrived[round].load(SeqCst),
                            N,
                            "passed before everyone arrived"
                        );
                        if result.is_leader() {
                            leaders[round].fetch_add(1, SeqCst);
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        for round in leaders.iter() {
            assert_eq!(round.load(SeqCst), 1, "one leader per generation");
        }
    });
}

#[test]
fn finds_a_barrier_that_waits_for_more_threads_than_arrive() {
    let report = builder(2).run(|| {
        let barrier = Arc::new(Barrier::new(3));
        let b = barrier.clone();
        let t = thread::spawn(move || {
            b.wait();
        });
        barrier.wait();
        t.join().unwrap();
    });
    let failure = report.failure.expect("the deadlock is found");
    assert_eq!(failure.kind, FailureKind::Deadlock);
    assert!(
        failure.details.iter().all(|d| d.contains("Barrier::wait")),
        "{:?}",
        failure.details
    );
}

/// Which released thread runs first after the barrier is the scheduler's choice.
#[test]
fn finds_a_race_after_the_barrier() {
    let report = builder(3).run(|| {
        let barrier = Arc::new(Barrier::new(2));
        let flag = Arc::new(AtomicU32::new(0));
        let (b, f) = (barrier.clone(), flag.clone());
        let t = thread::spawn(move || {
            b.wait();
            f.store(1, SeqCst);
        });
        barrier.wait();
        assert_eq!(flag.load(SeqCst), 0, "the other thread ran first");
        t.join().unwrap();
    });
    let failure = report.failure.expect("the race is found");
    assert!(
        failure.message.contains("the other thread ran first"),
        "{}",
        failure.message
    );
}

/// A static barrier: arrivals left over from an execution that deadlocked must not
/// release a thread early in the next one.
#[test]
fn a_static_barrier_starts_afresh_in_each_execution() {
    static B: Barrier = Barrier::new(2);
    let stuck = builder(4).run(|| {
        B.wait();
    });
    assert_eq!(
        stuck.failure.expect("one thread alone deadlocks").kind,
        FailureKind::Deadlock
    );
    let report = builder(5).schedules(200).run(|| {
        let passed = Arc::new(AtomicBool::new(false));
        let p = passed.clone();
        let t = thread::spawn(move || {
            thread::yield_now();
            p.store(true, SeqCst);
            B.wait();
        });
        B.wait();
        assert!(
            passed.load(SeqCst),
            "released before the other thread arrived"
        );
        t.join().unwrap();
    });
    assert!(report.failure.is_none(), "{:?}", report.failure);
    assert_eq!(report.executions, 200);
}

/// Compile-time checks that the type is as usable as std's.
#[test]
fn trait_impls_match_std() {
    fn usable<T: Send + Sync + std::panic::UnwindSafe + std::panic::RefUnwindSafe>() {}
    usable::<Barrier>();
    static _CONST_NEW: Barrier = Barrier::new(2);
}
