//! Litmus tests of the memory models: each test runs exhaustively (`dfs` and `dpor` with a
//! bound that prunes nothing) and by sampling (`random`), under `Memory::Sc` and `Memory::Relaxed`,
//! and asserts the set of outcomes equals the one the model claims (ARCHITECTURE decision
//! 27). Where C++20 allows more than the relaxed model produces (load buffering, 2+2W),
//! the missing outcome is named.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use pulse_runtime::{Builder, Isolation, Memory, Strategy};
use pulse_shim_std::sync::atomic::{fence, AtomicUsize, Ordering, Ordering::*};
use pulse_shim_std::thread;

type Outcome = Vec<usize>;

/// Runs `body` (which returns its outcome) under `memory` with `strategy`; every outcome seen.
fn outcomes(
    memory: Memory,
    strategy: Strategy,
    schedules: u64,
    body: fn() -> Outcome,
) -> BTreeSet<Outcome> {
    let seen = Arc::new(Mutex::new(BTreeSet::new()));
    let s = seen.clone();
    let report = Builder::new()
        .memory(memory)
        .strategy(strategy)
        .schedules(schedules)
        .seed(1)
        .isolation(Isolation::Off)
        .run(move || {
            let o = body();
            s.lock().unwrap().insert(o);
        });
    assert!(report.failure.is_none(), "{:?}", report.failure);
    if let Strategy::Dfs { bound } | Strategy::Dpor { bound } = strategy {
        let ex = report
            .exhaustive
            .expect("the search explored its whole space");
        // Bounds below 20 are for tests too large to explore unbounded (IRIW: 5 threads).
        assert!(
            !ex.pruned || bound < 20,
            "the bound cut schedules: raise it"
        );
    }
    let r = seen.lock().unwrap().clone();
    r
}

/// Asserts `body`'s outcomes: `sc` under `Memory::Sc`, `relaxed` under `Memory::Relaxed`,
/// both exhaustively and by sampling.
fn litmus(body: fn() -> Outcome, sc: &[&[usize]], relaxed: &[&[usize]]) {
    litmus_bounded(20, 4_000, body, sc, relaxed)
}

/// `litmus`, with the preemption bound of the exhaustive run and the number of samples.
fn litmus_bounded(
    bound: usize,
    samples: u64,
    body: fn() -> Outcome,
    sc: &[&[usize]],
    relaxed: &[&[usize]],
) {
    let set = |v: &[&[usize]]| v.iter().map(|o| o.to_vec()).collect::<BTreeSet<_>>();
    for (memory, want) in [(Memory::Sc, set(sc)), (Memory::Relaxed, set(relaxed))] {
        let dfs = outcomes(memory, Strategy::Dfs { bound }, 1_000_000, body);
        assert_eq!(dfs, want, "{memory:?} under dfs");
        // DPOR explores reads-from choices in full, as dfs does: the same outcomes.
        let dpor = outcomes(memory, Strategy::Dpor { bound }, 1_000_000, body);
        assert_eq!(dpor, want, "{memory:?} under dpor");
        let sampled = outcomes(memory, Strategy::Random, samples, body);
        assert_eq!(sampled, want, "{memory:?} sampled");
    }
}

fn two<A, B>(a: A, b: B) -> (usize, usize)
where
    A: FnOnce() -> usize + Send + 'static,
    B: FnOnce() -> usize + Send + 'static,
{
    let a = thread::spawn(a);
    let b = thread::spawn(b);
    (a.join().unwrap(), b.join().unwrap())
}

fn statics() -> (Arc<AtomicUsize>, Arc<AtomicUsize>) {
    (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)))
}

/// Store buffering: each thread stores to one location, then loads the other.
fn sb(store: Ordering, load: Ordering) -> Outcome {
    let (x, y) = statics();
    let (x2, y2) = (x.clone(), y.clone());
    let (a, b) = two(
        move || {
            x.store(1, store);
            y.load(load)
        },
        move || {
            y2.store(1, store);
            x2.load(load)
        },
    );
    vec![a, b]
}

const ALL2: &[&[usize]] = &[&[0, 0], &[0, 1], &[1, 0], &[1, 1]];
const SC_SB: &[&[usize]] = &[&[0, 1], &[1, 0], &[1, 1]];

