//! Protocol constants: opcodes, error codes, watch constants, create modes, permission bits,
//! special xids and well-known ids/ACLs.
//!
//! Numeric enums have an `Unknown(i32)` variant: a number this crate does not know decodes to
//! it (never an error, never a panic) and encodes back unchanged.

mod create_mode;
mod error_code;
mod int_enum;
mod opcode;
mod watcher;

pub use create_mode::CreateMode;
pub use error_code::ErrorCode;
pub use opcode::OpCode;
pub use watcher::{AddWatchMode, EventType, KeeperState, WatcherType};

/// Permission bits of an ACL entry (`ZooDefs.Perms`).
pub mod perms {
    /// Read data and list children.
    pub const READ: i32 = 1;
    /// Set data.
    pub const WRITE: i32 = 1 << 1;
    /// Create children.
    pub const CREATE: i32 = 1 << 2;
    /// Delete children.
    pub const DELETE: i32 = 1 << 3;
    /// Set the ACL.
    pub const ADMIN: i32 = 1 << 4;
    /// Every permission.
    pub const ALL: i32 = READ | WRITE | CREATE | DELETE | ADMIN;
}

/// Special xids of request and reply headers.
pub mod xid {
    /// Server → client: a watch notification (a `WatcherEvent` follows).
    pub const NOTIFICATION: i32 = -1;
    /// Ping request and reply; the server always replies to a ping with this xid.
    pub const PING: i32 = -2;
    /// `auth` request and its reply, which can overtake earlier replies.
    pub const AUTH: i32 = -4;
    /// `setWatches`/`setWatches2` by convention; the server echoes it.
    pub const SET_WATCHES: i32 = -8;
}

/// Well-known znode paths.
pub mod paths {
    /// The dynamic configuration node, read with `getData`; never chrooted.
    pub const CONFIG_NODE: &str = "/zookeeper/config";
}
