//! Thread-locals: per OS thread outside an execution (std's), per virtual thread inside
//! one, with destructors at thread exit, `const` initializers and std's Cell/RefCell
//! helpers.

use pulse_runtime::Builder;
use pulse_shim_std::thread::{self, AccessError, LocalKey};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::OnceLock;

pulse_shim_std::thread_local! {
    static COUNTER: Cell<u32> = Cell::new(0);
    /// Documented, public, `const`-initialized.
    pub static CONST_INIT: Cell<u64> = const { Cell::new(7) };
    static LOG: RefCell<Vec<u32>> = RefCell::new(Vec::new())
}

pulse_shim_std::thread_local!(static SINGLE: u8 = 3);

static INITS: AtomicUsize = AtomicUsize::new(0);

pulse_shim_std::thread_local! {
    static COUNTED_INIT: Cell<u32> = {
        INITS.fetch_add(1, SeqCst);
        Cell::new(100)
    };
}

fn check(schedules: u64, f: impl Fn()) {
    Builder::new().schedules(schedules).seed(13).check(f)
}

/// The helpers' contract on the running thread's fresh values (as std documents it).
fn helpers_behave_like_std() {
    assert_eq!(SINGLE.with(|v| *v), 3);
    assert_eq!(CONST_INIT.get(), 7);
    CONST_INIT.set(8);
    assert_eq!(CONST_INIT.replace(9), 8);
    assert_eq!(CONST_INIT.take(), 9);
    assert_eq!(CONST_INIT.get(), 0);

    LOG.with_borrow_mut(|v| v.push(1));
    LOG.with_borrow(|v| assert_eq!(v, &[1]));
    LOG.set(vec![2, 3]);
    assert_eq!(LOG.replace(vec![4]), [2, 3]);
    assert_eq!(LOG.take(), [4]);
    assert!(LOG.with_borrow(Vec::is_empty));
    assert_eq!(LOG.try_with(|v| v.borrow().len()), Ok(0));

    // `set` on a value never touched does not run the initializer.
    let before = INITS.load(SeqCst);
    COUNTED_INIT.set(5);
    assert_eq!(COUNTED_INIT.get(), 5);
    assert_eq!(INITS.load(SeqCst), before);
}

#[test]
fn outside_an_execution_each_os_thread_has_its_own_value() {
    COUNTER.set(5);
    let other = std::thread::spawn(|| {
        COUNTER.set(COUNTER.get() + 1);
        COUNTER.get()
    });
    assert_eq!(other.join().unwrap(), 1);
    assert_eq!(COUNTER.get(), 5);
    std::thread::spawn(helpers_behave_like_std).join().unwrap();
}

#[test]
fn inside_an_execution_each_virtual_thread_has_its_own_value() {
    check(300, || {
        let work = |id: u32| {
            for _ in 0..3 {
                COUNTER.set(COUNTER.get() + id);
                thread::yield_now();
            }
            COUNTER.get()
        };
        let a = thread::spawn(move || work(1));
        let b = thread::spawn(move || work(10));
        assert_eq!(work(100), 300);
        assert_eq!(a.join().unwrap(), 3);
        assert_eq!(b.join().unwrap(), 30);
    });
}

#[test]
fn helpers_inside_an_execution() {
    check(5, || {
        helpers_behave_like_std();
        thread::spawn(helpers_behave_like_std).join().unwrap();
    });
}

#[test]
fn values_do_not_carry_over_between_executions() {
    check(20, || {
        assert_eq!(
            COUNTER.get(),
            0,
            "a new execution starts from the initializer"
        );
        COUNTER.set(1);
        LOG.with_borrow_mut(|v| v.push(1));
        assert_eq!(LOG.with_borrow(Vec::len), 1);
    });
}

static DROPS: AtomicUsize = AtomicUsize::new(0);
static SEEN_DURING_DROP: AtomicUsize = AtomicUsize::new(0);

struct Noisy(u32);

impl Drop for Noisy {
    fn drop(&mut self) {
        DROPS.fetch_add(1, SeqCst);
        // The value is being destroyed: std refuses access, so must we.
        if NOISY.try_with(|_| ()).is_err() {
            SEEN_DURING_DROP.fetch_add(1, SeqCst);
        }
    }
}

pulse_shim_std::thread_local!(static NOISY: Noisy = Noisy(1));

#[test]
fn destructors_run_when_a_virtual_thread_exits() {
    DROPS.store(0, SeqCst);
    SEEN_DURING_DROP.store(0, SeqCst);
    check(10, || {
        let before = DROPS.load(SeqCst);
        let t = thread::spawn(|| NOISY.with(|n| n.0));
        assert_eq!(t.join().unwrap(), 1);
        assert_eq!(
            DROPS.load(SeqCst),
            before + 1,
            "dropped before join returned"
        );
        // A thread that never touches the key creates no value to drop.
        thread::spawn(|| ()).join().unwrap();
        assert_eq!(DROPS.load(SeqCst), before + 1);
        NOISY.with(|_| ());
    });
    // Each execution's main thread dropped its own value too.
    assert_eq!(DROPS.load(SeqCst), 20);
    assert_eq!(SEEN_DURING_DROP.load(SeqCst), 20);
}

static ERROR: OnceLock<AccessError> = OnceLock::new();

/// Keeps the error its own key's access gets while it is being destroyed.
struct Probe;

impl Drop for Probe {
    fn drop(&mut self) {
        if let Err(e) = PROBE.try_with(|_| ()) {
            let _ = ERROR.set(e);
        }
    }
}

pulse_shim_std::thread_local!(static PROBE: Probe = const { Probe });

#[test]
fn access_error_and_key_match_std() {
    // Outside an execution std destroys the value when the OS thread exits.
    std::thread::spawn(|| PROBE.with(|_| ())).join().unwrap();
    let e = *ERROR.get().expect("access during destruction fails");
    assert_eq!(e.to_string(), "already destroyed");
    assert_eq!(format!("{e:?}"), "AccessError");
    let copy = e;
    assert_eq!(copy, e);
    let _: &dyn std::error::Error = &e;
    assert_eq!(format!("{COUNTER:?}"), "LocalKey { .. }");
    // The key is a `static` of type `LocalKey`, usable where std's is.
    fn takes_key(key: &'static LocalKey<Cell<u32>>) -> u32 {
        key.get()
    }
    assert_eq!(takes_key(&COUNTER), COUNTER.get());
}

#[test]
fn declared_in_a_function_and_fresh_in_every_execution() {
    pulse_shim_std::thread_local!(static LOCAL: RefCell<String> = RefCell::new(String::from("x")));
    LOCAL.with_borrow_mut(|s| s.push('y'));
    check(3, || {
        // The test thread's value outside the execution is not the main virtual thread's.
        assert_eq!(LOCAL.with_borrow(String::clone), "x");
        LOCAL.with_borrow_mut(|s| s.push('z'));
    });
    assert_eq!(LOCAL.with_borrow(String::clone), "xy");
}
