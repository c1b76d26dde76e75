//! std's concurrency API — `sync` (locks, condvars, atomics, channels, once cells),
//! `thread` and `time` — signature for signature, routed to pulse's scheduler, and the
//! constructors of std's hash collections with their hash keys a scheduler choice
//! (`collections`).
//!
//! Instrumented code reaches this crate as `::pulse::std::…` in place of `std::…`. Inside
//! a pulse execution every operation is a scheduling point and every nondeterminism std
//! allows (which waiter wins a lock, spurious wakeups, weak CAS failures, message order
//! between senders, timeouts, a hash map's order) is a scheduler choice. Outside one, each
//! type behaves exactly like std's, so instrumented code still runs normally.

#[doc(hidden)]
pub mod arch;
pub mod collections;
#[cfg(any(target_os = "linux", target_os = "android"))]
#[doc(hidden)]
pub mod futex;
pub mod hint;
#[cfg(unix)]
#[doc(hidden)]
pub mod libc;
mod rt;
pub mod sync;
pub mod thread;
pub mod time;

/// Declares thread-local storage that is per *virtual* thread under pulse (all virtual
/// threads share one OS thread, so std's `thread_local!` would be shared by all of them).
#[macro_export]
macro_rules! thread_local {
    () => {};
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = const { $init:expr }; $($rest:tt)*) => {
        $crate::__thread_local_inner!($(#[$attr])* $vis $name, $t, $init);
        $crate::thread_local!($($rest)*);
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = const { $init:expr }) => {
        $crate::__thread_local_inner!($(#[$attr])* $vis $name, $t, $init);
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = const $init:block; $($rest:tt)*) => {
        $crate::__thread_local_inner!($(#[$attr])* $vis $name, $t, $init);
        $crate::thread_local!($($rest)*);
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = $init:expr; $($rest:tt)*) => {
        $crate::__thread_local_inner!($(#[$attr])* $vis $name, $t, $init);
        $crate::thread_local!($($rest)*);
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = $init:expr) => {
        $crate::__thread_local_inner!($(#[$attr])* $vis $name, $t, $init);
    };
}
