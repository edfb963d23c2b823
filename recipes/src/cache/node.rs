//! The cache of one node, in the shape of Curator's `CuratorCache` in single-node mode.

use std::sync::Arc;

use bytes::Bytes;

use super::driver::{Options, Running};
use super::events::CacheEvents;
use super::tree::{DEFAULT_MAX_PENDING, DEFAULT_MAX_QUEUED_EVENTS};
use crate::cache::view::CachedNode;
use crate::error::{Error, Result};
use crate::session::sessions::Sessions;

/// An in-memory copy of one node, kept up to date through a persistent watch (servers
/// 3.6+), with a stream of its changes. The node may be missing: its appearance is reported.
///
/// Watching a configuration node takes a few lines, whether or not the node exists yet, and
/// across reconnects and (with renewing [`Sessions`]) session expiry:
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use zookeeper_recipes::NodeCache;
/// use zookeeper_tokio::{Client, CreateOptions};
///
/// let servers = "127.0.0.1:2181";
/// # let servers = &zookeeper_testkit::shared_server()
/// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_node_cache"));
/// let client = Client::connect(servers).await?;
/// let config = NodeCache::start(&client, "/config/app").await?;
/// assert_eq!(config.data(), None); // not there yet
/// let mut changes = config.events();
///
/// client.create("/config", b"", &CreateOptions::persistent()).await?;
/// client.create("/config/app", b"v1", &CreateOptions::persistent()).await?;
/// let event = changes.next().await?; // Created
/// assert_eq!(event.node().and_then(|n| n.data.as_deref()), Some(&b"v1"[..]));
/// assert_eq!(config.data().as_deref(), Some(&b"v1"[..]));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct NodeCache {
    running: Arc<Running>,
}

impl std::fmt::Debug for NodeCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeCache")
            .field("path", &self.running.path)
            .field("zxid", &self.zxid())
            .field("exists", &self.get().is_some())
            .finish()
    }
}

/// Settings of a [`NodeCache`].
#[derive(Debug)]
#[must_use = "a builder does nothing until started"]
pub struct NodeCacheBuilder {
    sessions: Sessions,
    options: Options,
}

impl NodeCacheBuilder {
    /// Keep the stat only, no data.
    pub fn stats_only(mut self, stats_only: bool) -> Self {
        self.options.stats_only = stats_only;
        self
    }

    /// How many events each stream queues for a consumer that reads slowly, before folding
    /// (default [`DEFAULT_MAX_QUEUED_EVENTS`]).
    pub fn max_queued_events(mut self, n: usize) -> Self {
        self.options.max_queued_events = n;
        self
    }

    /// Starts the cache and waits for the node's first read. Fails if the session ends
    /// before (and no new one can be had), or the path is invalid. On renewing [`Sessions`]
    /// it waits across expiries for as long as no server can be reached: bound it with
    /// `tokio::time::timeout` where the ensemble may be down.
    pub async fn start(self) -> Result<NodeCache> {
        let cache = self.spawn()?;
        cache.running.ready().await?;
        Ok(cache)
    }

    /// Starts the cache without waiting (inside a tokio runtime).
    pub fn spawn(self) -> Result<NodeCache> {
        Ok(NodeCache {
            running: Arc::new(Running::start(self.sessions, self.options)?),
        })
    }
}

impl NodeCache {
    /// Settings for a cache of the node at `path`.
    pub fn builder(sessions: impl Into<Sessions>, path: &str) -> NodeCacheBuilder {
        NodeCacheBuilder {
            sessions: sessions.into(),
            options: Options {
                root: path.to_owned(),
                recursive: false,
                stats_only: false,
                max_queued_events: DEFAULT_MAX_QUEUED_EVENTS,
                max_pending: DEFAULT_MAX_PENDING,
            },
        }
    }

    /// Starts a cache of the node at `path` and waits for its first read.
    pub async fn start(sessions: impl Into<Sessions>, path: &str) -> Result<NodeCache> {
        NodeCache::builder(sessions, path).start().await
    }

    /// The node, `None` while it does not exist.
    pub fn get(&self) -> Option<CachedNode> {
        self.running.shared.get(&self.running.path)
    }

    /// The node's data, `None` while it does not exist (or in stats-only mode).
    pub fn data(&self) -> Option<Bytes> {
        self.get().and_then(|n| n.data)
    }

    /// The zxid of the server state the copy equals.
    pub fn zxid(&self) -> i64 {
        self.running.shared.zxid()
    }

    /// The node's changes after the current copy.
    pub fn events(&self) -> CacheEvents {
        self.running.shared.subscribe()
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        &self.running.path
    }

    /// The sessions the cache runs on.
    pub fn sessions(&self) -> &Sessions {
        &self.running.sessions
    }

    /// Waits for the node's first read (at once if done).
    pub async fn initialized(&self) -> Result<()> {
        self.running.ready().await
    }

    /// Why the cache stopped, if it did.
    pub fn ended(&self) -> Option<Error> {
        self.running.ended()
    }

    /// Stops the cache (also done when the last clone is dropped).
    pub fn close(&self) {
        self.running.stop();
    }
}
