//! Where a leader latch's participant stands.

use std::fmt;

use super::holding::HoldPhase;
use super::loss_reason::LossReason;
use super::transitions::{changes_stream, Phase};

/// Where a participant stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Leadership {
    /// Our node is created; the first look at the queue is under way.
    Starting,
    /// We lead.
    Leader,
    /// Someone else leads; we wait for the participant before us.
    Follower,
    /// The connection is down: a leader must pause until it is `Leader` again (and, when in
    /// doubt, stop leading: nothing proves the leadership is still ours).
    Suspended,
    /// Our participation ended without us asking: the latch must be started anew (with a new
    /// client if the session ended).
    Lost(LossReason),
    /// We resigned.
    Closed,
}

impl fmt::Display for Leadership {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Leadership::Starting => f.write_str("starting"),
            Leadership::Leader => f.write_str("leader"),
            Leadership::Follower => f.write_str("follower"),
            Leadership::Suspended => f.write_str("suspended (connection lost)"),
            Leadership::Lost(reason) => write!(f, "lost: {reason}"),
            Leadership::Closed => f.write_str("closed"),
        }
    }
}

impl Leadership {
    /// True when nothing more will happen on this latch.
    pub fn is_final(self) -> bool {
        matches!(self, Leadership::Lost(_) | Leadership::Closed)
    }
}

impl Phase for Leadership {
    // A latch whose state is no longer published is gone.
    const ENDED: Self = Leadership::Closed;

    fn is_final(self) -> bool {
        Leadership::is_final(self)
    }
}

changes_stream! {
    /// Every [`Leadership`] a latch goes through, in order: the current state first, then each
    /// change (a `Suspended` and the `Leader` after it, however quickly the connection came
    /// back), ending after a final state ([`Leadership::Lost`] or [`Leadership::Closed`]).
    /// Also a [`futures_core::Stream`].
    ///
    /// A receiver that falls more than 32 changes behind loses the oldest of them.
    LeadershipChanges of Leadership
}

impl HoldPhase for Leadership {
    const SUSPENDED: Self = Leadership::Suspended;

    fn lost(reason: LossReason) -> Self {
        Leadership::Lost(reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leadership_reads_as_a_word_and_a_loss_says_why() {
        assert_eq!(Leadership::Leader.to_string(), "leader");
        assert_eq!(Leadership::Follower.to_string(), "follower");
        assert_eq!(
            Leadership::Lost(LossReason::SessionClosed).to_string(),
            "lost: the session was closed"
        );
    }
}
