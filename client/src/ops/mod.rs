//! The operations, one file per group: each builds its request, queues it at call time and
//! decodes the reply in the caller's task.

mod acl;
mod children;
mod config;
mod delete_tree;
mod kept_path;
mod multi;
mod node;
mod parents;
mod reply;
mod session;
mod watch;

pub use multi::{MultiOp, MultiResult, ReadOp, ReadResult};
#[cfg(test)]
pub(crate) use node::get_data_reply;
