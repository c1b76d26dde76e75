//! SCTBench CS/twostage_N: `n` workers each publish `data1 = 1` under lock `m1`, then
//! `data2 = data1 + 1` under lock `m2`; a reader takes `data1` under `m1` and `data2` under
//! `m2` and asserts `data2 == data1 + 1` once stage one is visible. It fails only when the
//! reader runs between the first worker's two stages (one preemption), which random
//! sampling rarely lines up among many workers. The fixed twin holds `m1` across both stages.

use std::sync::{Arc, Mutex};
use std::thread;

struct Shared {
    m1: Mutex<i64>,
    m2: Mutex<i64>,
}

fn run(n: usize, fixed: bool) {
    let s = Arc::new(Shared {
        m1: Mutex::new(0),
        m2: Mutex::new(0),
    });
    let mut handles = Vec::new();
    for _ in 0..n.max(1) {
        let s = s.clone();
        handles.push(thread::spawn(move || {
            let mut d1 = s.m1.lock().unwrap();
            *d1 = 1;
            let v = *d1;
            if !fixed {
                drop(d1);
                *s.m2.lock().unwrap() = v + 1;
            } else {
                *s.m2.lock().unwrap() = v + 1;
                drop(d1);
            }
        }));
    }
    let r = s.clone();
    let reader = thread::spawn(move || {
        let d1 = r.m1.lock().unwrap();
        let t1 = *d1;
        if t1 == 0 {
            return;
        }
        drop(d1);
        let t2 = *r.m2.lock().unwrap();
        assert_eq!(t2, t1 + 1, "saw stage one without stage two");
    });
    for h in handles {
        h.join().unwrap();
    }
    reader.join().unwrap();
}

pub fn buggy(n: usize) {
    run(n, false)
}

pub fn fixed(n: usize) {
    run(n, true)
}
