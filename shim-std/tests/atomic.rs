//! Atomics: std's results and layout outside an execution; inside one, a scheduling point
//! per operation (so races between loads and stores are found) and spurious weak-CAS
//! failures as scheduler choices.

use pulse_runtime::{Builder, FailureKind};
use pulse_shim_std::sync::atomic::{self as pa, Ordering::*};
use pulse_shim_std::sync::Arc;
use pulse_shim_std::thread;
use std::mem::{align_of, size_of};
use std::sync::atomic as sa;

/// Runs the same sequence of every integer method on ours and std's and compares each
/// result.
macro_rules! same_as_std {
    ($($pa:ident $sa:ident $t:ty;)*) => {$({
        let (a, s) = (pa::$pa::new(5), sa::$sa::new(5));
        assert_eq!(size_of::<pa::$pa>(), size_of::<sa::$sa>());
        assert_eq!(align_of::<pa::$pa>(), align_of::<sa::$sa>());
        assert_eq!(a.load(SeqCst), s.load(SeqCst));
        a.store(9, Release);
        s.store(9, Release);
        assert_eq!(a.swap(3, AcqRel), s.swap(3, AcqRel));
        assert_eq!(a.compare_exchange(3, 4, SeqCst, Relaxed), s.compare_exchange(3, 4, SeqCst, Relaxed));
        assert_eq!(a.compare_exchange(3, 6, SeqCst, Relaxed), s.compare_exchange(3, 6, SeqCst, Relaxed));
        #[allow(deprecated)]
        {
            assert_eq!(a.compare_and_swap(4, 7, SeqCst), s.compare_and_swap(4, 7, SeqCst));
            assert_eq!(a.compare_and_swap(4, 8, SeqCst), s.compare_and_swap(4, 8, SeqCst));
        }
        // A weak CAS may fail spuriously in both: retry until it succeeds.
        let weak = |f: &dyn Fn() -> Result<$t, $t>| loop {
            if let Ok(v) = f() {
                break v;
            }
        };
        assert_eq!(weak(&|| a.compare_exchange_weak(7, 2, AcqRel, Acquire)), weak(&|| s.compare_exchange_weak(7, 2, AcqRel, Acquire)));
        assert_eq!(a.compare_exchange_weak(7, 1, SeqCst, SeqCst), Err(2));
        assert_eq!(a.fetch_add(10, SeqCst), s.fetch_add(10, SeqCst));
        assert_eq!(a.fetch_sub(3, SeqCst), s.fetch_sub(3, SeqCst));
        assert_eq!(a.fetch_and(0b1110, SeqCst), s.fetch_and(0b1110, SeqCst));
        assert_eq!(a.fetch_nand(0b0110, SeqCst), s.fetch_nand(0b0110, SeqCst));
        assert_eq!(a.fetch_or(0b0101, SeqCst), s.fetch_or(0b0101, SeqCst));
        assert_eq!(a.fetch_xor(0b0011, SeqCst), s.fetch_xor(0b0011, SeqCst));
        assert_eq!(a.fetch_max(20, SeqCst), s.fetch_max(20, SeqCst));
        assert_eq!(a.fetch_min(12, SeqCst), s.fetch_min(12, SeqCst));
        assert_eq!(a.fetch_add(<$t>::MAX, SeqCst), s.fetch_add(<$t>::MAX, SeqCst), "wraps like std");
        #[allow(deprecated)]
        {
            assert_eq!(a.fetch_update(SeqCst, SeqCst, |x| x.checked_add(1)), s.fetch_update(SeqCst, SeqCst, |x| x.checked_add(1)));
            assert_eq!(a.fetch_update(SeqCst, SeqCst, |_| None), s.fetch_update(SeqCst, SeqCst, |_| None));
        }
        assert_eq!(a.try_update(SeqCst, SeqCst, |x| x.checked_sub(1)), Ok(s.load(SeqCst)));
        assert_eq!(a.update(SeqCst, SeqCst, |x| x.wrapping_add(2)), s.load(SeqCst).wrapping_sub(1));
        s.store(a.load(SeqCst), SeqCst);
        assert_eq!(format!("{a:?}"), format!("{s:?}"));
        assert_eq!(unsafe { *a.as_ptr() }, s.load(SeqCst));
        let mut a = a;
        *a.get_mut() = 42;
        assert_eq!(a.into_inner(), 42);
        assert_eq!(pa::$pa::default().into_inner(), 0);
        assert_eq!(pa::$pa::from(7).into_inner(), 7);
        let mut raw: $t = 11;
        let r = unsafe { pa::$pa::from_ptr(&mut raw) };
        r.fetch_add(1, SeqCst);
        assert_eq!(raw, 12);
    })*};
}