#[test]
fn sb_relaxed() {
    litmus(|| sb(Relaxed, Relaxed), SC_SB, ALL2);
}

#[test]
fn sb_release_acquire() {
    litmus(|| sb(Release, Acquire), SC_SB, ALL2);
}

#[test]
fn sb_seqcst_never_shows_both_zeros() {
    litmus(|| sb(SeqCst, SeqCst), SC_SB, SC_SB);
}

#[test]
fn sb_relaxed_with_seqcst_fences() {
    litmus(
        || {
            let (x, y) = statics();
            let (x2, y2) = (x.clone(), y.clone());
            let (a, b) = two(
                move || {
                    x.store(1, Relaxed);
                    fence(SeqCst);
                    y.load(Relaxed)
                },
                move || {
                    y2.store(1, Relaxed);
                    fence(SeqCst);
                    x2.load(Relaxed)
                },
            );
            vec![a, b]
        },
        SC_SB,
        SC_SB,
    );
}

/// Message passing: data, then a flag; the reader reads the flag, then the data.
fn mp(store: Ordering, load: Ordering, fences: bool) -> Outcome {
    let (data, flag) = statics();
    let (data2, flag2) = (data.clone(), flag.clone());
    let (_, fd) = two(
        move || {
            data.store(1, Relaxed);
            if fences {
                fence(Release);
            }
            flag.store(1, store);
            0
        },
        move || {
            let f = flag2.load(load);
            if fences {
                fence(Acquire);
            }
            f * 10 + data2.load(Relaxed)
        },
    );
    vec![fd / 10, fd % 10]
}

const MP_OK: &[&[usize]] = &[&[0, 0], &[0, 1], &[1, 1]];

#[test]
fn mp_relaxed_sees_the_flag_without_the_data() {
    litmus(|| mp(Relaxed, Relaxed, false), MP_OK, ALL2);
}

#[test]
fn mp_release_acquire() {
    litmus(|| mp(Release, Acquire, false), MP_OK, MP_OK);
}

#[test]
fn mp_through_fences() {
    litmus(|| mp(Relaxed, Relaxed, true), MP_OK, MP_OK);
}

/// Independent reads of independent writes: two writers, two readers reading in opposite
/// orders. Outcome: (r1 x, r1 y, r2 y, r2 x).
fn iriw(load: Ordering) -> Outcome {
    let (x, y) = statics();
    let w1 = {
        let x = x.clone();
        thread::spawn(move || x.store(1, if load == SeqCst { SeqCst } else { Release }))
    };
    let w2 = {
        let y = y.clone();
        thread::spawn(move || y.store(1, if load == SeqCst { SeqCst } else { Release }))
    };
    let r1 = {
        let (x, y) = (x.clone(), y.clone());
        thread::spawn(move || vec![x.load(load), y.load(load)])
    };
    let r2 = thread::spawn(move || vec![y.load(load), x.load(load)]);
    w1.join().unwrap();
    w2.join().unwrap();
    let mut o = r1.join().unwrap();
    o.extend(r2.join().unwrap());
    o
}

fn all4() -> Vec<Vec<usize>> {
    (0..16)
        .map(|i| (0..4).map(|b| (i >> (3 - b)) & 1).collect())
        .collect()
}

#[test]
fn iriw_acquire_disagrees_and_seqcst_does_not() {
    let all = all4();
    let all: Vec<&[usize]> = all.iter().map(|v| &v[..]).collect();
    let sc: Vec<&[usize]> = all.iter().copied().filter(|o| *o != [1, 0, 1, 0]).collect();
    // Relaxed only: five threads make each run long, and `Memory::Sc` is covered above.
    for (load, want) in [(Acquire, all), (SeqCst, sc)] {
        let want: BTreeSet<Outcome> = want.iter().map(|o| o.to_vec()).collect();
        let body = if load == Acquire {
            (|| iriw(Acquire)) as fn() -> Outcome
        } else {
            || iriw(SeqCst)
        };
        let dfs = outcomes(Memory::Relaxed, Strategy::Dfs { bound: 3 }, 1_000_000, body);
        assert_eq!(dfs, want, "{load:?} under dfs");
        let sampled = outcomes(Memory::Relaxed, Strategy::Random, 15_000, body);
        assert_eq!(sampled, want, "{load:?} sampled");
    }
}

