//! deadlock01 with a warm-up: each thread first takes both locks once in its own order and
//! lets them go, then takes them for real. The warm-ups rule out the one-preemption deadlock
//! of deadlock01 (a thread holding its first lock makes the other's warm-up block, and that
//! thread then finishes): both warm-ups must end before either real first lock, so the
//! deadlock needs two preemptions. The fixed twin takes the locks in one order.

use std::sync::{Arc, Mutex};
use std::thread;

fn run(opposite: bool) {
    let a = Arc::new(Mutex::new(0));
    let b = Arc::new(Mutex::new(0));
    let worker = |first: Arc<Mutex<i32>>, second: Arc<Mutex<i32>>| {
        move || {
            for _ in 0..2 {
                *first.lock().unwrap() += 1;
                *second.lock().unwrap() += 1;
            }
            let mut x = first.lock().unwrap();
            let mut y = second.lock().unwrap();
            *x += 1;
            *y += 1;
        }
    };
    let t1 = thread::spawn(worker(a.clone(), b.clone()));
    let t2 = if opposite {
        thread::spawn(worker(b.clone(), a.clone()))
    } else {
        thread::spawn(worker(a.clone(), b.clone()))
    };
    t1.join().unwrap();
    t2.join().unwrap();
    assert_eq!(*a.lock().unwrap(), 6);
}

pub fn buggy(_n: usize) {
    run(true)
}

pub fn fixed(_n: usize) {
    run(false)
}
