//! The distributed mutex, compatible with Curator's `InterProcessMutex` (default) or kazoo's
//! `Lock`.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use zookeeper_tokio::Client;

use crate::contend::{deadline_after, predecessor, AheadRule, Patience, Rule};
use crate::error::Result;
use crate::lock::acquisition::{acquire_call, queue_for_guard, Entry};
use crate::lock::guard::LockGuard;
use crate::metrics::Recipe;
use crate::node::ensure_path::validate;
use crate::node::naming::{peer_queue, Layout, CURATOR_LOCK, KAZOO_LOCK};
use crate::node::protection::list_children;
use crate::session::sessions::Sessions;

/// The name of a mutex node in `layout`.
pub(crate) fn marker(layout: Layout) -> &'static str {
    match layout {
        Layout::Curator => CURATOR_LOCK,
        Layout::Kazoo => KAZOO_LOCK,
    }
}

/// The rule a mutex hands the contention core: the contender just before us blocks us.
pub(crate) const RULE: AheadRule = predecessor;

/// A distributed mutual-exclusion lock on a ZooKeeper path.
///
/// Each acquisition creates an ephemeral-sequential child carrying a fresh GUID and waits for the
/// child just before it to go, watching it and the child before that one (whose deletion comes
/// first, so the grant needs no listing of the queue); nobody else is woken. Every acquisition
/// contends on its own, through the same handle too: tasks or threads sharing one handle (an
/// `Arc<Mutex>`) exclude each other as separate processes do. Reentrancy is asked for
/// explicitly, with [`LockGuard::reenter`]: another hold on the same node, which is deleted
/// when every guard on it is gone. (An `acquire` through the same handle while holding the
/// lock waits for that hold to end, as any other contender would.)
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use zookeeper_recipes::Mutex;
///
/// let servers = "127.0.0.1:2181";
/// # let servers = &zookeeper_testkit::shared_server()
/// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_mutex"));
/// let client = zookeeper_tokio::Client::connect(servers).await?;
/// let mutex = Mutex::new(&client, "/locks/orders")?;
/// let guard = mutex.acquire().await?;
/// let token = guard.fencing_token(); // hand this to the protected resource
///
/// // Another contender (normally another process) waits, or gives up.
/// let other = Mutex::new(&client, "/locks/orders")?;
/// assert!(other.try_acquire().await?.is_none());
/// assert!(other.acquire_timeout(Duration::from_millis(100)).await?.is_none());
///
/// // `biased`, the loss first: after a pause both branches can be ready at once, and only
/// // this order makes the loss win.
/// tokio::select! {
///     biased;
///     state = guard.lost() => eprintln!("lock {state}"),
///     _ = async { /* protected work using `token` */ } => {}
/// }
/// guard.release().await?;
///
/// // Each grant carries a larger token than the one before.
/// let next = other.acquire().await?;
/// assert!(next.fencing_token() > token);
/// next.release().await?;
/// # Ok(())
/// # }
/// ```
pub struct Mutex {
    sessions: Sessions,
    path: String,
    layout: Layout,
    data: Vec<u8>,
    /// What its grants are recorded as.
    recipe: Recipe,
}

impl std::fmt::Debug for Mutex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mutex")
            .field("path", &self.path)
            .field("layout", &self.layout)
            .finish()
    }
}

impl Mutex {
    /// A mutex in Curator's `InterProcessMutex` layout (`_c_<uuid>-lock-<seq>`).
    ///
    /// Takes a `&Client`, and then ends with its session, or a [`Sessions`]: on one that
    /// renews, a waiter whose session expires queues again on the next session by itself, and
    /// a holder whose session expired reads lost and acquires again through the same handle,
    /// nothing rebuilt.
    pub fn new(sessions: impl Into<Sessions>, path: &str) -> Result<Mutex> {
        Mutex::with_layout(sessions, path, Layout::Curator)
    }

    /// A mutex in the given layout. [`Layout::Kazoo`] interoperates with kazoo's `Lock`
    /// (`<hex>__lock__<seq>`); the two layouts do not see each other.
    pub fn with_layout(sessions: impl Into<Sessions>, path: &str, layout: Layout) -> Result<Mutex> {
        validate(path)?;
        Ok(Mutex {
            sessions: sessions.into(),
            path: path.to_owned(),
            layout,
            data: Vec::new(),
            recipe: Recipe::Mutex,
        })
    }

    /// The data written into our node (kazoo shows it as the contender's identifier).
    pub fn with_data(mut self, data: &[u8]) -> Mutex {
        self.data = data.to_vec();
        self
    }

    /// Records its acquisitions and grants as `recipe`'s.
    pub(crate) fn recorded_as(mut self, recipe: Recipe) -> Mutex {
        self.recipe = recipe;
        self
    }

    /// The lock path.
    pub fn path(&self) -> &str {
        &self.path
    }

    fn marker(&self) -> &'static str {
        marker(self.layout)
    }

    /// Waits until the lock is ours. Cancel-safe: dropping the future at any point leaves no
    /// node behind.
    pub async fn acquire(&self) -> Result<LockGuard> {
        let guard = self.acquire_with(Patience::Forever).await?;
        Ok(guard.expect("waits until granted"))
    }

    /// Takes the lock only if nobody holds or waits for it; `None` otherwise, with our node
    /// deleted. Returns within the session timeout whatever the connection does (`None` when
    /// no server answered in time; the node, if the create got through, is then deleted in
    /// the background).
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        self.acquire_with(Patience::NoWait).await
    }

    /// Waits at most `timeout`; `None` on timeout, with our node deleted. The bound holds
    /// whatever the connection does (a partition, refused connections, a slow server): the
    /// call returns within `timeout` plus 50 ms (and a timer's lateness on a busy machine),
    /// and a node it could not delete by then is deleted in the background, retried until it
    /// or the session is gone.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<LockGuard>> {
        self.acquire_with(deadline_after(timeout)).await
    }

    /// Waits until the lock is ours or `stop` is cancelled: `None` then, once our node is
    /// deleted.
    pub(crate) async fn acquire_until(&self, stop: CancellationToken) -> Result<Option<LockGuard>> {
        self.acquire_with(Patience::UntilStopped(stop)).await
    }

    async fn acquire_with(&self, patience: Patience) -> Result<Option<LockGuard>> {
        acquire_call(
            &self.sessions.client(),
            self.recipe,
            &self.path,
            &patience,
            self.sessions
                .each_session(|client| self.attempt(client, patience.clone())),
        )
        .await
    }

    /// One acquisition on `client`'s session.
    async fn attempt(&self, client: Client, patience: Patience) -> Result<Option<LockGuard>> {
        let entry = Entry {
            recipe: self.recipe,
            dir: &self.path,
            layout: self.layout,
            markers: &[self.marker()],
            marker: self.marker(),
            data: &self.data,
            slot: None,
        };
        queue_for_guard(&client, entry, patience, Rule::Ahead(RULE)).await
    }

    /// The contenders' node names in queue order, the holder first, exactly as the layout's
    /// peer orders them (in Curator's layout every child of the path counts, as it does for
    /// Curator; in kazoo's, only children matching kazoo's pattern).
    pub async fn participants(&self) -> Result<Vec<String>> {
        let client = self.sessions.live().await?;
        let children = list_children(&client, &self.path)
            .await?
            .unwrap_or_default();
        let queue = peer_queue(self.layout, &children, &[self.marker()], None);
        Ok(queue.contenders.into_iter().map(|c| c.name).collect())
    }
}
