//! Where a hold stands: one vocabulary for locks, read and write locks, semaphore leases,
//! leader latches and leader selectors.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;

use zookeeper_tokio::transitions::{Changes, Phase, Transitions};

use super::loss_reason::LossReason;
use super::state_watcher::Refresh;

/// How many transitions a [`HoldingChanges`] may fall behind before it loses the oldest. A
/// hold changes state a handful of times in its life; this is plenty.
const BACKLOG: usize = 32;

/// Where a lock, a semaphore lease, a leader latch or a leader selector stands: whether what
/// it guards can be trusted.
///
/// | state | lock, lease | leader latch | leader selector |
/// |---|---|---|---|
/// | `Joining` | — | our node is created; the first look at the queue is under way | — |
/// | `Waiting` | — | someone else leads; we watch the participant before us | queued |
/// | `Held` | held | leading | leading: the leader's work runs |
/// | `Suspended` | connection down | connection down | — (see [`LeaderContext::state`](crate::LeaderContext::state)) |
/// | `Idle` | — | — | out of the queue between terms |
/// | `Lost(reason)` | lost | lost | its session ended |
/// | `Released` | released | closed (resigned or dropped) | closed |
///
/// `Lost` and `Released` are final: nothing follows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Holding {
    /// Our node is created and the first look at the queue is under way (a leader latch
    /// starting or joining again): not held, and not yet known to be behind anyone.
    Joining,
    /// In the queue behind another participant, waiting for our turn: a latch following, a
    /// selector queued.
    Waiting,
    /// Connected, and our node is ours: a lock or lease held, a latch or selector leading.
    Held,
    /// The connection is down: the node may still be ours, but nobody can tell until a
    /// server answers. Work protected by the hold should pause (and, when in doubt, stop:
    /// an operation that must not overlap with another holder's cannot be finished safely
    /// from here). Becomes `Held` again on reconnect, or `Lost` once the lease runs out.
    Suspended,
    /// Out of the queue without having ended: a leader selector whose term ended and that was
    /// not asked to queue again ([`LeaderSelector::requeue`](crate::LeaderSelector::requeue)).
    Idle,
    /// Ended without us asking: the hold can no longer be trusted, and another contender may
    /// hold it now. A latch must be started anew (with a new client if the session ended); a
    /// selector's session ended and no term can follow.
    Lost(LossReason),
    /// We let go: a lock or lease released, a latch or selector closed.
    Released,
}

impl fmt::Display for Holding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Holding::Joining => f.write_str("joining (first look at the queue under way)"),
            Holding::Waiting => f.write_str("waiting in the queue"),
            Holding::Held => f.write_str("held"),
            Holding::Suspended => f.write_str("suspended (connection lost)"),
            Holding::Idle => f.write_str("idle (out of the queue)"),
            Holding::Lost(reason) => write!(f, "lost: {reason}"),
            Holding::Released => f.write_str("released"),
        }
    }
}

impl Holding {
    /// True only for [`Holding::Held`].
    pub fn is_held(self) -> bool {
        self == Holding::Held
    }

    /// True when nothing more will happen: [`Holding::Lost`] or [`Holding::Released`].
    pub fn is_final(self) -> bool {
        matches!(self, Holding::Lost(_) | Holding::Released)
    }
}

impl Phase for Holding {
    fn is_final(self) -> bool {
        Holding::is_final(self)
    }
}

/// A publisher of a hold's state, starting in `initial`.
pub(crate) fn publisher(initial: Holding) -> Transitions<Holding> {
    Transitions::new(initial, BACKLOG)
}

/// Every [`Holding`] a lock, lease, latch or selector goes through, in order: the current
/// state first, then each transition (a `Suspended` and the `Held` after it, however quickly
/// the connection came back), ending after a final state ([`Holding::Lost`] or
/// [`Holding::Released`]). Unlike a [`StateWatcher`](crate::StateWatcher), which keeps only
/// the latest state, this sees a suspension even when the connection was back before anyone
/// looked. Also a [`futures_core::Stream`].
///
/// A receiver that falls more than 32 transitions behind loses the oldest of them.
pub struct HoldingChanges {
    changes: Changes<Holding>,
    refresh: Option<Refresh<Holding>>,
    done: bool,
}

