//! Dining philosophers (SCTBench CHESS/philosophers): three philosophers each take their
//! left fork, then their right; if all hold their left fork, none gets the right one. The
//! fixed twin takes the lower-numbered fork first.

use std::sync::{Arc, Mutex};
use std::thread;

const N: usize = 3;

fn run(ordered: bool) {
    let forks: Arc<Vec<Mutex<u32>>> = Arc::new((0..N).map(|_| Mutex::new(0)).collect());
    let mut handles = Vec::new();
    for p in 0..N {
        let forks = forks.clone();
        handles.push(thread::spawn(move || {
            let (left, right) = (p, (p + 1) % N);
            let (first, second) = if ordered {
                (left.min(right), left.max(right))
            } else {
                (left, right)
            };
            let mut a = forks[first].lock().unwrap();
            let mut b = forks[second].lock().unwrap();
            *a += 1;
            *b += 1;
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    let meals: u32 = forks.iter().map(|f| *f.lock().unwrap()).sum();
    assert_eq!(meals, 2 * N as u32);
}

pub fn buggy(_n: usize) {
    run(false)
}

pub fn fixed(_n: usize) {
    run(true)
}
