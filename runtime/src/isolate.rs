//! Executions in forked child processes, for tests that keep state in statics (a counter,
//! a cache, a registry): run many times in one process, a later schedule sees what earlier
//! ones left and fails for that reason alone.
//!
//! A *zygote* is forked when a run starts, before the test's code has run at all. It waits
//! for requests; for each it forks a worker, which runs one execution from that pristine
//! state and writes its outcome back (length-prefixed JSON) on a pipe. If the worker dies
//! without answering, the zygote answers for it. Forking costs ~0.1 ms, so the run only
//! pays it once it knows the test needs it.

use std::fs::File;
use std::io::{Read, Write};

use serde::{de::DeserializeOwned, Deserialize, Serialize};

#[cfg(unix)]
pub(crate) const SUPPORTED: bool = true;
#[cfg(not(unix))]
pub(crate) const SUPPORTED: bool = false;

/// A worker's answer.
#[derive(Serialize, Deserialize)]
pub(crate) enum Reply<T> {
    Done(T),
    /// The worker died without answering: how, and whether its watchdog reported a blocked
    /// thread (then it also wrote its own report).
    Died { how: String, blocked: bool },
}

pub(crate) struct Zygote {
    #[cfg(unix)]
    pid: libc::pid_t,
    /// Closed on drop, which ends the zygote's loop.
    requests: Option<File>,
    replies: File,
}

fn write_message<T: Serialize>(out: &mut File, value: &T) -> bool {
    let Ok(bytes) = serde_json::to_vec(value) else { return false };
    out.write_all(&(bytes.len() as u64).to_le_bytes()).is_ok() && out.write_all(&bytes).is_ok() && out.flush().is_ok()
}

fn read_message<T: DeserializeOwned>(input: &mut File) -> Option<T> {
    let mut len = [0u8; 8];
    input.read_exact(&mut len).ok()?;
    let mut bytes = vec![0u8; u64::from_le_bytes(len) as usize];
    input.read_exact(&mut bytes).ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[cfg(unix)]
impl Zygote {
    /// Forks the zygote; each request it receives is served by `serve` in a fresh worker.
    /// `None` if the OS refused.
    pub(crate) fn start<Req, Res>(mut serve: impl FnMut(Req) -> Res) -> Option<Zygote>
    where
        Req: Serialize + DeserializeOwned,
        Res: Serialize + DeserializeOwned,
    {
        use std::os::fd::FromRawFd;
        let (mut req, mut rep) = ([0; 2], [0; 2]);
        // No other zygote may be forked between our pipe() and the parent's close() of the
        // ends it does not keep, or that zygote would hold them open. Close-on-exec keeps
        // them out of processes the test spawns.
        static FORKING: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _forking = FORKING.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: plain pipe/fork/waitpid/_exit; children never return into the caller.
        unsafe {
            if libc::pipe2(req.as_mut_ptr(), libc::O_CLOEXEC) != 0 || libc::pipe2(rep.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
                return None;
            }
            let pid = libc::fork();
            if pid < 0 {
                return None;
            }
            if pid == 0 {
                die_with_parent();
                libc::close(req[1]);
                libc::close(rep[0]);
                let mut requests = File::from_raw_fd(req[0]);
                let mut replies = File::from_raw_fd(rep[1]);
                while let Some(request) = read_message::<Req>(&mut requests) {
                    let worker = libc::fork();
                    if worker == 0 {
                        die_with_parent();
                        let answered = write_message(&mut replies, &Reply::Done(serve(request)));
                        libc::_exit(if answered { 0 } else { 1 });
                    }
                    let mut status = 0;
                    libc::waitpid(worker, &mut status, 0);
                    if worker < 0 || !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
                        let died: Reply<Res> = Reply::Died { how: describe(worker, status), blocked: blocked(status) };
                        write_message(&mut replies, &died);
                    }
                }
                libc::_exit(0);
            }
            libc::close(req[0]);
            libc::close(rep[1]);
            Some(Zygote { pid, requests: Some(File::from_raw_fd(req[1])), replies: File::from_raw_fd(rep[0]) })
        }
    }

    /// Serves one request in a fresh worker.
    pub(crate) fn run<Req: Serialize, Res: DeserializeOwned>(&mut self, request: &Req) -> Reply<Res> {
        let sent = self.requests.as_mut().is_some_and(|r| write_message(r, request));
        if !sent {
            return Reply::Died { how: "the isolation process is gone".into(), blocked: false };
        }
        read_message(&mut self.replies)
            .unwrap_or(Reply::Died { how: "the isolation process did not answer".into(), blocked: false })
    }
}

/// Ends this child when the thread that forked it goes (even if killed without running
/// any destructor), so no zygote outlives its run.
#[cfg(unix)]
fn die_with_parent() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with constant arguments.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
    }
}

#[cfg(unix)]
fn describe(worker: libc::pid_t, status: libc::c_int) -> String {
    if worker < 0 {
        format!("fork failed: {}", std::io::Error::last_os_error())
    } else if libc::WIFSIGNALED(status) {
        format!("the execution crashed its process (signal {})", libc::WTERMSIG(status))
    } else {
        format!("the execution's process exited with status {}", libc::WEXITSTATUS(status))
    }
}

#[cfg(unix)]
fn blocked(status: libc::c_int) -> bool {
    libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == crate::watchdog::BLOCKED_EXIT_CODE
}

#[cfg(unix)]
impl Drop for Zygote {
    fn drop(&mut self) {
        // Killed, not told: a zygote forked later by another thread may hold a copy of our
        // request pipe, so closing it need not reach this one. It keeps no state worth saving.
        self.requests.take();
        let mut status = 0;
        // SAFETY: our own child, idle between requests.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            libc::waitpid(self.pid, &mut status, 0);
        }
    }
}

#[cfg(not(unix))]
impl Zygote {
    pub(crate) fn start<Req, Res>(_serve: impl FnMut(Req) -> Res) -> Option<Zygote> {
        None
    }
    pub(crate) fn run<Req: Serialize, Res: DeserializeOwned>(&mut self, _request: &Req) -> Reply<Res> {
        unreachable!("no zygote without unix")
    }
}
