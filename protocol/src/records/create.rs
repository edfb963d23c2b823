//! `create` (1), `create2` (15), `createContainer` (19) and `createTTL` (21).

use bytes::Bytes;

use super::{Acl, Stat};
use crate::jute::record;

record! {
    /// Request of `create`, `create2` and `createContainer` (flags 4).
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct CreateRequest {
        /// Node path (server namespace).
        pub path: String,
        /// Initial data; `None` is sent as a null buffer and read back as null by `getData`.
        pub data: Option<Bytes>,
        /// The node's ACL; servers answer INVALIDACL when it is empty.
        pub acl: Vec<Acl>,
        /// [`CreateMode::flags`](crate::CreateMode::flags).
        pub flags: i32,
    }
}

record! {
    /// Request of `createTTL` (flags 5 or 6).
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct CreateTtlRequest {
        /// Node path (server namespace).
        pub path: String,
        /// Initial data.
        pub data: Option<Bytes>,
        /// The node's ACL.
        pub acl: Vec<Acl>,
        /// [`CreateMode::flags`](crate::CreateMode::flags), 5 or 6.
        pub flags: i32,
        /// Time to live in ms, 1 ..= 2^40 − 1.
        pub ttl: i64,
    }
}

record! {
    /// Reply of `create` (1).
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct CreateResponse {
        /// The actual path (with the sequence suffix of sequential modes).
        pub path: String,
    }
}

record! {
    /// Reply of `create2`, `createContainer` and `createTTL`.
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct Create2Response {
        /// The actual path (with the sequence suffix of sequential modes).
        pub path: String,
        /// The new node's stat.
        pub stat: Stat,
    }
}
