//! What the cache holds and reports: a cached node, a node's state at one point of the
//! server's history, and a change of the view.

use bytes::Bytes;
use zookeeper_tokio::Stat;

/// A cached node: its data and stat as of the view's zxid.
///
/// The data-related fields of the stat (`czxid`, `mzxid`, `ctime`, `mtime`, `version`,
/// `data_length`, `ephemeral_owner`) are those of the node at the view's zxid. The fields
/// that change without an event for the node (`cversion`, `num_children`, `pzxid`,
/// `aversion`) are those of the read that fetched its data, earlier or later; a
/// [`TreeCache`](crate::TreeCache) knows the children themselves exactly
/// ([`TreeCache::children`](crate::TreeCache::children)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedNode {
    /// The node's data; `None` in stats-only mode, or when our ACL may see the node but not
    /// read it.
    pub data: Option<Bytes>,
    /// The node's stat.
    pub stat: Stat,
}

/// A change of the cached view.
///
/// Every event carries the zxid of the server state the view equals once it is applied;
/// several events may share one zxid (changes the cache applied in one step). A node replaced
/// (deleted and created again) gives `Deleted`, then `Created`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheEvent {
    /// The node appeared.
    Created {
        /// The node's path.
        path: String,
        /// The node.
        node: CachedNode,
        /// The zxid the view equals with this event applied.
        zxid: i64,
    },
    /// The node's data changed (its version moved).
    Changed {
        /// The node's path.
        path: String,
        /// The node before.
        old: CachedNode,
        /// The node now.
        node: CachedNode,
        /// The zxid the view equals with this event applied.
        zxid: i64,
    },
    /// The node is gone.
    Deleted {
        /// The node's path.
        path: String,
        /// The node as it was.
        old: CachedNode,
        /// The zxid the view equals with this event applied.
        zxid: i64,
    },
    /// The first complete view: every node present was reported `Created` before this.
    /// Sent once, to streams opened before the first view was complete.
    Initialized {
        /// The zxid the view equals.
        zxid: i64,
    },
}

impl CacheEvent {
    /// The zxid of the server state the view equals with this event applied.
    pub fn zxid(&self) -> i64 {
        match self {
            CacheEvent::Created { zxid, .. }
            | CacheEvent::Changed { zxid, .. }
            | CacheEvent::Deleted { zxid, .. }
            | CacheEvent::Initialized { zxid } => *zxid,
        }
    }

    /// The node's path (`None` for `Initialized`).
    pub fn path(&self) -> Option<&str> {
        match self {
            CacheEvent::Created { path, .. }
            | CacheEvent::Changed { path, .. }
            | CacheEvent::Deleted { path, .. } => Some(path),
            CacheEvent::Initialized { .. } => None,
        }
    }

    /// The node after the event (`None` for `Deleted` and `Initialized`).
    pub fn node(&self) -> Option<&CachedNode> {
        match self {
            CacheEvent::Created { node, .. } | CacheEvent::Changed { node, .. } => Some(node),
            _ => None,
        }
    }
}

/// A node's state at some point of the server's history, as the cache learns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum NodeState {
    Absent,
    Present(CachedNode),
}

impl NodeState {
    pub fn present(&self) -> Option<&CachedNode> {
        match self {
            NodeState::Absent => None,
            NodeState::Present(node) => Some(node),
        }
    }
}
