//! `std::thread`: spawning, joining, scoped threads, parking, sleeping, thread identity.
//!
//! Inside a pulse execution every thread is a virtual thread (a coroutine the scheduler
//! switches between); outside one, real OS threads, exactly as std.

mod local;

use std::any::Any;
use std::cell::UnsafeCell;
use std::fmt;
use std::io;
use std::marker::PhantomData;
use std::num::NonZeroUsize;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

pub use local::{AccessError, LocalKey};

use crate::rt;

/// A specialized `Result` type for threads, as std's.
pub type Result<T> = std::result::Result<T, Box<dyn Any + Send + 'static>>;

/// A unique identifier for a running thread.
#[derive(Eq, PartialEq, Clone, Copy, Hash)]
pub struct ThreadId(IdRepr);

#[derive(Eq, PartialEq, Clone, Copy, Hash)]
enum IdRepr {
    Os(std::thread::ThreadId),
    /// Index of the virtual thread + 1: deterministic, so traces and messages that print
    /// thread ids are the same in every replay.
    Virtual(u64),
}

impl fmt::Debug for ThreadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            IdRepr::Os(id) => fmt::Debug::fmt(&id, f),
            IdRepr::Virtual(n) => f.debug_tuple("ThreadId").field(&n).finish(),
        }
    }
}

/// A handle to a thread: one pointer, as std's is (a crate may assert the size of a struct
/// holding one at compile time: saa's wait queue entry).
#[derive(Clone)]
pub struct Thread(Arc<ThreadRepr>);

#[derive(Clone)]
enum ThreadRepr {
    Os(std::thread::Thread),
    /// `exec`: the execution the thread belongs to; a handle kept past it (in a static)
    /// must not reach a thread of a later execution that reuses the index.
    Virtual {
        tid: u32,
        exec: u64,
        name: Option<Arc<str>>,
    },
}

std::thread_local! {
    /// The last handle made for each virtual thread index, reused when nobody else holds it
    /// (its execution is over): a spawn need not allocate (an allocation per spawned thread
    /// cost spawn/join of 100 threads 12% of its executions per second).
    static VIRTUAL_HANDLES: std::cell::RefCell<Vec<Option<Arc<ThreadRepr>>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

impl Thread {
    fn virtual_thread(ctx: rt::Ctx, tid: u32, name: Option<Arc<str>>) -> Thread {
        let exec = ctx.execution_id();
        // Worked on out of the cell: an allocation here can reach the test's global
        // allocator, whose instrumented atomics are scheduling points, and another thread
        // of the execution (on this OS thread) may ask for its handle meanwhile
        // (crossbeam-channel's counting allocator). It then finds the cell empty; the list
        // is only a cache.
        let mut handles = VIRTUAL_HANDLES.with(std::cell::RefCell::take);
        let i = tid as usize;
        if handles.len() <= i {
            handles.resize_with(i + 1, || None);
        }
        let slot = &mut handles[i];
        let repr = |name| ThreadRepr::Virtual { tid, exec, name };
        match slot {
            // This execution's handle for the thread: shared, as std's handles are.
            Some(h) if matches!(**h, ThreadRepr::Virtual { tid: t, exec: e, .. } if t == tid && e == exec) =>
                {}
            Some(h) => match Arc::get_mut(h) {
                Some(unused) => *unused = repr(name),
                None => *h = Arc::new(repr(name)),
            },
            None => *slot = Some(Arc::new(repr(name))),
        }
        let thread = Thread(slot.clone().expect("set above"));
        // What another thread put back meanwhile is dropped here, outside the cell.
        let _theirs = VIRTUAL_HANDLES.with(|cell| cell.replace(handles));
        thread
    }

    /// Atomically makes the handle's token available if it is not already.
    #[track_caller]
    pub fn unpark(&self) {
        match &*self.0 {
            ThreadRepr::Os(t) => t.unpark(),
            ThreadRepr::Virtual { tid, exec, .. } => {
                // A handle that escaped its execution has nothing left to wake.
                match rt::current().filter(|c| c.execution_id() == *exec) {
                    Some(ctx) => ctx.unpark(*tid),
                    // From an OS thread pulse does not schedule, while the execution runs:
                    // the wake-up is lost, and the run says so.
                    None => pulse_runtime::note_outside_use(*exec, "Thread::unpark", "Thread"),
                }
            }
        }
    }

    /// Gets the thread's unique identifier.
    #[must_use]
    pub fn id(&self) -> ThreadId {
        match &*self.0 {
            ThreadRepr::Os(t) => ThreadId(IdRepr::Os(t.id())),
            ThreadRepr::Virtual { tid, .. } => ThreadId(IdRepr::Virtual(*tid as u64 + 1)),
        }
    }

    /// Gets the thread's name.
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        match &*self.0 {
            ThreadRepr::Os(t) => t.name(),
            ThreadRepr::Virtual { name, .. } => name.as_deref(),
        }
    }
}

