//! `std::sync::mpsc`, with every send, receive and disconnecting drop a scheduling point
//! under pulse.
//!
//! A channel created inside an execution is pulse's own: a buffer whose blocked senders
//! and receiver wait through the scheduler. Nondeterministic here: the order in which
//! concurrent senders' messages enter the channel (each send is a scheduling point, so it
//! is the scheduler's order), which blocked sender gets a freed slot of a full
//! `sync_channel` (all are woken and race), and, for `recv_timeout`, whether the message or
//! the virtual-clock deadline comes first. Semantics are std's: unbounded `channel`;
//! `sync_channel(n)` blocks senders while `n` messages are buffered; `sync_channel(0)` is a
//! rendezvous, where `send` returns once the receiver has the message; dropping the last
//! sender or the receiver disconnects and wakes the other side.
//!
//! A channel created outside an execution is std's, and stays std's: using it inside an
//! execution panics (its operations would escape the scheduler, and a blocking one would
//! block the OS thread running every virtual thread). A pulse channel used after its
//! execution ended (returned from the checked closure) still works for everything that
//! does not have to wait; an operation that would wait panics, as nothing could wake it.
//! The error types are std's own, so they cross freely between instrumented and
//! uninstrumented code.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use pulse_runtime::{ObjRef, ObjectCell, ObjectState, TraceKind, WakeReason};

use crate::rt;

pub use std::sync::mpsc::{RecvError, RecvTimeoutError, SendError, TryRecvError, TrySendError};

/// A channel's name in an execution. Its contents are not per-execution state (they must
/// stay put if the channel outlives its execution), so they live in `Chan::state`.
#[derive(Default)]
struct ChanName;

impl ObjectState for ChanName {
    const KIND: &'static str = "Channel";
}

struct Msg<T> {
    value: T,
    /// Set while the sender waits in a rendezvous `send` for the receiver to take it.
    ticket: Option<u64>,
}

struct State<T> {
    queue: VecDeque<Msg<T>>,
    /// `None`: unbounded; `Some(0)`: rendezvous.
    bound: Option<usize>,
    senders: usize,
    receiver: bool,
    next_ticket: u64,
}

/// A pulse channel, shared by its senders and its receiver. The std mutex only makes it
/// `Sync`: it is uncontended (one OS thread runs an execution) and never held across a
/// scheduling point.
struct Chan<T> {
    state: Mutex<State<T>>,
    name: ObjectCell<ChanName>,
}

/// The execution a channel operation runs in, and the channel's name there.
#[derive(Clone, Copy)]
struct Exec {
    ctx: rt::Ctx,
    obj: ObjRef,
}

/// Wakes everyone blocked on the channel after its state changed; each re-checks.
fn wake(exec: Option<Exec>) {
    if let Some(e) = exec {
        e.ctx.wake_all(e.obj);
    }
}

/// Puts what a channel operation did in the trace file (only while tracing).
#[track_caller]
fn note(exec: Option<Exec>, kind: TraceKind, op: &'static str, value: Option<&'static str>) {
    if let Some(e) = exec {
        e.ctx.note(kind, op, Some(e.obj), value);
    }
}

/// Waits for the channel's state to change (or `timeout` on the virtual clock).
#[track_caller]
fn block(exec: Option<Exec>, op: &'static str, timeout: Option<Duration>) -> WakeReason {
    match exec {
        Some(e) => e.ctx.block(op, Some(e.obj), timeout),
        None => would_block(op),
    }
}

#[cold]
#[track_caller]
fn would_block(op: &str) -> ! {
    panic!(
        "pulse: `{op}` would block on a channel created inside pulse::check, but it runs outside the \
         execution (after it ended?), where nothing can wake it; only operations that need not wait work there"
    )
}

/// Std channels cannot be scheduled: refuse them inside an execution (but not while the
/// thread unwinds, maybe from this very refusal: a second panic would abort).
#[track_caller]
fn forbid_std_inside(op: &str) {
    if rt::current().is_some() && !std::thread::panicking() {
        panic!(
            "pulse: `{op}`: a channel created outside pulse::check is used inside it; create it inside \
             the checked closure"
        );
    }
}

