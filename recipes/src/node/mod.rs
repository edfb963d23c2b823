//! Our nodes on the server: paths (`path`), their names and the order peers give them
//! (`naming`), the path made and checked for them (`ensure_path`), a contender's create that
//! survives a lost reply and a cancelled future (`protection`), its delete retried until it is
//! gone (`release`), cleanup that outlives its owner, inside a runtime or not (`cleanup`), and
//! the parent's sequence counter nearing its wrap (`sequence_wrap`).
//!
//! Below every recipe: nothing here imports one.

pub(crate) mod cleanup;
pub(crate) mod ensure_path;
pub(crate) mod naming;
pub(crate) mod path;
pub(crate) mod protection;
pub(crate) mod release;
pub(crate) mod sequence_wrap;

pub use naming::Layout;
pub use sequence_wrap::{
    next_sequence, recycle_idle_parent, ParentKind, Recycled, SEQUENCE_WARNING_THRESHOLD,
};