impl fmt::Debug for Thread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Thread")
            .field("id", &self.id())
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}

/// Gets a handle to the thread that invokes it.
#[must_use]
pub fn current() -> Thread {
    match rt::current() {
        Some(ctx) => {
            let tid = ctx.me();
            Thread::virtual_thread(ctx, tid, ctx.thread_name(tid))
        }
        None => Thread(Arc::new(ThreadRepr::Os(std::thread::current()))),
    }
}

/// Where a virtual thread leaves its result for `join`.
struct Packet<T>(UnsafeCell<Option<T>>);

// SAFETY: written by the thread before it finishes, read by the joiner after; both on the
// execution's one OS thread, ordered by the scheduler.
unsafe impl<T: Send> Sync for Packet<T> {}

impl<T> Packet<T> {
    fn new() -> Arc<Self> {
        Arc::new(Packet(UnsafeCell::new(None)))
    }
}

/// A virtual thread seen from its handle.
struct VirtualHandle<T> {
    thread: Thread,
    tid: u32,
    packet: Arc<Packet<T>>,
}

impl<T> VirtualHandle<T> {
    /// The running execution, if it is the one this thread belongs to.
    fn own_execution(&self) -> Option<rt::Ctx> {
        let ThreadRepr::Virtual { exec, .. } = *self.thread.0 else {
            return None;
        };
        rt::current().filter(|c| c.execution_id() == exec)
    }

    #[track_caller]
    fn join(self) -> Result<T> {
        let ctx = self
            .own_execution()
            .expect("pulse: a thread spawned in a pulse execution is joined outside it (a JoinHandle kept past its execution?)");
        ctx.join(self.tid)?;
        // SAFETY: the thread finished; nobody else reads the packet. It is empty only for a
        // thread spawned while its execution was being cleaned up, which never ran.
        unsafe { (*self.packet.0.get()).take() }.ok_or_else(|| {
            Box::new("pulse: the thread was spawned after its execution ended and never ran")
                as Box<dyn Any + Send>
        })
    }

    #[track_caller]
    fn is_finished(&self) -> bool {
        match self.own_execution() {
            Some(ctx) => {
                ctx.switch("JoinHandle::is_finished", None);
                ctx.is_finished(self.tid)
            }
            None => true,
        }
    }
}

/// Spawns a virtual thread running `f` and returns its handle.
///
/// # Safety
/// As `Ctx::spawn_unchecked`: the thread must be joined before what `f` borrows dies.
#[track_caller]
unsafe fn spawn_virtual<'a, F, T>(
    ctx: rt::Ctx,
    name: Option<String>,
    stack_size: Option<usize>,
    f: F,
) -> VirtualHandle<T>
where
    F: FnOnce() -> T + 'a,
    T: 'a,
{
    let name: Option<Arc<str>> = name.map(Arc::from);
    let packet = Packet::new();
    let result = packet.clone();
    let body = Box::new(move || {
        let value = f();
        // SAFETY: see Packet.
        unsafe { *result.0.get() = Some(value) };
    });
    let tid = unsafe { ctx.spawn_unchecked(name.clone(), stack_size, body) };
    VirtualHandle {
        thread: Thread::virtual_thread(ctx, tid, name),
        tid,
        packet,
    }
}

/// An owned permission to join on a thread (block on its termination).
pub struct JoinHandle<T>(JoinRepr<T>);

enum JoinRepr<T> {
    Os(std::thread::JoinHandle<T>),
    Virtual(VirtualHandle<T>),
}

unsafe impl<T> Send for JoinHandle<T> {}
unsafe impl<T> Sync for JoinHandle<T> {}

impl<T> JoinHandle<T> {
    /// Extracts a handle to the underlying thread.
    #[must_use]
    pub fn thread(&self) -> &Thread {
        match &self.0 {
            JoinRepr::Os(h) => os_thread(h.thread()),
            JoinRepr::Virtual(v) => &v.thread,
        }
    }

