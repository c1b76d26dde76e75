//! A configuration built on first use and published through an `AtomicPtr` with a
//! compare-exchange. `BuggyLazy::get` loads the pointer with `Relaxed` (and publishes with a
//! `Relaxed` exchange): a thread that finds the pointer set may still read the
//! configuration's fields as they were before they were filled in. `Lazy` publishes with
//! `AcqRel` and loads with `Acquire`.

use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU16, Ordering};
use std::sync::Arc;
use std::thread;

/// Filled in after allocation, as a parser would.
#[derive(Default)]
pub struct Config {
    pub port: AtomicU16,
}

fn build() -> Box<Config> {
    let c = Box::<Config>::default();
    c.port.store(8080, Ordering::Relaxed);
    c
}

pub struct Lazy {
    ptr: AtomicPtr<Config>,
    publish: Ordering,
    read: Ordering,
}

impl Lazy {
    /// BUG: the pointer is published and read with `Relaxed`.
    pub fn relaxed() -> Self {
        Lazy {
            ptr: AtomicPtr::new(ptr::null_mut()),
            publish: Ordering::Relaxed,
            read: Ordering::Relaxed,
        }
    }

    pub fn new() -> Self {
        Lazy {
            ptr: AtomicPtr::new(ptr::null_mut()),
            publish: Ordering::AcqRel,
            read: Ordering::Acquire,
        }
    }

    pub fn get(&self) -> &Config {
        let p = self.ptr.load(self.read);
        if !p.is_null() {
            // SAFETY: set once below, to a leaked-until-drop box, never changed after.
            return unsafe { &*p };
        }
        let new = Box::into_raw(build());
        match self
            .ptr
            .compare_exchange(ptr::null_mut(), new, self.publish, self.read)
        {
            // SAFETY: ours, now published.
            Ok(_) => unsafe { &*new },
            Err(winner) => {
                // SAFETY: never published; the winner's box is the one kept.
                drop(unsafe { Box::from_raw(new) });
                // SAFETY: as above.
                unsafe { &*winner }
            }
        }
    }
}

impl Default for Lazy {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Lazy {
    fn drop(&mut self) {
        // An RMW reads the newest pointer whatever the orderings before it.
        let p = self.ptr.swap(ptr::null_mut(), Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: the published box, owned by `self`.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

fn scenario(lazy: Lazy) {
    let lazy = Arc::new(lazy);
    let other = {
        let lazy = Arc::clone(&lazy);
        thread::spawn(move || lazy.get().port.load(Ordering::Relaxed))
    };
    let mine = lazy.get().port.load(Ordering::Relaxed);
    let theirs = other.join().unwrap();
    assert_eq!((mine, theirs), (8080, 8080), "a thread saw the config before it was filled in");
}

/// With `Lazy::relaxed`: panics when a thread reads the port before it was set.
pub fn scenario_buggy() {
    scenario(Lazy::relaxed());
}

/// With `Lazy::new`: never panics.
pub fn scenario_fixed() {
    scenario(Lazy::new());
}
