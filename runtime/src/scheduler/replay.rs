//! Replays a recorded schedule choice by choice, and says so when the program no longer
//! matches it.

use super::{ChoiceKind, Scheduler};
use pulse_protocol::Schedule;

pub struct ReplayScheduler {
    choices: Vec<u32>,
    next: usize,
    ran: bool,
}

impl ReplayScheduler {
    pub fn new(schedule: &Schedule) -> Self {
        ReplayScheduler {
            choices: schedule.choices.clone(),
            next: 0,
            ran: false,
        }
    }

    fn take(&mut self) -> Option<u32> {
        let c = self.choices.get(self.next).copied();
        self.next += 1;
        c
    }
}

impl Scheduler for ReplayScheduler {
    fn new_execution(&mut self, _seed: u64) -> bool {
        let first = !self.ran;
        self.ran = true;
        self.next = 0;
        first
    }

    fn next_thread(
        &mut self,
        runnable: &[u32],
        _current: Option<u32>,
        _yielding: bool,
    ) -> Option<u32> {
        self.take().filter(|c| runnable.contains(c))
    }

    fn next_read(&mut self, stores: u32) -> Option<u32> {
        self.take().filter(|&c| c < stores)
    }

    fn next_word(&mut self) -> Option<u32> {
        self.take()
    }

    fn ran_out(&self) -> bool {
        self.next > self.choices.len()
    }

    fn next_bool(&mut self, _kind: ChoiceKind) -> Option<bool> {
        match self.take() {
            Some(0) => Some(false),
            Some(1) => Some(true),
            _ => None,
        }
    }
}