#[test]
fn integers_match_std_outside_an_execution() {
    same_as_std! {
        AtomicI8 AtomicI8 i8;
        AtomicU8 AtomicU8 u8;
        AtomicI16 AtomicI16 i16;
        AtomicU16 AtomicU16 u16;
        AtomicI32 AtomicI32 i32;
        AtomicU32 AtomicU32 u32;
        AtomicI64 AtomicI64 i64;
        AtomicU64 AtomicU64 u64;
        AtomicIsize AtomicIsize isize;
        AtomicUsize AtomicUsize usize;
    }
}

#[test]
fn bool_matches_std_outside_an_execution() {
    let (a, s) = (pa::AtomicBool::new(false), sa::AtomicBool::new(false));
    assert_eq!(
        (size_of::<pa::AtomicBool>(), align_of::<pa::AtomicBool>()),
        (1, 1)
    );
    assert_eq!(a.swap(true, SeqCst), s.swap(true, SeqCst));
    assert_eq!(a.fetch_and(false, SeqCst), s.fetch_and(false, SeqCst));
    assert_eq!(a.fetch_nand(true, SeqCst), s.fetch_nand(true, SeqCst));
    assert_eq!(a.fetch_or(false, SeqCst), s.fetch_or(false, SeqCst));
    assert_eq!(a.fetch_xor(true, SeqCst), s.fetch_xor(true, SeqCst));
    assert_eq!(a.fetch_not(SeqCst), s.fetch_not(SeqCst));
    assert_eq!(
        a.compare_exchange(true, false, SeqCst, SeqCst),
        s.compare_exchange(true, false, SeqCst, SeqCst)
    );
    assert_eq!(
        a.compare_exchange(true, false, SeqCst, SeqCst),
        s.compare_exchange(true, false, SeqCst, SeqCst)
    );
    assert!(!a.update(SeqCst, SeqCst, |b| !b));
    assert_eq!(a.try_update(SeqCst, SeqCst, |_| None), Err(true));
    assert_eq!(format!("{a:?}"), "true");
    assert!(pa::AtomicBool::from(true).into_inner());
    #[allow(deprecated)]
    let init = pa::ATOMIC_BOOL_INIT;
    assert!(!init.into_inner());
}

#[test]
fn ptr_matches_std_outside_an_execution() {
    let mut xs = [1u64, 2, 3, 4];
    let base = xs.as_mut_ptr();
    let (a, s) = (pa::AtomicPtr::new(base), sa::AtomicPtr::new(base));
    assert_eq!(
        size_of::<pa::AtomicPtr<u64>>(),
        size_of::<sa::AtomicPtr<u64>>()
    );
    assert_eq!(
        align_of::<pa::AtomicPtr<u64>>(),
        align_of::<sa::AtomicPtr<u64>>()
    );
    assert_eq!(a.fetch_ptr_add(2, SeqCst), s.fetch_ptr_add(2, SeqCst));
    assert_eq!(a.fetch_ptr_sub(1, SeqCst), s.fetch_ptr_sub(1, SeqCst));
    assert_eq!(a.fetch_byte_add(8, SeqCst), s.fetch_byte_add(8, SeqCst));
    assert_eq!(a.fetch_byte_sub(16, SeqCst), s.fetch_byte_sub(16, SeqCst));
    assert_eq!(a.fetch_or(1, SeqCst), s.fetch_or(1, SeqCst));
    assert_eq!(a.fetch_xor(1, SeqCst), s.fetch_xor(1, SeqCst));
    assert_eq!(a.fetch_and(!0, SeqCst), s.fetch_and(!0, SeqCst));
    assert_eq!(a.fetch_ptr_add(1, SeqCst), s.fetch_ptr_add(1, SeqCst));
    // Provenance survives the address arithmetic: the pointer is still usable.
    assert_eq!(unsafe { *a.load(SeqCst) }, 2);
    assert_eq!(a.swap(base, SeqCst), s.swap(base, SeqCst));
    assert_eq!(format!("{a:?}"), format!("{s:?}"));
    assert_eq!(format!("{a:p}"), format!("{s:p}"));
    assert!(pa::AtomicPtr::<u8>::default().into_inner().is_null());
}

