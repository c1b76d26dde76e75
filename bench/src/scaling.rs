//! Thread scaling: pulse's cost per scheduling decision as the number of threads grows
//! (issue #9: a 1,000-thread test must cost about what a 2-thread one does per decision).
//!
//! Two programs. In both the main thread spawns `n` threads and joins them all.
//! - Independent: each thread bumps its own atomic counter `STEPS` times. The operations
//!   race with nothing, so the numbers measure the scheduler's bookkeeping (runnable set,
//!   waiters, the strategy's pick), not contention.
//! - Barrier: all threads wait at one `Barrier` `STEPS` times. Every thread's next operation
//!   is on the same object, the worst case for POS, which re-draws the priority of every
//!   thread racing with the one that ran.
//! - Mutex: all threads take one `Mutex` `STEPS` times: a lock with up to n - 1 waiters,
//!   whose every release wakes one of them.
//!
//! pulse only: loom models at most 5 threads, and shuttle is compared on the throughput
//! programs.

#![cfg(feature = "pulse")]

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use pulse::std::sync::atomic::AtomicUsize;
use pulse::std::sync::{Arc, Barrier, Mutex};
use pulse::std::thread;

use crate::stats::{sig3, thousands};

const STEPS: usize = 10;
pub const THREADS: [usize; 4] = [2, 10, 100, 1000];

#[derive(Clone, Copy, PartialEq)]
pub enum Program {
    Independent,
    Barrier,
    Mutex,
}

fn barrier(n: usize) {
    let barrier = Arc::new(Barrier::new(n));
    let hs: Vec<_> = (0..n)
        .map(|_| {
            let b = barrier.clone();
            thread::spawn(move || {
                for _ in 0..STEPS {
                    b.wait();
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
}

fn mutex(n: usize) {
    let lock = Arc::new(Mutex::new(0));
    let hs: Vec<_> = (0..n)
        .map(|_| {
            let lock = lock.clone();
            thread::spawn(move || {
                for _ in 0..STEPS {
                    *lock.lock().unwrap() += 1;
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(*lock.lock().unwrap(), n * STEPS);
}

fn independent(n: usize) {
    let counters: Arc<Vec<AtomicUsize>> = Arc::new((0..n).map(|_| AtomicUsize::new(0)).collect());
    let hs: Vec<_> = (0..n)
        .map(|i| {
            let c = counters.clone();
            thread::spawn(move || {
                for _ in 0..STEPS {
                    c[i].fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert!(counters.iter().all(|c| c.load(Ordering::Relaxed) == STEPS));
}

/// Median ns per decision of `reps` timed runs of about `decisions` decisions each.
fn measure(
    program: Program,
    n: usize,
    strategy: pulse::Strategy,
    decisions: u64,
    reps: usize,
) -> (f64, u64) {
    let per_exec = (n * (STEPS + 3)) as u64;
    let body = match program {
        Program::Independent => independent,
        Program::Barrier => barrier,
        Program::Mutex => mutex,
    };
    let execs = (decisions / per_exec).max(3);
    let run = || {
        let started = Instant::now();
        let r = pulse::Builder::new()
            .strategy(strategy)
            .schedules(execs)
            .seed(1)
            .max_steps(u64::MAX / 2)
            .run(move || body(n));
        assert!(
            r.passed(),
            "scaling {n} threads under {strategy}: {:?}",
            r.failure
        );
        (started.elapsed(), r.decisions)
    };
    run(); // warm-up
    let mut samples: Vec<(Duration, u64)> = (0..reps).map(|_| run()).collect();
    samples.sort();
    let (t, d) = samples[samples.len() / 2];
    (t.as_nanos() as f64 / d as f64, d)
}

pub fn run(program: Program, quick: bool, reps: usize) -> String {
    let decisions = if quick { 100_000 } else { 1_000_000 };
    let strategies = [
        pulse::Strategy::Random,
        pulse::Strategy::Pos,
        pulse::Strategy::Pct { depth: 3, k: None },
        pulse::Strategy::Roles {
            depth: 4,
            roles: None,
        },
        pulse::Strategy::Portfolio,
    ];
    let mut out = String::from("| strategy | decisions / run | ");
    for n in THREADS {
        out += &format!("{n} threads ns / decision | ");
    }
    out += "1,000 ÷ 2 |\n|---|---:|";
    out += &"---:|".repeat(THREADS.len() + 1);
    out.push('\n');
    for s in strategies {
        let mut row = String::new();
        let mut first = 0.0;
        let mut last = 0.0;
        let mut total = 0;
        for (i, n) in THREADS.into_iter().enumerate() {
            eprintln!("[scaling] {s} {n} threads");
            let (ns, d) = measure(program, n, s, decisions, reps);
            if i == 0 {
                first = ns;
            }
            last = ns;
            total = d;
            row += &format!(" {} |", sig3(ns));
        }
        out += &format!(
            "| {s} | ~{} |{row} {:.1}x |\n",
            thousands(total),
            last / first
        );
    }
    let what = match program {
        Program::Independent => format!("each bumps its own atomic {STEPS} times"),
        Program::Barrier => format!("all wait at one barrier {STEPS} times"),
        Program::Mutex => format!("all take one mutex {STEPS} times"),
    };
    out += &format!(
        "\nThe program: main spawns n threads, {what}, main joins them. Median of {reps} timed runs \
         of about {} decisions each, after one warm-up; ns / decision = wall time ÷ \
         `Report::decisions`, spawning and joining included.\n",
        thousands(decisions),
    );
    out
}
