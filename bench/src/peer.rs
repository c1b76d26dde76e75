//! The module root the generated loom variants import from: loom itself, plus the std
//! conveniences loom 0.7 lacks that are pure sugar over what loom has. Nothing here adds a
//! scheduling point or hides one: each method is the loop std documents for it.
//!
//! The bug-finding table marks programs that needed one of these (build.rs adds the note).

pub mod loom {
    pub use ::loom::*;

    pub mod sync {
        pub use ::loom::sync::*;
        // The explicit item below shadows the glob's `Condvar`.
        pub use super::condvar::Condvar;
    }

    mod condvar {
        use ::loom::sync::{LockResult, MutexGuard, WaitTimeoutResult};

        /// `loom::sync::Condvar` plus `wait_while` (missing in loom 0.7.2).
        #[derive(Debug, Default)]
        pub struct Condvar(::loom::sync::Condvar);

        impl Condvar {
            pub fn new() -> Condvar {
                Condvar(::loom::sync::Condvar::new())
            }

            pub fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> LockResult<MutexGuard<'a, T>> {
                self.0.wait(guard)
            }

            /// loom's own (a stub that never times out), passed through.
            pub fn wait_timeout<'a, T>(
                &self,
                guard: MutexGuard<'a, T>,
                dur: std::time::Duration,
            ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)> {
                self.0.wait_timeout(guard, dur)
            }

            /// As std documents it: `while condition(&mut *guard) { guard = self.wait(guard)?; }`.
            pub fn wait_while<'a, T, F>(
                &self,
                mut guard: MutexGuard<'a, T>,
                mut condition: F,
            ) -> LockResult<MutexGuard<'a, T>>
            where
                F: FnMut(&mut T) -> bool,
            {
                while condition(&mut *guard) {
                    guard = self.0.wait(guard)?;
                }
                Ok(guard)
            }

            pub fn notify_one(&self) {
                self.0.notify_one()
            }

            #[allow(dead_code)]
            pub fn notify_all(&self) {
                self.0.notify_all()
            }
        }
    }
}
