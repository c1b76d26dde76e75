//! A test binary whose global allocator counts bytes in an atomic, as crossbeam-channel's
//! `golang` tests do. Instrumented, that atomic is pulse's: every allocation, the shims'
//! own included, is a scheduling point, where another thread may run and use the same
//! shim.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::Ordering::SeqCst;

use pulse_runtime::{Builder, Isolation, Strategy};
use pulse_shim_std::sync::atomic::AtomicUsize;
use pulse_shim_std::thread;

struct Counting;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            ALLOCATED.fetch_add(layout.size(), SeqCst);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        ALLOCATED.fetch_sub(layout.size(), SeqCst);
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

#[test]
fn threads_ask_for_their_handles_while_the_allocator_switches_threads() {
    // `thread::current()` made a handle under a borrow of the shim's handle cache; the
    // allocation switched to a thread that asked for its own: "already borrowed", abort.
    for strategy in [Strategy::Random, Strategy::Pos, Strategy::Portfolio] {
        let report = Builder::new()
            .strategy(strategy)
            .schedules(200)
            .seed(1)
            .isolation(Isolation::Off)
            .run(|| {
                let me = thread::current().id();
                let hs: Vec<_> = (0..4)
                    .map(|_| thread::spawn(|| thread::current().id()))
                    .collect();
                for h in hs {
                    assert_ne!(h.join().unwrap(), me);
                }
            });
        if let Some(failure) = report.failure {
            panic!("{strategy}: {} at {:?}", failure.message, failure.location);
        }
    }
}