    /// Waits for the associated thread to finish.
    #[track_caller]
    pub fn join(self) -> Result<T> {
        match self.0 {
            JoinRepr::Os(h) => h.join(),
            JoinRepr::Virtual(v) => v.join(),
        }
    }

    /// Checks if the associated thread has finished running its main function.
    #[track_caller]
    pub fn is_finished(&self) -> bool {
        match &self.0 {
            JoinRepr::Os(h) => h.is_finished(),
            JoinRepr::Virtual(v) => v.is_finished(),
        }
    }
}

/// `std::os::unix::thread::JoinHandleExt`, which code reaches through std's path (not
/// rewritten). Virtual threads have no pthread of their own: they all run on the OS thread
/// of the execution, whose pthread is what they report.
#[cfg(unix)]
impl<T> std::os::unix::thread::JoinHandleExt for JoinHandle<T> {
    fn as_pthread_t(&self) -> std::os::unix::thread::RawPthread {
        match &self.0 {
            JoinRepr::Os(h) => h.as_pthread_t(),
            // SAFETY: pthread_self has no preconditions.
            JoinRepr::Virtual(_) => {
                (unsafe { libc::pthread_self() }) as std::os::unix::thread::RawPthread
            }
        }
    }

    fn into_pthread_t(self) -> std::os::unix::thread::RawPthread {
        match self.0 {
            JoinRepr::Os(h) => h.into_pthread_t(),
            JoinRepr::Virtual(_) => {
                (unsafe { libc::pthread_self() }) as std::os::unix::thread::RawPthread
            }
        }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle").finish_non_exhaustive()
    }
}

/// `&std::thread::Thread` as `&Thread`: std hands out references, so ours must too.
fn os_thread(t: &std::thread::Thread) -> &Thread {
    thread_cache::lookup(t)
}

mod thread_cache {
    //! std's `JoinHandle::thread` returns `&Thread`; our handle stores a std one, so we
    //! keep one converted `Thread` per std thread id, leaked once (bounded by the number
    //! of OS threads ever joined through a shim handle's `thread()`).
    use super::{Thread, ThreadRepr};
    use std::collections::HashMap;
    use std::sync::Mutex;

    static CACHE: Mutex<Option<HashMap<std::thread::ThreadId, &'static Thread>>> = Mutex::new(None);

    pub(super) fn lookup(t: &std::thread::Thread) -> &'static Thread {
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        let map = cache.get_or_insert_with(HashMap::new);
        map.entry(t.id()).or_insert_with(|| {
            Box::leak(Box::new(Thread(std::sync::Arc::new(ThreadRepr::Os(
                t.clone(),
            )))))
        })
    }
}

/// Thread factory, used to configure the properties of a new thread.
#[must_use = "must eventually spawn the thread"]
#[derive(Debug)]
pub struct Builder {
    name: Option<String>,
    stack_size: Option<usize>,
}

impl Builder {
    /// Generates the base configuration for spawning a thread.
    pub fn new() -> Builder {
        Builder {
            name: None,
            stack_size: None,
        }
    }

    /// Names the thread-to-be.
    pub fn name(mut self, name: String) -> Builder {
        self.name = Some(name);
        self
    }

    /// Sets the size of the stack (in bytes) for the new thread.
    pub fn stack_size(mut self, size: usize) -> Builder {
        self.stack_size = Some(size);
        self
    }

    /// Spawns a new thread by taking ownership of the `Builder`.
    #[track_caller]
    pub fn spawn<F, T>(self, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        unsafe { self.spawn_unchecked(f) }
    }

    /// Spawns a new thread without any lifetime restrictions.
    ///
    /// # Safety
    /// As `std::thread::Builder::spawn_unchecked`.
    #[track_caller]
    pub unsafe fn spawn_unchecked<F, T>(self, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send,
        T: Send,
    {
        self.check_name();
        match rt::current() {
            Some(ctx) => {
                ctx.can_spawn(self.stack_size)?;
                Ok(JoinHandle(JoinRepr::Virtual(unsafe {
                    spawn_virtual(ctx, self.name, self.stack_size, f)
                })))
            }
            None => {
                unsafe { self.into_std().spawn_unchecked(f) }.map(|h| JoinHandle(JoinRepr::Os(h)))
            }
        }
    }

    /// Spawns a new scoped thread using the settings set through this `Builder`.
    #[track_caller]
    pub fn spawn_scoped<'scope, 'env, F, T>(
        self,
        scope: &'scope Scope<'scope, 'env>,
        f: F,
    ) -> io::Result<ScopedJoinHandle<'scope, T>>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        self.check_name();
        match &scope.kind {
            ScopeKind::Os(s) => self
                .into_std()
                .spawn_scoped(s, f)
                .map(|h| ScopedJoinHandle(ScopedRepr::Os(h))),
            ScopeKind::Virtual(v) => {
                let ctx = rt::current().expect("pulse: a pulse scope used outside its execution");
                ctx.can_spawn(self.stack_size)?;
                let handle = unsafe { spawn_virtual(ctx, self.name, self.stack_size, f) };
                v.lock().unwrap_or_else(|e| e.into_inner()).push(handle.tid);
                Ok(ScopedJoinHandle(ScopedRepr::Virtual(handle, PhantomData)))
            }
        }
    }

