//! A state as it changes: the latest value for those who only need that, and every
//! transition in order for those who must not miss a short-lived state.
//!
//! A `watch` keeps only the latest value, so a disconnect healed before a receiver looks
//! (`Suspended` then back) is invisible to it. Every transition is therefore also broadcast;
//! both are updated under the watch's lock, so the two never disagree on the order. Locks,
//! leases, latches and selectors publish their [`Holding`](crate::Holding) this way.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_core::Stream;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::ReusableBoxFuture;

/// How many transitions a [`Changes`] may fall behind before it loses the oldest. A lock or
/// latch changes state a handful of times in its life; this is plenty.
const BACKLOG: usize = 32;

/// A state published through [`Transitions`].
pub(crate) trait Phase: Copy + PartialEq + Unpin + Send + Sync + 'static {
    /// What a stream reports when the publisher is gone without a final state.
    const ENDED: Self;

    /// Nothing follows a final state: the first one stays, and a stream ends after it.
    fn is_final(self) -> bool;
}

/// Publishes a state: the latest to `watch` receivers, every transition to [`Changes`].
#[derive(Debug)]
pub(crate) struct Transitions<S> {
    latest: watch::Sender<S>,
    every: broadcast::Sender<S>,
}

impl<S: Phase> Transitions<S> {
    pub(crate) fn new(initial: S) -> Transitions<S> {
        Transitions {
            latest: watch::Sender::new(initial),
            every: broadcast::Sender::new(BACKLOG),
        }
    }

    pub(crate) fn current(&self) -> S {
        *self.latest.borrow()
    }

    pub(crate) fn watch(&self) -> watch::Receiver<S> {
        self.latest.subscribe()
    }

    /// Every transition from now on, after the current state.
    pub(crate) fn changes(&self) -> Changes<S> {
        // Subscribe first, then read: a transition in between shows in both, and the stream
        // drops the repeat; none can fall between.
        let rx = self.every.subscribe();
        Changes::new(self.current(), rx)
    }

    /// Moves to `new` unless it is the current state or the current state is final; returns
    /// the state it moved from, if it moved.
    pub(crate) fn set(&self, new: S) -> Option<S> {
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

/// Reads the state now, after checking what the clock alone can tell (a session's lease run
/// out), publishing the change if there is one. What makes every look at a hold, from any
/// thread, read lost on the first look after a pause, before any task of the process ran.
pub(crate) type Refresh<S> = Arc<dyn Fn() -> S + Send + Sync>;

/// Every state a [`Transitions`] goes through, in order: the current state first, then each
/// transition, ending after a final state. A receiver that falls more than [`BACKLOG`]
/// transitions behind loses the oldest of them.
pub(crate) struct Changes<S> {
    first: Option<S>,
    last: Option<S>,
    next: ReusableBoxFuture<'static, Next<S>>,
    done: bool,
    refresh: Option<Refresh<S>>,
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
    fn new(current: S, rx: broadcast::Receiver<S>) -> Changes<S> {
        Changes {
            first: Some(current),
            last: None,
            next: ReusableBoxFuture::new(recv_next(rx)),
            done: false,
            refresh: None,
        }
    }

    /// Looks with `refresh` before every item: a final state it finds is the next item, and
    /// the last (what came between is moot once the hold is gone).
    pub(crate) fn refreshed_by(mut self, refresh: Refresh<S>) -> Changes<S> {
        self.refresh = Some(refresh);
        self
    }

    /// The next state (the first call returns the current one); `None` after a final state
    /// was returned.
    pub(crate) async fn next(&mut self) -> Option<S> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }

    fn emit(&mut self, state: S) -> Poll<Option<S>> {
        self.last = Some(state);
        self.done = state.is_final();
        Poll::Ready(Some(state))
    }
}

impl<S: Phase> Stream for Changes<S> {
    type Item = S;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S>> {
        if self.done {
            return Poll::Ready(None);
        }
        if let Some(refresh) = &self.refresh {
            let now = refresh();
            if now.is_final() {
                self.first = None;
                return self.emit(now);
            }
        }
        if let Some(first) = self.first.take() {
            return self.emit(first);
        }
        loop {
            let (state, rx) = std::task::ready!(Pin::new(&mut self.next).poll(cx));
            self.next.set(recv_next(rx));
            match state {
                // Transitions always change the state, so a repeat can only be the transition
                // already reported as the current state.
                Some(state) if Some(state) == self.last => continue,
                Some(state) => return self.emit(state),
                // The publisher is gone without a word.
                None => return self.emit(S::ENDED),
            }
        }
    }
}

/// The latest state of a hold, read against the lease clock on every look: unlike a bare
/// `tokio::sync::watch::Receiver`, whose value is what a task last published, a look through it
/// right after a pause past the session timeout reads lost, from any thread, before any task of
/// the process has run again. It keeps only the latest state: a disconnect healed before anyone
/// looked leaves no trace (the `changes` streams see every transition).
pub struct StateWatcher<S> {
    rx: watch::Receiver<S>,
    refresh: Refresh<S>,
}

impl<S> Clone for StateWatcher<S> {
    fn clone(&self) -> Self {
        StateWatcher {
            rx: self.rx.clone(),
            refresh: self.refresh.clone(),
        }
    }
}

impl<S: std::fmt::Debug + Copy> std::fmt::Debug for StateWatcher<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateWatcher")
            .field("latest", &*self.rx.borrow())
            .finish()
    }
}

