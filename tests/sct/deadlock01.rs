//! SCTBench CS/deadlock01: two threads take locks `a` and `b` in opposite orders.

use std::sync::{Arc, Mutex};
use std::thread;

fn run(opposite: bool) {
    let a = Arc::new(Mutex::new(0));
    let b = Arc::new(Mutex::new(0));
    let (a2, b2) = (a.clone(), b.clone());
    let t = thread::spawn(move || {
        let (first, second) = if opposite { (&b2, &a2) } else { (&a2, &b2) };
        let mut x = first.lock().unwrap();
        let mut y = second.lock().unwrap();
        *x += 1;
        *y += 1;
    });
    {
        let mut x = a.lock().unwrap();
        let mut y = b.lock().unwrap();
        *x += 1;
        *y += 1;
    }
    t.join().unwrap();
    assert_eq!(*a.lock().unwrap(), 2);
}

pub fn buggy(_n: usize) {
    run(true)
}

pub fn fixed(_n: usize) {
    run(false)
}
