//! Waiting for a future on the calling thread: poll it, park the thread until its waker
//! unparks it, poll again. No runtime is built or driven here; the futures waited for are the
//! client's, whose replies and events come from the session's own thread.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::Instant;

/// Unparks the thread that waits.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

thread_local! {
    /// Set on the session threads: a wait there would stop the session it waits for.
    static SESSION_THREAD: Cell<bool> = const { Cell::new(false) };
    /// One waker per thread, made on its first wait: a call costs no allocation for it.
    static WAKER: Waker = Waker::from(Arc::new(Unpark(thread::current())));
}

/// Marks the calling thread as a session's: a wait on it panics instead of stopping the
/// session (replies and events come from there).
pub(crate) fn refuse_waits_here() {
    SESSION_THREAD.with(|on| on.set(true));
}

/// Polls `future` on this thread until it is ready, or until `deadline` passes (`None`).
///
/// # Panics
///
/// On a session thread (see [`refuse_waits_here`]).
///
/// The future runs unconstrained by tokio's cooperative budget: called from a task of some
/// runtime, the budget is that task's, and once it is spent every tokio resource the future
/// polls would answer `Pending` and wake it at once, for ever, since the task never yields to
/// refill it. This thread is given over to the future, so there is nothing to be fair to.
pub(crate) fn wait<F: Future>(future: F, deadline: Option<Instant>) -> Option<F::Output> {
    wait_pinned(std::pin::pin!(future), deadline)
}

/// [`wait`] for a future the caller keeps (it is not consumed when the deadline passes).
pub(crate) fn wait_pinned<F: Future>(
    future: Pin<&mut F>,
    deadline: Option<Instant>,
) -> Option<F::Output> {
    assert!(
        !SESSION_THREAD.with(Cell::get),
        "a blocking ZooKeeper call was made on a session thread of the blocking API, which it \
         would stop: call it from another thread"
    );
    let mut future = std::pin::pin!(tokio::task::unconstrained(future));
    WAKER.with(|waker| {
        let mut cx = Context::from_waker(waker);
        loop {
            if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
                return Some(output);
            }
            // A wake-up that is not ours (any code may unpark a thread) only costs a poll.
            match deadline {
                None => thread::park(),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return None;
                    }
                    thread::park_timeout(deadline - now);
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_ready_future_is_answered_without_parking() {
        assert_eq!(wait(std::future::ready(7), None), Some(7));
    }

    #[test]
    fn a_value_sent_from_another_thread_wakes_the_waiter() {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let sender = thread::spawn(move || tx.send(3).unwrap());
        assert_eq!(wait(rx, None), Some(Ok(3)));
        sender.join().unwrap();
    }

    #[test]
    fn a_deadline_that_passed_leaves_the_future_with_the_caller() {
        let (tx, rx) = tokio::sync::oneshot::channel::<u8>();
        let mut rx = std::pin::pin!(rx);
        assert_eq!(wait_pinned(rx.as_mut(), Some(Instant::now())), None);
        tx.send(1).unwrap();
        let later = Instant::now() + Duration::from_secs(60);
        assert_eq!(wait_pinned(rx.as_mut(), Some(later)), Some(Ok(1)));
    }
}