/// 2+2W: each thread writes both locations in opposite orders; the final values. C++20
/// also allows (1, 1) (each location's first store last in modification order); the model
/// orders stores as executed, so it does not produce it.
#[test]
fn two_plus_two_w() {
    litmus(
        || {
            let (x, y) = statics();
            let (x1, y1) = (x.clone(), y.clone());
            let (x2, y2) = (x.clone(), y.clone());
            two(
                move || {
                    x1.store(1, Relaxed);
                    y1.store(2, Relaxed);
                    0
                },
                move || {
                    y2.store(1, Relaxed);
                    x2.store(2, Relaxed);
                    0
                },
            );
            vec![x.load(Relaxed), y.load(Relaxed)]
        },
        &[&[1, 2], &[2, 1], &[2, 2]],
        &[&[1, 2], &[2, 1], &[2, 2]],
    );
}

/// Read-read coherence: two reads of one location never go back in modification order.
#[test]
fn corr() {
    let body = || {
        let (x, _) = statics();
        let x2 = x.clone();
        let (_, ab) = two(
            move || {
                x.store(1, Relaxed);
                x.store(2, Relaxed);
                0
            },
            move || x2.load(Relaxed) * 10 + x2.load(Relaxed),
        );
        vec![ab / 10, ab % 10]
    };
    let ok: &[&[usize]] = &[&[0, 0], &[0, 1], &[0, 2], &[1, 1], &[1, 2], &[2, 2]];
    litmus(body, ok, ok);
}

/// Write-read coherence: a thread reads its own store or a later one, never an older one.
#[test]
fn cowr() {
    let body = || {
        let (x, _) = statics();
        let x2 = x.clone();
        let (a, _) = two(
            move || {
                x.store(1, Relaxed);
                x.load(Relaxed)
            },
            move || {
                x2.store(2, Relaxed);
                0
            },
        );
        vec![a]
    };
    litmus(body, &[&[1], &[2]], &[&[1], &[2]]);
}

/// RMW atomicity: two relaxed `fetch_add`s never lose an increment.
#[test]
fn rmw_atomicity() {
    let body = || {
        let (x, _) = statics();
        let x2 = x.clone();
        let (a, b) = two(
            move || x.fetch_add(1, Relaxed),
            move || x2.fetch_add(1, Relaxed),
        );
        vec![a, b]
    };
    litmus(body, &[&[0, 1], &[1, 0]], &[&[0, 1], &[1, 0]]);
}

/// Load buffering: each thread loads one location, then stores to the other. C++20 allows
/// (1, 1); the model never reads a store that has not been made yet, so it does not
/// produce it (nor out-of-thin-air values).
#[test]
fn load_buffering() {
    let body = || {
        let (x, y) = statics();
        let (x2, y2) = (x.clone(), y.clone());
        let (a, b) = two(
            move || {
                let a = x.load(Relaxed);
                y.store(1, Relaxed);
                a
            },
            move || {
                let b = y2.load(Relaxed);
                x2.store(1, Relaxed);
                b
            },
        );
        vec![a, b]
    };
    let ok: &[&[usize]] = &[&[0, 0], &[0, 1], &[1, 0]];
    litmus(body, ok, ok);
}

/// A release sequence: a relaxed RMW by another thread between a release store and an
/// acquire load still carries the release.
#[test]
fn release_sequence_through_an_rmw() {
    let body = || {
        let (data, flag) = statics();
        let (d2, f2, f3) = (data.clone(), flag.clone(), flag.clone());
        let w = thread::spawn(move || {
            data.store(1, Relaxed);
            flag.store(1, Release);
        });
        let m = thread::spawn(move || {
            f3.fetch_add(1, Relaxed);
        });
        let r = thread::spawn(move || {
            let f = f2.load(Acquire);
            // Saw the release store or the RMW after it: the data is there.
            vec![usize::from(f == 2 && d2.load(Relaxed) == 0)]
        });
        w.join().unwrap();
        m.join().unwrap();
        r.join().unwrap()
    };
    litmus(body, &[&[0]], &[&[0]]);
}

