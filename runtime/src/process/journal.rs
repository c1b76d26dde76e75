//! What an isolated execution leaves behind when it takes its process down (a segfault, an
//! abort, `process::exit`): the choices it had made, and in a traced replay the trace up to
//! that moment. Without them a crash under `dfs` or `dpor` had no schedule at all, and one
//! under a sampling strategy only its seed.
//!
//! The choices go into a file mapped shared, written as each is made: a store into the
//! page cache, which outlives the process whatever kills it, at the cost of a store per
//! choice (a `write(2)` per choice would cost about a microsecond). The trace is rarer (one
//! traced replay per failure) and goes a line at a time with `write(2)`, unbuffered, so the
//! line before the crash is on disk when it comes.
//!
//! Only a worker keeps one (`Role::Serve`); the parent reads it when the worker died.

use std::io::Write;
use std::path::{Path, PathBuf};

use pulse_protocol::json;
use pulse_protocol::trace::{self, Trace};

use crate::report::trace::TraceEvent;

/// One event of the traced replay, as a line of the trace journal: the trace file's event,
/// its thread's name, and its row in the report's table (none for a note).
#[derive(Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
struct Line {
    name: String,
    row: Option<TraceEvent>,
    event: trace::Event,
}

/// The choices file's header, in `u64` words: the number of choices, the last step known,
/// and whether a thread waited with a deadline.
const HEADER: usize = 24;
/// The choices file's first size; it doubles when full.
const FIRST_SIZE: usize = 64 * 1024;

/// Where a worker's journal goes, beside its reply file.
pub(crate) fn files(reply: &Path) -> [PathBuf; 2] {
    [
        reply.with_extension("choices"),
        reply.with_extension("trace"),
    ]
}

/// A worker's running record of its execution.
pub(crate) struct Journal {
    choices: Mapped,
    trace: std::fs::File,
}

impl Journal {
    /// Starts the journal of the execution serving `reply`; `None` if its files cannot be
    /// made (then a crash is reported as before, by its seed).
    pub(crate) fn create(reply: &Path) -> Option<Journal> {
        let [choices, trace] = files(reply);
        // Appending: after `clear` empties it, the next row goes at its start.
        let trace = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(trace)
            .ok()?;
        trace.set_len(0).ok()?;
        Some(Journal {
            choices: Mapped::create(&choices)?,
            trace,
        })
    }

    /// A new execution starts: nothing recorded yet.
    pub(crate) fn clear(&mut self) {
        for word in 0..HEADER / 8 {
            self.choices.set(word, 0);
        }
        let _ = self.trace.set_len(0);
    }

    /// The execution made `choice` at `step`.
    #[inline]
    pub(crate) fn choice(&mut self, choice: u32, step: u64) {
        self.choices.push(choice);
        self.choices.set(1, step);
    }

    /// The execution reached `step` (said every few thousand steps: a crash long after the
    /// last choice still tells its traced replay where to start).
    pub(crate) fn step(&mut self, step: u64) {
        self.choices.set(1, step);
    }

    /// A thread waited with a deadline (`ExecState::timed`): the time mode is part of the
    /// schedule.
    pub(crate) fn timed(&mut self) {
        self.choices.set(2, 1);
    }

    /// One event of the traced replay: the trace file's `event`, run by `name`, and its
    /// report row (`None` for a note, which the table leaves out).
    pub(crate) fn trace(&mut self, name: String, row: Option<TraceEvent>, event: trace::Event) {
        let mut line = json::to_string(&Line { name, row, event });
        line.push('\n');
        let _ = self.trace.write_all(line.as_bytes());
    }
}

/// What a dead worker's journal says.
pub(crate) struct Kept {
    pub choices: Vec<u32>,
    /// The last step the execution was known to reach.
    pub steps: u64,
    /// Whether a thread waited with a deadline.
    pub timed: bool,
    /// The traced replay's trace, its last `keep` rows.
    pub trace: Vec<TraceEvent>,
    /// The traced replay's trace file (`None` when no replay was traced), from the step it
    /// was traced from; its failing event is the last row's thread's last.
    pub full: Option<Trace>,
}

/// Reads the journal of the worker that served `reply`; `None` if it left none.
pub(crate) fn read(reply: &Path, keep: usize) -> Option<Kept> {
    let [choices, trace] = files(reply);
    let bytes = std::fs::read(choices).ok()?;
    let word = |i: usize| {
        let at = i * 8;
        bytes
            .get(at..at + 8)
            .map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
    };
    let (count, steps, timed) = (word(0)?, word(1)?, word(2)? != 0);
    let body = bytes.get(HEADER..).unwrap_or_default();
    let count = usize::try_from(count)
        .unwrap_or(usize::MAX)
        .min(body.len() / 4);
    let choices = body[..count * 4]
        .chunks_exact(4)
        .map(|c| u32::from_ne_bytes(c.try_into().expect("4 bytes")))
        .collect();
    let text = std::fs::read_to_string(trace).unwrap_or_default();
    // A line the crash cut short is left out.
    let lines: Vec<Line> = text
        .lines()
        .filter_map(|l| json::from_str(l).ok())
        .collect();
    let mut rows: Vec<TraceEvent> = lines.iter().filter_map(|l| l.row.clone()).collect();
    let rows = rows.split_off(rows.len().saturating_sub(keep));
    let full = (!lines.is_empty()).then(|| {
        let mut names: Vec<String> = Vec::new();
        for l in &lines {
            let id = l.event.thread as usize;
            if names.len() <= id {
                // A thread with no event since tracing began: named as pulse names one.
                names.extend(
                    (names.len()..=id).map(|t| crate::report::trace::thread_name(t as u32, None)),
                );
            }
            names[id].clone_from(&l.name);
        }
        // The thread of the last row the report shows.
        let thread = lines
            .iter()
            .rev()
            .find(|l| l.row.is_some())
            .map(|l| l.event.thread);
        let events = lines.into_iter().map(|l| l.event).collect();
        let failing = crate::report::trace_file::Failing {
            thread,
            panicked_after: None,
        };
        crate::report::trace_file::assemble(events, names, failing, 0)
    });
    Some(Kept {
        choices,
        steps,
        timed,
        trace: rows,
        full,
    })
}

