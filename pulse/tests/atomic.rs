//! `pulse::atomic` and `#[pulse::atomic]`: code marked atomic runs as one scheduling step
//! (PULSE §5.3), so a read-then-write split over two critical sections that loses updates
//! when interleaved never does inside an atomic region — and it still runs outside pulse.

use pulse::std::sync::{Arc, Mutex};
use pulse::std::thread;
use pulse::{Builder, FailureKind};

/// Two critical sections: another thread can slip in between them.
fn racy_increment(n: &Mutex<u32>) {
    let v = *n.lock().unwrap();
    *n.lock().unwrap() = v + 1;
}

#[pulse::atomic]
fn atomic_increment(n: &Mutex<u32>) {
    racy_increment(n)
}

struct Counter(Mutex<u32>);

#[pulse::atomic]
impl Counter {
    fn bump(&self) -> u32 {
        racy_increment(&self.0);
        *self.0.lock().unwrap()
    }
}

fn two_threads(increment: fn(&Mutex<u32>)) -> pulse::Report {
    Builder::new().schedules(1000).seed(4).run(move || {
        let n = Arc::new(Mutex::new(0));
        let t = {
            let n = n.clone();
            thread::spawn(move || increment(&n))
        };
        increment(&n);
        t.join().unwrap();
        assert_eq!(*n.lock().unwrap(), 2);
    })
}

#[test]
fn the_race_is_found_without_atomic() {
    let f = two_threads(racy_increment)
        .failure
        .expect("lost update found");
    assert_eq!(f.kind, FailureKind::Panic);
}

#[test]
fn the_function_form_makes_it_one_step() {
    let report = two_threads(|n| pulse::atomic(|| racy_increment(n)));
    assert!(report.passed(), "{}", report.failure.unwrap());
}

#[test]
fn the_attribute_on_a_fn_makes_it_one_step() {
    let report = two_threads(atomic_increment);
    assert!(report.passed(), "{}", report.failure.unwrap());
}

#[test]
fn the_attribute_on_an_impl_covers_its_methods() {
    let report = Builder::new().schedules(1000).seed(4).run(|| {
        let c = Arc::new(Counter(Mutex::new(0)));
        let t = {
            let c = c.clone();
            thread::spawn(move || c.bump())
        };
        c.bump();
        t.join().unwrap();
        assert_eq!(*c.0.lock().unwrap(), 2);
    });
    assert!(report.passed(), "{}", report.failure.unwrap());
}

#[test]
fn atomic_code_runs_normally_outside_pulse() {
    let n = Mutex::new(0);
    atomic_increment(&n);
    assert_eq!(pulse::atomic(|| *n.lock().unwrap() + 1), 2);
    assert_eq!(Counter(Mutex::new(5)).bump(), 6);
}
