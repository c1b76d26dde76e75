//! A bank account whose `withdraw` checks the balance in one critical section and writes
//! the new balance in another. Between the two, another thread can change the balance:
//! two withdrawals both see the old balance (overdraft), or a deposit is overwritten
//! (lost deposit).
//!
//! `BuggyAccount` has the bug, `Account` is the fixed twin. `scenario_buggy` and
//! `scenario_fixed` run the same concurrent scenario against each.

use std::sync::{Arc, Mutex};
use std::thread;

/// The buggy account: `withdraw` is check-then-act across two critical sections.
pub struct BuggyAccount {
    balance: Mutex<u64>,
}

impl BuggyAccount {
    pub fn new(balance: u64) -> Self {
        BuggyAccount { balance: Mutex::new(balance) }
    }

    pub fn balance(&self) -> u64 {
        *self.balance.lock().unwrap()
    }

    pub fn deposit(&self, amount: u64) {
        *self.balance.lock().unwrap() += amount;
    }

    /// Withdraws `amount` if the balance covers it; returns whether it did.
    pub fn withdraw(&self, amount: u64) -> bool {
        // Critical section 1: read the balance. The guard is a temporary and is dropped
        // at the end of this statement, so the lock is released here.
        let current = *self.balance.lock().unwrap();
        if current < amount {
            return false;
        }
        // BUG: another thread may have withdrawn or deposited since we read `current`.
        // Critical section 2: write a balance computed from the stale read.
        *self.balance.lock().unwrap() = current - amount;
        true
    }
}

/// The fixed account: the check and the update happen under one guard.
pub struct Account {
    balance: Mutex<u64>,
}

impl Account {
    pub fn new(balance: u64) -> Self {
        Account { balance: Mutex::new(balance) }
    }

    pub fn balance(&self) -> u64 {
        *self.balance.lock().unwrap()
    }

    pub fn deposit(&self, amount: u64) {
        *self.balance.lock().unwrap() += amount;
    }

    /// Withdraws `amount` if the balance covers it; returns whether it did.
    pub fn withdraw(&self, amount: u64) -> bool {
        let mut balance = self.balance.lock().unwrap();
        if *balance < amount {
            return false;
        }
        *balance -= amount;
        true
    }
}

const PAYROLL: u64 = 130;
const RENT: u64 = 30;
const PURCHASE: u64 = 60;

/// The operations the scenario needs, so one scenario drives both accounts.
trait Bank: Send + Sync + 'static {
    fn deposit(&self, amount: u64);
    fn withdraw(&self, amount: u64) -> bool;
    fn balance(&self) -> u64;
}

impl Bank for BuggyAccount {
    fn deposit(&self, amount: u64) {
        BuggyAccount::deposit(self, amount)
    }
    fn withdraw(&self, amount: u64) -> bool {
        BuggyAccount::withdraw(self, amount)
    }
    fn balance(&self) -> u64 {
        BuggyAccount::balance(self)
    }
}

impl Bank for Account {
    fn deposit(&self, amount: u64) {
        Account::deposit(self, amount)
    }
    fn withdraw(&self, amount: u64) -> bool {
        Account::withdraw(self, amount)
    }
    fn balance(&self) -> u64 {
        Account::balance(self)
    }
}

/// Payroll (130) and rent (30) go through first, leaving 100. Then two card purchases of
/// 60 are charged at once: one on the main thread, one on another thread. Money must be
/// conserved: final balance = 130 - 30 - 60 * (successful purchases).
fn scenario<A: Bank>(account: A) {
    let account = Arc::new(account);
    account.deposit(PAYROLL);
    assert!(account.withdraw(RENT), "rent bounced");

    let other_purchase = {
        let account = Arc::clone(&account);
        thread::spawn(move || account.withdraw(PURCHASE))
    };
    let this_purchase = account.withdraw(PURCHASE);
    let other_purchase = other_purchase.join().expect("purchase thread panicked");

    let successes = u64::from(this_purchase) + u64::from(other_purchase);
    let expected = (PAYROLL - RENT).checked_sub(PURCHASE * successes);
    let balance = account.balance();
    assert_eq!(
        Some(balance),
        expected,
        "money not conserved: {} left after payroll and rent, {successes} purchase(s) of \
         {PURCHASE} succeeded, but the balance is {balance}",
        PAYROLL - RENT
    );
}

/// Runs the scenario against `BuggyAccount`; panics when the race fires.
pub fn scenario_buggy() {
    scenario(BuggyAccount::new(0));
}

/// Runs the scenario against the fixed `Account`; never panics.
pub fn scenario_fixed() {
    scenario(Account::new(0));
}
