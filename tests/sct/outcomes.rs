//! Small programs that return their final state instead of asserting it, for comparing the
//! outcomes two strategies reach (`tests/corpus/tests/dpor.rs`: DPOR must reach every final
//! state DFS reaches). Each mixes operations on shared objects with independent ones, the
//! pruning DPOR is for.

use std::sync::atomic::{
    AtomicUsize,
    Ordering::{Acquire, Relaxed, Release, SeqCst},
};
use std::sync::mpsc;
use std::sync::{Arc, Barrier, Condvar, Mutex, RwLock};
use std::thread;

/// Two threads each bump their own counter, then append their name to a shared log.
pub fn mutex_log() -> String {
    let log = Arc::new(Mutex::new(String::new()));
    let mut handles = Vec::new();
    for name in ["a", "b"] {
        let log = log.clone();
        handles.push(thread::spawn(move || {
            let own = AtomicUsize::new(0);
            own.fetch_add(1, SeqCst);
            log.lock().unwrap().push_str(name);
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    let s = log.lock().unwrap().clone();
    s
}

/// A lost update: one thread reads and writes the balance in two critical sections.
pub fn lost_update() -> String {
    let balance = Arc::new(Mutex::new(100));
    let other = Arc::new(Mutex::new(0));
    let (b, o) = (balance.clone(), other.clone());
    let t = thread::spawn(move || {
        *o.lock().unwrap() += 1;
        *b.lock().unwrap() += 50;
    });
    let read = *balance.lock().unwrap();
    *other.lock().unwrap() += 1;
    *balance.lock().unwrap() = read - 30;
    t.join().unwrap();
    let v = *balance.lock().unwrap();
    format!("{v}")
}

/// Store buffering under sequential consistency: which loads see the other's store.
pub fn store_buffer() -> String {
    let x = Arc::new(AtomicUsize::new(0));
    let y = Arc::new(AtomicUsize::new(0));
    let (x1, y1) = (x.clone(), y.clone());
    let t = thread::spawn(move || {
        x1.store(1, SeqCst);
        y1.load(SeqCst)
    });
    y.store(1, SeqCst);
    let r2 = x.load(SeqCst);
    let r1 = t.join().unwrap();
    format!("{r1}{r2}")
}

/// Two threads bump their own atomic twice and one shared atomic once; the shared one
/// records the order they got there.
pub fn atomics_mostly_independent() -> String {
    let shared = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..2)
        .map(|i| {
            let shared = shared.clone();
            thread::spawn(move || {
                let own = AtomicUsize::new(0);
                own.fetch_add(1, SeqCst);
                own.fetch_add(1, SeqCst);
                shared.fetch_add(1, SeqCst) * 10 + i
            })
        })
        .collect();
    let got: Vec<String> = handles
        .into_iter()
        .map(|h| h.join().unwrap().to_string())
        .collect();
    got.join(",")
}

/// A flag handed over with a condvar, while another thread works on its own mutex.
pub fn condvar_handoff() -> String {
    let pair = Arc::new((Mutex::new(0), Condvar::new()));
    let p = pair.clone();
    let producer = thread::spawn(move || {
        let (m, cv) = &*p;
        *m.lock().unwrap() = 7;
        cv.notify_one();
    });
    let bystander = thread::spawn(|| {
        let own = Mutex::new(0);
        *own.lock().unwrap() += 1;
        *own.lock().unwrap() += 1;
    });
    let (m, cv) = &*pair;
    let mut g = m.lock().unwrap();
    let mut waits = 0;
    while *g == 0 {
        g = cv.wait(g).unwrap();
        waits += 1;
    }
    let v = *g;
    drop(g);
    producer.join().unwrap();
    bystander.join().unwrap();
    format!("{v} after {} wait(s)", waits.min(1))
}

/// Two senders on one channel: the receiver sees their messages in some order.
pub fn channel_order() -> String {
    let (tx, rx) = mpsc::channel();
    let tx2 = tx.clone();
    let a = thread::spawn(move || {
        let own = AtomicUsize::new(0);
        own.fetch_add(1, SeqCst);
        tx.send('a').unwrap();
    });
    let b = thread::spawn(move || {
        let own = AtomicUsize::new(0);
        own.fetch_add(1, SeqCst);
        tx2.send('b').unwrap();
    });
    let s: String = rx.iter().take(2).collect();
    a.join().unwrap();
    b.join().unwrap();
    s
}

/// A writer and a reader on a rwlock, and an unrelated atomic.
pub fn rwlock_read() -> String {
    let v = Arc::new(RwLock::new(1));
    let other = Arc::new(AtomicUsize::new(0));
    let (v2, o2) = (v.clone(), other.clone());
    let w = thread::spawn(move || {
        o2.fetch_add(1, SeqCst);
        *v2.write().unwrap() = 2;
    });
    other.fetch_add(1, SeqCst);
    let seen = *v.read().unwrap();
    w.join().unwrap();
    format!("{seen}")
}

/// A barrier between two threads, each storing before and loading after it.
pub fn barrier_then_load() -> String {
    let barrier = Arc::new(Barrier::new(2));
    let x = Arc::new(AtomicUsize::new(0));
    let (b2, x2) = (barrier.clone(), x.clone());
    let t = thread::spawn(move || {
        x2.fetch_add(1, SeqCst);
        b2.wait();
        x2.load(SeqCst)
    });
    x.fetch_add(10, SeqCst);
    barrier.wait();
    let mine = x.load(SeqCst);
    let theirs = t.join().unwrap();
    format!("{mine},{theirs}")
}

/// A `notify_all` to a waiter that may come before or after it, while another thread
/// bumps its own atomic.
pub fn notify_all_handoff() -> String {
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let p = pair.clone();
    let waiter = thread::spawn(move || {
        let (m, cv) = &*p;
        let mut g = m.lock().unwrap();
        let mut waited = false;
        while !*g {
            g = cv.wait(g).unwrap();
            waited = true;
        }
        waited
    });
    let bystander = thread::spawn(|| {
        let own = AtomicUsize::new(0);
        own.fetch_add(1, SeqCst);
    });
    {
        let (m, cv) = &*pair;
        *m.lock().unwrap() = true;
        cv.notify_all();
    }
    bystander.join().unwrap();
    let waited = waiter.join().unwrap();
    format!("waited: {waited}")
}

/// Three readers load one atomic while the main thread stores to it once: only where the
/// store falls among the loads matters, not the order of the loads themselves.
pub fn many_readers() -> String {
    let x = Arc::new(AtomicUsize::new(0));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let x = x.clone();
            thread::spawn(move || x.load(SeqCst))
        })
        .collect();
    x.store(1, SeqCst);
    let seen: Vec<String> = readers
        .into_iter()
        .map(|h| h.join().unwrap().to_string())
        .collect();
    seen.join(",")
}

/// Two threads each write twice to an atomic of their own, shared with the main thread,
/// which reads both after joining them: every interleaving of the writes is equivalent, so
/// the final state is one.
pub fn independent_writers() -> String {
    let cells: Vec<Arc<AtomicUsize>> = (0..2).map(|_| Arc::new(AtomicUsize::new(0))).collect();
    let handles: Vec<_> = cells
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let c = c.clone();
            thread::spawn(move || {
                c.store(i, SeqCst);
                c.fetch_add(10, SeqCst);
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let values: Vec<String> = cells.iter().map(|c| c.load(SeqCst).to_string()).collect();
    values.join(",")
}

/// Two readers and a writer on one rwlock: the readers share it, the writer's place among
/// them decides what each reads.
pub fn rwlock_readers() -> String {
    let v = Arc::new(RwLock::new(0));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let v = v.clone();
            thread::spawn(move || *v.read().unwrap())
        })
        .collect();
    *v.write().unwrap() = 1;
    let seen: Vec<String> = readers
        .into_iter()
        .map(|h| h.join().unwrap().to_string())
        .collect();
    seen.join(",")
}

/// The programs, by name.
/// Store buffering with `Relaxed` accesses: under the relaxed memory model (the default
/// memory portfolio's systematic searches run it) both loads may read 0, which `dpor` must
/// reach through reads-from choices as `dfs` does.
pub fn store_buffer_relaxed() -> String {
    let x = Arc::new(AtomicUsize::new(0));
    let y = Arc::new(AtomicUsize::new(0));
    let (x1, y1) = (x.clone(), y.clone());
    let t = thread::spawn(move || {
        x1.store(1, Relaxed);
        y1.load(Relaxed)
    });
    y.store(1, Relaxed);
    let r2 = x.load(Relaxed);
    let r1 = t.join().unwrap();
    format!("{r1}{r2}")
}

/// Message passing: data then a flag, each with `Release`, read back flag then data with
/// `Acquire` by one reader and `Relaxed` by another (a flag without its data is reachable
/// only for the relaxed reader), and a third atomic written by a bystander, which `dpor`
/// may not reorder away from the `SeqCst` clock.
pub fn message_passing_mixed() -> String {
    let data = Arc::new(AtomicUsize::new(0));
    let flag = Arc::new(AtomicUsize::new(0));
    let other = Arc::new(AtomicUsize::new(0));
    let (d, f, o) = (data.clone(), flag.clone(), other.clone());
    let writer = thread::spawn(move || {
        d.store(1, Release);
        f.store(1, Release);
        o.fetch_add(1, SeqCst);
    });
    let (d, f) = (data.clone(), flag.clone());
    let relaxed_reader = thread::spawn(move || {
        let seen = f.load(Relaxed);
        (seen, d.load(Relaxed))
    });
    other.fetch_add(10, SeqCst);
    let seen = flag.load(Acquire);
    let got = data.load(Relaxed);
    let (rs, rg) = relaxed_reader.join().unwrap();
    writer.join().unwrap();
    format!("{seen}{got} {rs}{rg}")
}

/// A wait not in a loop and a weak compare-exchange not retried: what each sees depends
/// on spurious events (a wakeup without the flag set, a CAS failing on a matching value).
pub fn spurious_events() -> String {
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let x = Arc::new(AtomicUsize::new(0));
    let (p, x2) = (pair.clone(), x.clone());
    let setter = thread::spawn(move || {
        let (m, cv) = &*p;
        *m.lock().unwrap() = true;
        cv.notify_one();
        x2.compare_exchange_weak(0, 1, SeqCst, SeqCst).is_ok()
    });
    let (m, cv) = &*pair;
    let g = m.lock().unwrap();
    let flag = if *g { true } else { *cv.wait(g).unwrap() };
    let swapped = setter.join().unwrap();
    format!("flag {flag}, cas {swapped}, x {}", x.load(SeqCst))
}

/// A thread parks until a flag is set and it is unparked, while another thread bumps its
/// own atomic: whether it had to park depends on who goes first.
pub fn park_handoff() -> String {
    let ready = Arc::new(AtomicUsize::new(0));
    let r = ready.clone();
    let parker = thread::spawn(move || {
        let mut parked = false;
        while r.load(SeqCst) == 0 {
            thread::park();
            parked = true;
        }
        parked
    });
    let bystander = thread::spawn(|| {
        let own = AtomicUsize::new(0);
        own.fetch_add(1, SeqCst);
        own.fetch_add(1, SeqCst);
    });
    ready.store(1, SeqCst);
    parker.thread().unpark();
    bystander.join().unwrap();
    let parked = parker.join().unwrap();
    format!("parked: {parked}")
}

/// A thread spins with `yield_now` until another has stored 1, 2 and 3 in turn, noting
/// each value it sees: which of them it catches depends on how the two interleave.
pub fn yield_spin() -> String {
    let x = Arc::new(AtomicUsize::new(0));
    let x2 = x.clone();
    let writer = thread::spawn(move || {
        for v in 1..=3 {
            x2.store(v, SeqCst);
        }
    });
    let mut seen = Vec::new();
    loop {
        let v = x.load(SeqCst);
        if seen.last() != Some(&v) {
            seen.push(v);
        }
        if v == 3 {
            break;
        }
        thread::yield_now();
    }
    writer.join().unwrap();
    format!("{seen:?}")
}

pub const ALL: &[(&str, fn() -> String)] = &[
    ("mutex_log", mutex_log),
    ("lost_update", lost_update),
    ("store_buffer", store_buffer),
    ("atomics_mostly_independent", atomics_mostly_independent),
    ("condvar_handoff", condvar_handoff),
    ("channel_order", channel_order),
    ("rwlock_read", rwlock_read),
    ("barrier_then_load", barrier_then_load),
    ("notify_all_handoff", notify_all_handoff),
    ("many_readers", many_readers),
    ("independent_writers", independent_writers),
    ("rwlock_readers", rwlock_readers),
    ("store_buffer_relaxed", store_buffer_relaxed),
    ("message_passing_mixed", message_passing_mixed),
    ("spurious_events", spurious_events),
    ("park_handoff", park_handoff),
    ("yield_spin", yield_spin),
];

