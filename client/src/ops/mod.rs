//! The operations, one file per group: each builds its request, queues it at call time and
//! decodes the reply in the caller's task.

mod acl;
mod children;
mod multi;
mod node;
mod session;
mod watch;

pub use multi::{MultiOp, MultiResult, ReadOp, ReadResult};