/// The scheduling point before an operation; `None` outside an execution. (The
/// execution's side of a channel is in free functions, not generic: compiled once,
/// optimised, here rather than per message type in the user's crate.)
#[track_caller]
fn enter(name: &ObjectCell<ChanName>, op: &'static str) -> Option<Exec> {
    let Some(ctx) = rt::current() else {
        name.outside(op);
        return None;
    };
    let obj = name.obj(ctx);
    ctx.switch(op, Some(obj));
    Some(Exec { ctx, obj })
}

/// As `enter`, for a drop: no scheduling point while an ended execution is being cleaned
/// up (drops run while its threads unwind).
#[track_caller]
fn enter_drop(name: &ObjectCell<ChanName>, op: &'static str) -> Option<Exec> {
    let ctx = rt::current()?;
    let obj = name.obj(ctx);
    if !ctx.is_teardown() {
        ctx.switch(op, Some(obj));
    }
    Some(Exec { ctx, obj })
}

/// Whether a thread is blocked on the channel.
fn has_waiters(exec: Option<Exec>) -> bool {
    exec.is_some_and(|e| e.ctx.has_waiters(e.obj))
}

/// The virtual clock's reading (`recv_timeout`).
fn now(exec: Exec) -> Duration {
    exec.ctx.now()
}

