//! Coordination beyond locks and elections, in Curator's layouts: barriers
//! ([`DistributedBarrier`], [`DistributedDoubleBarrier`]), a node that stays
//! ([`PersistentNode`]) and group membership built on it ([`GroupMember`]).

mod barrier;
mod double_barrier;
mod group;
mod persistent_node;

pub use barrier::DistributedBarrier;
pub use double_barrier::DistributedDoubleBarrier;
pub use group::GroupMember;
pub use persistent_node::{PersistentNode, PersistentNodeState};