    fn check_name(&self) {
        if self.name.as_deref().is_some_and(|n| n.contains('\0')) {
            panic!("thread name may not contain interior null bytes");
        }
    }

    fn into_std(self) -> std::thread::Builder {
        let mut b = std::thread::Builder::new();
        if let Some(n) = self.name {
            b = b.name(n);
        }
        if let Some(s) = self.stack_size {
            b = b.stack_size(s);
        }
        b
    }
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

/// Spawns a new thread, returning a `JoinHandle` for it.
#[track_caller]
pub fn spawn<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    Builder::new().spawn(f).expect("failed to spawn thread")
}

/// A scope to spawn scoped threads in.
pub struct Scope<'scope, 'env: 'scope> {
    kind: ScopeKind<'scope, 'env>,
    scope: PhantomData<&'scope mut &'scope ()>,
    env: PhantomData<&'env mut &'env ()>,
}

enum ScopeKind<'scope, 'env> {
    Os(&'scope std::thread::Scope<'scope, 'env>),
    /// Virtual threads spawned in the scope, joined when it ends.
    Virtual(std::sync::Mutex<Vec<u32>>),
}

/// An owned permission to join on a scoped thread.
pub struct ScopedJoinHandle<'scope, T>(ScopedRepr<'scope, T>);

enum ScopedRepr<'scope, T> {
    Os(std::thread::ScopedJoinHandle<'scope, T>),
    Virtual(VirtualHandle<T>, PhantomData<&'scope ()>),
}

unsafe impl<T> Send for ScopedJoinHandle<'_, T> {}
unsafe impl<T> Sync for ScopedJoinHandle<'_, T> {}

/// Creates a scope for spawning scoped threads; all of them are joined before it returns.
#[track_caller]
pub fn scope<'env, F, T>(f: F) -> T
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> T,
{
    match rt::current() {
        Some(ctx) => virtual_scope(ctx, f),
        None => os_scope(f),
    }
}

#[track_caller]
fn virtual_scope<'env, F, T>(ctx: rt::Ctx, f: F) -> T
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> T,
{
    let scope = Scope {
        kind: ScopeKind::Virtual(std::sync::Mutex::new(Vec::new())),
        scope: PhantomData,
        env: PhantomData,
    };
    let result = panic::catch_unwind(AssertUnwindSafe(|| f(&scope)));
    let ScopeKind::Virtual(spawned) = &scope.kind else {
        unreachable!()
    };
    // Join every thread, including ones spawned by scoped threads while we wait.
    let mut a_thread_panicked = false;
    loop {
        let batch = std::mem::take(&mut *spawned.lock().unwrap_or_else(|e| e.into_inner()));
        if batch.is_empty() {
            break;
        }
        for tid in batch {
            a_thread_panicked |= ctx.join(tid).is_err();
        }
    }
    match result {
        Err(e) => panic::resume_unwind(e),
        Ok(_) if a_thread_panicked => panic!("a scoped thread panicked"),
        Ok(value) => value,
    }
}

fn os_scope<'env, F, T>(f: F) -> T
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> T,
{
    // `f` wants `&'scope Scope<'scope, 'env>` for std's 'scope, which only a value living
    // as long as std's scope can give: allocate it, and free it once std has joined every
    // thread (after `std::thread::scope` returns), when no reference to it can remain.
    struct Allocation(*mut u8, std::alloc::Layout);
    impl Drop for Allocation {
        fn drop(&mut self) {
            if !self.0.is_null() {
                // SAFETY: allocated below with this layout; `Scope` has no drop glue in
                // its `Os` form, so freeing without dropping is fine.
                unsafe { std::alloc::dealloc(self.0, self.1) };
            }
        }
    }
    let mut allocation = Allocation(
        std::ptr::null_mut(),
        std::alloc::Layout::new::<Scope<'static, 'static>>(),
    );
    let slot = &mut allocation.0;
    std::thread::scope(|s| {
        let boxed = Box::new(Scope {
            kind: ScopeKind::Os(s),
            scope: PhantomData,
            env: PhantomData,
        });
        let ptr = Box::into_raw(boxed);
        *slot = ptr as *mut u8;
        // SAFETY: lives until `allocation` drops, after std joined every scoped thread.
        f(unsafe { &*ptr })
    })
}

impl<'scope, 'env> Scope<'scope, 'env> {
    /// Spawns a new thread within a scope, returning a `ScopedJoinHandle` for it.
    #[track_caller]
    pub fn spawn<F, T>(&'scope self, f: F) -> ScopedJoinHandle<'scope, T>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        Builder::new()
            .spawn_scoped(self, f)
            .expect("failed to spawn thread")
    }
}

impl fmt::Debug for Scope<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope").finish_non_exhaustive()
    }
}

