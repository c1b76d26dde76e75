//! A virtual thread that overflows its stack gets std's message, not a bare SIGSEGV.
//!
//! std's handler only knows the guard pages of OS threads. This one, chained in front of
//! it, checks whether a fault hit the guard page of the coroutine stack being run (kept in
//! a thread-local at every resume); if so it says so, as std does, and aborts. Any other
//! fault is handed back to the previous handler.

use std::cell::Cell;
use std::sync::Once;

thread_local! {
    /// The guard page `[start, end)` of the coroutine stack running on this OS thread.
    static GUARD: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// The guard page of a stack whose mapping starts at `limit` (corosensei's
/// `Stack::limit`): computed once per stack, not per resume.
pub(crate) fn guard_of(limit: usize) -> (usize, usize) {
    (limit, limit + page_size())
}

/// Notes `guard` as the guard page of the stack now running (`(0, 0)`: none).
#[inline]
pub(crate) fn set_running(guard: (usize, usize)) {
    GUARD.with(|g| g.set(guard));
}

#[cfg(unix)]
fn page_size() -> usize {
    // SAFETY: sysconf with a constant.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

#[cfg(not(unix))]
fn page_size() -> usize {
    4096
}

static INSTALL: Once = Once::new();

#[cfg(unix)]
mod handler {
    use super::GUARD;
    use std::sync::atomic::{AtomicPtr, Ordering};

    static PREVIOUS_SEGV: AtomicPtr<libc::sigaction> = AtomicPtr::new(std::ptr::null_mut());
    static PREVIOUS_BUS: AtomicPtr<libc::sigaction> = AtomicPtr::new(std::ptr::null_mut());

    const MESSAGE: &[u8] = b"\npulse: a virtual thread has overflowed its stack; give it more with \
PULSE_STACK_SIZE=<bytes> (Builder::stack_size) or thread::Builder::stack_size\nfatal runtime error: stack overflow, aborting\n";

    extern "C" fn on_fault(
        signal: libc::c_int,
        info: *mut libc::siginfo_t,
        _context: *mut libc::c_void,
    ) {
        // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
        let addr = unsafe { (*info).si_addr() } as usize;
        let (start, end) = GUARD.try_with(|g| g.get()).unwrap_or((0, 0));
        if start <= addr && addr < end {
            // SAFETY: write(2) and abort are async-signal-safe.
            unsafe {
                libc::write(2, MESSAGE.as_ptr().cast(), MESSAGE.len());
                libc::abort();
            }
        }
        // Not ours: put the previous handler back; the faulting instruction runs again and
        // faults into it.
        let previous = if signal == libc::SIGSEGV {
            &PREVIOUS_SEGV
        } else {
            &PREVIOUS_BUS
        };
        let p = previous.load(Ordering::Acquire);
        // SAFETY: `p` is a leaked, never-freed sigaction, or null.
        unsafe {
            if p.is_null() {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &default, std::ptr::null_mut());
            } else {
                libc::sigaction(signal, p, std::ptr::null_mut());
            }
        }
    }

    pub(super) fn install() {
        for (signal, previous) in [
            (libc::SIGSEGV, &PREVIOUS_SEGV),
            (libc::SIGBUS, &PREVIOUS_BUS),
        ] {
            // SAFETY: installs a handler that only reads a thread-local and calls
            // async-signal-safe functions; the old action is kept (leaked) for chaining.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_fault
                    as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void)
                    as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                let old = Box::into_raw(Box::new(std::mem::zeroed::<libc::sigaction>()));
                if libc::sigaction(signal, &action, old) == 0 {
                    previous.store(old, Ordering::Release);
                }
            }
        }
    }
}

/// Installs the handler once per process (std's alternate signal stacks, set up for every
/// thread std starts, give it room to run).
pub(crate) fn install() {
    #[cfg(unix)]
    INSTALL.call_once(handler::install);
}
