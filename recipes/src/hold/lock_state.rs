//! The state of a lock, a read or write lock, or a semaphore lease.

use std::fmt;

use super::holding::HoldPhase;
use super::loss_reason::LossReason;
use super::transitions::{changes_stream, Phase};

/// Whether a lock (or lease, or leadership) can be trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockState {
    /// Connected, and our node is ours.
    Held,
    /// The connection is down: the node may still be ours, but nobody can tell until a
    /// server answers. Work protected by the lock should pause (and, when in doubt, stop:
    /// an operation that must not overlap with another holder's cannot be finished safely
    /// from here). Becomes `Held` again on reconnect, or `Lost` once the lease runs out.
    Suspended,
    /// The lock can no longer be trusted; another contender may hold it now.
    Lost(LossReason),
}

impl fmt::Display for LockState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockState::Held => f.write_str("held"),
            LockState::Suspended => f.write_str("suspended (connection lost)"),
            LockState::Lost(reason) => write!(f, "lost: {reason}"),
        }
    }
}

impl LockState {
    /// True only for [`LockState::Held`].
    pub fn is_held(self) -> bool {
        self == LockState::Held
    }
}

impl Phase for LockState {
    // A lock whose state is no longer published was released.
    const ENDED: Self = LockState::Lost(LossReason::Released);

    fn is_final(self) -> bool {
        matches!(self, LockState::Lost(_))
    }
}

changes_stream! {
    /// Every state a lock goes through, in order: the current state first, then each
    /// transition, ending after [`LockState::Lost`]. Unlike [`LockGuard::state_watcher`],
    /// which keeps only the latest state, this sees a suspension even when the connection was
    /// back before anyone looked. Also a [`futures_core::Stream`].
    ///
    /// A receiver that falls more than 32 transitions behind loses the oldest of them.
    ///
    /// [`LockGuard::state_watcher`]: crate::LockGuard::state_watcher
    LockStateChanges of LockState
}

impl HoldPhase for LockState {
    const SUSPENDED: Self = LockState::Suspended;

    fn lost(reason: LossReason) -> Self {
        LockState::Lost(reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_and_reasons_read_as_sentences() {
        assert_eq!(LockState::Held.to_string(), "held");
        assert_eq!(
            LockState::Suspended.to_string(),
            "suspended (connection lost)"
        );
        assert_eq!(
            LockState::Lost(LossReason::NodeDeleted).to_string(),
            "lost: our node was deleted by someone else"
        );
        assert_eq!(
            LossReason::LeaseExpired.to_string(),
            "the session's lease ran out: no server answered within the session timeout"
        );
        assert_eq!(
            LossReason::SessionExpired.to_string(),
            "the session expired"
        );
    }
}