impl<'scope, T> ScopedJoinHandle<'scope, T> {
    /// Extracts a handle to the underlying thread.
    #[must_use]
    pub fn thread(&self) -> &Thread {
        match &self.0 {
            ScopedRepr::Os(h) => os_thread(h.thread()),
            ScopedRepr::Virtual(v, _) => &v.thread,
        }
    }

    /// Waits for the associated thread to finish.
    #[track_caller]
    pub fn join(self) -> Result<T> {
        match self.0 {
            ScopedRepr::Os(h) => h.join(),
            ScopedRepr::Virtual(v, _) => v.join(),
        }
    }

    /// Checks if the associated thread has finished running its main function.
    #[track_caller]
    pub fn is_finished(&self) -> bool {
        match &self.0 {
            ScopedRepr::Os(h) => h.is_finished(),
            ScopedRepr::Virtual(v, _) => v.is_finished(),
        }
    }
}

impl<T> fmt::Debug for ScopedJoinHandle<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScopedJoinHandle").finish_non_exhaustive()
    }
}

/// Blocks unless or until the current thread's token is made available.
#[track_caller]
pub fn park() {
    match rt::current() {
        Some(ctx) => ctx.park(None),
        None => std::thread::park(),
    }
}

/// Blocks unless or until the current thread's token is made available or the timeout
/// elapses (on pulse's virtual clock inside an execution).
#[track_caller]
pub fn park_timeout(dur: Duration) {
    match rt::current() {
        Some(ctx) => ctx.park(Some(dur)),
        None => std::thread::park_timeout(dur),
    }
}

/// Use [`park_timeout`].
#[deprecated(since = "1.6.0", note = "replaced by `std::thread::park_timeout`")]
#[track_caller]
pub fn park_timeout_ms(ms: u32) {
    park_timeout(Duration::from_millis(ms as u64))
}

/// Cooperatively gives up a timeslice to the scheduler.
#[track_caller]
pub fn yield_now() {
    match rt::current() {
        Some(ctx) => ctx.yield_now(),
        None => std::thread::yield_now(),
    }
}

/// Puts the current thread to sleep for at least `dur` (virtual time under pulse: the
/// clock jumps when every thread is waiting, so sleeps cost no real time).
#[track_caller]
pub fn sleep(dur: Duration) {
    match rt::current() {
        Some(ctx) => ctx.sleep(dur),
        None => std::thread::sleep(dur),
    }
}

/// Use [`sleep`].
#[deprecated(since = "1.6.0", note = "replaced by `std::thread::sleep`")]
#[track_caller]
pub fn sleep_ms(ms: u32) {
    sleep(Duration::from_millis(ms as u64))
}

/// Determines whether the current thread is unwinding because of panic.
#[inline]
#[must_use]
pub fn panicking() -> bool {
    match rt::current() {
        Some(ctx) => ctx.panicking(),
        None => std::thread::panicking(),
    }
}

/// Returns an estimate of the default amount of parallelism a program should use (a fixed
/// number under pulse, so a schedule replays the same on any machine).
pub fn available_parallelism() -> io::Result<NonZeroUsize> {
    match rt::current() {
        Some(ctx) => {
            Ok(NonZeroUsize::new(ctx.available_parallelism()).unwrap_or(NonZeroUsize::MIN))
        }
        None => std::thread::available_parallelism(),
    }
}