impl<T> Chan<T> {
    fn new(bound: Option<usize>) -> Arc<Chan<T>> {
        Arc::new(Chan {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                bound,
                senders: 1,
                receiver: true,
                next_ticket: 0,
            }),
            name: ObjectCell::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // Never poisoned: no user code runs while it is held.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    #[track_caller]
    fn enter(&self, op: &'static str) -> Option<Exec> {
        enter(&self.name, op)
    }

    #[track_caller]
    fn enter_drop(&self, op: &'static str) -> Option<Exec> {
        enter_drop(&self.name, op)
    }

    /// Whether the receiver is blocked waiting for a message. With nothing queued, only a
    /// receiver can be blocked on the channel.
    fn receiver_waiting(st: &State<T>, exec: Option<Exec>) -> bool {
        st.queue.is_empty() && has_waiters(exec)
    }

    #[track_caller]
    fn send(&self, t: T, op: &'static str) -> Result<(), SendError<T>> {
        let exec = self.enter(op);
        let ticket = loop {
            let mut st = self.lock();
            if !st.receiver {
                return Err(SendError(t));
            }
            match st.bound {
                // Rendezvous with a waiting receiver: hand the message over and go on.
                Some(0) if Self::receiver_waiting(&st, exec) => {}
                // Rendezvous otherwise: offer the message, then wait for it to be taken.
                Some(0) => {
                    if exec.is_none() {
                        drop(st);
                        would_block(op);
                    }
                    let ticket = st.next_ticket;
                    st.next_ticket += 1;
                    st.queue.push_back(Msg {
                        value: t,
                        ticket: Some(ticket),
                    });
                    drop(st);
                    note(exec, TraceKind::Send, op, None);
                    break ticket;
                }
                Some(n) if st.queue.len() >= n => {
                    drop(st);
                    if block(exec, op, None) == WakeReason::Teardown {
                        return Err(SendError(t));
                    }
                    continue;
                }
                _ => {}
            }
            st.queue.push_back(Msg {
                value: t,
                ticket: None,
            });
            drop(st);
            note(exec, TraceKind::Send, op, None);
            wake(exec);
            return Ok(());
        };
        wake(exec);
        loop {
            let reason = block(exec, op, None);
            let mut st = self.lock();
            match st.queue.iter().position(|m| m.ticket == Some(ticket)) {
                None => return Ok(()),
                Some(i) if !st.receiver || reason == WakeReason::Teardown => {
                    let msg = st.queue.remove(i).expect("position is in range");
                    return Err(SendError(msg.value));
                }
                Some(_) => {}
            }
        }
    }

    #[track_caller]
    fn try_send(&self, t: T) -> Result<(), TrySendError<T>> {
        let exec = self.enter("SyncSender::try_send");
        let mut st = self.lock();
        if !st.receiver {
            return Err(TrySendError::Disconnected(t));
        }
        let room = match st.bound {
            Some(0) => Self::receiver_waiting(&st, exec),
            Some(n) => st.queue.len() < n,
            None => true,
        };
        if !room {
            return Err(TrySendError::Full(t));
        }
        st.queue.push_back(Msg {
            value: t,
            ticket: None,
        });
        drop(st);
        note(exec, TraceKind::Send, "SyncSender::try_send", None);
        wake(exec);
        Ok(())
    }

    /// `recv` (no timeout) and `recv_timeout`.
    #[track_caller]
    fn recv(&self, op: &'static str, timeout: Option<Duration>) -> Result<T, RecvTimeoutError> {
        let exec = self.enter(op);
        // On overflow there is no deadline: the wait is as good as endless.
        let deadline = match (exec, timeout) {
            (Some(e), Some(d)) => now(e).checked_add(d),
            _ => None,
        };
        loop {
            {
                let mut st = self.lock();
                if let Some(msg) = st.queue.pop_front() {
                    drop(st);
                    note(exec, TraceKind::Recv, op, Some("Ok"));
                    wake(exec);
                    return Ok(msg.value);
                }
                if st.senders == 0 {
                    drop(st);
                    note(exec, TraceKind::Recv, op, Some("Err(Disconnected)"));
                    return Err(RecvTimeoutError::Disconnected);
                }
            }
            let remaining = match (exec, deadline) {
                (Some(e), Some(deadline)) => {
                    let now = now(e);
                    if now >= deadline {
                        note(exec, TraceKind::Recv, op, Some("Err(Timeout)"));
                        return Err(RecvTimeoutError::Timeout);
                    }
                    Some(deadline - now)
                }
                _ => None,
            };
            if block(exec, op, remaining) == WakeReason::Teardown {
                return Err(match timeout {
                    Some(_) => RecvTimeoutError::Timeout,
                    None => RecvTimeoutError::Disconnected,
                });
            }
        }
    }

    #[track_caller]
    fn try_recv(&self) -> Result<T, TryRecvError> {
        let exec = self.enter("Receiver::try_recv");
        let mut st = self.lock();
        let op = "Receiver::try_recv";
        match st.queue.pop_front() {
            Some(msg) => {
                drop(st);
                note(exec, TraceKind::Recv, op, Some("Ok"));
                wake(exec);
                Ok(msg.value)
            }
            None if st.senders == 0 => {
                drop(st);
                note(exec, TraceKind::Recv, op, Some("Err(Disconnected)"));
                Err(TryRecvError::Disconnected)
            }
            None => {
                drop(st);
                note(exec, TraceKind::Recv, op, Some("Err(Empty)"));
                Err(TryRecvError::Empty)
            }
        }
    }

    fn clone_sender(&self) {
        self.lock().senders += 1;
    }

    /// Only the drop of the last sender is visible to the receiver, so only it is a
    /// scheduling point. (With one sender left nobody else can clone it meanwhile.)
    #[track_caller]
    fn drop_sender(&self, op: &'static str) {
        let last = self.lock().senders == 1;
        let exec = if last { self.enter_drop(op) } else { None };
        let mut st = self.lock();
        st.senders -= 1;
        let disconnected = st.senders == 0;
        drop(st);
        if disconnected {
            wake(exec);
        }
    }

    /// Disconnects: buffered messages are dropped now, as std does; a rendezvous sender
    /// still waiting takes its own message back in its `SendError`.
    #[track_caller]
    fn drop_receiver(&self) {
        let exec = self.enter_drop("Receiver::drop");
        let discarded: VecDeque<Msg<T>> = {
            let mut st = self.lock();
            st.receiver = false;
            let (waiting, discarded) = std::mem::take(&mut st.queue)
                .into_iter()
                .partition(|m| m.ticket.is_some());
            st.queue = waiting;
            discarded
        };
        wake(exec);
        // Dropped with the lock released: a message's destructor may use pulse.
        drop(discarded);
    }
}

enum SenderFlavor<T> {
    Std(std::sync::mpsc::Sender<T>),
    Pulse(Arc<Chan<T>>),
}

enum SyncSenderFlavor<T> {
    Std(std::sync::mpsc::SyncSender<T>),
    Pulse(Arc<Chan<T>>),
}

enum ReceiverFlavor<T> {
    Std(std::sync::mpsc::Receiver<T>),
    Pulse(Arc<Chan<T>>),
}

/// The sending half of `channel`. `Send + Sync` for `T: Send`, as std's (the std variant
/// carries std's bounds).
pub struct Sender<T> {
    inner: SenderFlavor<T>,
}

/// The sending half of `sync_channel`.
pub struct SyncSender<T> {
    inner: SyncSenderFlavor<T>,
}

/// The receiving half of a channel. `!Sync`, as std's (through the std variant).
pub struct Receiver<T> {
    inner: ReceiverFlavor<T>,
}

/// An iterator over messages on a `Receiver`, blocking for each; ends on disconnection.
#[derive(Debug)]
pub struct Iter<'a, T: 'a> {
    rx: &'a Receiver<T>,
}

/// An iterator over the messages already waiting on a `Receiver`.
#[derive(Debug)]
pub struct TryIter<'a, T: 'a> {
    rx: &'a Receiver<T>,
}

/// An owning iterator over messages on a `Receiver`.
#[derive(Debug)]
pub struct IntoIter<T> {
    rx: Receiver<T>,
}

/// Creates an unbounded channel: a pulse channel inside an execution, std's outside.
#[must_use]
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    if rt::current().is_some() {
        let chan = Chan::new(None);
        (
            Sender {
                inner: SenderFlavor::Pulse(chan.clone()),
            },
            Receiver {
                inner: ReceiverFlavor::Pulse(chan),
            },
        )
    } else {
        let (tx, rx) = std::sync::mpsc::channel();
        (
            Sender {
                inner: SenderFlavor::Std(tx),
            },
            Receiver {
                inner: ReceiverFlavor::Std(rx),
            },
        )
    }
}

