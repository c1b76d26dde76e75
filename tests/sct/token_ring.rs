//! SCTBench CS/token_ring: three ring members each copy their predecessor's token (the first
//! takes the last one's plus one); after all ran, every token should be equal. Without
//! waiting for the predecessor, a member copies a stale token. The fixed twin hands the token
//! around the ring over channels.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;

pub fn buggy(_n: usize) {
    let x: Arc<[AtomicUsize; 3]> = Arc::new(std::array::from_fn(|_| AtomicUsize::new(0)));
    let mut handles = Vec::new();
    for i in 0..3 {
        let x = x.clone();
        handles.push(thread::spawn(move || {
            let prev = x[(i + 2) % 3].load(SeqCst);
            x[i].store(if i == 0 { prev + 1 } else { prev }, SeqCst);
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    let v: Vec<usize> = x.iter().map(|a| a.load(SeqCst)).collect();
    assert!(v[0] == v[1] && v[1] == v[2], "tokens differ: {v:?}");
}

pub fn fixed(_n: usize) {
    let x: Arc<[AtomicUsize; 3]> = Arc::new(std::array::from_fn(|_| AtomicUsize::new(0)));
    let (tx01, rx01) = mpsc::channel::<()>();
    let (tx12, rx12) = mpsc::channel::<()>();
    let x0 = x.clone();
    let t0 = thread::spawn(move || {
        x0[0].store(x0[2].load(SeqCst) + 1, SeqCst);
        tx01.send(()).unwrap();
    });
    let x1 = x.clone();
    let t1 = thread::spawn(move || {
        rx01.recv().unwrap();
        x1[1].store(x1[0].load(SeqCst), SeqCst);
        tx12.send(()).unwrap();
    });
    let x2 = x.clone();
    let t2 = thread::spawn(move || {
        rx12.recv().unwrap();
        x2[2].store(x2[1].load(SeqCst), SeqCst);
    });
    for h in [t0, t1, t2] {
        h.join().unwrap();
    }
    let v: Vec<usize> = x.iter().map(|a| a.load(SeqCst)).collect();
    assert!(v[0] == v[1] && v[1] == v[2], "tokens differ: {v:?}");
}
