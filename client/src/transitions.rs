//! A state as it changes: the latest value for those who only need that, and every transition
//! in order for those who must not miss a short-lived one.
//!
//! A `watch` keeps only the latest value, so a disconnect healed before a receiver looks
//! (`Disconnected` then `Connected` again) is invisible to it. [`Transitions`] therefore also
//! broadcasts every transition, both updated under the watch's lock, so the two never disagree
//! on the order. The client publishes its [`SessionState`](crate::SessionState) this way; the
//! recipes publish the state of their locks and elections the same way.
//!
//! ```
//! use zookeeper_tokio::transitions::{Phase, Transitions};
//!
//! #[derive(Clone, Copy, Debug, PartialEq)]
//! enum Door {
//!     Open,
//!     Shut,
//!     Gone,
//! }
//!
//! impl Phase for Door {
//!     fn is_final(self) -> bool {
//!         self == Door::Gone
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let door = Transitions::new(Door::Open, 8);
//! let latest = door.watch();
//! let mut every = door.changes();
//! door.set(Door::Shut);
//! door.set(Door::Open);
//! assert_eq!(*latest.borrow(), Door::Open, "the watch keeps only the latest");
//! assert_eq!(every.next().await, Some(Door::Open), "the state when asked");
//! assert_eq!(every.next().await, Some(Door::Shut), "a short-lived state");
//! assert_eq!(every.next().await, Some(Door::Open));
//! door.set(Door::Gone);
//! assert_eq!(door.set(Door::Open), None, "nothing follows a final state");
//! assert_eq!(every.next().await, Some(Door::Gone));
//! assert_eq!(every.next().await, None);
//! # }
//! ```

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::{broadcast, watch};

/// A state published through [`Transitions`].
pub trait Phase: Copy + PartialEq + Unpin + Send + Sync + 'static {
    /// Nothing follows a final state: the first one stays, and a [`Changes`] ends after it.
    fn is_final(self) -> bool;
}

/// Publishes a state: the latest to `watch` receivers, every transition to each [`Changes`].
///
/// Once a final state ([`Phase::is_final`]) is set, it stays.
#[derive(Debug)]
pub struct Transitions<S> {
    latest: watch::Sender<S>,
    every: broadcast::Sender<S>,
}

impl<S: Phase> Transitions<S> {
    /// A publisher in `initial` state. A [`Changes`] that falls more than `backlog`
    /// transitions behind loses the oldest of them (at least 1 is kept).
    pub fn new(initial: S, backlog: usize) -> Transitions<S> {
        Transitions {
            latest: watch::Sender::new(initial),
            every: broadcast::Sender::new(backlog.max(1)),
        }
    }

    /// The state now.
    pub fn current(&self) -> S {
        *self.latest.borrow()
    }

    /// A receiver of the latest state (a short-lived state may never show in it).
    pub fn watch(&self) -> watch::Receiver<S> {
        self.latest.subscribe()
    }

    /// The current state, then every transition from now on.
    pub fn changes(&self) -> Changes<S> {
        // Subscribe first, then read: a transition in between shows in both, and the stream
        // drops the repeat; none can fall between.
        let rx = self.every.subscribe();
        Changes {
            first: Some(self.current()),
            last: None,
            next: Box::pin(recv_next(rx)),
            done: false,
        }
    }

    /// Every transition after this call, without the current state.
    pub fn later_changes(&self) -> Changes<S> {
        Changes {
            first: None,
            last: None,
            next: Box::pin(recv_next(self.every.subscribe())),
            done: false,
        }
    }

    /// Moves to `new` unless it is the current state or the current state is final; returns
    /// the state it moved from, if it moved.
    pub fn set(&self, new: S) -> Option<S> {
        let mut old = None;
        self.latest.send_if_modified(|cur| {
            if cur.is_final() || *cur == new {
                return false;
            }
            old = Some(*cur);
            *cur = new;
            // Under the watch's lock: transitions are broadcast in the order they happen.
            let _ = self.every.send(new);
            true
        });
        old
    }
}

type Next<S> = (Option<S>, broadcast::Receiver<S>);

async fn recv_next<S: Phase>(mut rx: broadcast::Receiver<S>) -> Next<S> {
    loop {
        match rx.recv().await {
            Ok(state) => return (Some(state), rx),
            // More than the backlog behind: the oldest transitions are gone.
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return (None, rx),
        }
    }
}

/// Every state a [`Transitions`] goes through, in order, ending after a final state or when
/// the publisher is gone. Also a [`futures_core::Stream`].
pub struct Changes<S> {
    first: Option<S>,
    last: Option<S>,
    // Boxed once per transition: states change a handful of times, never per request.
    next: Pin<Box<dyn Future<Output = Next<S>> + Send + Sync>>,
    done: bool,
}

impl<S: std::fmt::Debug> std::fmt::Debug for Changes<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Changes")
            .field("last", &self.last)
            .field("done", &self.done)
            .finish()
    }
}