/// Creates a channel buffering at most `bound` messages (`0`: a rendezvous): a pulse
/// channel inside an execution, std's outside.
#[must_use]
pub fn sync_channel<T>(bound: usize) -> (SyncSender<T>, Receiver<T>) {
    if rt::current().is_some() {
        let chan = Chan::new(Some(bound));
        (
            SyncSender {
                inner: SyncSenderFlavor::Pulse(chan.clone()),
            },
            Receiver {
                inner: ReceiverFlavor::Pulse(chan),
            },
        )
    } else {
        let (tx, rx) = std::sync::mpsc::sync_channel(bound);
        (
            SyncSender {
                inner: SyncSenderFlavor::Std(tx),
            },
            Receiver {
                inner: ReceiverFlavor::Std(rx),
            },
        )
    }
}

impl<T> Sender<T> {
    /// Sends a value; never blocks. `Err` (with the value) once the receiver is gone.
    #[track_caller]
    pub fn send(&self, t: T) -> Result<(), SendError<T>> {
        match &self.inner {
            SenderFlavor::Std(tx) => {
                forbid_std_inside("Sender::send");
                tx.send(t)
            }
            SenderFlavor::Pulse(chan) => chan.send(t, "Sender::send"),
        }
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Sender<T> {
        let inner = match &self.inner {
            SenderFlavor::Std(tx) => SenderFlavor::Std(tx.clone()),
            SenderFlavor::Pulse(chan) => {
                chan.clone_sender();
                SenderFlavor::Pulse(chan.clone())
            }
        };
        Sender { inner }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        if let SenderFlavor::Pulse(chan) = &self.inner {
            chan.drop_sender("Sender::drop");
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender").finish_non_exhaustive()
    }
}

impl<T> SyncSender<T> {
    /// Sends a value, blocking while the buffer is full (for a rendezvous, until the
    /// receiver has it). `Err` (with the value) once the receiver is gone.
    #[track_caller]
    pub fn send(&self, t: T) -> Result<(), SendError<T>> {
        match &self.inner {
            SyncSenderFlavor::Std(tx) => {
                forbid_std_inside("SyncSender::send");
                tx.send(t)
            }
            SyncSenderFlavor::Pulse(chan) => chan.send(t, "SyncSender::send"),
        }
    }

    /// Sends a value if there is room now (for a rendezvous: if the receiver is waiting).
    #[track_caller]
    pub fn try_send(&self, t: T) -> Result<(), TrySendError<T>> {
        match &self.inner {
            SyncSenderFlavor::Std(tx) => {
                forbid_std_inside("SyncSender::try_send");
                tx.try_send(t)
            }
            SyncSenderFlavor::Pulse(chan) => chan.try_send(t),
        }
    }
}

impl<T> Clone for SyncSender<T> {
    fn clone(&self) -> SyncSender<T> {
        let inner = match &self.inner {
            SyncSenderFlavor::Std(tx) => SyncSenderFlavor::Std(tx.clone()),
            SyncSenderFlavor::Pulse(chan) => {
                chan.clone_sender();
                SyncSenderFlavor::Pulse(chan.clone())
            }
        };
        SyncSender { inner }
    }
}

impl<T> Drop for SyncSender<T> {
    fn drop(&mut self) {
        if let SyncSenderFlavor::Pulse(chan) = &self.inner {
            chan.drop_sender("SyncSender::drop");
        }
    }
}

impl<T> fmt::Debug for SyncSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncSender").finish_non_exhaustive()
    }
}

