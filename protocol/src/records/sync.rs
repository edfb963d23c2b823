//! `sync` (9).

use crate::jute::record;

record! {
    /// Request of `sync`.
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct SyncRequest {
        /// Node path.
        pub path: String,
    }
}

record! {
    /// Reply of `sync`.
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct SyncResponse {
        /// The path, echoed.
        pub path: String,
    }
}
