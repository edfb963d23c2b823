//! Following the session for anything an ephemeral node of ours stands for (a lock, a
//! lease, leadership): every transition in order, and the lease running out.
//!
//! The signals, and what protected work should do at each:
//!
//! * [`SessionSignal::Suspended`]: the connection is down (or only a read-only server
//!   answers). Our node may still be ours, but nobody can tell until a server answers:
//!   pause work whose safety depends on it.
//! * [`SessionSignal::Reconnected`]: a read-write server took the session back; the node is
//!   ours if nobody deleted it meanwhile (the caller looks).
//! * [`SessionSignal::Lost`]: the session ended, or its lease ran out (no server answered a
//!   request sent within the last session timeout, so the server may have expired it and
//!   another contender may hold what our node guarded). Final.

use zookeeper_tokio::{Client, SessionState, StateChanges};

use super::loss_reason::LossReason;
use super::session_lease;

/// What happened to the session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SessionSignal {
    /// Connected before, not now.
    Suspended,
    /// Connected again after a suspension.
    Reconnected,
    /// Nothing our session made can be trusted any more.
    Lost(LossReason),
}

/// Follows one client's session from the moment it is started.
pub(crate) struct SessionFollower {
    client: Client,
    changes: StateChanges,
    /// The state read at start, judged on the first call.
    first: Option<SessionState>,
    connected: bool,
    lost: Option<LossReason>,
}

impl SessionFollower {
    /// Starts following `client`'s session, assumed connected when the caller got its node.
    pub(crate) fn start(client: &Client) -> SessionFollower {
        // Subscribe before reading the state: a transition in between is seen twice at worst
        // (harmless), never missed.
        let changes = client.state_changes();
        let first = client.state();
        SessionFollower {
            client: client.clone(),
            changes,
            first: Some(first),
            connected: true,
            lost: None,
        }
    }

    /// True unless the last signal was a suspension (or a loss).
    pub(crate) fn is_connected(&self) -> bool {
        self.connected && self.lost.is_none()
    }

    /// The next signal. Cancel-safe: made to be one branch of a `select!`. After a loss it
    /// returns that loss again.
    pub(crate) async fn next(&mut self) -> SessionSignal {
        if let Some(reason) = self.lost {
            return SessionSignal::Lost(reason);
        }
        if let Some(first) = self.first.take() {
            if let Some(signal) = self.judge(first) {
                return signal;
            }
        }
        loop {
            let signal = tokio::select! {
                // A transition says more (expired, closed) than the lease running out.
                biased;
                next = self.changes.next() => {
                    // No more transitions: the client is gone, as if closed.
                    self.judge(next.unwrap_or(SessionState::Closed))
                }
                reason = session_lease::until_over(&self.client) => Some(SessionSignal::Lost(reason)),
            };
            if let Some(signal) = signal {
                if let SessionSignal::Lost(reason) = signal {
                    self.lost = Some(reason);
                }
                return signal;
            }
        }
    }

    fn judge(&mut self, state: SessionState) -> Option<SessionSignal> {
        match state {
            SessionState::Expired => {
                self.lost = Some(LossReason::SessionExpired);
                Some(SessionSignal::Lost(LossReason::SessionExpired))
            }
            s if s.is_terminal() => {
                self.lost = Some(LossReason::SessionClosed);
                Some(SessionSignal::Lost(LossReason::SessionClosed))
            }
            SessionState::Connected if !self.connected => {
                self.connected = true;
                Some(SessionSignal::Reconnected)
            }
            SessionState::Connected => None,
            _ if self.connected => {
                self.connected = false;
                Some(SessionSignal::Suspended)
            }
            _ => None,
        }
    }
}