impl<T> Receiver<T> {
    /// Receives a message if one is waiting.
    #[track_caller]
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        match &self.inner {
            ReceiverFlavor::Std(rx) => {
                forbid_std_inside("Receiver::try_recv");
                rx.try_recv()
            }
            ReceiverFlavor::Pulse(chan) => chan.try_recv(),
        }
    }

    /// Blocks until a message arrives; `Err` once every sender is gone and the buffer is
    /// empty.
    #[track_caller]
    pub fn recv(&self) -> Result<T, RecvError> {
        match &self.inner {
            ReceiverFlavor::Std(rx) => {
                forbid_std_inside("Receiver::recv");
                rx.recv()
            }
            ReceiverFlavor::Pulse(chan) => chan.recv("Receiver::recv", None).map_err(|_| RecvError),
        }
    }

    /// As `recv`, giving up after `timeout` (on the virtual clock under pulse, so the wait
    /// costs no real time).
    #[track_caller]
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        match &self.inner {
            ReceiverFlavor::Std(rx) => {
                forbid_std_inside("Receiver::recv_timeout");
                rx.recv_timeout(timeout)
            }
            ReceiverFlavor::Pulse(chan) => chan.recv("Receiver::recv_timeout", Some(timeout)),
        }
    }

    /// An iterator that blocks for each message and ends on disconnection.
    pub fn iter(&self) -> Iter<'_, T> {
        Iter { rx: self }
    }

    /// An iterator over the messages waiting now; it never blocks.
    pub fn try_iter(&self) -> TryIter<'_, T> {
        TryIter { rx: self }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        if let ReceiverFlavor::Pulse(chan) = &self.inner {
            chan.drop_receiver();
        }
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver").finish_non_exhaustive()
    }
}

impl<T> Iterator for Iter<'_, T> {
    type Item = T;

    #[track_caller]
    fn next(&mut self) -> Option<T> {
        self.rx.recv().ok()
    }
}

impl<T> Iterator for TryIter<'_, T> {
    type Item = T;

    #[track_caller]
    fn next(&mut self) -> Option<T> {
        self.rx.try_recv().ok()
    }
}

impl<T> Iterator for IntoIter<T> {
    type Item = T;

    #[track_caller]
    fn next(&mut self) -> Option<T> {
        self.rx.recv().ok()
    }
}

impl<'a, T> IntoIterator for &'a Receiver<T> {
    type Item = T;
    type IntoIter = Iter<'a, T>;

    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

impl<T> IntoIterator for Receiver<T> {
    type Item = T;
    type IntoIter = IntoIter<T>;

    fn into_iter(self) -> IntoIter<T> {
        IntoIter { rx: self }
    }
}
