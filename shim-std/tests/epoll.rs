//! `epoll_wait` as instrumented code makes it (`pulse::std::libc::epoll_wait`, which the
//! instrumenter puts in place of `libc::epoll_wait`, as mio's reactor calls it): the system
//! call outside an execution; inside one a wait blocks in the scheduler until another
//! thread's write makes the instance ready, or its timeout passes on the virtual clock, and
//! a reactor's lost wakeup is found while its fixed twin passes.

use std::os::fd::RawFd;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use std::time::Duration;

use pulse_runtime::{Builder, FailureKind};
use pulse_shim_std::libc::{epoll_event, epoll_wait};
use pulse_shim_std::sync::atomic::AtomicBool;
use pulse_shim_std::thread;
use pulse_shim_std::time::Instant;

/// An epoll instance watching a fresh eventfd (level-triggered, readable), both closed on
/// drop.
struct Reactor {
    epfd: RawFd,
    event: RawFd,
}

impl Reactor {
    fn new() -> Reactor {
        // SAFETY: plain system calls; the descriptors are owned by the value.
        unsafe {
            let epfd = libc::epoll_create1(libc::EPOLL_CLOEXEC);
            let event = libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC);
            assert!(epfd >= 0 && event >= 0);
            let mut interest = epoll_event {
                events: libc::EPOLLIN as u32,
                u64: 7,
            };
            assert_eq!(
                libc::epoll_ctl(epfd, libc::EPOLL_CTL_ADD, event, &mut interest),
                0
            );
            Reactor { epfd, event }
        }
    }

    /// Waits up to `timeout_ms` (-1: for ever); the number of ready events.
    fn wait(&self, timeout_ms: i32) -> i32 {
        let mut events = [epoll_event { events: 0, u64: 0 }; 4];
        // SAFETY: `events` has room for 4.
        unsafe { epoll_wait(self.epfd, events.as_mut_ptr(), 4, timeout_ms) }
    }

    /// What mio's `Waker::wake` does: adds 1 to the eventfd.
    fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64.
        let n = unsafe { libc::write(self.event, &one as *const u64 as *const libc::c_void, 8) };
        assert_eq!(n, 8);
    }
}

impl Drop for Reactor {
    fn drop(&mut self) {
        // SAFETY: the value owns both descriptors.
        unsafe {
            libc::close(self.event);
            libc::close(self.epfd);
        }
    }
}

#[test]
fn outside_an_execution_it_is_the_system_call() {
    let r = Reactor::new();
    let started = std::time::Instant::now();
    assert_eq!(r.wait(30), 0, "nothing is ready");
    assert!(started.elapsed() >= Duration::from_millis(30));
    r.wake();
    assert_eq!(r.wait(-1), 1);
}

