//! `getChildren` (8), `getChildren2` (12), `getAllChildrenNumber` (104) and
//! `getEphemerals` (103).

use super::Stat;
use crate::jute::record;

record! {
    /// Request of `getChildren`.
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct GetChildrenRequest {
        /// Node path.
        pub path: String,
        /// Leave a child watch.
        pub watch: bool,
    }
}

record! {
    /// Reply of `getChildren`.
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct GetChildrenResponse {
        /// Bare child names, in no particular order.
        pub children: Vec<String>,
    }
}

record! {
    /// Request of `getChildren2`.
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct GetChildren2Request {
        /// Node path.
        pub path: String,
        /// Leave a child watch.
        pub watch: bool,
    }
}

record! {
    /// Reply of `getChildren2`.
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct GetChildren2Response {
        /// Bare child names, in no particular order.
        pub children: Vec<String>,
        /// The node's stat.
        pub stat: Stat,
    }
}

record! {
    /// Request of `getAllChildrenNumber` (3.6+).
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct GetAllChildrenNumberRequest {
        /// Node path.
        pub path: String,
    }
}

record! {
    /// Reply of `getAllChildrenNumber`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
    pub struct GetAllChildrenNumberResponse {
        /// Number of all descendants (not only direct children).
        pub total_number: i32,
    }
}

record! {
    /// Request of `getEphemerals` (3.6+).
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct GetEphemeralsRequest {
        /// String prefix of the paths to list; `/` or empty for all.
        pub prefix_path: String,
    }
}

record! {
    /// Reply of `getEphemerals`.
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct GetEphemeralsResponse {
        /// Full server paths of the session's ephemeral nodes.
        pub ephemerals: Vec<String>,
    }
}