/// Every sampling strategy draws reads-from choices: each finds all four SB outcomes and the
/// flag-without-data MP outcome under relaxed, and none of them under `SeqCst`.
#[test]
fn every_strategy_samples_old_reads() {
    let all: BTreeSet<Outcome> = ALL2.iter().map(|o| o.to_vec()).collect();
    let sc: BTreeSet<Outcome> = SC_SB.iter().map(|o| o.to_vec()).collect();
    for strategy in [
        Strategy::Pct { depth: 3, k: None },
        Strategy::Pos,
        Strategy::Portfolio,
    ] {
        let seen = outcomes(Memory::Relaxed, strategy, 4_000, || sb(Relaxed, Relaxed));
        assert_eq!(seen, all, "{strategy:?}");
        let seen = outcomes(Memory::Relaxed, strategy, 4_000, || sb(SeqCst, SeqCst));
        assert_eq!(seen, sc, "{strategy:?}");
        let seen = outcomes(Memory::Relaxed, strategy, 4_000, || {
            mp(Relaxed, Relaxed, false)
        });
        assert_eq!(seen, all, "{strategy:?}");
    }
}

/// A value in std's `Arc` whose `Drop` (as the instrumenter writes it: the acquire first)
/// records what it reads of its own atomic.
struct Held {
    x: AtomicUsize,
    read: Arc<Mutex<usize>>,
}

impl Drop for Held {
    fn drop(&mut self) {
        pulse_shim_std::sync::atomic::__pulse_drop_acquire(&*self);
        *self.read.lock().unwrap() = self.x.load(Relaxed);
    }
}

/// Another owner stores `Relaxed` and drops its clone; whoever drops last reads the store:
/// std's `Arc` orders every owner's accesses before the last drop (decision 49).
#[test]
fn the_last_arc_owner_s_drop_reads_every_owner_s_store() {
    litmus(
        || {
            let read = Arc::new(Mutex::new(9));
            let held = Arc::new(Held {
                x: AtomicUsize::new(0),
                read: read.clone(),
            });
            let other = held.clone();
            let t = thread::spawn(move || {
                other.x.store(1, Relaxed);
                drop(other);
            });
            thread::yield_now();
            drop(held);
            t.join().unwrap();
            let r = *read.lock().unwrap();
            vec![r]
        },
        &[&[1]],
        &[&[1]],
    );
}

/// A `Drop` of a value that holds no atomic of its own (a guard's) acquires nothing: a
/// `Relaxed` load in it may still read a stale value.
#[test]
fn a_drop_of_a_value_without_atomics_acquires_nothing() {
    struct Guard<'a>(&'a AtomicUsize, &'a Mutex<usize>);
    impl Drop for Guard<'_> {
        fn drop(&mut self) {
            pulse_shim_std::sync::atomic::__pulse_drop_acquire(&*self);
            *self.1.lock().unwrap() = self.0.load(Relaxed);
        }
    }
    litmus(
        || {
            let x = Arc::new(AtomicUsize::new(0));
            let x2 = x.clone();
            let t = thread::spawn(move || x2.store(1, Relaxed));
            thread::yield_now();
            let read = Mutex::new(9);
            drop(Guard(&x, &read));
            t.join().unwrap();
            let r = *read.lock().unwrap();
            vec![r]
        },
        &[&[0], &[1]],
        &[&[0], &[1]],
    );
}

/// `Arc::get_mut` (the instrumenter's `arc_ops` twin) once the other owner has dropped its
/// clone: the `&mut` sees that owner's `Relaxed` store.
#[test]
fn arc_get_mut_after_the_other_owner_let_go_reads_its_store() {
    use pulse_shim_std::sync::arc_ops;
    litmus(
        || {
            let mut held = Arc::new(AtomicUsize::new(0));
            let held = {
                let other = held.clone();
                let t = thread::spawn(move || {
                    other.store(1, Relaxed);
                    drop(other);
                });
                while arc_ops::strong_count(&held) != 1 {
                    thread::yield_now();
                }
                let r = [arc_ops::get_mut(&mut held).expect("unique").load(Relaxed)];
                t.join().unwrap();
                r
            };
            held.to_vec()
        },
        &[&[1]],
        &[&[1]],
    );
}