/// A file of `u64` header words and `u32` choices, mapped shared.
struct Mapped {
    file: std::fs::File,
    ptr: *mut u8,
    size: usize,
    /// Choices written (mirrors header word 0).
    len: usize,
}

impl Mapped {
    #[cfg(unix)]
    fn create(path: &Path) -> Option<Mapped> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .ok()?;
        let mut mapped = Mapped {
            file,
            ptr: std::ptr::null_mut(),
            size: 0,
            len: 0,
        };
        mapped.resize(FIRST_SIZE).then_some(mapped)
    }

    #[cfg(not(unix))]
    fn create(_: &Path) -> Option<Mapped> {
        None
    }

    /// Grows the file to `size` bytes and maps all of it; false if that fails.
    #[cfg(unix)]
    fn resize(&mut self, size: usize) -> bool {
        use std::os::fd::AsRawFd;
        if self.file.set_len(size as u64).is_err() {
            return false;
        }
        // SAFETY: maps a file this struct owns, shared and read-write, at a fresh address;
        // the old mapping (if any) is unmapped once the new one exists, and nothing else
        // holds a pointer into it.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                self.file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return false;
        }
        self.unmap();
        self.ptr = ptr.cast();
        self.size = size;
        true
    }

    #[cfg(not(unix))]
    fn resize(&mut self, _: usize) -> bool {
        false
    }

    fn unmap(&mut self) {
        #[cfg(unix)]
        if !self.ptr.is_null() {
            // SAFETY: `ptr` and `size` are a mapping this struct made and no one else uses.
            unsafe { libc::munmap(self.ptr.cast(), self.size) };
            self.ptr = std::ptr::null_mut();
        }
    }

    /// Sets header word `i`.
    #[inline]
    fn set(&mut self, i: usize, value: u64) {
        debug_assert!(i < HEADER / 8);
        if i == 0 {
            self.len = value as usize;
        }
        // SAFETY: the mapping is at least `HEADER` bytes, 8-aligned (page-aligned start).
        // Volatile: the store must reach the page before a crash, not be kept in a register.
        unsafe { self.ptr.cast::<u64>().add(i).write_volatile(value) }
    }

    #[inline]
    fn push(&mut self, choice: u32) {
        let at = HEADER + self.len * 4;
        if at + 4 > self.size && !self.resize(self.size * 2) {
            // Out of room (a full disk): the choices so far stay, the rest are not kept.
            return;
        }
        // SAFETY: `at + 4 <= size`, 4-aligned (the header is 24 bytes).
        unsafe { self.ptr.add(at).cast::<u32>().write_volatile(choice) }
        self.set(0, self.len as u64 + 1);
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        self.unmap();
    }
}

// SAFETY: the mapping is owned by this struct alone, like a `Vec`'s buffer.
unsafe impl Send for Mapped {}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn choices_and_trace_rows_are_read_back_past_a_resize() {
        let reply = std::env::temp_dir().join(format!("pulse-journal-{}.json", std::process::id()));
        let mut journal = Journal::create(&reply).expect("journal");
        journal.choice(9, 1);
        journal.trace("main".into(), None, trace::Event::default());
        journal.clear();
        let many = FIRST_SIZE; // more choices than the first size holds
        for i in 0..many {
            journal.choice(i as u32 % 7, 2 * i as u64);
        }
        journal.step(5 * many as u64);
        journal.timed();
        for step in 0..3 {
            let event = trace::Event {
                step,
                thread: 1,
                ..Default::default()
            };
            let row = TraceEvent {
                step,
                thread: "worker".into(),
                ..Default::default()
            };
            journal.trace("worker".into(), Some(row), event.clone());
            // A note: in the trace file, not in the report's table.
            journal.trace("worker".into(), None, event);
        }
        drop(journal);
        let all = read(&reply, 10).expect("kept");
        let kept = read(&reply, 2).expect("kept");
        for f in files(&reply) {
            std::fs::remove_file(f).unwrap();
        }
        assert_eq!(kept.choices.len(), many);
        assert!(kept
            .choices
            .iter()
            .enumerate()
            .all(|(i, &c)| c == i as u32 % 7));
        assert_eq!(kept.steps, 5 * many as u64);
        assert!(kept.timed);
        let steps = |k: &Kept| k.trace.iter().map(|e| e.step).collect::<Vec<u64>>();
        // The row written before `clear` is gone, and nothing is left where it was.
        assert_eq!(steps(&all), [0, 1, 2]);
        assert_eq!(steps(&kept), [1, 2]);
        // The trace file has every event, notes too, and names the threads it saw.
        let full = kept.full.expect("a traced replay's trace file");
        assert_eq!(full.events.len(), 6);
        let names: Vec<&str> = full.threads.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["main", "worker"]);
        assert_eq!(full.failing_event, Some(5));
    }
}
