//! Threads waiting for a file descriptor to become readable: an epoll instance's wait, where
//! an async runtime's reactor (mio's, so tokio's) sleeps. The kernel, not the scheduler,
//! makes the descriptor ready, when some thread writes to an eventfd, pipe or socket the
//! instance watches. Virtual threads take turns on one OS thread, so that write happened
//! during the step just taken: the waiters' descriptors are looked at (`poll` without
//! waiting) at each decision while any wait, and a ready one's thread is woken there, at the
//! first decision after the write. Readiness that comes from outside the process (a child,
//! a remote peer) is waited for only when no thread can run (`REAL_WAIT_MS`).

/// A thread index (`execution::Tid`; named here, not imported, so this module sits below it).
type Tid = u32;

/// How long, in real time, an execution whose threads are all blocked, some on descriptors,
/// waits for the world outside the process to make one ready before it is a deadlock. In a
/// test whose I/O stays inside the process every write has already been seen, so this is
/// only paid by a real deadlock (a reactor nobody wakes) or real outside I/O.
pub(crate) const REAL_WAIT_MS: i32 = 2_000;

#[derive(Default)]
pub(crate) struct FdWaiters {
    waiting: Vec<(Tid, i32)>,
    /// Scratch for `poll`.
    fds: Vec<libc::pollfd>,
}

impl FdWaiters {
    pub fn add(&mut self, tid: Tid, fd: i32) {
        self.waiting.push((tid, fd));
    }

    pub fn remove(&mut self, tid: Tid) {
        self.waiting.retain(|&(t, _)| t != tid);
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    pub fn clear(&mut self) {
        self.waiting.clear();
    }

    /// Puts into `out` the waiters whose descriptor is readable (or in error: the wait's
    /// own call reports that), after waiting up to `timeout_ms` of real time for one.
    pub fn ready(&mut self, timeout_ms: i32, out: &mut Vec<Tid>) {
        self.fds.clear();
        self.fds
            .extend(self.waiting.iter().map(|&(_, fd)| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            }));
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs.
        let n = unsafe {
            libc::poll(
                self.fds.as_mut_ptr(),
                self.fds.len() as libc::nfds_t,
                timeout_ms,
            )
        };
        if n <= 0 {
            return;
        }
        let ready = self.fds.iter().map(|p| p.revents != 0);
        out.extend(
            self.waiting
                .iter()
                .zip(ready)
                .filter_map(|(&(t, _), r)| r.then_some(t)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_eventfd_makes_its_waiter_ready() {
        // SAFETY: plain system calls on descriptors this test owns.
        unsafe {
            let quiet = libc::eventfd(0, libc::EFD_NONBLOCK);
            let written = libc::eventfd(0, libc::EFD_NONBLOCK);
            let mut w = FdWaiters::default();
            w.add(3, quiet);
            w.add(7, written);
            let mut out = Vec::new();
            w.ready(0, &mut out);
            assert!(out.is_empty());
            let one: u64 = 1;
            libc::write(written, &one as *const u64 as *const libc::c_void, 8);
            w.ready(0, &mut out);
            assert_eq!(out, [7]);
            w.remove(7);
            out.clear();
            w.ready(0, &mut out);
            assert!(out.is_empty());
            libc::close(quiet);
            libc::close(written);
        }
    }
}
