//! pulse_time §2.1.8's lift-system bug, small: a service boots in the background (its
//! dispatcher starts workers, which register themselves), and the first command is sent
//! 1 ms after `start` returns, "booting takes microseconds".
//!
//! `buggy::Service::start` returns before booting is done, so a slow boot (a loaded
//! machine) meets a command with no worker to run it. `fixed::Service::start` returns
//! only once every worker is registered.

use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

pub const WORKERS: usize = 3;

/// Workers register their job queues here as they come up.
#[derive(Default)]
struct Registry {
    workers: Mutex<Vec<Sender<u64>>>,
    complete: Condvar,
}

impl Registry {
    /// Boots the workers from a dispatcher thread; each registers its queue when ready.
    fn boot(self: &Arc<Self>, done: Sender<u64>) {
        let registry = self.clone();
        thread::spawn(move || {
            for _ in 0..WORKERS {
                let (tx, rx) = mpsc::channel::<u64>();
                let done = done.clone();
                thread::spawn(move || {
                    for job in rx {
                        done.send(job).unwrap();
                    }
                });
                registry.workers.lock().unwrap().push(tx);
            }
            registry.complete.notify_all();
        });
    }

    fn submit(&self, job: u64) {
        let workers = self.workers.lock().unwrap();
        let worker = workers
            .get(job as usize % WORKERS)
            .expect("a command arrived before its worker was up");
        worker.send(job).unwrap();
    }
}

pub struct Service {
    registry: Arc<Registry>,
}

pub mod buggy {
    use super::*;

    impl Service {
        pub fn start(done: Sender<u64>) -> Service {
            let registry = Arc::new(Registry::default());
            registry.boot(done);
            // BUG: booting goes on in the background; nothing waits for it.
            Service { registry }
        }
    }
}

pub mod fixed {
    use super::*;

    pub fn start(done: Sender<u64>) -> Service {
        let registry = Arc::new(Registry::default());
        registry.boot(done);
        let mut workers = registry.workers.lock().unwrap();
        while workers.len() < WORKERS {
            workers = registry.complete.wait(workers).unwrap();
        }
        drop(workers);
        Service { registry }
    }
}

impl Service {
    pub fn submit(&self, job: u64) {
        self.registry.submit(job);
    }
}

fn scenario(start: fn(Sender<u64>) -> Service) {
    let (done_tx, done_rx) = mpsc::channel();
    let service = start(done_tx);
    thread::sleep(Duration::from_millis(1));
    for job in 0..WORKERS as u64 {
        service.submit(job);
    }
    let mut finished: Vec<u64> = done_rx.iter().take(WORKERS).collect();
    finished.sort();
    assert_eq!(finished, [0, 1, 2]);
}

pub fn scenario_buggy() {
    scenario(Service::start);
}

pub fn scenario_fixed() {
    scenario(fixed::start);
}
