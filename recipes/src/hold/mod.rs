//! What a holder knows: the fencing token of its grant, the state of its lock, lease or
//! leadership, and why it ended.
//!
//! One layer for every recipe that guards exclusive work (the locks' guards, the semaphore's
//! leases, the leader latch, the leader selector's terms): the session followed for them
//! (`session_follower`), the session's lease read against the clock on every look
//! (`session_lease`, `hold_state`), the state ([`Holding`]) published to every reader through
//! the client's `transitions` and read against the lease (`state_watcher`, [`HoldingChanges`]),
//! the look at whether our node is still ours and its retry (`node`), and work polled only
//! while the hold is trusted (`fenced_work`). Nothing here imports a recipe: the recipes build
//! on it.
//!
//! "Lease" here is always the session's (the client's `lease_deadline`); the semaphore's
//! leases are `semaphore`'s.

mod fenced_work;
mod hold_state;
mod holding;
mod loss_reason;
mod node;
mod session_follower;
mod session_lease;
mod state_watcher;
mod token;

pub(crate) use fenced_work::{Fenced, FencedWork};
pub(crate) use hold_state::{HoldState, Narrate};
pub(crate) use holding::publisher;
pub use holding::{Holding, HoldingChanges};
pub use loss_reason::LossReason;
pub(crate) use node::{check_node, NodeCheck, TaskStop, RECHECK};
pub(crate) use session_follower::{SessionFollower, SessionSignal};
pub use state_watcher::StateWatcher;
pub use token::FencingToken;
pub(crate) use zookeeper_tokio::transitions::Transitions;
