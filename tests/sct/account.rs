//! A bank account (SCTBench CS/account): `deposit` and `withdraw` each lock the balance, but
//! the buggy `withdraw` reads it in one critical section and writes it in another, so a
//! deposit in between is lost.

use std::sync::{Arc, Mutex};
use std::thread;

fn withdraw_buggy(balance: &Mutex<i64>, amount: i64) {
    let read = *balance.lock().unwrap();
    *balance.lock().unwrap() = read - amount;
}

fn withdraw_fixed(balance: &Mutex<i64>, amount: i64) {
    *balance.lock().unwrap() -= amount;
}

fn run(withdraw: fn(&Mutex<i64>, i64)) {
    let balance = Arc::new(Mutex::new(100));
    let b = balance.clone();
    let depositor = thread::spawn(move || {
        *b.lock().unwrap() += 50;
    });
    withdraw(&balance, 30);
    depositor.join().unwrap();
    assert_eq!(*balance.lock().unwrap(), 120, "money appeared or vanished");
}

pub fn buggy(_n: usize) {
    run(withdraw_buggy)
}

pub fn fixed(_n: usize) {
    run(withdraw_fixed)
}
