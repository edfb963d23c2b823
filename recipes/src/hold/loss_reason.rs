//! Why a hold ended: the vocabulary shared by the locks, the semaphore's leases, the
//! elections, their errors and their metrics, in a file of its own below all of them.

use std::fmt;

/// Why a hold was lost: a lock or lease, a latch's place, a selector's session (letting
/// go is [`Holding::Released`](crate::Holding::Released), not a loss).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LossReason {
    /// The session expired: the server removed our ephemeral node.
    SessionExpired,
    /// The client was closed, or its authentication failed.
    SessionClosed,
    /// The session's lease ran out: no server answered a request sent within the last
    /// session timeout (a partition, a dead server, a slow one, or this process paused), so
    /// the server may have expired the session and another contender may hold the lock.
    /// Reported no later than the lease's end ([`zookeeper_tokio::Client::lease_deadline`]).
    LeaseExpired,
    /// Our node was deleted by someone else.
    NodeDeleted,
    /// The election path's sequence counter wrapped past 2^31: the peers' order is broken
    /// (see [`Error::SequenceWrapped`](crate::Error::SequenceWrapped)), so a leader latch
    /// leaves rather than risk a second leader.
    SequenceWrapped,
}

impl fmt::Display for LossReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LossReason::SessionExpired => "the session expired",
            LossReason::SessionClosed => "the session was closed",
            LossReason::LeaseExpired => {
                "the session's lease ran out: no server answered within the session timeout"
            }
            LossReason::NodeDeleted => "our node was deleted by someone else",
            LossReason::SequenceWrapped => {
                "sequence numbers wrapped past 2^31: the peers' order is broken"
            }
        })
    }
}

impl LossReason {
    /// The metrics' `reason` label (`zookeeper_lock_losses_total`,
    /// `zookeeper_leadership_lost_total`).
    pub(crate) fn label(self) -> &'static str {
        match self {
            LossReason::SessionExpired => "session_expired",
            LossReason::SessionClosed => "session_closed",
            LossReason::LeaseExpired => "lease_expired",
            LossReason::NodeDeleted => "node_deleted",
            LossReason::SequenceWrapped => "sequence_wrapped",
        }
    }
}
