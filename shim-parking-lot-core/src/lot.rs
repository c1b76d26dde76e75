//! The parking lot inside a pulse execution: parking_lot_core's queues as per-execution
//! state, parked threads blocked in the scheduler.
//!
//! All virtual threads of an execution run on one OS thread, so the execution's queues live
//! in a thread-local tagged with the execution's id (a new execution on the thread starts
//! from empty queues; threads a failed execution left behind never run again). Per key:
//!
//! - a *queue lock*, logical: parking_lot_core runs `validate` and the unpark callbacks under
//!   its bucket lock, and those callbacks load and store the lock's atomics, which are
//!   scheduling points once instrumented. Other threads may run meanwhile, but one that
//!   reaches a parking operation on the same key waits for the lock, as with the real bucket
//!   lock. Without it an unlock could run between a waiter's `validate` and its enqueueing
//!   and lose the wakeup;
//! - the FIFO of parked threads. A parked thread blocks on an object of its own (named after
//!   the key it parked on and its thread index, `ParkingLot#2 waiter#1`), so an unpark wakes
//!   exactly the thread parking_lot_core would wake, with no scheduler choice; which of the
//!   woken threads runs first is the scheduler's.
//!
//! Every call is one scheduling point (named `parking_lot_core::park` etc. on the key's
//! object `ParkingLot#n`, numbered per execution in first-use order); the callbacks add their
//! own. Timeouts are measured on the virtual clock.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use pulse_shim_std::time::Instant;

use pulse_runtime::{Ctx, ObjRef, WakeReason};

use crate::types::{FilterOp, ParkResult, ParkToken, RequeueOp, UnparkResult, UnparkToken};

/// The kind of a key's object in traces and reports.
const KEY_KIND: &str = "ParkingLot";

/// parking_lot_core sets `be_fair` once every 0.5 ms on average per bucket (a random
/// timeout in 0..1 ms); here a fixed 0.5 ms of virtual time per key, so it replays.
const FAIR_INTERVAL_NS: u64 = 500_000;

/// Keys numbered beyond this share one waiter kind (bounds the interned names).
const NAMED_WAITER_KEYS: u32 = 1024;

struct Lot {
    execution: u64,
    keys: HashMap<usize, Key>,
    /// Indexed by virtual thread.
    threads: Vec<Slot>,
}

struct Key {
    obj: ObjRef,
    /// The queue lock is held by a thread running a parking operation on this key.
    locked: bool,
    /// Parked threads, first to wake first.
    queue: VecDeque<u32>,
    /// Virtual time after which the next unpark is fair.
    fair_after_ns: u64,
}

#[derive(Clone, Copy)]
struct Slot {
    state: SlotState,
    /// The key whose queue the thread is in (changes when it is requeued).
    key: usize,
    token: ParkToken,
    /// The object the thread blocks on while parked.
    waiter: ObjRef,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum SlotState {
    Idle,
    Parked,
    Unparked(UnparkToken),
}

impl Default for Slot {
    fn default() -> Self {
        Slot {
            state: SlotState::Idle,
            key: 0,
            token: crate::DEFAULT_PARK_TOKEN,
            waiter: ObjRef {
                kind: KEY_KIND,
                id: 0,
            },
        }
    }
}

thread_local! {
    static LOT: RefCell<Lot> = RefCell::new(Lot { execution: 0, keys: HashMap::new(), threads: Vec::new() });
}

/// Runs `f` on the running execution's lot. `f` must not reach a scheduling point or call
/// user code (it holds the borrow).
fn with<R>(ctx: Ctx, f: impl FnOnce(&mut Lot) -> R) -> R {
    LOT.with(|cell| {
        let mut lot = cell.borrow_mut();
        let id = ctx.execution_id();
        if lot.execution != id {
            *lot = Lot {
                execution: id,
                keys: HashMap::new(),
                threads: Vec::new(),
            };
        }
        f(&mut lot)
    })
}

impl Lot {
    fn key(&mut self, ctx: Ctx, addr: usize) -> &mut Key {
        let next = self.keys.len() as u32;
        self.keys.entry(addr).or_insert_with(|| Key {
            obj: ObjRef {
                kind: KEY_KIND,
                id: next,
            },
            locked: false,
            queue: VecDeque::new(),
            // As parking_lot_core's buckets: the first unpark is fair.
            fair_after_ns: now_ns(ctx),
        })
    }

