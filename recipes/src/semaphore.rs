//! The counting semaphore, compatible with Curator's `InterProcessSemaphoreV2`.
//!
//! Layout: `<path>/locks` is a mutex (Curator layout) that serialises lease takers;
//! `<path>/leases` holds one `_c_<uuid>-lease-<seq>` node per lease. A taker holds the mutex,
//! creates its lease, and waits until the leases number at most N; only the mutex holder
//! watches the lease list, so each returned lease wakes one waiter.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use zookeeper_tokio::Client;

use crate::contend::{bounded, deadline_after, enter, Line, Patience, Rule, Verdict, WholeRule};
use crate::ensure_path::validate;
use crate::error::{Error, Result};
use crate::guard::{first_guard, HeldNode, LockGuard};
use crate::metrics::{self, Recipe};
use crate::mutex::Mutex;
use crate::naming::{attempt_prefix, join, Contender, Layout, CURATOR_LEASE};
use crate::protection::list_children;

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
        let acquisition = bounded(
            &self.client,
            &patience,
            self.acquire_unbounded(patience.clone()),
        );
        metrics::acquisition(Recipe::Semaphore, &patience, acquisition).await
    }

    async fn acquire_unbounded(&self, patience: Patience) -> Result<Option<Lease>> {
        // A gate handle per acquisition (not per semaphore): concurrent acquisitions through
        // one handle queue in ZooKeeper like any others instead of re-entering the gate.
        let mutex = Mutex::new(&self.client, &self.locks_path)?.recorded_as(Recipe::SemaphoreGate);
        let gate = match &patience {
            Patience::Forever => Some(mutex.acquire().await?),
            Patience::NoWait => mutex.try_acquire().await?,
            Patience::UntilStopped(stop) => mutex.acquire_until(stop.clone()).await?,
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
        let line = Line {
            client: &self.client,
            dir: &self.leases_path,
            layout: Layout::Curator,
            markers: &[CURATOR_LEASE],
        };
        let mut room = LeaseRoom::fixed(self.max_leases);
        let won = enter(line, prefix, &self.data, patience, Rule::Whole(&mut room)).await?;
        Ok(won.map(|w| {
            let node = HeldNode::new(&self.client, Recipe::Semaphore, w.path, w.stat, w.wakeups);
            first_guard(node, None)
        }))
    }

    /// The lease node names currently held.
    pub async fn participants(&self) -> Result<Vec<String>> {
        Ok(list_children(&self.client, &self.leases_path)
            .await?
            .unwrap_or_default())
    }
}

/// Curator's rule for a lease (`InterProcessSemaphoreV2`): ours while the leases number at most
/// the maximum, counting every child of the leases path. Taken with the gate held, ours is the
/// newest lease, so only a change of the listing (a lease returned) can grant it: the listing
/// is watched. The count covers the leases behind us too, so no deletion alone is the grant.
pub(crate) struct LeaseRoom {
    max: usize,
}

impl LeaseRoom {
    /// Room for `max` leases.
    pub(crate) fn fixed(max: usize) -> LeaseRoom {
        LeaseRoom { max }
    }
}

impl WholeRule for LeaseRoom {
    fn judge(&self, queue: &[Contender], _ours: usize) -> Verdict {
        if queue.len() <= self.max {
            Verdict::Granted
        } else {
            Verdict::WaitForChange
        }
    }

    fn by_order(&self) -> bool {
        false
    }

    fn changed(&mut self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(std::future::pending())
    }
}
