//! Watch records: the `WatcherEvent` notification, `setWatches` (101), `setWatches2` (105),
//! `addWatch` (106), `checkWatches` (17) and `removeWatches` (18).

use crate::consts::{EventType, KeeperState};
use crate::jute::record;

record! {
    /// The body of a notification frame (xid −1).
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct WatcherEvent {
        /// What happened; servers send types 1–4.
        pub event_type: EventType,
        /// Always `SyncConnected` from a server.
        pub state: KeeperState,
        /// Server path of the node.
        pub path: String,
    }
}

record! {
    /// Request of `setWatches`: re-registers watches after a reconnect. The server first sends
    /// notifications for changes after `relative_zxid`, then the (bodiless) reply.
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct SetWatches {
        /// The client's last seen zxid.
        pub relative_zxid: i64,
        /// Paths with data watches.
        pub data_watches: Vec<String>,
        /// Paths with exist watches.
        pub exist_watches: Vec<String>,
        /// Paths with child watches.
        pub child_watches: Vec<String>,
    }
}

record! {
    /// Request of `setWatches2` (3.6+): `setWatches` plus persistent watches.
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct SetWatches2 {
        /// The client's last seen zxid.
        pub relative_zxid: i64,
        /// Paths with data watches.
        pub data_watches: Vec<String>,
        /// Paths with exist watches.
        pub exist_watches: Vec<String>,
        /// Paths with child watches.
        pub child_watches: Vec<String>,
        /// Paths with persistent watches.
        pub persistent_watches: Vec<String>,
        /// Paths with persistent recursive watches.
        pub persistent_recursive_watches: Vec<String>,
    }
}

record! {
    /// Request of `addWatch` (3.6+). The reply body is an [`ErrorResponse`](crate::ErrorResponse)
    /// holding 0.
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct AddWatchRequest {
        /// Node path.
        pub path: String,
        /// [`AddWatchMode`](crate::AddWatchMode) as a number.
        pub mode: i32,
    }
}

record! {
    /// Request of `checkWatches` (3.5+); err NOWATCHER if this connection holds no such watch.
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct CheckWatchesRequest {
        /// Node path.
        pub path: String,
        /// [`WatcherType`](crate::WatcherType) as a number.
        pub watcher_type: i32,
    }
}

record! {
    /// Request of `removeWatches` (3.5+); err NOWATCHER if there was nothing to remove.
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct RemoveWatchesRequest {
        /// Node path.
        pub path: String,
        /// [`WatcherType`](crate::WatcherType) as a number.
        pub watcher_type: i32,
    }
}
