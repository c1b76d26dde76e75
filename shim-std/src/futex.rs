//! Linux's `futex` system call as instrumented code makes it:
//! `libc::syscall(libc::SYS_futex, addr, op, val, ...)`, which atomic-wait, wait_on_address
//! and hand-written futex locks call. The instrumenter rewrites such a call to
//! `__pulse_futex!(libc::syscall, ...)` with the same arguments; outside an execution it is
//! the system call.
//!
//! Inside one, the futex word's address names an object (`Futex#n`, numbered per execution
//! in first-use order) and:
//! - `FUTEX_WAIT` is a scheduling point that compares the word with `val` and starts waiting
//!   in one step, as the kernel does (`EAGAIN` if they differ). The wait ends at a wake, at
//!   its timeout on the virtual clock (`ETIMEDOUT`), or spuriously (a scheduler choice,
//!   returning 0: futex(2) tells callers to expect that);
//! - `FUTEX_WAKE` wakes up to `val` waiters (which ones: scheduler choices, futex(2) promises
//!   no order) and returns how many;
//! - the `_BITSET` forms are accepted with `FUTEX_BITSET_MATCH_ANY`, the bitset std and the
//!   futex crates use to get an absolute timeout (measured against the real clock it names,
//!   then waited on the virtual clock).
//!
//! Other operations (requeue, `WAKE_OP`, priority-inheritance locks, other bitsets) are not
//! modelled: the calling thread panics naming the operation.
//!
//! The word is read from memory, which holds the newest store under every memory model
//! (shim atomics are `repr(transparent)` over std's).

use std::cell::RefCell;
use std::collections::HashMap;
use std::os::raw::{c_int, c_long};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use pulse_runtime::{ChoiceKind, ObjRef, TraceKind, WakeReason};

use crate::rt::{self, Ctx};

const KIND: &str = "Futex";
const WAIT_OP: &str = "futex::wait";
const WAKE_OP: &str = "futex::wake";

/// A system-call argument as the call passes it: one machine word.
pub trait Word {
    fn word(self) -> usize;
}

impl<T: ?Sized> Word for &T {
    #[inline]
    fn word(self) -> usize {
        self as *const T as *const () as usize
    }
}

impl<T: ?Sized> Word for &mut T {
    #[inline]
    fn word(self) -> usize {
        self as *const T as *const () as usize
    }
}

impl<T: ?Sized> Word for *const T {
    #[inline]
    fn word(self) -> usize {
        self as *const () as usize
    }
}

impl<T: ?Sized> Word for *mut T {
    #[inline]
    fn word(self) -> usize {
        self as *const () as usize
    }
}

macro_rules! int_words {
    ($($t:ty)*) => {$(
        impl Word for $t {
            #[inline]
            fn word(self) -> usize {
                self as usize
            }
        }
    )*};
}

int_words!(i8 u8 i16 u16 i32 u32 i64 u64 isize usize);

/// `libc::syscall(libc::SYS_futex, args...)` under pulse, written
/// `__pulse_futex!(libc::syscall, libc::SYS_futex, args...)` (see the module doc). The
/// function is only named, so an imported one stays used.
#[doc(hidden)]
#[macro_export]
macro_rules! __pulse_futex {
    ($syscall:expr, $nr:expr $(, $arg:expr)* $(,)?) => {{
        let _ = $syscall;
        $crate::futex::syscall($nr as i64, &[$($crate::futex::Word::word($arg)),*])
    }};
}

/// The system call `nr` (`SYS_futex`) with `args`, scheduled inside an execution.
///
/// # Safety
/// As the system call's: a waited-on address must point to a live, aligned 32-bit word.
#[track_caller]
pub unsafe fn syscall(nr: i64, args: &[usize]) -> c_long {
    let arg = |i: usize| args.get(i).copied().unwrap_or(0);
    let ctx = match rt::current() {
        Some(ctx) if nr == libc::SYS_futex => ctx,
        // SAFETY: the caller's; the words are the call's own arguments.
        _ => unsafe {
            return libc::syscall(nr as c_long, arg(0), arg(1), arg(2), arg(3), arg(4), arg(5));
        },
    };
    let (addr, op, val) = (arg(0), arg(1) as c_int, arg(2) as u32);
    let cmd = op & !(libc::FUTEX_PRIVATE_FLAG | libc::FUTEX_CLOCK_REALTIME);
    let bitset = arg(5) as u32;
    let any_bitset = !matches!(cmd, libc::FUTEX_WAIT_BITSET | libc::FUTEX_WAKE_BITSET)
        || bitset == libc::FUTEX_BITSET_MATCH_ANY as u32;
    match cmd {
        libc::FUTEX_WAIT | libc::FUTEX_WAIT_BITSET if any_bitset => {
            let timeout = match timeout(cmd, op, arg(3) as *const libc::timespec) {
                Ok(t) => t,
                Err(errno) => return fail(errno),
            };
            // SAFETY: the caller's.
            unsafe { wait(ctx, addr, val, timeout) }
        }
        libc::FUTEX_WAKE | libc::FUTEX_WAKE_BITSET if any_bitset => wake(ctx, addr, val),
        _ => panic!(
            "pulse: futex operation {cmd} (op {op:#x}, bitset {bitset:#x}) is not modelled: \
             pulse schedules FUTEX_WAIT and FUTEX_WAKE, and their _BITSET forms with \
             FUTEX_BITSET_MATCH_ANY"
        ),
    }
}