    fn slot(&mut self, tid: u32) -> &mut Slot {
        let i = tid as usize;
        if self.threads.len() <= i {
            self.threads.resize(i + 1, Slot::default());
        }
        &mut self.threads[i]
    }

    /// Marks `tid` unparked with `token` and returns the object to wake it on.
    fn unpark(&mut self, tid: u32, token: UnparkToken) -> ObjRef {
        let slot = self.slot(tid);
        slot.state = SlotState::Unparked(token);
        slot.waiter
    }
}

fn now_ns(ctx: Ctx) -> u64 {
    ctx.now().as_nanos().min(u64::MAX as u128) as u64
}

/// The object that names `addr` in this execution (`ParkingLot#n`).
pub(crate) fn key_object(ctx: Ctx, addr: usize) -> ObjRef {
    with(ctx, |lot| lot.key(ctx, addr).obj)
}

/// Takes the queue lock of `addr`, waiting (blocked in the scheduler) while another thread's
/// parking operation holds it.
#[track_caller]
fn lock(ctx: Ctx, op: &'static str, addr: usize) {
    loop {
        let (got, obj) = with(ctx, |lot| {
            let key = lot.key(ctx, addr);
            let got = !key.locked;
            key.locked = true;
            (got, key.obj)
        });
        // An ended execution's cleanup must not wait: it takes the lock over.
        if got || ctx.block(op, Some(obj), None) == WakeReason::Teardown {
            return;
        }
    }
}

fn unlock(ctx: Ctx, addr: usize) {
    let obj = with(ctx, |lot| {
        let key = lot.key(ctx, addr);
        key.locked = false;
        key.obj
    });
    ctx.wake_all(obj);
}

/// Locks both queues, lower address first (two requeues in opposite directions must not
/// deadlock each other), once if they are the same.
#[track_caller]
fn lock_pair(ctx: Ctx, op: &'static str, a: usize, b: usize) {
    lock(ctx, op, a.min(b));
    if a != b {
        lock(ctx, op, a.max(b));
    }
}

fn unlock_pair(ctx: Ctx, a: usize, b: usize) {
    unlock(ctx, a);
    if a != b {
        unlock(ctx, b);
    }
}

/// The per-key fairness timer (see `FAIR_INTERVAL_NS`).
fn be_fair(ctx: Ctx, lot: &mut Lot, addr: usize) -> bool {
    let now = now_ns(ctx);
    let key = lot.key(ctx, addr);
    if now > key.fair_after_ns {
        key.fair_after_ns = now + FAIR_INTERVAL_NS;
        true
    } else {
        false
    }
}

/// The time left until `deadline` (pulse's `Instant`, read by parking_lot on the virtual
/// clock) when the thread parks.
fn virtual_timeout(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::__pulse_now_unscheduled())
}

/// The object a thread parked on `key` blocks on: per thread, named after the key.
fn waiter_object(key: ObjRef, tid: u32) -> ObjRef {
    static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let kind = if key.id < NAMED_WAITER_KEYS {
        let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
        while names.len() <= key.id as usize {
            let n = names.len();
            names.push(Box::leak(format!("{KEY_KIND}#{n} waiter").into_boxed_str()));
        }
        names[key.id as usize]
    } else {
        "ParkingLot waiter"
    };
    ObjRef { kind, id: tid }
}

const PARK: &str = "parking_lot_core::park";
const PARK_TIMED_OUT: &str = "parking_lot_core::park (timed out)";