#[test]
fn statics_and_layout() {
    static A: pa::AtomicUsize = pa::AtomicUsize::new(0);
    #[allow(deprecated)]
    static B: pa::AtomicUsize = pa::ATOMIC_USIZE_INIT;
    A.fetch_add(1, SeqCst);
    B.fetch_add(2, SeqCst);
    let report = Builder::new().schedules(3).seed(1).run(|| {
        A.fetch_add(1, SeqCst);
    });
    // One thread, no choice: one execution stands for every schedule.
    assert!(report.passed() && report.exhaustive.is_some_and(|e| e.no_choice));
    assert_eq!(report.executions, 1);
    assert_eq!(A.load(SeqCst), 2);
    assert_eq!(B.load(SeqCst), 2);
    // `as_ptr` and `from_ptr` agree with std's view of the same memory.
    let ours = pa::AtomicU32::new(3);
    let theirs = unsafe { sa::AtomicU32::from_ptr(ours.as_ptr()) };
    theirs.fetch_add(4, SeqCst);
    assert_eq!(ours.load(SeqCst), 7);
}

/// Two threads each add 1; the final value must be 2.
fn two_increments(increment: fn(&pa::AtomicUsize)) -> pulse_runtime::Report {
    Builder::new().schedules(1000).seed(7).run(move || {
        let a = Arc::new(pa::AtomicUsize::new(0));
        let a2 = a.clone();
        let t = thread::spawn(move || increment(&a2));
        increment(&a);
        t.join().unwrap();
        assert_eq!(a.load(SeqCst), 2, "lost update");
    })
}

#[test]
fn lost_update_with_load_then_store_is_found() {
    let report = two_increments(|a| {
        let v = a.load(SeqCst);
        a.store(v + 1, SeqCst);
    });
    let failure = report.failure.expect("the race must be found");
    assert_eq!(failure.kind, FailureKind::Panic);
    assert!(
        failure.message.contains("lost update"),
        "{}",
        failure.message
    );
    assert!(report.executions < 1000);
}

#[test]
fn fetch_add_passes_every_schedule() {
    let report = two_increments(|a| {
        a.fetch_add(1, SeqCst);
    });
    assert!(report.passed(), "{:?}", report.failure);
    assert_eq!(report.executions, 1000);
}

#[test]
fn each_operation_is_a_scheduling_point() {
    // One thread doing k operations on an atomic reaches k points, whatever the kind
    // (weak CAS failures off, so `update` cannot retry).
    let count = |ops: fn(&pa::AtomicI64)| {
        Builder::new()
            .schedules(1)
            .seed(3)
            .spurious_odds(8, 0)
            .run(move || ops(&pa::AtomicI64::new(0)))
            .decisions
    };
    let base = count(|_| {});
    assert_eq!(
        count(|a| {
            a.load(Relaxed);
        }) - base,
        1
    );
    assert_eq!(count(|a| a.store(1, Relaxed)) - base, 1);
    assert_eq!(
        count(|a| {
            a.fetch_max(1, Relaxed);
        }) - base,
        1
    );
    assert_eq!(
        count(|a| {
            let _ = a.compare_exchange(0, 1, SeqCst, SeqCst);
        }) - base,
        1
    );
    assert_eq!(
        count(|a| drop(format!("{a:?}"))) - base,
        0,
        "Debug is not a scheduling point"
    );
    assert_eq!(
        count(|a| {
            a.update(SeqCst, SeqCst, |x| x + 1);
        }) - base,
        2
    );
}