impl<S: Phase> Changes<S> {
    /// The next state, waiting for it; `None` after a final state was returned, or once the
    /// publisher is gone.
    pub async fn next(&mut self) -> Option<S> {
        std::future::poll_fn(|cx| self.poll_next_state(cx)).await
    }

    /// Polls for the next state, as [`next`](Self::next) waits for it.
    pub fn poll_next_state(&mut self, cx: &mut Context<'_>) -> Poll<Option<S>> {
        if self.done {
            return Poll::Ready(None);
        }
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(self.emit(first)));
        }
        loop {
            let (state, rx) = std::task::ready!(self.next.as_mut().poll(cx));
            self.next = Box::pin(recv_next(rx));
            match state {
                // Transitions always change the state, so a repeat can only be the transition
                // already reported as the current state.
                Some(state) if Some(state) == self.last => continue,
                Some(state) => return Poll::Ready(Some(self.emit(state))),
                None => {
                    self.done = true;
                    return Poll::Ready(None);
                }
            }
        }
    }

    fn emit(&mut self, state: S) -> S {
        self.last = Some(state);
        self.done = state.is_final();
        state
    }
}

impl<S: Phase> futures_core::Stream for Changes<S> {
    type Item = S;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S>> {
        self.poll_next_state(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in state: `Up`/`Down` come and go, `Gone(n)` is final.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Test {
        Up,
        Down,
        Gone(u8),
    }

    impl Phase for Test {
        fn is_final(self) -> bool {
            matches!(self, Test::Gone(_))
        }
    }

    #[tokio::test]
    async fn a_healed_suspension_is_seen_in_order() {
        let t = Transitions::new(Test::Up, 4);
        let mut latest = t.watch();
        let mut changes = t.changes();
        let mut later = t.later_changes();
        t.set(Test::Down);
        t.set(Test::Up);
        // The watch only has the latest value.
        assert!(latest.has_changed().unwrap());
        assert_eq!(*latest.borrow_and_update(), Test::Up);
        assert_eq!(changes.next().await, Some(Test::Up));
        assert_eq!(changes.next().await, Some(Test::Down));
        assert_eq!(changes.next().await, Some(Test::Up));
        assert_eq!(later.next().await, Some(Test::Down));
        assert_eq!(later.next().await, Some(Test::Up));
    }

    #[tokio::test]
    async fn a_transition_while_subscribing_is_reported_once() {
        let t = Transitions::new(Test::Up, 4);
        // A transition landing between subscribing and reading the current state.
        let rx = t.every.subscribe();
        t.set(Test::Down);
        let mut changes = Changes {
            first: Some(t.current()),
            last: None,
            next: Box::pin(recv_next(rx)),
            done: false,
        };
        t.set(Test::Up);
        assert_eq!(changes.next().await, Some(Test::Down));
        assert_eq!(changes.next().await, Some(Test::Up));
    }

    #[tokio::test]
    async fn the_first_final_state_stays_and_ends_the_stream() {
        let t = Transitions::new(Test::Up, 4);
        let mut changes = t.changes();
        assert_eq!(t.set(Test::Gone(1)), Some(Test::Up));
        assert_eq!(t.set(Test::Up), None);
        assert_eq!(t.set(Test::Gone(2)), None);
        assert_eq!(t.current(), Test::Gone(1));
        assert_eq!(changes.next().await, Some(Test::Up));
        assert_eq!(changes.next().await, Some(Test::Gone(1)));
        assert_eq!(changes.next().await, None);
        // Asked after the end: the final state once.
        let mut late = t.changes();
        assert_eq!(late.next().await, Some(Test::Gone(1)));
        assert_eq!(late.next().await, None);
    }

    #[tokio::test]
    async fn a_publisher_gone_without_a_final_state_ends_the_stream() {
        let t = Transitions::new(Test::Up, 4);
        let mut changes = t.changes();
        let mut later = t.later_changes();
        drop(t);
        assert_eq!(changes.next().await, Some(Test::Up));
        assert_eq!(changes.next().await, None);
        assert_eq!(later.next().await, None);
    }

    #[tokio::test]
    async fn a_slow_reader_loses_the_oldest_transitions_and_keeps_the_last() {
        let t = Transitions::new(Test::Up, 2);
        let mut later = t.later_changes();
        for _ in 0..10 {
            t.set(Test::Down);
            t.set(Test::Up);
        }
        t.set(Test::Gone(3));
        // The last two transitions survive, the final one last.
        assert_eq!(later.next().await, Some(Test::Up));
        assert_eq!(later.next().await, Some(Test::Gone(3)));
        assert_eq!(later.next().await, None);
    }

    #[test]
    fn unchanged_states_are_not_transitions() {
        let t = Transitions::new(Test::Up, 4);
        let mut rx = t.every.subscribe();
        assert_eq!(t.set(Test::Up), None);
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn changes_can_be_shared_between_threads() {
        fn send_and_sync<T: Send + Sync>() {}
        send_and_sync::<Changes<Test>>();
        send_and_sync::<Transitions<Test>>();
    }
}