#[track_caller]
pub(crate) fn park(
    ctx: Ctx,
    key: usize,
    validate: impl FnOnce() -> bool,
    before_sleep: impl FnOnce(),
    timed_out: impl FnOnce(usize, bool),
    park_token: ParkToken,
    timeout: Option<Instant>,
) -> ParkResult {
    let obj = key_object(ctx, key);
    ctx.switch(PARK, Some(obj));
    let me = ctx.me();
    lock(ctx, PARK, key);
    if !validate() {
        unlock(ctx, key);
        return ParkResult::Invalid;
    }
    // The time left is read once the thread is queued, as parking_lot_core's thread does
    // right before it sleeps.
    let deadline_ns =
        timeout.map(|t| now_ns(ctx).saturating_add(virtual_timeout(t).as_nanos() as u64));
    with(ctx, |lot| {
        *lot.slot(me) = Slot {
            state: SlotState::Parked,
            key,
            token: park_token,
            waiter: waiter_object(obj, me),
        };
        lot.key(ctx, key).queue.push_back(me);
    });
    unlock(ctx, key);
    before_sleep();

    // Sleep until unparked, the deadline, or the end of the execution.
    loop {
        let (state, waiter) = with(ctx, |lot| {
            let slot = lot.slot(me);
            (slot.state, slot.waiter)
        });
        if let SlotState::Unparked(token) = state {
            with(ctx, |lot| lot.slot(me).state = SlotState::Idle);
            return ParkResult::Unparked(token);
        }
        let left = deadline_ns.map(|d| Duration::from_nanos(d.saturating_sub(now_ns(ctx))));
        match ctx.block(PARK, Some(waiter), left) {
            WakeReason::Notified => continue,
            // Between its timer firing and its taking the queue lock, other threads run (an
            // unpark may get there first): a scheduling point.
            WakeReason::TimedOut => {
                ctx.switch(PARK_TIMED_OUT, Some(obj));
                break;
            }
            // The cleanup of an ended execution must not wait either: a timeout ends its
            // park (for a park without one, parking_lot's callers then carry on as if they
            // had the lock, as pulse's own locks do during cleanup).
            WakeReason::Teardown => break,
        }
    }

    // Timed out: take the lock of the queue the thread is in now (a requeue may have moved
    // it while it waited for the lock), then check again, as an unpark may have come first.
    let key = loop {
        let queued_on = with(ctx, |lot| lot.slot(me).key);
        lock(ctx, PARK, queued_on);
        if with(ctx, |lot| lot.slot(me).key) == queued_on {
            break queued_on;
        }
        unlock(ctx, queued_on);
    };
    let unparked = with(ctx, |lot| {
        let slot = lot.slot(me);
        let state = std::mem::replace(&mut slot.state, SlotState::Idle);
        match state {
            SlotState::Unparked(token) => Some(token),
            _ => {
                let queue = &mut lot.key(ctx, key).queue;
                queue.retain(|&t| t != me);
                None
            }
        }
    });
    let result = match unparked {
        Some(token) => ParkResult::Unparked(token),
        None => {
            let was_last = with(ctx, |lot| lot.key(ctx, key).queue.is_empty());
            timed_out(key, was_last);
            ParkResult::TimedOut
        }
    };
    unlock(ctx, key);
    result
}

#[track_caller]
pub(crate) fn unpark_one(
    ctx: Ctx,
    key: usize,
    callback: impl FnOnce(UnparkResult) -> UnparkToken,
) -> UnparkResult {
    const OP: &str = "parking_lot_core::unpark_one";
    ctx.switch(OP, Some(key_object(ctx, key)));
    lock(ctx, OP, key);
    let mut result = UnparkResult::default();
    let first = with(ctx, |lot| {
        let queue = &mut lot.key(ctx, key).queue;
        let first = queue.pop_front()?;
        result.unparked_threads = 1;
        result.have_more_threads = !queue.is_empty();
        result.be_fair = be_fair(ctx, lot, key);
        Some(first)
    });
    let token = callback(result);
    let wake = first.map(|tid| with(ctx, |lot| lot.unpark(tid, token)));
    unlock(ctx, key);
    if let Some(waiter) = wake {
        ctx.wake_all(waiter);
    }
    result
}

#[track_caller]
pub(crate) fn unpark_all(ctx: Ctx, key: usize, token: UnparkToken) -> usize {
    const OP: &str = "parking_lot_core::unpark_all";
    ctx.switch(OP, Some(key_object(ctx, key)));
    lock(ctx, OP, key);
    let woken: Vec<ObjRef> = with(ctx, |lot| {
        let queue = std::mem::take(&mut lot.key(ctx, key).queue);
        queue
            .into_iter()
            .map(|tid| lot.unpark(tid, token))
            .collect()
    });
    unlock(ctx, key);
    for &waiter in &woken {
        ctx.wake_all(waiter);
    }
    woken.len()
}