/// 300 schedules of: a thread waits on the reactor (`wait`, which checks the flag after),
/// while the main thread sets the flag, then writes the reactor's eventfd.
fn woken_by_a_write(wait: fn(&Reactor, &AtomicBool)) {
    let started = std::time::Instant::now();
    let report = Builder::new().schedules(300).seed(5).run(move || {
        let r = Arc::new(Reactor::new());
        let flag = Arc::new(AtomicBool::new(false));
        let (r2, f2) = (r.clone(), flag.clone());
        let reactor = thread::spawn(move || wait(&r2, &f2));
        flag.store(true, SeqCst);
        r.wake();
        reactor.join().unwrap();
    });
    assert!(report.failure.is_none(), "{:?}", report.failure);
    assert_eq!(report.executions, 300);
    // No execution waited in the kernel: the write was seen at the next decision.
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn a_reactor_wakes_when_another_thread_writes_its_eventfd() {
    woken_by_a_write(|r, flag| {
        assert_eq!(r.wait(-1), 1);
        // The write was made after the store: the reactor sees it.
        assert!(flag.load(SeqCst));
    });
}

#[test]
fn a_timed_wait_times_out_on_the_virtual_clock() {
    let started = std::time::Instant::now();
    let report = Builder::new().schedules(20).seed(6).run(|| {
        let r = Reactor::new();
        let start = Instant::now();
        assert_eq!(r.wait(5_000), 0);
        assert!(start.elapsed() >= Duration::from_secs(5));
        assert_eq!(r.wait(0), 0, "a look returns at once");
    });
    assert!(report.failure.is_none(), "{:?}", report.failure);
    assert!(started.elapsed() < Duration::from_secs(2));
}

/// A reactor that parks when no work is posted, and a poster that wakes it only if it is
/// parked. Checking for work before saying it parks (`announce_first` false) lets the poster
/// see it not parked, skip the wake, and leave the reactor asleep for ever.
fn parking_reactor(announce_first: bool) -> pulse_runtime::Report {
    Builder::new()
        .schedules(500)
        .seed(3)
        .minimize(Duration::ZERO)
        .run(move || {
            let r = Arc::new(Reactor::new());
            let work = Arc::new(AtomicBool::new(false));
            let parked = Arc::new(AtomicBool::new(false));
            let (r2, w2, p2) = (r.clone(), work.clone(), parked.clone());
            let reactor = thread::spawn(move || {
                if announce_first {
                    p2.store(true, SeqCst);
                }
                if !w2.load(SeqCst) {
                    p2.store(true, SeqCst);
                    r2.wait(-1);
                }
            });
            work.store(true, SeqCst);
            if parked.load(SeqCst) {
                r.wake();
            }
            reactor.join().unwrap();
        })
}

#[test]
fn a_reactor_s_lost_wakeup_is_found_and_its_fixed_twin_passes() {
    let failure = parking_reactor(false)
        .failure
        .expect("the lost wakeup is found");
    assert_eq!(failure.kind, FailureKind::Deadlock, "{}", failure.message);
    assert!(
        failure
            .details
            .iter()
            .any(|d| d.contains("blocked in epoll_wait on Epoll#0")),
        "{:?}",
        failure.details
    );
    assert!(
        failure
            .details
            .iter()
            .any(|d| d.contains("2 s of real time")),
        "the real wait is said: {:?}",
        failure.details
    );
    let fixed = parking_reactor(true);
    assert!(fixed.failure.is_none(), "{:?}", fixed.failure);
    assert_eq!(fixed.executions, 500);
}

/// A reactor's wait through rustix (polling 3's `Poller::wait`, given `ready_by` first by
/// the instrumenter): waits in the scheduler for another thread's write, or for its limit
/// on the virtual clock, then goes on with a limit already due; outside an execution the
/// limit is returned as it is.
mod ready_by {
    use super::*;
    use pulse_shim_std::libc::ready_by;
    use std::os::fd::BorrowedFd;

    fn fd(r: &Reactor) -> BorrowedFd<'_> {
        // SAFETY: the reactor owns the descriptor for as long as the borrow.
        unsafe { BorrowedFd::borrow_raw(r.epfd) }
    }

    #[test]
    fn outside_an_execution_the_limit_is_returned_as_it_is() {
        let r = Reactor::new();
        let limit = Some(Duration::from_secs(3));
        assert_eq!(ready_by(&fd(&r), limit), limit);
    }

    #[test]
    fn it_wakes_when_another_thread_writes_and_returns_a_due_limit() {
        woken_by_a_write(|r, flag| {
            let limit: Option<Duration> = ready_by(&fd(r), None);
            assert_eq!(limit, Some(Duration::ZERO));
            // The write was made after the store, and the instance is ready now.
            assert!(flag.load(SeqCst));
            assert_eq!(r.wait(0), 1);
        });
    }

    #[test]
    fn a_deadline_passes_on_the_virtual_clock() {
        let started = std::time::Instant::now();
        let report = Builder::new().schedules(20).seed(6).run(|| {
            let r = Reactor::new();
            let start = Instant::now();
            let deadline = Some(start + Duration::from_secs(5));
            let due = ready_by(&fd(&r), deadline).unwrap();
            assert!(start.elapsed() >= Duration::from_secs(5));
            assert!(due <= Instant::now(), "the limit is due");
        });
        assert!(report.failure.is_none(), "{:?}", report.failure);
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn a_wait_nobody_ends_is_a_deadlock_naming_it() {
        let report = Builder::new()
            .schedules(1)
            .minimize(Duration::ZERO)
            .run(|| {
                let r = Reactor::new();
                let _: Option<Duration> = ready_by(&fd(&r), None);
            });
        let failure = report.failure.expect("nothing wakes it");
        assert_eq!(failure.kind, FailureKind::Deadlock, "{}", failure.message);
        assert!(
            failure.details.iter().any(|d| d.contains("Poller::wait")),
            "{:?}",
            failure.details
        );
    }
}
