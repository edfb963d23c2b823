//! What a holder knows: the state of a lock, a lease or a leadership, read against the
//! session's lease on every look.

mod holding;
mod node;

pub(crate) use holding::{HoldPhase, Holding, Narrate};
pub(crate) use node::{check_node, NodeCheck, TaskStop, RECHECK};
