//! Watch-related constants (`Watcher.Event`, `Watcher.WatcherType`, `AddWatchMode`).

use super::int_enum::int_enum;

int_enum! {
    /// The type of a watch event. Servers send only 1–4; the others are made by clients.
    pub enum EventType {
        /// A session-state change, made by the client (not on the wire).
        None = -1 => "None",
        /// The node was created.
        NodeCreated = 1 => "NodeCreated",
        /// The node was deleted.
        NodeDeleted = 2 => "NodeDeleted",
        /// The node's data changed.
        NodeDataChanged = 3 => "NodeDataChanged",
        /// The node's list of children changed.
        NodeChildrenChanged = 4 => "NodeChildrenChanged",
        /// Client-side, 3.5+: a data watch was removed.
        DataWatchRemoved = 5 => "DataWatchRemoved",
        /// Client-side, 3.5+: a child watch was removed.
        ChildWatchRemoved = 6 => "ChildWatchRemoved",
        /// Client-side, 3.6+: a persistent watch was removed.
        PersistentWatchRemoved = 7 => "PersistentWatchRemoved",
    }
}

int_enum! {
    /// The session state carried by a watch event. Servers only ever send `SyncConnected`;
    /// the other states are made by clients. Java's deprecated `Unknown` state (−1) decodes as
    /// `KeeperState::Unknown(-1)`.
    pub enum KeeperState {
        /// Disconnected from the server.
        Disconnected = 0 => "Disconnected",
        /// Deprecated, never used.
        NoSyncConnected = 1 => "NoSyncConnected",
        /// Connected; the only state on the wire.
        SyncConnected = 3 => "SyncConnected",
        /// Authentication failed.
        AuthFailed = 4 => "AuthFailed",
        /// Connected to a read-only server.
        ConnectedReadOnly = 5 => "ConnectedReadOnly",
        /// SASL authentication succeeded.
        SaslAuthenticated = 6 => "SaslAuthenticated",
        /// The session expired.
        Expired = -112 => "Expired",
        /// The client was closed (3.5.5+).
        Closed = 7 => "Closed",
    }
}

int_enum! {
    /// Which watches `checkWatches`/`removeWatches` target.
    pub enum WatcherType {
        /// Child watches.
        Children = 1 => "Children",
        /// Data and exist watches.
        Data = 2 => "Data",
        /// Any watch.
        Any = 3 => "Any",
        /// Persistent watches (3.9+; older servers answer MARSHALLINGERROR).
        Persistent = 4 => "Persistent",
        /// Persistent recursive watches (3.9+; older servers answer MARSHALLINGERROR).
        PersistentRecursive = 5 => "PersistentRecursive",
    }
}

int_enum! {
    /// The mode of an `addWatch` request (3.6+).
    pub enum AddWatchMode {
        /// Data and child events for the path; not removed when it fires.
        Persistent = 0 => "PERSISTENT",
        /// Data events for the path and every descendant; not removed when it fires.
        PersistentRecursive = 1 => "PERSISTENT_RECURSIVE",
    }
}
