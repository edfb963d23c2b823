//! `getACL` (6) and `setACL` (7).

use super::{Acl, Stat};
use crate::jute::record;

record! {
    /// Request of `getACL`.
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct GetAclRequest {
        /// Node path.
        pub path: String,
    }
}

record! {
    /// Reply of `getACL`. Without ADMIN permission, digest ids come back masked (`user:x`).
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct GetAclResponse {
        /// The node's ACL.
        pub acl: Vec<Acl>,
        /// The node's stat.
        pub stat: Stat,
    }
}

record! {
    /// Request of `setACL`.
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct SetAclRequest {
        /// Node path.
        pub path: String,
        /// The new ACL.
        pub acl: Vec<Acl>,
        /// Expected ACL version (`aversion`), −1 for any.
        pub version: i32,
    }
}

record! {
    /// Reply of `setACL`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
    pub struct SetAclResponse {
        /// The node's stat after the write.
        pub stat: Stat,
    }
}