#[track_caller]
pub(crate) fn unpark_requeue(
    ctx: Ctx,
    key_from: usize,
    key_to: usize,
    validate: impl FnOnce() -> RequeueOp,
    callback: impl FnOnce(RequeueOp, UnparkResult) -> UnparkToken,
) -> UnparkResult {
    const OP: &str = "parking_lot_core::unpark_requeue";
    ctx.switch(OP, Some(key_object(ctx, key_from)));
    lock_pair(ctx, OP, key_from, key_to);
    let mut result = UnparkResult::default();
    let op = validate();
    if op == RequeueOp::Abort {
        unlock_pair(ctx, key_from, key_to);
        return result;
    }
    let wakeup = with(ctx, |lot| {
        let mut from = std::mem::take(&mut lot.key(ctx, key_from).queue);
        let mut wakeup = None;
        let mut moved = Vec::new();
        let unpark_first = matches!(op, RequeueOp::UnparkOneRequeueRest | RequeueOp::UnparkOne);
        let only_one = matches!(op, RequeueOp::UnparkOne | RequeueOp::RequeueOne);
        while let Some(tid) = from.pop_front() {
            if unpark_first && wakeup.is_none() {
                wakeup = Some(tid);
                result.unparked_threads = 1;
            } else {
                lot.slot(tid).key = key_to;
                moved.push(tid);
                result.requeued_threads += 1;
            }
            if only_one {
                result.have_more_threads = !from.is_empty();
                break;
            }
        }
        // What was not taken stays, in order; requeued threads join the target's tail.
        lot.key(ctx, key_from).queue = from;
        lot.key(ctx, key_to).queue.extend(moved);
        if result.unparked_threads != 0 {
            result.be_fair = be_fair(ctx, lot, key_from);
        }
        wakeup
    });
    let token = callback(op, result);
    let wake = wakeup.map(|tid| with(ctx, |lot| lot.unpark(tid, token)));
    unlock_pair(ctx, key_from, key_to);
    if let Some(waiter) = wake {
        ctx.wake_all(waiter);
    }
    result
}

#[track_caller]
pub(crate) fn unpark_filter(
    ctx: Ctx,
    key: usize,
    mut filter: impl FnMut(ParkToken) -> FilterOp,
    callback: impl FnOnce(UnparkResult) -> UnparkToken,
) -> UnparkResult {
    const OP: &str = "parking_lot_core::unpark_filter";
    ctx.switch(OP, Some(key_object(ctx, key)));
    lock(ctx, OP, key);
    let mut result = UnparkResult::default();
    // The filter is user code (it may reach scheduling points): the queue is read one
    // entry at a time, never borrowed across it. The queue lock keeps it unchanged.
    let queued: Vec<(u32, ParkToken)> = with(ctx, |lot| {
        let queue: Vec<u32> = lot.key(ctx, key).queue.iter().copied().collect();
        queue
            .into_iter()
            .map(|tid| (tid, lot.slot(tid).token))
            .collect()
    });
    let mut chosen = Vec::new();
    for (tid, token) in queued {
        match filter(token) {
            FilterOp::Unpark => chosen.push(tid),
            FilterOp::Skip => result.have_more_threads = true,
            FilterOp::Stop => {
                result.have_more_threads = true;
                break;
            }
        }
    }
    with(ctx, |lot| {
        lot.key(ctx, key).queue.retain(|t| !chosen.contains(t));
        result.unparked_threads = chosen.len();
        if !chosen.is_empty() {
            result.be_fair = be_fair(ctx, lot, key);
        }
    });
    let token = callback(result);
    let woken: Vec<ObjRef> = with(ctx, |lot| {
        chosen.iter().map(|&tid| lot.unpark(tid, token)).collect()
    });
    unlock(ctx, key);
    for &waiter in &woken {
        ctx.wake_all(waiter);
    }
    result
}