impl fmt::Debug for HoldingChanges {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HoldingChanges")
            .field("changes", &self.changes)
            .field("done", &self.done)
            .finish()
    }
}

impl HoldingChanges {
    /// Every state of `changes`; with `refresh`, looks with it before every item: a final
    /// state it finds is the next item, and the last (what came between is moot once the
    /// hold is gone).
    pub(crate) fn new(changes: Changes<Holding>, refresh: Option<Refresh<Holding>>) -> Self {
        HoldingChanges {
            changes,
            refresh,
            done: false,
        }
    }

    /// The next state (the first call returns the current one); `None` after a final state
    /// was returned.
    pub async fn next(&mut self) -> Option<Holding> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }
}

impl Stream for HoldingChanges {
    type Item = Holding;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Holding>> {
        if self.done {
            return Poll::Ready(None);
        }
        if let Some(refresh) = &self.refresh {
            let now = refresh();
            if now.is_final() {
                self.done = true;
                return Poll::Ready(Some(now));
            }
        }
        let state = match std::task::ready!(self.changes.poll_next_state(cx)) {
            Some(state) => state,
            // The publisher is gone without a word: the hold was let go.
            None => Holding::Released,
        };
        self.done = state.is_final();
        Poll::Ready(Some(state))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_and_reasons_read_as_sentences() {
        assert_eq!(Holding::Held.to_string(), "held");
        assert_eq!(Holding::Waiting.to_string(), "waiting in the queue");
        assert_eq!(
            Holding::Suspended.to_string(),
            "suspended (connection lost)"
        );
        assert_eq!(
            Holding::Lost(LossReason::NodeDeleted).to_string(),
            "lost: our node was deleted by someone else"
        );
        assert_eq!(
            Holding::Lost(LossReason::SessionClosed).to_string(),
            "lost: the session was closed"
        );
        assert_eq!(Holding::Released.to_string(), "released");
        assert_eq!(
            LossReason::LeaseExpired.to_string(),
            "the session's lease ran out: no server answered within the session timeout"
        );
        assert_eq!(
            LossReason::SessionExpired.to_string(),
            "the session expired"
        );
    }

    #[test]
    fn only_lost_and_released_are_final_and_only_held_is_held() {
        let all = [
            Holding::Joining,
            Holding::Waiting,
            Holding::Held,
            Holding::Suspended,
            Holding::Idle,
            Holding::Lost(LossReason::LeaseExpired),
            Holding::Released,
        ];
        let finals: Vec<_> = all.iter().filter(|s| s.is_final()).collect();
        assert_eq!(
            finals,
            [&Holding::Lost(LossReason::LeaseExpired), &Holding::Released]
        );
        let held: Vec<_> = all.iter().filter(|s| s.is_held()).collect();
        assert_eq!(held, [&Holding::Held]);
    }

    #[tokio::test]
    async fn a_stream_whose_publisher_is_gone_ends_released() {
        let states = publisher(Holding::Waiting);
        let mut changes = HoldingChanges::new(states.changes(), None);
        states.set(Holding::Held);
        drop(states);
        assert_eq!(changes.next().await, Some(Holding::Waiting));
        assert_eq!(changes.next().await, Some(Holding::Held));
        assert_eq!(changes.next().await, Some(Holding::Released));
        assert_eq!(changes.next().await, None);
    }

    #[tokio::test]
    async fn a_final_state_the_refresh_finds_comes_next_and_last() {
        let states = publisher(Holding::Held);
        let lost = Holding::Lost(LossReason::LeaseExpired);
        let refresh: Refresh<Holding> = std::sync::Arc::new(move || lost);
        let mut changes = HoldingChanges::new(states.changes(), Some(refresh));
        states.set(Holding::Suspended);
        assert_eq!(changes.next().await, Some(lost));
        assert_eq!(changes.next().await, None);
    }
}
