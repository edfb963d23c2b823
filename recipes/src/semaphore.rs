//! The counting semaphore, compatible with Curator's `InterProcessSemaphoreV2`.
//!
//! Layout: `<path>/locks` is a mutex (Curator layout) that serialises lease takers;
//! `<path>/leases` holds one `_c_<uuid>-lease-<seq>` node per lease. A taker holds the mutex,
//! creates its lease, and waits until the leases number at most N; only the mutex holder
//! watches the lease list, so each returned lease wakes one waiter.

use std::time::Duration;

use zookeeper_tokio::Client;

use crate::contend::{bounded, deadline_after, Patience};
use crate::ensure_path::validate;
use crate::error::{Error, Result};
use crate::guard::{first_guard, FencingToken, HeldNode, LockGuard};
use crate::metrics::{self, Recipe};
use crate::mutex::Mutex;
use crate::naming::{attempt_prefix, child_name, join, Layout, CURATOR_LEASE};
use crate::protection::{list_children, PendingNode};
use crate::session::{terminal_error, wait_connected};

/// A lease on a [`Semaphore`]: a guard like a lock's, with a fencing token and a lost signal.
pub type Lease = LockGuard;

/// A distributed counting semaphore with a fixed number of leases.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use zookeeper_recipes::Semaphore;
///
/// let servers = "127.0.0.1:2181";
/// # let servers = &zookeeper_testkit::shared_server()
/// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_semaphore"));
/// let client = zookeeper_tokio::Client::connect(servers).await?;
/// // At most two connections to the database, across every process.
/// let pool = Semaphore::new(&client, "/semaphores/db", 2)?;
/// let first = pool.acquire().await?;
/// let second = pool.acquire().await?;
/// assert!(pool.try_acquire().await?.is_none(), "both leases are out");
///
/// first.release().await?;
/// let third = pool.try_acquire().await?.expect("a lease came back");
/// println!("lease {} with token {}", third.path(), third.fencing_token());
/// second.release().await?;
/// third.release().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Semaphore {
    client: Client,
    leases_path: String,
    max_leases: usize,
    data: Vec<u8>,
    locks_path: String,
}

impl Semaphore {
    /// A semaphore on `path` granting at most `max_leases` leases at once. Every participant
    /// must use the same number (Curator does not check it either).
    pub fn new(client: &Client, path: &str, max_leases: usize) -> Result<Semaphore> {
        validate(path)?;
        if max_leases == 0 {
            return Err(Error::InvalidArgument(
                "a semaphore needs at least one lease",
            ));
        }
        Ok(Semaphore {
            client: client.clone(),
            leases_path: join(path, "leases"),
            max_leases,
            data: Vec::new(),
            locks_path: join(path, "locks"),
        })
    }

    /// The data written into our lease nodes.
    pub fn with_data(mut self, data: &[u8]) -> Semaphore {
        self.data = data.to_vec();
        self
    }

    /// Waits for a lease.
    pub async fn acquire(&self) -> Result<Lease> {
        Ok(self
            .acquire_with(Patience::Forever)
            .await?
            .expect("waits until granted"))
    }

    /// Takes a lease only if one is free now. Returns within the session timeout whatever
    /// the connection does.
    pub async fn try_acquire(&self) -> Result<Option<Lease>> {
        self.acquire_with(Patience::NoWait).await
    }

    /// Waits at most `timeout` for a lease; `None` on timeout, with our nodes deleted.
    /// Returns within `timeout` plus at most 50 ms whatever the connection does (nodes it
    /// could not delete by then are deleted in the background).
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Lease>> {
        self.acquire_with(deadline_after(timeout)).await
    }

    async fn acquire_with(&self, patience: Patience) -> Result<Option<Lease>> {
        let acquisition = bounded(&self.client, patience, self.acquire_unbounded(patience));
        metrics::acquisition(Recipe::Semaphore, acquisition).await
    }

    async fn acquire_unbounded(&self, patience: Patience) -> Result<Option<Lease>> {
        // A gate handle per acquisition (not per semaphore): concurrent acquisitions through
        // one handle queue in ZooKeeper like any others instead of re-entering the gate.
        let mutex = Mutex::new(&self.client, &self.locks_path)?.recorded_as(Recipe::SemaphoreGate);
        let gate = match patience {
            Patience::Forever => Some(mutex.acquire().await?),
            Patience::NoWait => mutex.try_acquire().await?,
            Patience::Until(deadline) => {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                mutex.acquire_timeout(left).await?
            }
        };
        let Some(gate) = gate else {
            return Ok(None);
        };
        let lease = self.take_lease(patience).await;
        // The gate's delete keeps retrying in the background if this fails; a lease we hold
        // is not given up for it.
        if let Err(e) = gate.release().await {
            tracing::warn!(error = %e, "could not release the semaphore gate");
        }
        lease
    }

    /// With the gate held: create our lease and wait until the leases fit.
    async fn take_lease(&self, patience: Patience) -> Result<Option<Lease>> {
        let prefix = attempt_prefix(Layout::Curator, CURATOR_LEASE);
        let mut pending = PendingNode::new(&self.client, &self.leases_path, prefix, &self.data);
        pending.send_create();
        let first_listing = self.client.get_children(&self.leases_path);
        let (path, _) = pending.created().await?;
        let ours = child_name(&path).to_owned();
        let mut wakeups = 0;
        let mut listing = first_listing.await.ok().map(|(c, _)| c);
        loop {
            // A plain listing first: when the leases fit, no watch is left behind to wake us
            // for nothing later.
            let children = match listing.take() {
                Some(c) if c.contains(&ours) => c,
                _ => list_children(&self.client, &self.leases_path)
                    .await?
                    .unwrap_or_default(),
            };
            if !children.contains(&ours) {
                return Err(Error::NodeDeleted { path });
            }
            if children.len() <= self.max_leases {
                let (path, stat) = pending.keep();
                if wakeups > 0 {
                    tracing::info!(
                        path = %self.leases_path,
                        node = %ours,
                        token = %FencingToken(stat.czxid),
                        wakeups,
                        "semaphore lease granted after a wait"
                    );
                }
                let node = HeldNode::new(&self.client, Recipe::Semaphore, path, stat, wakeups);
                return Ok(Some(first_guard(node, None)));
            }
            if let Patience::NoWait = patience {
                pending.abandon().await?;
                return Ok(None);
            }
            let watcher = match self.client.get_children_and_watch(&self.leases_path).await {
                Ok((children, _, watcher)) => {
                    if children.len() <= self.max_leases {
                        listing = Some(children);
                        continue;
                    }
                    watcher
                }
                Err(e) if e.is_retryable() => {
                    wait_connected(&self.client).await?;
                    continue;
                }
                Err(e) => return Err(Error::Client(e)),
            };
            let event = match patience {
                Patience::Until(deadline) => match tokio::time::timeout_at(deadline, watcher).await
                {
                    Ok(event) => event,
                    Err(_) => {
                        pending.abandon().await?;
                        return Ok(None);
                    }
                },
                _ => watcher.await,
            };
            wakeups += 1;
            if event.event_type == zookeeper_tokio::EventType::None && event.state.is_terminal() {
                return Err(terminal_error(event.state));
            }
        }
    }

    /// The lease node names currently held.
    pub async fn participants(&self) -> Result<Vec<String>> {
        Ok(list_children(&self.client, &self.leases_path)
            .await?
            .unwrap_or_default())
    }
}
