//! How callers wake the session task: one flag, `told`, and the waker the task left when it
//! last found the flag down.
//!
//! The flag is the whole signal. It goes up when a caller tells the task about something
//! queued and down when the task takes the queue, which it does on every turn; so a turn never
//! wakes for a telling it has already served, and nothing told is lost between turns. A
//! telling while a turn is under way wakes nobody: that turn, or the next wait, finds the flag.
//! (A general-purpose notifier costs a waiter list and its lock twice per turn, some 3% of a
//! sequential call's instructions.)
//!
//! The waker has a lock of its own, not the queue's: the task leaves it whenever it waits,
//! and must not queue up behind a caller encoding a request or writing under a lend for that.
//! A telling is made under the queue's lock; its waker is woken once that lock is released
//! ([`Locked`]), so that the woken task, run at once on another worker, does not find the
//! lock still held by its waker.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use super::{Inner, RequestQueue};

/// The flag and the session task's waker.
#[derive(Debug, Default)]
pub(super) struct Bell {
    /// The session task was told of what is queued and has not taken it yet. Written under
    /// the queue's lock only; read without it by callers, where a `true` can only be newer
    /// than their own request (it was `false` when that was queued).
    told: AtomicBool,
    /// The session task waits on the flag: set when it leaves its waker, cleared when a turn
    /// begins. A telling during a turn, which the turn's taking of the queue serves, then
    /// wakes nobody: on a multi-thread runtime, waking the running task would have it polled
    /// again for nothing, and might wake a parked worker to do it.
    waiting: AtomicBool,
    /// Left by the session task when it found the flag down.
    waker: Mutex<Option<Waker>>,
}

impl Bell {
    /// Whether the session task was told since it last took the queue.
    pub(super) fn told(&self) -> bool {
        self.told.load(Ordering::Acquire)
    }

    fn waker(&self) -> MutexGuard<'_, Option<Waker>> {
        self.waker.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes the task for a telling if it waits (with no queue lock held). The waker stays
    /// for the next wait.
    fn ring(&self) {
        // Sequentially consistent with `poll_told`'s store of `waiting` and load of `told`:
        // either the task sees the flag up, or this sees the task waiting.
        if !self.waiting.swap(false, Ordering::SeqCst) {
            return;
        }
        let waker = self.waker().clone();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// The queue's lock, held. A wake-up of the session task asked for under it
/// ([`RequestQueue::tell`]) happens when it is released.
pub(super) struct Locked<'a> {
    /// `None` only while it is released, in `drop`.
    guard: Option<MutexGuard<'a, Inner>>,
    bell: &'a Bell,
}

impl<'a> Locked<'a> {
    pub(super) fn new(guard: MutexGuard<'a, Inner>, bell: &'a Bell) -> Locked<'a> {
        Locked {
            guard: Some(guard),
            bell,
        }
    }
}

impl Deref for Locked<'_> {
    type Target = Inner;

    fn deref(&self) -> &Inner {
        self.guard.as_ref().expect("held until dropped")
    }
}

impl DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut Inner {
        self.guard.as_mut().expect("held until dropped")
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        let Some(mut guard) = self.guard.take() else {
            return;
        };
        let ring = std::mem::take(&mut guard.ring_on_release);
        drop(guard);
        if ring {
            self.bell.ring();
        }
    }
}

impl RequestQueue {
    /// Tells the session task about what was just queued, unless it was told since it last
    /// took the queue. (Requests written under a lend may be queued without telling it.)
    pub(super) fn tell(&self, inner: &mut Inner) {
        if !self.bell.told.load(Ordering::Relaxed) {
            self.bell.told.store(true, Ordering::SeqCst);
            inner.ring_on_release = true;
        }
    }

    /// Lowers the flag as the session task takes the queue (under the queue's lock).
    pub(super) fn untell(&self, _locked: &mut Inner) {
        self.bell.told.store(false, Ordering::Relaxed);
    }

    /// Ready once the session task was told of something queued (session task). Stays ready
    /// until the task takes the queue.
    pub fn poll_told(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.bell.told() {
            return Poll::Ready(());
        }
        {
            let mut waker = self.bell.waker();
            match &*waker {
                Some(left) if left.will_wake(cx.waker()) => {}
                _ => *waker = Some(cx.waker().clone()),
            }
        }
        self.bell.waiting.store(true, Ordering::SeqCst);
        // Told before the task was waiting: the ring that follows may have found it not.
        if self.bell.told.load(Ordering::SeqCst) {
            self.bell.waiting.store(false, Ordering::Relaxed);
            return Poll::Ready(());
        }
        Poll::Pending
    }

