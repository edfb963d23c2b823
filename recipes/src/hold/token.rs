//! The fencing token: what a holder hands the resource it protects.

use std::fmt;

/// A number that grows with every grant of a lock: the lock node's creation zxid (`czxid`).
///
/// Zxids are unique and totally ordered across the ensemble and across leader changes, and a
/// later holder's node was created later, so a resource that remembers the highest token it
/// has seen can refuse a stale holder (one that paused and outlived its lock).
///
/// Displayed (and logged) in decimal, as `zk` gives it to commands in `ZK_FENCING_TOKEN`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FencingToken(pub i64);

impl fmt::Display for FencingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
