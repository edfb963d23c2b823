//! The one error type of the recipes.

use crate::hold::LossReason;

/// Why a recipe operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A ZooKeeper request failed in a way the recipe cannot repair (for example the session
    /// expired, or the node's ACL refused us). Ephemeral nodes of an ended session are gone
    /// with it, so nothing is left behind. Its message names the request's operation and path.
    #[error(transparent)]
    Client(#[from] zookeeper_tokio::Error),
    /// The recipe's path is not usable.
    #[error("invalid recipe path {path:?}: {reason}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An argument other than a path was rejected.
    #[error("invalid argument: {0}")]
    InvalidArgument(&'static str),
    /// Our own contender node disappeared while we waited: someone deleted it.
    #[error("our contender node {path} was deleted by someone else")]
    NodeDeleted {
        /// The node that vanished.
        path: String,
    },
    /// A guarded write ([`LockGuard::guarded_multi`](crate::LockGuard::guarded_multi)) was
    /// refused: by the server because our lock node is gone (our session ended, or someone
    /// deleted the node), or before it was sent because the guard already read lost (its
    /// lease ran out). The lock is no longer ours; nothing was applied.
    #[error("the lock is no longer held: our node {path} is gone, nothing was written")]
    NotHeld {
        /// Our lock node.
        path: String,
    },
    /// A leader-only write ([`LeaderLatch::proclaim`](crate::LeaderLatch::proclaim)) by a
    /// participant that does not lead now (a follower, suspended, or lost), or whose node the
    /// server no longer has. Nothing was written.
    #[error("not the leader (our node {path}): nothing was written")]
    NotLeader {
        /// Our node.
        path: String,
    },
    /// The connection stayed down longer than the session timeout: the session is gone on
    /// the server, and with it our node.
    #[error("disconnected for longer than the session timeout")]
    Disconnected,
    /// The lock path's sequence counter wrapped past 2^31 (a child's sequence reads
    /// `-2147483648` and so on, or the last number, `2147483647`, which a ZooKeeper 3.5+
    /// server hands out again and again once the counter is exhausted): Curator and kazoo
    /// order contenders by the sequence text, in which a wrapped or repeated name lets a
    /// newcomer pass, so peers would grant the lock beside its holder.
    /// Rather than take part in that, the acquisition gave up and deleted its node. The path
    /// is usable again once its parent is re-created (Curator's container parent is removed
    /// by the server once empty; kazoo's persistent one must be deleted, or recycled with
    /// [`recycle_idle_parent`](crate::recycle_idle_parent)).
    #[error("sequence numbers under {path} wrapped past 2^31 (child {child}): the peers' order is broken, lock refused")]
    SequenceWrapped {
        /// The lock path.
        path: String,
        /// A child whose sequence wrapped.
        child: String,
    },
    /// Taking the write lock while holding only the read lock through the same handle would
    /// wait for ourselves forever.
    #[error("cannot upgrade a read lock to a write lock; release the read lock first")]
    UpgradeWouldDeadlock,
    /// The leader latch was closed (resigned, or every handle dropped) before it became
    /// leader.
    #[error("the leader latch is closed")]
    LatchClosed,
    /// The leader latch lost its place in the election before it became leader, for
    /// `reason`. Session-terminal when the session ended (expired or closed): a new session
    /// is needed. After [`LossReason::LeaseExpired`] the session may live on: a new latch on
    /// the same client may succeed, and [`is_retryable`](Error::is_retryable) says so.
    #[error("the leader latch lost its place: {reason}")]
    LatchLost {
        /// Why.
        reason: LossReason,
    },
    /// The recipe was closed (or every handle to it dropped).
    #[error("the recipe was closed")]
    Closed,
    /// A node holds data the recipe cannot read (a counter of the wrong size, say).
    #[error("unexpected data in {path}: {reason}")]
    BadValue {
        /// The node.
        path: String,
        /// What was expected.
        reason: &'static str,
    },
    /// A write was sent but its reply was lost with the connection, and what the node holds
    /// now cannot tell whether it was applied (someone else may have written the same). Read
    /// the value again before deciding.
    #[error("the write to {path} may or may not have been applied (its reply was lost)")]
    Indeterminate {
        /// The node written.
        path: String,
    },
}

/// Result of a recipe operation.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// True when trying again may succeed: the connection was lost or a request timed out,
    /// or a wait ended because the session's lease ran out (the session may live on).
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Client(e) => e.is_retryable(),
            Error::LatchLost { reason } => *reason == LossReason::LeaseExpired,
            _ => false,
        }
    }

    /// True when a write of the recipe failed but may have been applied: its reply was lost
    /// ([`zookeeper_tokio::Error::is_outcome_unknown`]), or [`Error::Indeterminate`]. Read
    /// the state back before repeating it.
    pub fn is_outcome_unknown(&self) -> bool {
        match self {
            Error::Client(e) => e.is_outcome_unknown(),
            Error::Indeterminate { .. } => true,
            _ => false,
        }
    }

    /// A client error as one of `operation` on `path`, unless it names where it failed
    /// already (see [`zookeeper_tokio::Error::at_operation`]); other errors as they are.
    pub(crate) fn at(self, operation: &'static str, path: &str) -> Error {
        match self {
            Error::Client(e) => Error::Client(e.at_operation(operation, path)),
            other => other,
        }
    }

    /// True when the session behind the recipe is finished (expired, closed, failed
    /// authentication), whether a request failed on it or a wait ended with it: a new client
    /// is needed.
    pub fn is_session_terminal(&self) -> bool {
        match self {
            Error::Client(e) => e.is_session_terminal(),
            Error::Disconnected => true,
            Error::LatchLost { reason } => matches!(
                reason,
                LossReason::SessionExpired | LossReason::SessionClosed
            ),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use zookeeper_tokio::ErrorKind;

    use super::*;

    #[test]
    fn an_unknown_outcome_is_the_clients_or_an_indeterminate_write() {
        let lost = Error::Indeterminate {
            path: "/counter".into(),
        };
        assert!(lost.is_outcome_unknown());
        // Retryable, but never sent: known not applied.
        let never_sent = Error::Client(ErrorKind::ConnectionLoss.into());
        assert!(never_sent.is_retryable() && !never_sent.is_outcome_unknown());
        assert!(!Error::Disconnected.is_outcome_unknown());
    }
}
