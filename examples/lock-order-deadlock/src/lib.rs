//! Transfers between two accounts that lock both balances. `buggy::transfer` locks the
//! source first and the destination second, so `transfer(a, b)` and `transfer(b, a)` take
//! the two locks in opposite orders (AB/BA): if each thread gets its first lock before the
//! other gets its second, both wait forever.
//!
//! `fixed::transfer` always locks the account with the smaller id first (a global lock
//! order), so no cycle of waiting threads can form.

use std::sync::{Arc, Mutex};
use std::thread;

pub struct Account {
    id: u32,
    balance: Mutex<i64>,
}

impl Account {
    pub fn new(id: u32, balance: i64) -> Self {
        Account { id, balance: Mutex::new(balance) }
    }

    pub fn id(&self) -> u32 {
        self.id
    }

    pub fn balance(&self) -> i64 {
        *self.balance.lock().unwrap()
    }
}

pub mod buggy {
    use super::Account;

    /// Moves `amount` from `from` to `to`, locking in argument order.
    pub fn transfer(from: &Account, to: &Account, amount: i64) {
        assert_ne!(from.id, to.id, "transfer to the same account");
        let mut source = from.balance.lock().unwrap();
        // BUG: a concurrent transfer(to, from) may hold `to` and be waiting for `from`.
        let mut destination = to.balance.lock().unwrap();
        *source -= amount;
        *destination += amount;
    }
}

pub mod fixed {
    use super::Account;

    /// Moves `amount` from `from` to `to`, locking the lower id first.
    pub fn transfer(from: &Account, to: &Account, amount: i64) {
        assert_ne!(from.id, to.id, "transfer to the same account");
        let (first, second) = if from.id < to.id { (from, to) } else { (to, from) };
        let mut first = first.balance.lock().unwrap();
        let mut second = second.balance.lock().unwrap();
        let (source, destination) = if from.id < to.id {
            (&mut *first, &mut *second)
        } else {
            (&mut *second, &mut *first)
        };
        *source -= amount;
        *destination += amount;
    }
}

/// The employer pays Alice 50. Then Alice (on the main thread) pays Bob 10 while Bob (on
/// another thread) pays Alice 20. Both transfers must finish and the balances add up.
fn scenario(transfer: fn(&Account, &Account, i64)) {
    let employer = Account::new(0, 1000);
    let alice = Arc::new(Account::new(1, 100));
    let bob = Arc::new(Account::new(2, 100));
    transfer(&employer, &alice, 50);

    let bob_pays = {
        let (alice, bob) = (Arc::clone(&alice), Arc::clone(&bob));
        thread::spawn(move || transfer(&bob, &alice, 20))
    };
    transfer(&alice, &bob, 10);
    bob_pays.join().expect("bob's transfer panicked");

    assert_eq!(employer.balance(), 950);
    assert_eq!(alice.balance(), 160);
    assert_eq!(bob.balance(), 90);
}

/// Runs the scenario with `buggy::transfer`; deadlocks when the race fires.
pub fn scenario_buggy() {
    scenario(buggy::transfer);
}

/// Runs the scenario with `fixed::transfer`; always completes.
pub fn scenario_fixed() {
    scenario(fixed::transfer);
}
