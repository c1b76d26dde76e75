// Each test binary uses what it needs of this module.
#![allow(dead_code)]

//! Child processes for tests whose subject takes its process down (an abort, a stack
//! overflow) or might hang: never waited for without a deadline.

use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `command` to its end, or kills it after `limit` and panics with what it printed.
pub fn run_with_deadline(command: &mut Command, limit: Duration) -> Finished {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let readers = [
        std::thread::spawn(move || read_all(&mut out)),
        std::thread::spawn(move || read_all(&mut err)),
    ];
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let [stdout, stderr] = readers.map(|r| r.join().unwrap());
    let status =
        status.unwrap_or_else(|| panic!("the child hung for {limit:?}\n{stdout}\n{stderr}"));
    Finished {
        status,
        stdout,
        stderr,
    }
}

fn read_all(r: &mut impl Read) -> String {
    let mut s = String::new();
    let _ = r.read_to_string(&mut s);
    s
}
