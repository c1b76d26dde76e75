//! Milliseconds per 2,000 executions of five small programs (3 threads each), in the profile
//! this binary was built with: run it as `cargo run` (a debug build, as `cargo pulse test`
//! builds a test crate) and `cargo run --release`, and compare (bench/README.md).

use std::time::Instant;

use pulse::std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use pulse::std::sync::{mpsc, Arc, Condvar, Mutex, RwLock};
use pulse::std::thread;

const EXECUTIONS: u64 = 2_000;
const REPS: usize = 5;

/// The median over `REPS` runs of `EXECUTIONS` random schedules of `body`, in ms.
fn median_ms(body: fn()) -> f64 {
    let mut times: Vec<f64> = (0..REPS)
        .map(|_| {
            let start = Instant::now();
            pulse::Builder::new()
                .strategy(pulse::Strategy::Random)
                .schedules(EXECUTIONS)
                .seed(1)
                .check(body);
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[REPS / 2]
}

/// Three threads x 20 rounds of `fetch_add`, two loads and a `compare_exchange`.
fn atomics() {
    let a = Arc::new(AtomicUsize::new(0));
    let p = Arc::new(AtomicPtr::new(std::ptr::null_mut::<u8>()));
    let hs: Vec<_> = (0..3)
        .map(|_| {
            let (a, p) = (a.clone(), p.clone());
            thread::spawn(move || {
                for _ in 0..20 {
                    a.fetch_add(1, Ordering::SeqCst);
                    let _ = a.load(Ordering::Acquire);
                    let _ = p.load(Ordering::Acquire);
                    let _ = a.compare_exchange(1, 2, Ordering::AcqRel, Ordering::Relaxed);
                }
            })
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
}

/// Three threads x 20 increments under a `Mutex`.
fn mutex() {
    let m = Arc::new(Mutex::new(0u64));
    let hs: Vec<_> = (0..3)
        .map(|_| {
            let m = m.clone();
            thread::spawn(move || (0..20).for_each(|_| *m.lock().unwrap() += 1))
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
}

/// One writer and two readers x 20 of an `RwLock`.
fn rwlock() {
    let m = Arc::new(RwLock::new(0u64));
    let hs: Vec<_> = (0..3)
        .map(|i| {
            let m = m.clone();
            thread::spawn(move || {
                for _ in 0..20 {
                    if i == 0 {
                        *m.write().unwrap() += 1;
                    } else {
                        let _ = *m.read().unwrap();
                    }
                }
            })
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
}

/// 20 increments, each notified to a waiter on a `Condvar`.
fn condvar() {
    let pair = Arc::new((Mutex::new(0u32), Condvar::new()));
    let other = pair.clone();
    let h = thread::spawn(move || {
        let (m, c) = &*other;
        for _ in 0..20 {
            *m.lock().unwrap() += 1;
            c.notify_one();
        }
    });
    let (m, c) = &*pair;
    let mut n = m.lock().unwrap();
    while *n < 20 {
        n = c.wait(n).unwrap();
    }
    drop(n);
    h.join().unwrap();
}

/// Two senders x 20 messages to one receiver.
fn mpsc() {
    let (tx, rx) = mpsc::channel::<u64>();
    let hs: Vec<_> = (0..2)
        .map(|_| {
            let tx = tx.clone();
            thread::spawn(move || (0..20).for_each(|i| tx.send(i).unwrap()))
        })
        .collect();
    drop(tx);
    assert_eq!(rx.iter().count(), 40);
    hs.into_iter().for_each(|h| h.join().unwrap());
}

fn main() {
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    println!("| program | {profile}: ms per {EXECUTIONS} executions (median of {REPS}) |");
    println!("|---|---:|");
    let programs: [(&str, fn()); 5] = [
        ("atomics", atomics),
        ("mutex", mutex),
        ("rwlock", rwlock),
        ("condvar", condvar),
        ("mpsc", mpsc),
    ];
    for (name, body) in programs {
        println!("| {name} | {:.1} |", median_ms(body));
    }
}