impl<S: Copy + Send + Sync + 'static> StateWatcher<S> {
    pub(crate) fn new(rx: watch::Receiver<S>, refresh: Refresh<S>) -> StateWatcher<S> {
        StateWatcher { rx, refresh }
    }

    /// The state now, the lease checked against the clock first.
    pub fn get(&self) -> S {
        (self.refresh)()
    }

    /// The state now (as [`get`](Self::get)), marked seen: [`changed`](Self::changed) waits
    /// for the next change after it.
    pub fn get_and_update(&mut self) -> S {
        (self.refresh)();
        *self.rx.borrow_and_update()
    }

    /// Waits until the state changes from the one last seen, the lease checked first (a look
    /// after a pause finds the loss at once). Fails once the hold is gone and nothing more
    /// will be published.
    pub async fn changed(&mut self) -> Result<(), watch::error::RecvError> {
        (self.refresh)();
        self.rx.changed().await
    }

    /// Waits until `ready` accepts the state, the lease checked first, and returns that state.
    /// Fails once the hold is gone and nothing more will be published.
    pub async fn wait_for(
        &mut self,
        ready: impl FnMut(&S) -> bool,
    ) -> Result<S, watch::error::RecvError> {
        (self.refresh)();
        self.rx.wait_for(ready).await.map(|state| *state)
    }
}

/// Declares a public stream of every state of a recipe, over [`Changes`]: the current state
/// first, then each transition, ending after a final state. Also a [`futures_core::Stream`].
macro_rules! changes_stream {
    ($(#[$doc:meta])* $name:ident of $state:ty) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name(crate::hold::Changes<$state>);

        impl $name {
            /// The next state (the first call returns the current one); `None` after a final
            /// state was returned.
            pub async fn next(&mut self) -> Option<$state> {
                self.0.next().await
            }
        }

        impl From<crate::hold::Changes<$state>> for $name {
            fn from(changes: crate::hold::Changes<$state>) -> Self {
                $name(changes)
            }
        }

        impl futures_core::Stream for $name {
            type Item = $state;

            fn poll_next(
                mut self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<Option<$state>> {
                std::pin::Pin::new(&mut self.0).poll_next(cx)
            }
        }
    };
}
pub(crate) use changes_stream;

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
        const ENDED: Self = Test::Gone(0);

        fn is_final(self) -> bool {
            matches!(self, Test::Gone(_))
        }
    }

    #[tokio::test]
    async fn a_healed_suspension_is_seen_in_order() {
        let t = Transitions::new(Test::Up);
        let mut latest = t.watch();
        let mut changes = t.changes();
        t.set(Test::Down);
        t.set(Test::Up);
        // The watch only has the latest value.
        assert!(latest.has_changed().unwrap());
        assert_eq!(*latest.borrow_and_update(), Test::Up);
        assert_eq!(changes.next().await, Some(Test::Up));
        assert_eq!(changes.next().await, Some(Test::Down));
        assert_eq!(changes.next().await, Some(Test::Up));
    }

    #[tokio::test]
    async fn a_transition_while_subscribing_is_reported_once() {
        let t = Transitions::new(Test::Up);
        // Simulates a transition landing between subscribing and reading the current state.
        let rx = t.every.subscribe();
        t.set(Test::Down);
        let mut changes = Changes::new(t.current(), rx);
        t.set(Test::Up);
        assert_eq!(changes.next().await, Some(Test::Down));
        assert_eq!(changes.next().await, Some(Test::Up));
    }

    #[tokio::test]
    async fn ends_after_a_final_state_and_reports_the_end_when_dropped() {
        let t = Transitions::new(Test::Up);
        let mut changes = t.changes();
        t.set(Test::Gone(1));
        t.set(Test::Up);
        t.set(Test::Gone(2));
        assert_eq!(t.current(), Test::Gone(1));
        assert_eq!(changes.next().await, Some(Test::Up));
        assert_eq!(changes.next().await, Some(Test::Gone(1)));
        assert_eq!(changes.next().await, None);

        let t = Transitions::new(Test::Up);
        let mut changes = t.changes();
        drop(t);
        assert_eq!(changes.next().await, Some(Test::Up));
        assert_eq!(changes.next().await, Some(Test::ENDED));
        assert_eq!(changes.next().await, None);
    }

    #[test]
    fn unchanged_states_are_not_transitions() {
        let t = Transitions::new(Test::Up);
        let mut rx = t.every.subscribe();
        t.set(Test::Up);
        assert!(rx.try_recv().is_err());
    }
}
