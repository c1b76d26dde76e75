//! `Once`, `OnceLock` and `LazyLock`: std's behaviour outside an execution; inside one,
//! exactly one initialisation under contention on every schedule, poisoning, and the bugs
//! pulse must find; and what statics keep between executions (completion does, an
//! initialisation cut short by the end of an execution does not).

use std::panic::{catch_unwind, AssertUnwindSafe, RefUnwindSafe, UnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::SeqCst};
use std::sync::Arc;

use pulse_runtime::{payload_message, Builder, FailureKind};
use pulse_shim_std::sync::{Barrier, LazyLock, Once, OnceLock};
use pulse_shim_std::thread;

const SCHEDULES: u64 = 1000;

fn builder(seed: u64) -> Builder {
    Builder::new().schedules(SCHEDULES).seed(seed)
}

fn panic_message(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("it panics");
    payload_message(&*payload)
}

#[test]
fn once_outside_an_execution_behaves_like_std() {
    let once = Arc::new(Once::new());
    let runs = Arc::new(AtomicU32::new(0));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (once, runs) = (once.clone(), runs.clone());
            std::thread::spawn(move || {
                once.call_once(|| {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                    runs.fetch_add(1, SeqCst);
                });
                assert_eq!(
                    runs.load(SeqCst),
                    1,
                    "returned before the initialisation completed"
                );
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert!(once.is_completed());
    once.wait();
    assert_eq!(format!("{once:?}"), "Once { .. }");

    let once = Once::new();
    assert_eq!(
        panic_message(|| once.call_once(|| panic!("init fails"))),
        "init fails"
    );
    assert!(!once.is_completed());
    assert_eq!(
        panic_message(|| once.call_once(|| {})),
        "Once instance has previously been poisoned"
    );
    assert_eq!(
        panic_message(|| once.wait()),
        "Once instance has previously been poisoned"
    );
    once.call_once_force(|state| {
        assert!(state.is_poisoned());
        assert_eq!(format!("{state:?}"), "OnceState { poisoned: true }");
    });
    assert!(once.is_completed());
    once.wait_force();
    once.call_once(|| unreachable!());
}

#[test]
fn once_lock_outside_an_execution_behaves_like_std() {
    let cell = OnceLock::new();
    assert_eq!(cell.get(), None);
    assert_eq!(format!("{cell:?}"), "OnceLock(<uninit>)");
    assert_eq!(
        panic_message(|| {
            cell.get_or_init(|| panic!("init fails"));
        }),
        "init fails"
    );
    assert_eq!(cell.get(), None);
    assert_eq!(cell.set(1), Ok(()));
    assert_eq!(cell.set(2), Err(2));
    assert_eq!(*cell.get_or_init(|| 3), 1);
    assert_eq!(*cell.wait(), 1);
    assert_eq!(format!("{cell:?}"), "OnceLock(1)");
    let copy = cell.clone();
    assert_eq!(copy, OnceLock::from(1));
    assert_ne!(copy, OnceLock::new());
    let mut cell = cell;
    *cell.get_mut().unwrap() += 1;
    assert_eq!(cell.take(), Some(2));
    assert_eq!(cell.get_mut(), None);
    assert_eq!(cell.set(5), Ok(()));
    assert_eq!(cell.into_inner(), Some(5));
    assert_eq!(OnceLock::<String>::default().into_inner(), None);

    // A waiter is released by another thread's `set`; the value is dropped with the cell.
    let cell = Arc::new(OnceLock::<Arc<String>>::new());
    let c = cell.clone();
    let waiter = std::thread::spawn(move || c.wait().len());
    cell.set(Arc::new(String::from("abc"))).unwrap();
    assert_eq!(waiter.join().unwrap(), 3);
    let value = cell.get().unwrap().clone();
    drop(cell);
    assert_eq!(Arc::strong_count(&value), 1);
}

#[test]
fn lazy_lock_outside_an_execution_behaves_like_std() {
    let lazy = LazyLock::new(|| 2 + 2);
    assert_eq!(LazyLock::get(&lazy), None);
    assert_eq!(format!("{lazy:?}"), "LazyLock(<uninit>)");
    assert_eq!(*lazy, 4);
    assert_eq!(LazyLock::get(&lazy), Some(&4));
    assert_eq!(format!("{lazy:?}"), "LazyLock(4)");
    let mut lazy = lazy;
    *lazy += 1;
    assert_eq!(*LazyLock::force_mut(&mut lazy), 5);
    assert_eq!(LazyLock::get_mut(&mut lazy), Some(&mut 5));
    assert_eq!(*LazyLock::<Vec<u8>>::default(), Vec::<u8>::new());

    let lazy: LazyLock<u32> = LazyLock::new(|| panic!("init fails"));
    assert_eq!(
        panic_message(|| {
            let _: u32 = *lazy;
        }),
        "init fails"
    );
    assert_eq!(
        panic_message(|| {
            let _: u32 = *lazy;
        }),
        "LazyLock instance has previously been poisoned"
    );
    assert_eq!(LazyLock::get(&lazy), None);
    let mut lazy = lazy;
    assert_eq!(LazyLock::get_mut(&mut lazy), None);
    assert_eq!(
        panic_message(|| {
            LazyLock::force_mut(&mut lazy);
        }),
        "LazyLock instance has previously been poisoned"
    );
}

/// Three threads race to `call_once`: on every schedule the closure runs once, and no
/// caller returns before it has finished.
#[test]
fn once_runs_exactly_once_under_contention() {
    builder(1).check(|| {
        let once = Arc::new(Once::new());
        let runs = Arc::new(AtomicU32::new(0));
        let handles: Vec<_> = (0..3)
            .map(|_| {
                let (once, runs) = (once.clone(), runs.clone());
                thread::spawn(move || {
                    once.call_once(|| {
                        runs.fetch_add(1, SeqCst);
                        thread::yield_now();
                        runs.fetch_add(1, SeqCst);
                    });
                    assert_eq!(
                        runs.load(SeqCst),
                        2,
                        "returned before the initialisation completed"
                    );
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert!(once.is_completed());
    });
}

/// A panicking `call_once` poisons: a later `call_once` panics, `call_once_force` runs
/// and sees the poison. Which thread initialises first is the scheduler's choice, and both
/// orders must occur.
#[test]
fn a_panic_in_call_once_poisons_inside_an_execution() {
    static SAW_POISON: AtomicBool = AtomicBool::new(false);
    static RAN_FIRST: AtomicBool = AtomicBool::new(false);
    builder(2).check(|| {
        let once = Arc::new(Once::new());
        let o = once.clone();
        let panicker = thread::spawn(move || o.call_once(|| panic!("init fails")));
        let o = once.clone();
        let other = thread::spawn(move || catch_unwind(AssertUnwindSafe(|| o.call_once(|| {}))));
        assert!(panicker.join().is_err() || once.is_completed());
        match other.join().unwrap() {
            Ok(()) => RAN_FIRST.store(true, SeqCst),
            Err(payload) => {
                assert_eq!(
                    payload_message(&*payload),
                    "Once instance has previously been poisoned"
                );
                assert!(!once.is_completed());
                SAW_POISON.store(true, SeqCst);
                let mut forced = false;
                once.call_once_force(|state| forced = state.is_poisoned());
                assert!(forced, "call_once_force sees the poison");
                assert!(once.is_completed());
            }
        }
    });
    assert!(SAW_POISON.load(SeqCst) && RAN_FIRST.load(SeqCst));
}

/// `Once::wait` returns only once another thread's `call_once` has completed.
#[test]
fn once_wait_blocks_until_completion() {
    builder(3).check(|| {
        let once = Arc::new(Once::new());
        let value = Arc::new(AtomicU32::new(0));
        let (o, v) = (once.clone(), value.clone());
        let waiter = thread::spawn(move || {
            o.wait();
            v.load(SeqCst)
        });
        once.call_once(|| value.store(7, SeqCst));
        assert_eq!(waiter.join().unwrap(), 7);
    });
}

#[test]
fn finds_a_wait_on_a_once_nobody_completes() {
    let report = builder(4).run(|| {
        let once = Once::new();
        once.wait();
    });
    assert_eq!(
        report.failure.expect("the deadlock is found").kind,
        FailureKind::Deadlock
    );
}

/// Racing `get_or_init`s: one initialiser runs and everyone gets its value; a racing `get`
/// sees either nothing or that value, and both occur.
#[test]
fn once_lock_get_or_init_races_to_one_value() {
    static GOT_NONE: AtomicBool = AtomicBool::new(false);
    static GOT_SOME: AtomicBool = AtomicBool::new(false);
    builder(5).check(|| {
        let cell = Arc::new(OnceLock::new());
        let inits = Arc::new(AtomicU32::new(0));
        let handles: Vec<_> = (0..2u32)
            .map(|i| {
                let (cell, inits) = (cell.clone(), inits.clone());
                thread::spawn(move || {
                    *cell.get_or_init(|| {
                        inits.fetch_add(1, SeqCst);
                        thread::yield_now();
                        i
                    })
                })
            })
            .collect();
        match cell.get() {
            None => GOT_NONE.store(true, SeqCst),
            Some(_) => GOT_SOME.store(true, SeqCst),
        }
        let values: Vec<u32> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(values[0], values[1]);
        assert_eq!(cell.get(), Some(&values[0]));
        assert_eq!(inits.load(SeqCst), 1);
    });
    assert!(GOT_NONE.load(SeqCst) && GOT_SOME.load(SeqCst));
}

/// A panicking initialiser leaves the cell empty: a racing `get_or_init` initialises it.
#[test]
fn a_panicking_once_lock_initialiser_leaves_it_uninitialised() {
    builder(6).check(|| {
        let cell = Arc::new(OnceLock::new());
        let c = cell.clone();
        let panicker = thread::spawn(move || *c.get_or_init(|| panic!("init fails")));
        let c = cell.clone();
        let other = thread::spawn(move || *c.get_or_init(|| 9));
        let first = panicker.join();
        assert_eq!(other.join().unwrap(), 9);
        assert!(first.is_err() || first.unwrap() == 9);
        assert_eq!(cell.get(), Some(&9));
    });
}

#[test]
fn finds_a_check_then_set_race_on_a_once_lock() {
    let report = builder(7).run(|| {
        let cell = Arc::new(OnceLock::new());
        let handles: Vec<_> = (0..2)
            .map(|i| {
                let cell = cell.clone();
                // Checks, then sets: another thread can set the cell in between.
                thread::spawn(move || cell.get().is_none().then(|| cell.set(i)))
            })
            .collect();
        for h in handles {
            assert!(
                !matches!(h.join().unwrap(), Some(Err(_))),
                "nobody set it in between"
            );
        }
    });
    let failure = report.failure.expect("the race is found");
    assert_eq!(failure.kind, FailureKind::Panic);
    assert!(
        failure.message.contains("nobody set it in between"),
        "{}",
        failure.message
    );
}

#[test]
fn lazy_lock_initialises_once_under_contention() {
    builder(8).check(|| {
        let inits = Arc::new(AtomicU32::new(0));
        let i = inits.clone();
        let lazy = Arc::new(LazyLock::new(move || {
            i.fetch_add(1, SeqCst);
            thread::yield_now();
            42
        }));
        let l = lazy.clone();
        let t = thread::spawn(move || **l);
        assert_eq!(**lazy, 42);
        assert_eq!(t.join().unwrap(), 42);
        assert_eq!(inits.load(SeqCst), 1);
    });
}

/// A `static` stays initialised across executions: its closure runs in the first
/// execution only.
#[test]
fn statics_stay_initialised_across_executions() {
    static ONCE: Once = Once::new();
    static CELL: OnceLock<u32> = OnceLock::new();
    static LAZY: LazyLock<u32> = LazyLock::new(|| INITS.fetch_add(1, SeqCst) + 100);
    static INITS: AtomicU32 = AtomicU32::new(0);
    let report = builder(9).schedules(100).run(|| {
        let t = thread::spawn(|| {
            ONCE.call_once(|| {
                INITS.fetch_add(1, SeqCst);
            });
            *CELL.get_or_init(|| INITS.fetch_add(1, SeqCst))
        });
        ONCE.call_once(|| {
            INITS.fetch_add(1, SeqCst);
        });
        let cell = *CELL.get_or_init(|| INITS.fetch_add(1, SeqCst));
        assert_eq!(t.join().unwrap(), cell);
        assert!(*LAZY >= 100);
    });
    assert!(report.failure.is_none(), "{:?}", report.failure);
    assert_eq!(report.executions, 100);
    assert_eq!(INITS.load(SeqCst), 3, "each static initialised once in all");
    assert!(ONCE.is_completed() && CELL.get().is_some() && LazyLock::get(&LAZY).is_some());
}

/// An initialisation cut short by its execution's end (here a deadlock inside it) does
/// not block the next execution: a `Once` or `OnceLock` is left uninitialised, a
/// `LazyLock` (whose initialiser was consumed) poisoned.
#[test]
fn an_initialisation_cut_short_by_the_end_of_its_execution() {
    static ONCE: Once = Once::new();
    static CELL: OnceLock<u32> = OnceLock::new();
    static LAZY: LazyLock<u32> = LazyLock::new(|| {
        Barrier::new(2).wait();
        1
    });
    let cut_short: [fn(); 3] = [
        || {
            ONCE.call_once(|| {
                Barrier::new(2).wait();
            })
        },
        || {
            CELL.get_or_init(|| Barrier::new(2).wait().is_leader() as u32);
        },
        || {
            let _: u32 = *LAZY;
        },
    ];
    for init in cut_short {
        let report = builder(10).schedules(10).run(init);
        assert_eq!(
            report.failure.expect("the initialiser deadlocks").kind,
            FailureKind::Deadlock
        );
    }
    builder(11).schedules(10).check(|| {
        ONCE.call_once(|| {});
        assert_eq!(*CELL.get_or_init(|| 2), 2);
        assert_eq!(
            panic_message(|| {
                let _: u32 = *LAZY;
            }),
            "LazyLock instance has previously been poisoned"
        );
    });
    assert!(ONCE.is_completed());
}

/// Compile-time checks that the types are as usable as std's.
#[test]
fn trait_impls_match_std() {
    fn send_sync<T: Send + Sync>() {}
    fn unwind_safe<T: UnwindSafe + RefUnwindSafe>() {}
    send_sync::<Once>();
    send_sync::<OnceLock<u32>>();
    send_sync::<LazyLock<u32>>();
    send_sync::<LazyLock<u32, Box<dyn FnOnce() -> u32 + Send>>>();
    unwind_safe::<Once>();
    unwind_safe::<OnceLock<u32>>();
    unwind_safe::<LazyLock<u32>>();
    #[allow(deprecated)]
    let once = pulse_shim_std::sync::ONCE_INIT;
    once.call_once(|| {});
    assert!(once.is_completed());
}
