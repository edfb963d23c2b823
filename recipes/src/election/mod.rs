//! Leader election: the [`LeaderLatch`] and one session's participation in its election
//! (`participation`), the [`LeaderSelector`] (a mutex held while the leader's work runs), the
//! [`LeaderObserver`] that follows who leads without taking part, and the latch that opens a
//! session of its own (`standalone`).

pub(crate) mod latch;
pub(crate) mod observer;
pub(crate) mod participation;
pub(crate) mod selector;
mod standalone;

pub use latch::LeaderLatch;
pub use observer::{ElectionLayout, Leader, LeaderChanges, LeaderObserver};
pub use participation::{participants, Participant};
pub use selector::{CancelOn, LeaderContext, LeaderSelector, LeaderSelectorBuilder};