#[test]
fn compare_exchange_weak_fails_spuriously_on_some_schedules() {
    let spurious = sa::AtomicUsize::new(0);
    let report = Builder::new().schedules(400).seed(5).run(|| {
        let a = pa::AtomicUsize::new(1);
        match a.compare_exchange_weak(1, 2, SeqCst, SeqCst) {
            Ok(prev) => assert_eq!((prev, a.load(SeqCst)), (1, 2)),
            Err(seen) => {
                // A spurious failure reports the current value and changes nothing.
                assert_eq!((seen, a.load(SeqCst)), (1, 1));
                spurious.fetch_add(1, SeqCst);
            }
        }
        // A value that differs always fails, never "spuriously succeeds".
        assert_eq!(
            a.compare_exchange_weak(7, 8, SeqCst, SeqCst).unwrap_err(),
            a.load(SeqCst)
        );
    });
    assert!(report.passed(), "{:?}", report.failure);
    let n = spurious.load(SeqCst);
    assert!(n > 0 && n < 400, "spurious failures: {n} of 400");
}

/// A test that takes a weak CAS's failure for contention (crossbeam-deque's `Injector`
/// tests do) fails, with the spurious failure marked in its trace and explained; under
/// `WeakCas::Strong` it passes, as on x86-64.
#[test]
fn a_test_assuming_weak_cas_never_fails_is_found_and_passes_when_strong() {
    let body = || {
        let a = pa::AtomicUsize::new(0);
        assert_eq!(a.compare_exchange_weak(0, 1, SeqCst, SeqCst), Ok(0));
    };
    let report = Builder::new().schedules(100).seed(1).run(body);
    let failure = report
        .failure
        .expect("a spurious failure within 100 schedules");
    let text = failure.to_string();
    assert!(
        text.contains("AtomicUsize::compare_exchange_weak (fails spuriously)"),
        "{text}"
    );
    assert!(
        text.contains("note: `AtomicUsize::compare_exchange_weak` at"),
        "{text}"
    );
    assert!(text.contains("--weak-cas strong"), "{text}");
    let strong = Builder::new()
        .schedules(100)
        .seed(1)
        .weak_cas(pulse_runtime::WeakCas::Strong)
        .run(body);
    assert!(strong.passed(), "{:?}", strong.failure);
}

/// A weak CAS loop that retried a spurious failure owes the failure nothing: the report
/// does not blame it (it did on concurrent-queue's and crossbeam-channel's failures).
#[test]
fn a_retried_spurious_failure_is_not_named_as_the_cause() {
    let report = Builder::new().schedules(200).seed(1).run(|| {
        let a = pa::AtomicUsize::new(0);
        let mut retried = false;
        while a.compare_exchange_weak(0, 1, SeqCst, SeqCst).is_err() {
            retried = true;
        }
        // A bug of its own, in the executions where the loop retried.
        assert!(!retried, "the real bug");
    });
    let failure = report
        .failure
        .expect("a spurious failure within 200 schedules");
    let text = failure.to_string();
    assert!(text.contains("the real bug"), "{text}");
    assert!(
        !text.contains("failed spuriously"),
        "a retried spurious failure named as the cause:\n{text}"
    );
}

/// A retry loop whose turn stores before its weak CAS (moka's cht runs an `on_modify`
/// closure that sets the entry's weight, then exchanges the bucket): a spurious failure makes
/// the next turn read back its own store as the old value. The report names the failure and
/// the repeated store; under `WeakCas::Strong` the program passes.
#[test]
fn a_retry_that_repeats_a_store_names_the_spurious_failure() {
    let body = || {
        let weight = pa::AtomicU32::new(15);
        let bucket = pa::AtomicUsize::new(0);
        let total = pa::AtomicU32::new(15);
        loop {
            let old = weight.load(SeqCst);
            weight.store(20, SeqCst);
            if bucket.compare_exchange_weak(0, 1, SeqCst, SeqCst).is_ok() {
                total.fetch_add(20 - old, SeqCst);
                break;
            }
        }
        assert_eq!(total.load(SeqCst), 20, "the total drifted");
    };
    let report = Builder::new().schedules(200).seed(1).run(body);
    let text = report
        .failure
        .expect("a spurious failure within 200 schedules")
        .to_string();
    assert!(text.contains("the total drifted"), "{text}");
    assert!(
        text.contains("failed spuriously (step")
            && text.contains("and its thread stored again (`AtomicU32::store` at")
            && text.contains("--weak-cas strong"),
        "{text}"
    );
    let strong = Builder::new()
        .schedules(200)
        .seed(1)
        .weak_cas(pulse_runtime::WeakCas::Strong)
        .run(body);
    assert!(strong.passed(), "{:?}", strong.failure);
}

