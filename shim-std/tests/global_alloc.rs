//! A `#[global_allocator]` that counts in an instrumented atomic (crossbeam-channel's golang
//! tests do): its count is a pulse operation when the test allocates, and a plain atomic when
//! the runtime allocates for its own bookkeeping (before this rule, the runtime re-entered
//! itself there and the process aborted: "thread panicked while processing panic"). Its own
//! binary: the allocator serves every test in it.

use std::alloc::{GlobalAlloc, Layout, System};

use pulse_runtime::Builder;
use pulse_shim_std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use pulse_shim_std::sync::{Arc, Mutex};
use pulse_shim_std::thread;

struct Counting;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(1, SeqCst);
        // SAFETY: forwarded as given.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        ALLOCATED.fetch_sub(1, SeqCst);
        // SAFETY: forwarded as given.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static A: Counting = Counting;

#[test]
fn an_allocator_counting_in_an_instrumented_atomic_runs_under_pulse() {
    let report = Builder::new().schedules(200).seed(1).run(|| {
        let v = Arc::new(Mutex::new(Vec::new()));
        let ts: Vec<_> = (0..3)
            .map(|i| {
                let v = v.clone();
                thread::spawn(move || v.lock().unwrap().push(vec![i; 16]))
            })
            .collect();
        for t in ts {
            t.join().unwrap();
        }
        assert_eq!(v.lock().unwrap().len(), 3);
    });
    assert!(report.passed(), "{}", report.failure.unwrap());
    assert!(ALLOCATED.load(SeqCst) > 0);
}
