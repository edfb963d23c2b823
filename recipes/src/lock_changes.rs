//! A lock's state as it changes: the latest value for those who only need that, and every
//! transition in order for those who must not miss a short suspension.
//!
//! A `watch` keeps only the latest value, so a disconnect healed before a receiver looks
//! (`Suspended` then `Held`) is invisible to it. Every transition is therefore also broadcast;
//! both are updated under the watch's lock, so the two never disagree on the order.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::ReusableBoxFuture;

use crate::lost::{LockState, LossReason};

/// How many transitions a [`LockStateChanges`] may fall behind before it loses the oldest.
/// A lock changes state a handful of times in its life; this is plenty.
const BACKLOG: usize = 32;

/// Publishes a lock's state: the latest to `watch` receivers, every transition to
/// [`LockStateChanges`].
#[derive(Debug)]
pub(crate) struct Transitions {
    latest: watch::Sender<LockState>,
    every: broadcast::Sender<LockState>,
}

impl Transitions {
    pub(crate) fn new(initial: LockState) -> Transitions {
        Transitions {
            latest: watch::Sender::new(initial),
            every: broadcast::Sender::new(BACKLOG),
        }
    }

    pub(crate) fn current(&self) -> LockState {
        *self.latest.borrow()
    }

    pub(crate) fn watch(&self) -> watch::Receiver<LockState> {
        self.latest.subscribe()
    }

    /// Every transition from now on, after the current state.
    pub(crate) fn changes(&self) -> LockStateChanges {
        // Subscribe first, then read: a transition in between shows in both, and the stream
        // drops the repeat; none can fall between.
        let rx = self.every.subscribe();
        LockStateChanges::new(self.current(), rx)
    }

    /// Moves to `new` unless it is the current state or the lock is already lost (`Lost` is
    /// final: the first reason stays).
    pub(crate) fn set(&self, new: LockState) {
        self.latest.send_if_modified(|cur| match *cur {
            LockState::Lost(_) => false,
            old if old == new => false,
            _ => {
                *cur = new;
                // Under the watch's lock: transitions are broadcast in the order they happen.
                let _ = self.every.send(new);
                true
            }
        });
    }
}

type Next = (Option<LockState>, broadcast::Receiver<LockState>);

async fn recv_next(mut rx: broadcast::Receiver<LockState>) -> Next {
    loop {
        match rx.recv().await {
            Ok(state) => return (Some(state), rx),
            // More than the backlog behind: the oldest transitions are gone.
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return (None, rx),
        }
    }
}

/// Every state a lock goes through, in order: the current state first, then each transition,
/// ending after [`LockState::Lost`]. Unlike [`LockGuard::state_watcher`], which keeps only the
/// latest state, this sees a suspension even when the connection was back before anyone
/// looked. Also a [`futures_core::Stream`].
///
/// A receiver that falls more than 32 transitions behind loses the oldest of them.
///
/// [`LockGuard::state_watcher`]: crate::LockGuard::state_watcher
pub struct LockStateChanges {
    first: Option<LockState>,
    last: Option<LockState>,
    next: ReusableBoxFuture<'static, Next>,
    done: bool,
}

impl std::fmt::Debug for LockStateChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockStateChanges")
            .field("last", &self.last)
            .field("done", &self.done)
            .finish()
    }
}

impl LockStateChanges {
    fn new(current: LockState, rx: broadcast::Receiver<LockState>) -> LockStateChanges {
        LockStateChanges {
            first: Some(current),
            last: None,
            next: ReusableBoxFuture::new(recv_next(rx)),
            done: false,
        }
    }

    /// The next state (the first call returns the current one); `None` after `Lost` was
    /// returned.
    pub async fn next(&mut self) -> Option<LockState> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }

    fn emit(&mut self, state: LockState) -> Poll<Option<LockState>> {
        self.last = Some(state);
        self.done = matches!(state, LockState::Lost(_));
        Poll::Ready(Some(state))
    }
}

impl Stream for LockStateChanges {
    type Item = LockState;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<LockState>> {
        if self.done {
            return Poll::Ready(None);
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
                // The lock is gone without a word: it was released.
                None => return self.emit(LockState::Lost(LossReason::Released)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_healed_suspension_is_seen_in_order() {
        let t = Transitions::new(LockState::Held);
        let mut latest = t.watch();
        let mut changes = t.changes();
        t.set(LockState::Suspended);
        t.set(LockState::Held);
        // The watch only has the latest value.
        assert!(latest.has_changed().unwrap());
        assert_eq!(*latest.borrow_and_update(), LockState::Held);
        assert_eq!(changes.next().await, Some(LockState::Held));
        assert_eq!(changes.next().await, Some(LockState::Suspended));
        assert_eq!(changes.next().await, Some(LockState::Held));
    }

    #[tokio::test]
    async fn a_transition_while_subscribing_is_reported_once() {
        let t = Transitions::new(LockState::Held);
        // Simulates a transition landing between subscribing and reading the current state.
        let rx = t.every.subscribe();
        t.set(LockState::Suspended);
        let mut changes = LockStateChanges::new(t.current(), rx);
        t.set(LockState::Held);
        assert_eq!(changes.next().await, Some(LockState::Suspended));
        assert_eq!(changes.next().await, Some(LockState::Held));
    }

    #[tokio::test]
    async fn ends_after_lost_and_reports_release_when_dropped() {
        let t = Transitions::new(LockState::Held);
        let mut changes = t.changes();
        t.set(LockState::Lost(LossReason::NodeDeleted));
        t.set(LockState::Held);
        t.set(LockState::Lost(LossReason::Released));
        assert_eq!(t.current(), LockState::Lost(LossReason::NodeDeleted));
        assert_eq!(changes.next().await, Some(LockState::Held));
        assert_eq!(
            changes.next().await,
            Some(LockState::Lost(LossReason::NodeDeleted))
        );
        assert_eq!(changes.next().await, None);

        let t = Transitions::new(LockState::Held);
        let mut changes = t.changes();
        drop(t);
        assert_eq!(changes.next().await, Some(LockState::Held));
        assert_eq!(
            changes.next().await,
            Some(LockState::Lost(LossReason::Released))
        );
        assert_eq!(changes.next().await, None);
    }

    #[test]
    fn unchanged_states_are_not_transitions() {
        let t = Transitions::new(LockState::Held);
        let mut rx = t.every.subscribe();
        t.set(LockState::Held);
        assert!(rx.try_recv().is_err());
    }
}