#[test]
fn weak_cas_loop_and_fetch_update_stay_correct() {
    let retries = sa::AtomicUsize::new(0);
    let report = Builder::new().schedules(500).seed(9).run(|| {
        let a = Arc::new(pa::AtomicU32::new(0));
        let cas_loop = |a: &pa::AtomicU32| {
            let mut cur = a.load(Relaxed);
            while let Err(seen) = a.compare_exchange_weak(cur, cur + 1, AcqRel, Relaxed) {
                retries.fetch_add(1, SeqCst);
                cur = seen;
            }
        };
        thread::scope(|s| {
            s.spawn(|| cas_loop(&a));
            s.spawn(|| {
                #[allow(deprecated)]
                a.fetch_update(AcqRel, Acquire, |x| Some(x + 10)).unwrap();
            });
            a.update(AcqRel, Acquire, |x| x + 100);
        });
        assert_eq!(a.load(SeqCst), 111);
    });
    assert!(report.passed(), "{:?}", report.failure);
    assert!(
        retries.load(SeqCst) > 0,
        "some schedule must make the loop retry"
    );
}

#[test]
fn spin_loop_yields_to_the_thread_it_waits_for() {
    // Without the yield the spinner could be picked forever and hit the step limit.
    let report = Builder::new()
        .schedules(300)
        .seed(2)
        .max_steps(2_000)
        .run(|| {
            let flag = Arc::new(pa::AtomicBool::new(false));
            let f2 = flag.clone();
            let t = thread::spawn(move || f2.store(true, Release));
            while !flag.load(Acquire) {
                pulse_shim_std::hint::spin_loop();
            }
            t.join().unwrap();
        });
    assert!(report.passed(), "{:?}", report.failure);
}

#[test]
fn auto_traits_match_std() {
    fn all<T: Send + Sync + std::panic::RefUnwindSafe + std::panic::UnwindSafe>() {}
    all::<pa::AtomicBool>();
    all::<pa::AtomicI8>();
    all::<pa::AtomicU64>();
    all::<pa::AtomicUsize>();
    all::<pa::AtomicPtr<u8>>();
    fn send_sync<T: Send + Sync>() {}
    send_sync::<pa::AtomicPtr<std::rc::Rc<u8>>>();
}

/// What the atomics' `Drop` (std's have none) must not break: `const` construction and
/// `into_inner`, statics of arrays of them, and an `AtomicPtr<T>` whose `T` borrows something
/// dropped before it (its `Drop` is not generic, so dropck asks nothing of `T`).
#[test]
fn drop_keeps_what_compiles_against_std() {
    const THREE: usize = pa::AtomicUsize::new(3).into_inner();
    const YES: bool = pa::AtomicBool::new(true).into_inner();
    const NULL: *mut u8 = pa::AtomicPtr::new(std::ptr::null_mut()).into_inner();
    static ARRAY: [pa::AtomicU8; 3] = [const { pa::AtomicU8::new(1) }; 3];
    assert_eq!((THREE, YES, NULL.is_null()), (3, true, true));
    assert_eq!(ARRAY[2].fetch_add(1, Relaxed), 1);

    struct Node<'a>(&'a u8);
    #[allow(clippy::needless_late_init)] // declared before what it borrows: the point
    let slot: pa::AtomicPtr<Node<'_>>;
    let x = 5u8;
    let node = Box::into_raw(Box::new(Node(&x)));
    slot = pa::AtomicPtr::new(node);
    // SAFETY: `node` came from `Box::into_raw` and is freed once.
    assert_eq!(*unsafe { Box::from_raw(slot.load(Relaxed)) }.0, 5);

    // Dropped and `into_inner`'d outside an execution: std's behaviour.
    let v: Vec<pa::AtomicUsize> = (0..3).map(pa::AtomicUsize::new).collect();
    assert_eq!(
        v.into_iter()
            .map(pa::AtomicUsize::into_inner)
            .sum::<usize>(),
        3
    );
}
