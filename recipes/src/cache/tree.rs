//! The cache of a subtree, in the shape of Curator's `CuratorCache`.

use std::sync::Arc;

use super::driver::{Options, Running};
use super::events::CacheEvents;
use super::shared::Snapshot;
use crate::cache::view::CachedNode;
use crate::error::{Error, Result};
use crate::session::sessions::Sessions;

/// Events a stream queues for a slow consumer before folding (see [`CacheEvents`]).
pub const DEFAULT_MAX_QUEUED_EVENTS: usize = 10_000;
/// Watch events kept until the view can take them, before folding them per node.
pub const DEFAULT_MAX_PENDING: usize = 100_000;

/// An in-memory view of a subtree (the node at `path` and everything below it), kept up to
/// date through a persistent recursive watch (servers 3.6+), with a stream of the changes.
///
/// The subtree may not exist yet: it is reported when it appears. The cache creates nothing.
/// See the [module docs](crate::cache) for what the view guarantees (it only ever equals a
/// state the server held, at the zxid it names) and what it costs in memory.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use zookeeper_recipes::{CacheEvent, TreeCache};
/// use zookeeper_tokio::{Client, CreateOptions};
///
/// let servers = "127.0.0.1:2181";
/// # let servers = &zookeeper_testkit::shared_server()
/// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_tree_cache"));
/// let client = Client::connect(servers).await?;
/// let cache = TreeCache::start(&client, "/services").await?; // nothing there yet
/// let mut events = cache.events();
///
/// client.create("/services", b"", &CreateOptions::persistent()).await?;
/// client.create("/services/api", b"10.0.0.1:80", &CreateOptions::persistent()).await?;
/// let mut seen = Vec::new();
/// while seen.len() < 2 {
///     if let CacheEvent::Created { path, .. } = events.next().await? {
///         seen.push(path);
///     }
/// }
/// assert_eq!(seen, ["/services", "/services/api"]);
/// assert_eq!(cache.children("/services").unwrap(), ["api"]);
/// let api = cache.get("/services/api").unwrap();
/// assert_eq!(&api.data.unwrap()[..], b"10.0.0.1:80");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct TreeCache {
    running: Arc<Running>,
}

impl std::fmt::Debug for TreeCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeCache")
            .field("path", &self.running.path)
            .field("zxid", &self.zxid())
            .field("nodes", &self.len())
            .finish()
    }
}

/// Settings of a [`TreeCache`].
#[derive(Debug)]
#[must_use = "a builder does nothing until started"]
pub struct TreeCacheBuilder {
    sessions: Sessions,
    options: Options,
}

impl TreeCacheBuilder {
    /// Keep stats only, no data: reads are `exists` calls, and [`CachedNode::data`] is `None`.
    pub fn stats_only(mut self, stats_only: bool) -> Self {
        self.options.stats_only = stats_only;
        self
    }

    /// How many events each stream queues for a consumer that reads slowly, before folding
    /// further changes per node (default [`DEFAULT_MAX_QUEUED_EVENTS`], at least 1).
    pub fn max_queued_events(mut self, n: usize) -> Self {
        self.options.max_queued_events = n;
        self
    }

    /// How many watch events may wait for the view to take them before they are folded per
    /// node and read again (default [`DEFAULT_MAX_PENDING`], at least 16).
    pub fn max_pending(mut self, n: usize) -> Self {
        self.options.max_pending = n;
        self
    }

    /// Starts the cache and waits for its first complete view. Fails if the session ends
    /// before (and no new one can be had), or the path is invalid. On renewing [`Sessions`]
    /// it waits across expiries for as long as no server can be reached: bound it with
    /// `tokio::time::timeout` where the ensemble may be down.
    pub async fn start(self) -> Result<TreeCache> {
        let cache = self.spawn()?;
        cache.running.ready().await?;
        Ok(cache)
    }

    /// Starts the cache without waiting (inside a tokio runtime): the view is empty until the
    /// first complete one, which a stream opened now reports as `Created` events, then
    /// `Initialized`.
    pub fn spawn(self) -> Result<TreeCache> {
        Ok(TreeCache {
            running: Arc::new(Running::start(self.sessions, self.options)?),
        })
    }
}

impl TreeCache {
    /// Settings for a cache of the subtree at `path`.
    pub fn builder(sessions: impl Into<Sessions>, path: &str) -> TreeCacheBuilder {
        TreeCacheBuilder {
            sessions: sessions.into(),
            options: Options {
                root: path.to_owned(),
                recursive: true,
                stats_only: false,
                max_queued_events: DEFAULT_MAX_QUEUED_EVENTS,
                max_pending: DEFAULT_MAX_PENDING,
            },
        }
    }

    /// Starts a cache of the subtree at `path` and waits for its first complete view.
    pub async fn start(sessions: impl Into<Sessions>, path: &str) -> Result<TreeCache> {
        TreeCache::builder(sessions, path).start().await
    }

    /// The cached node at `path`.
    pub fn get(&self, path: &str) -> Option<CachedNode> {
        self.running.shared.get(path)
    }

    /// The names of the children of `path`, sorted; `None` if `path` is not in the view.
    pub fn children(&self, path: &str) -> Option<Vec<String>> {
        self.running.shared.children(path)
    }

    /// The whole view, with the zxid it equals.
    pub fn snapshot(&self) -> Snapshot {
        self.running.shared.snapshot()
    }

    /// The zxid of the server state the view equals.
    pub fn zxid(&self) -> i64 {
        self.running.shared.zxid()
    }

    /// How many nodes the view holds.
    pub fn len(&self) -> usize {
        self.running.shared.len()
    }

    /// Whether the view holds no node.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The changes after the current view. Applying each event to a copy of
    /// [`TreeCache::snapshot`] taken just before keeps the copy equal to the view at the
    /// event's zxid.
    pub fn events(&self) -> CacheEvents {
        self.running.shared.subscribe()
    }

    /// The cached path.
    pub fn path(&self) -> &str {
        &self.running.path
    }

    /// The sessions the cache runs on (the current one may be newer than the client it was
    /// started with, after an expiry).
    pub fn sessions(&self) -> &Sessions {
        &self.running.sessions
    }

    /// Waits for the first complete view (at once if there is one).
    pub async fn initialized(&self) -> Result<()> {
        self.running.ready().await
    }

    /// Why the cache stopped, if it did: its session ended and no new one could be had.
    pub fn ended(&self) -> Option<Error> {
        self.running.ended()
    }

    /// Stops the cache (also done when the last clone is dropped); streams end with
    /// [`Error::Closed`]. The server-side watch stays until the session ends.
    pub fn close(&self) {
        self.running.stop();
    }
}
