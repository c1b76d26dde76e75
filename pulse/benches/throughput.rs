//! Executions per second and nanoseconds per scheduling decision on issue #2's programs:
//! the 2-thread x 10-increment Mutex counter and a 4-thread mpsc pipeline. Run with
//! `cargo bench -p pulse --bench throughput`. (bench/ compares with loom and shuttle.)

use pulse::std::sync::mpsc;
use pulse::std::sync::{Arc, Mutex};
use pulse::std::thread;
use pulse::{Builder, Strategy};
use std::time::Duration;

fn counter() {
    let n = Arc::new(Mutex::new(0));
    let hs: Vec<_> = (0..2)
        .map(|_| {
            let n = n.clone();
            thread::spawn(move || {
                for _ in 0..10 {
                    *n.lock().unwrap() += 1;
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(*n.lock().unwrap(), 20);
}

/// source -> stage -> stage -> sink, 5 messages, each stage its own thread.
fn pipeline() {
    let (tx, mut rx) = mpsc::channel::<u32>();
    let source = thread::spawn(move || (0..5).for_each(|i| tx.send(i).unwrap()));
    let mut stages = Vec::new();
    for _ in 0..2 {
        let (next_tx, next_rx) = mpsc::channel();
        let input = std::mem::replace(&mut rx, next_rx);
        stages.push(thread::spawn(move || input.iter().for_each(|v| next_tx.send(v + 1).unwrap())));
    }
    let sink = thread::spawn(move || rx.iter().sum::<u32>());
    assert_eq!(sink.join().unwrap(), 20);
    source.join().unwrap();
    stages.into_iter().for_each(|s| s.join().unwrap());
}

fn measure(name: &str, strategy: Strategy, f: fn()) {
    let min_time = Duration::from_secs(2);
    let mut best: Option<(f64, f64, u64)> = None;
    for _ in 0..3 {
        let report = Builder::new().schedules(u64::MAX).seed(1).strategy(strategy.clone()).run_for(min_time, f);
        assert!(report.passed());
        let secs = report.elapsed.as_secs_f64();
        let execs = report.executions as f64 / secs;
        let ns = secs * 1e9 / report.decisions as f64;
        if best.is_none_or(|(e, _, _)| execs > e) {
            best = Some((execs, ns, report.decisions / report.executions));
        }
    }
    let (execs, ns, per) = best.unwrap();
    println!("| {name:<28} | {strategy:<6} | {execs:>12.0} | {ns:>8.1} | {per:>9} |");
}

fn main() {
    println!("| program                      | strat. | executions/s | ns/dec.  | dec./exec |");
    println!("|------------------------------|--------|--------------|----------|-----------|");
    measure("mutex counter 2x10", Strategy::Random, counter);
    measure("mutex counter 2x10", Strategy::Pct { depth: 3 }, counter);
    measure("mpsc pipeline 4 threads", Strategy::Random, pipeline);
    measure("mpsc pipeline 4 threads", Strategy::Pct { depth: 3 }, pipeline);
}
