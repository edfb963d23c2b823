//! `delete` (2). The reply has no body.

use crate::jute::record;

record! {
    /// Request of `delete`.
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct DeleteRequest {
        /// Node path.
        pub path: String,
        /// Expected data version, −1 for any.
        pub version: i32,
    }
}
