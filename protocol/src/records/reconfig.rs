//! `reconfig` (16). The reply is a [`GetDataResponse`](crate::GetDataResponse) holding the new
//! dynamic configuration.

use crate::jute::record;

record! {
    /// Request of `reconfig` (3.5+; needs `reconfigEnabled`, a quorum and ACL rights).
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct ReconfigRequest {
        /// Servers to add (incremental mode), comma separated; may be null.
        pub joining_servers: Option<String>,
        /// Server ids to remove (incremental mode), comma separated; may be null.
        pub leaving_servers: Option<String>,
        /// The complete new membership (non-incremental mode); may be null.
        pub new_members: Option<String>,
        /// Expected current config version, −1 for no check.
        pub cur_config_id: i64,
    }
}
