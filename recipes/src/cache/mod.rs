//! Caches of one node ([`NodeCache`]) or of a subtree ([`TreeCache`]), kept up to date through a
//! persistent (recursive) watch, with a stream of what changed.
//!
//! # What the view guarantees
//!
//! The view only ever moves from one state the server held to a later one: after every event,
//! the cache equals the server's tree at that event's zxid ([`CacheEvent::zxid`]), and
//! [`TreeCache::snapshot`] returns the view with the zxid it equals. Events come in server
//! order, never twice, and nothing is missed across reconnects or session expiry (with
//! renewing [`Sessions`](crate::Sessions)); a node deleted and created again between two views
//! shows as deleted, then created. Changes that come faster than the cache can read them are
//! coalesced: the view skips intermediate states it could not read, never showing a state
//! the server did not hold at the zxid given.
//!
//! # How
//!
//! A watch event says that a node changed, not to what; the read it triggers may see a later
//! state, and other nodes may have changed in between. The cache keeps the events it has not
//! yet applied, in the order the server sent them, and places every read among them by
//! counting: each data change raises the node's version by one, each creation starts a new
//! node (a new czxid) at version 0. A read that matches exactly one place in its node's
//! events tells the node's state from that event on. The view advances to the latest event
//! at which every node's state is known, in one step, and the events between are reported
//! with that event's zxid. After a reconnect, the changes made while cut off are reported by
//! the client once per node and in no useful order; the cache applies nothing inside that
//! stretch, reads every node it touched, and advances past it once the client has reported
//! everything it missed.
//!
//! The events must come as the server sent them, one per change, for counting to hold; the
//! cache reads its stream as fast as it comes. A stream that is not (events the client had to
//! fold for a consumer that fell behind, say) is detected where counts do not add up, and what
//! is pending is then read again as after a reconnect; folding that happens to add up (single
//! changes of different nodes, reordered) is not detectable from the events alone.
//!
//! # Memory
//!
//! The view holds every node's path, stat and data: about 330 bytes per node plus the data
//! (measured over 10,101 nodes, see BENCHMARKS.md), or no data with
//! [`stats_only`](TreeCacheBuilder::stats_only); the client's record of the subtree behind the
//! recursive watch costs about 370 more per node. Events not yet applied are bounded by
//! [`max_pending`](TreeCacheBuilder::max_pending): past it they are folded into one pending
//! change per node. Each event stream queues at most
//! [`max_queued_events`](TreeCacheBuilder::max_queued_events) events for a consumer that reads
//! slowly, then folds further changes into one event per node, reported (with the latest zxid)
//! once the consumer has read the queue.

mod driver;
mod engine;
mod events;
mod expect;
mod node;
mod shared;
mod tree;

use bytes::Bytes;
use zookeeper_tokio::Stat;

pub use events::CacheEvents;
pub use node::{NodeCache, NodeCacheBuilder};
pub use shared::Snapshot;
pub use tree::{TreeCache, TreeCacheBuilder, DEFAULT_MAX_PENDING, DEFAULT_MAX_QUEUED_EVENTS};

/// A cached node: its data and stat as of the view's zxid.
///
/// The data-related fields of the stat (`czxid`, `mzxid`, `ctime`, `mtime`, `version`,
/// `data_length`, `ephemeral_owner`) are those of the node at the view's zxid. The fields
/// that change without an event for the node (`cversion`, `num_children`, `pzxid`,
/// `aversion`) are those of the read that fetched its data, earlier or later; a
/// [`TreeCache`] knows the children themselves exactly ([`TreeCache::children`]).
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

/// The depth of `path` (`/` is 0, `/a` is 1).
pub(crate) fn depth(path: &str) -> usize {
    if path == "/" {
        0
    } else {
        path.matches('/').count()
    }
}

/// The parent of `path`, `None` for `/`.
pub(crate) fn parent(path: &str) -> Option<&str> {
    match path.rfind('/') {
        Some(0) if path.len() > 1 => Some("/"),
        Some(i) if i > 0 => Some(&path[..i]),
        _ => None,
    }
}

/// `name` under `parent`.
pub(crate) fn child(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// Whether `path` is `root` or below it.
pub(crate) fn within(root: &str, path: &str) -> bool {
    root == "/"
        || path == root
        || (path.starts_with(root) && path.as_bytes().get(root.len()) == Some(&b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(depth("/"), 0);
        assert_eq!(depth("/a/b"), 2);
        assert_eq!(parent("/a/b"), Some("/a"));
        assert_eq!(parent("/a"), Some("/"));
        assert_eq!(parent("/"), None);
        assert_eq!(child("/", "a"), "/a");
        assert_eq!(child("/a", "b"), "/a/b");
        assert!(within("/a", "/a"));
        assert!(within("/a", "/a/b"));
        assert!(!within("/a", "/ab"));
        assert!(within("/", "/x"));
    }
}
