//! The physical reference: what one hand-off between two flows of control costs on this machine.
//!
//! (a) two OS threads ping-ponging with `thread::park`/`unpark` (what a scheduler built on OS
//!     threads pays per scheduling decision that changes the running thread);
//! (b) a corosensei 0.3 coroutine resumed and suspended in a loop (what a coroutine-based
//!     scheduler such as pulse, shuttle and loom pays for the switch itself).

use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use corosensei::{Coroutine, Yielder};

use crate::stats::{median_duration, sig3};

/// Pin the calling OS thread to one CPU. Returns false if the kernel refused.
fn pin_to_cpu(cpu: usize) -> bool {
    // SAFETY: cpu_set_t is plain data; sched_setaffinity(0, ..) affects the calling thread only.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// `round_trips` A->B->A hand-offs through park/unpark. Returns the elapsed time.
/// `pin`: None = let the kernel place the threads; Some(cpu) = both threads on that one CPU.
fn park_pingpong(round_trips: u64, pin: Option<usize>) -> Duration {
    // turn: 0 = A runs, 1 = B runs. A park token is never lost, so a stale token only costs a
    // spurious return from park, which the loops re-check.
    let turn = Arc::new(AtomicU32::new(0));
    let a = thread::current();
    let t2 = turn.clone();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let b = thread::spawn(move || {
        if let Some(cpu) = pin {
            pin_to_cpu(cpu);
        }
        ready_tx.send(()).unwrap();
        for _ in 0..round_trips {
            while t2.load(Ordering::Acquire) != 1 {
                thread::park();
            }
            t2.store(0, Ordering::Release);
            a.unpark();
        }
    });
    let restore = pin.map(|cpu| {
        // SAFETY: as in pin_to_cpu; we save the old mask to restore it afterwards.
        let mut old: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut old) };
        pin_to_cpu(cpu);
        old
    });
    ready_rx.recv().unwrap();
    let bt = b.thread().clone();
    let start = Instant::now();
    for _ in 0..round_trips {
        turn.store(1, Ordering::Release);
        bt.unpark();
        while turn.load(Ordering::Acquire) != 0 {
            thread::park();
        }
    }
    let elapsed = start.elapsed();
    b.join().unwrap();
    if let Some(old) = restore {
        // SAFETY: restoring the mask saved above.
        unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &old) };
    }
    elapsed
}

/// `round_trips` resume/suspend pairs of one corosensei coroutine. Returns the elapsed time.
fn coroutine_pingpong(round_trips: u64) -> Duration {
    let mut co = Coroutine::new(|yielder: &Yielder<u64, u64>, mut x: u64| loop {
        x = yielder.suspend(black_box(x).wrapping_add(1));
    });
    let start = Instant::now();
    let mut x = 0u64;
    for _ in 0..round_trips {
        match co.resume(x) {
            corosensei::CoroutineResult::Yield(y) => x = y,
            corosensei::CoroutineResult::Return(()) => unreachable!(),
        }
    }
    let elapsed = start.elapsed();
    assert_eq!(black_box(x), round_trips);
    // The coroutine never returns; dropping it unwinds its stack (corosensei forces the unwind).
    drop(co);
    elapsed
}

pub struct PhysicalResults {
    pub coroutine_switch_ns: f64,
    pub thread_handoff_ns: f64,
    pub thread_handoff_pinned_ns: Option<f64>,
}

pub fn run(quick: bool, reps: usize) -> (String, PhysicalResults) {
    let (os_trips, co_trips) = if quick {
        (20_000, 1_000_000)
    } else {
        (200_000, 10_000_000)
    };
    let nproc = thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);

    // warm-up
    coroutine_pingpong(co_trips / 10);
    park_pingpong(os_trips / 10, None);

    let mut co = Vec::new();
    let mut os = Vec::new();
    let mut pinned = Vec::new();
    for _ in 0..reps {
        eprintln!("[physical] rep: coroutine, threads, threads pinned");
        co.push(coroutine_pingpong(co_trips));
        os.push(park_pingpong(os_trips, None));
        pinned.push(park_pingpong(os_trips, Some(0)));
    }
    // One direction = half a round trip.
    let per =
        |ds: &[Duration], trips: u64| median_duration(ds).as_nanos() as f64 / (2.0 * trips as f64);
    let r = PhysicalResults {
        coroutine_switch_ns: per(&co, co_trips),
        thread_handoff_ns: per(&os, os_trips),
        thread_handoff_pinned_ns: Some(per(&pinned, os_trips)),
    };

    let mut t = String::new();
    t.push_str("| hand-off (one direction) | round trips x reps | ns per hand-off (median) |\n|---|---|---|\n");
    t.push_str(&format!(
        "| corosensei 0.3 coroutine resume/suspend | {} x {reps} | {} |\n",
        crate::stats::thousands(co_trips),
        sig3(r.coroutine_switch_ns)
    ));
    t.push_str(&format!(
        "| two OS threads, park/unpark, kernel placement ({nproc} CPUs) | {} x {reps} | {} |\n",
        crate::stats::thousands(os_trips),
        sig3(r.thread_handoff_ns)
    ));
    t.push_str(&format!(
        "| two OS threads, park/unpark, both pinned to CPU 0 | {} x {reps} | {} |\n",
        crate::stats::thousands(os_trips),
        sig3(r.thread_handoff_pinned_ns.unwrap())
    ));
    (t, r)
}
