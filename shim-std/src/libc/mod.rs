//! The C library as instrumented code calls it: all of the `libc` crate, re-exported, with
//! the calls that wait for I/O readiness scheduled (`epoll`, Linux) and `clock_gettime` on
//! pulse's clock (`clock`). The instrumenter rewrites `libc::` to this module where such a
//! call is named (`libc::epoll_wait(..)`, `libc::clock_gettime(..)`) and in a
//! `macro_rules!` body that calls `libc::$f(..)` (mio's and polling 2's `syscall!`), so an
//! async runtime's reactor (mio's, so tokio's) waits in the scheduler, not in the kernel,
//! and a TSC clock's calibration reads the virtual clock.

pub use ::libc::*;

mod clock;
#[cfg(any(target_os = "linux", target_os = "android"))]
mod epoll;
#[cfg(any(target_os = "linux", target_os = "android"))]
mod readiness;

pub use clock::clock_gettime;
#[cfg(any(target_os = "linux", target_os = "android"))]
pub use epoll::{epoll_pwait, epoll_wait};
#[cfg(any(target_os = "linux", target_os = "android"))]
pub use readiness::{ready_by, WaitLimit};