#[track_caller]
unsafe fn wait(ctx: Ctx, addr: usize, val: u32, timeout: Option<Duration>) -> c_long {
    if !addr.is_multiple_of(4) {
        return fail(libc::EINVAL);
    }
    let obj = object(ctx, addr);
    ctx.switch(WAIT_OP, Some(obj));
    // Compared and waited in one step: no other thread runs between the two.
    // SAFETY: the caller's (a live, aligned word).
    let word = unsafe { &*(addr as *const AtomicU32) }.load(Ordering::SeqCst);
    if word != val {
        return fail(libc::EAGAIN);
    }
    if ctx.choose(ChoiceKind::SpuriousWakeup) {
        ctx.note(TraceKind::Wake, WAIT_OP, Some(obj), Some("spurious"));
        return 0;
    }
    match ctx.block(WAIT_OP, Some(obj), timeout) {
        WakeReason::TimedOut => fail(libc::ETIMEDOUT),
        WakeReason::Notified | WakeReason::Teardown => 0,
    }
}

#[track_caller]
fn wake(ctx: Ctx, addr: usize, count: u32) -> c_long {
    let obj = object(ctx, addr);
    ctx.switch(WAKE_OP, Some(obj));
    let count = (count as c_int).max(0) as usize;
    let waiting = ctx.waiter_count(obj);
    if count >= waiting {
        if waiting > 0 {
            ctx.wake_all(obj);
        }
        return waiting as c_long;
    }
    let mut woken = 0;
    while woken < count && ctx.wake_one(obj) {
        woken += 1;
    }
    woken as c_long
}

/// The wait's timeout: `FUTEX_WAIT`'s is relative; the `_BITSET` form's is a deadline on
/// `CLOCK_MONOTONIC` (or `CLOCK_REALTIME` with `FUTEX_CLOCK_REALTIME`), read now.
fn timeout(cmd: c_int, op: c_int, ts: *const libc::timespec) -> Result<Option<Duration>, c_int> {
    if ts.is_null() {
        return Ok(None);
    }
    // SAFETY: a non-null timeout points to a timespec (the system call's contract).
    let ts = unsafe { *ts };
    let span = duration(ts).ok_or(libc::EINVAL)?;
    if cmd == libc::FUTEX_WAIT {
        return Ok(Some(span));
    }
    let clock = match op & libc::FUTEX_CLOCK_REALTIME {
        0 => libc::CLOCK_MONOTONIC,
        _ => libc::CLOCK_REALTIME,
    };
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid out-parameter.
    unsafe { libc::clock_gettime(clock, &mut now) };
    let now = duration(now).unwrap_or_default();
    Ok(Some(span.saturating_sub(now)))
}

fn duration(ts: libc::timespec) -> Option<Duration> {
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u32::try_from(ts.tv_nsec)
        .ok()
        .filter(|&n| n < 1_000_000_000)?;
    Some(Duration::new(secs, nanos))
}

/// The system call's failure: -1 with `errno` set.
fn fail(errno: c_int) -> c_long {
    // SAFETY: the calling OS thread's errno.
    unsafe { *libc::__errno_location() = errno };
    -1
}

struct Words {
    execution: u64,
    objects: HashMap<usize, ObjRef>,
}

std::thread_local! {
    /// The futex words of the execution running on this OS thread.
    static WORDS: RefCell<Words> = RefCell::new(Words {
        execution: u64::MAX,
        objects: HashMap::new(),
    });
}

/// The object that names the futex word at `addr` in this execution.
fn object(ctx: Ctx, addr: usize) -> ObjRef {
    WORDS.with(|cell| {
        let mut words = cell.borrow_mut();
        let id = ctx.execution_id();
        if words.execution != id {
            words.execution = id;
            words.objects.clear();
        }
        let next = words.objects.len() as u32;
        *words.objects.entry(addr).or_insert(ObjRef {
            kind: KIND,
            id: next,
        })
    })
}
