//! SCTBench CS/lazy01: two threads add 1 and 2 to `data` under a lock; a third asserts
//! `data < 3`, which fails once both adders ran before it. The fixed twin's checker waits
//! for both (joins them) and checks the sum.

use std::sync::{Arc, Mutex};
use std::thread;

pub fn buggy(_n: usize) {
    let data = Arc::new(Mutex::new(0));
    let d1 = data.clone();
    let t1 = thread::spawn(move || *d1.lock().unwrap() += 1);
    let d2 = data.clone();
    let t2 = thread::spawn(move || *d2.lock().unwrap() += 2);
    let d3 = data.clone();
    let t3 = thread::spawn(move || {
        let v = *d3.lock().unwrap();
        assert!(v < 3, "data is {v}: both adders ran first");
    });
    t1.join().unwrap();
    t2.join().unwrap();
    t3.join().unwrap();
}

pub fn fixed(_n: usize) {
    let data = Arc::new(Mutex::new(0));
    let d1 = data.clone();
    let t1 = thread::spawn(move || *d1.lock().unwrap() += 1);
    let d2 = data.clone();
    let t2 = thread::spawn(move || *d2.lock().unwrap() += 2);
    t1.join().unwrap();
    t2.join().unwrap();
    let d3 = data.clone();
    let t3 = thread::spawn(move || {
        let v = *d3.lock().unwrap();
        assert_eq!(v, 3);
    });
    t3.join().unwrap();
}