    /// The session task begins a turn: a telling from now on needs no wake-up, as the turn
    /// takes the queue, or else leaves the flag up for its next wait.
    pub fn turn_begins(&self) {
        self.bell.waiting.store(false, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::framed;
    use super::super::Admission;
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize};
    use std::sync::{Arc, Weak};
    use std::task::{Wake, Waker};

    /// A session task's waker: counts its wake-ups, and notes any that came while the
    /// queue's lock was held.
    struct Wakes {
        count: AtomicUsize,
        under_the_lock: AtomicBool,
        queue: Weak<RequestQueue>,
    }

    impl Wakes {
        fn of(q: &Arc<RequestQueue>) -> Arc<Wakes> {
            Arc::new(Wakes {
                count: AtomicUsize::new(0),
                under_the_lock: AtomicBool::new(false),
                queue: Arc::downgrade(q),
            })
        }
    }

    impl Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.count.fetch_add(1, Ordering::SeqCst);
            if let Some(q) = self.queue.upgrade() {
                if q.inner.try_lock().is_err() {
                    self.under_the_lock.store(true, Ordering::SeqCst);
                }
            }
        }
    }

    fn wait(q: &RequestQueue, wakes: &Arc<Wakes>) -> Poll<()> {
        let waker = Waker::from(wakes.clone());
        q.poll_told(&mut Context::from_waker(&waker))
    }

    /// The session task waiting on the queue is woken once per telling, after the lock is
    /// released, and not again until it has taken the queue; a telling that comes while it
    /// runs a turn wakes nobody, and the next wait is ready at once.
    #[test]
    fn the_session_task_is_woken_once_per_telling_and_never_misses_one() {
        let q = RequestQueue::new(8);
        let wakes = Wakes::of(&q);
        assert!(wait(&q, &wakes).is_pending());
        assert!(wait(&q, &wakes).is_pending(), "waiting twice: no wake-up");
        assert_eq!(wakes.count.load(Ordering::SeqCst), 0);

        let (a, _ra) = framed(16, 1, None);
        assert!(matches!(q.submit_request(a), Admission::Deferred));
        q.flush();
        assert_eq!(wakes.count.load(Ordering::SeqCst), 1);
        let (b, _rb) = framed(16, 2, None);
        assert!(matches!(q.submit_request(b), Admission::Admitted));
        q.flush();
        q.push_server_list(Vec::new());
        assert_eq!(wakes.count.load(Ordering::SeqCst), 1, "told once per turn");
        assert!(wait(&q, &wakes).is_ready());
        assert!(wait(&q, &wakes).is_ready(), "until the queue is taken");

        let mut items = Vec::new();
        q.take_all(&mut items);
        assert_eq!(items.len(), 3);
        // Told during the turn, before the task waits again.
        q.push_server_list(Vec::new());
        assert_eq!(
            wakes.count.load(Ordering::SeqCst),
            1,
            "the running task: not woken"
        );
        assert!(wait(&q, &wakes).is_ready(), "but its next wait is ready");

        items.clear();
        q.take_all(&mut items);
        assert!(wait(&q, &wakes).is_pending());
        // Another source wakes the task: a telling during that turn wakes nobody, and the
        // task's next wait is ready.
        q.turn_begins();
        q.push_server_list(Vec::new());
        assert_eq!(
            wakes.count.load(Ordering::SeqCst),
            1,
            "a turn under way: not woken"
        );
        assert!(wait(&q, &wakes).is_ready());

        items.clear();
        q.take_all(&mut items);
        assert!(wait(&q, &wakes).is_pending());
        q.push_close(None);
        assert_eq!(wakes.count.load(Ordering::SeqCst), 2);
        assert!(
            !wakes.under_the_lock.load(Ordering::SeqCst),
            "woken while the lock was held"
        );
    }

    /// Tellings from many threads at once, against a session task that waits and takes the
    /// queue in a loop: every queued item is taken, none is left behind a missed wake-up.
    #[test]
    fn no_telling_is_lost_between_threads() {
        let q = RequestQueue::new(1 << 20);
        let per_thread = 2_000;
        let threads = 4;
        let (done, taken) = std::sync::mpsc::channel();
        {
            let q = q.clone();
            std::thread::spawn(move || {
                let parked = Arc::new(Parked(std::thread::current()));
                let waker = Waker::from(parked);
                let mut items = Vec::new();
                let mut taken = 0;
                // The driver's loop: wait, then a turn that takes the queue, whatever woke
                // it (a spurious unpark stands for a wake-up by another source).
                while taken < per_thread * threads {
                    if q.poll_told(&mut Context::from_waker(&waker)).is_pending() {
                        std::thread::park();
                    }
                    q.turn_begins();
                    q.take_all(&mut items);
                    taken += items.len();
                    items.clear();
                }
                let _ = done.send(taken);
            });
        }
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    for _ in 0..per_thread {
                        q.push_server_list(Vec::new());
                    }
                });
            }
        });
        // A lost telling leaves the session thread parked for good.
        let taken = taken.recv_timeout(std::time::Duration::from_secs(60));
        assert_eq!(taken, Ok(per_thread * threads), "a telling was lost");
    }

    struct Parked(std::thread::Thread);

    impl Wake for Parked {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
}
