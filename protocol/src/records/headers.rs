//! Frame headers: `RequestHeader` starts every client frame after the handshake and
//! `ReplyHeader` every server frame.

use crate::consts::{ErrorCode, OpCode};
use crate::jute::record;

record! {
    /// Starts every client frame after the handshake.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct RequestHeader {
        /// Client-chosen request id echoed in the reply, or a special xid ([`xid`](crate::xid)).
        pub xid: i32,
        /// The operation.
        pub opcode: OpCode,
    }
}

impl RequestHeader {
    /// Bytes of a `RequestHeader` on the wire.
    pub const LEN: usize = 8;
}

record! {
    /// Starts every server frame after the handshake. A body follows only when `err` is OK
    /// and the opcode has a response record; for xid −1 the body is a `WatcherEvent`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct ReplyHeader {
        /// The request's xid, or a special xid ([`xid`](crate::xid)).
        pub xid: i32,
        /// The server's last processed zxid when it built the reply (−1 in pre-3.9
        /// notifications, 0 in auth replies).
        pub zxid: i64,
        /// 0 or an error code; when non-zero there is no body.
        pub err: ErrorCode,
    }
}

impl ReplyHeader {
    /// Bytes of a `ReplyHeader` on the wire.
    pub const LEN: usize = 16;
}
