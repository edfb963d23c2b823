//! The counting semaphore, compatible with Curator's `InterProcessSemaphoreV2`.
//!
//! Layout: `<path>/locks` is a mutex (Curator layout) that serialises lease takers;
//! `<path>/leases` holds one `_c_<uuid>-lease-<seq>` node per lease. A taker holds the mutex,
//! creates its lease, and waits until the leases number at most N; only the mutex holder
//! watches the lease list, so each returned lease wakes one waiter. N is fixed, or read from a
//! [`SharedCount`] and followed as it changes.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use tokio::sync::watch;
use zookeeper_tokio::Client;

use crate::contend::{deadline_after, Patience, Rule, Verdict, WholeRule};
use crate::counter::{SharedCount, VersionedCount};
use crate::error::{Error, Result};
use crate::lock::acquisition::{acquire_call, queue_for_guard, Entry};
use crate::lock::guard::LockGuard;
use crate::lock::mutex::Mutex;
use crate::metrics::Recipe;
use crate::node::ensure_path::validate;
use crate::node::naming::{Contender, Layout, CURATOR_LEASE};
use crate::node::path::join;
use crate::node::protection::list_children;
use crate::session::sessions::Sessions;

/// A lease on a [`Semaphore`]: a guard like a lock's, with a fencing token and a lost signal.
pub type Lease = LockGuard;

/// A distributed counting semaphore: a fixed number of leases ([`Semaphore::new`]), or as many
/// as a [`SharedCount`] says, changing when it changes ([`Semaphore::with_shared_count`]).
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
    sessions: Sessions,
    leases_path: String,
    max_leases: MaxLeases,
    data: Vec<u8>,
    locks_path: String,
}

/// Where a semaphore's number of leases comes from.
#[derive(Debug)]
enum MaxLeases {
    Fixed(usize),
    Shared(SharedCount),
}

impl Semaphore {
    /// A semaphore on `path` granting at most `max_leases` leases at once. Every participant
    /// must use the same number (Curator does not check it either).
    ///
    /// On a `&Client` it ends with the session; on renewing [`Sessions`] an acquisition whose
    /// session expires while it waits starts again on the next session, and a lease whose
    /// session expired reads lost while the semaphore grants new ones on the next session.
    pub fn new(sessions: impl Into<Sessions>, path: &str, max_leases: usize) -> Result<Semaphore> {
        validate(path)?;
        if max_leases == 0 {
            return Err(Error::InvalidArgument(
                "a semaphore needs at least one lease",
            ));
        }
        Ok(Semaphore::make(
            sessions.into(),
            path,
            MaxLeases::Fixed(max_leases),
        ))
    }

    /// A semaphore on `path` granting as many leases at once as `count` holds (Curator's
    /// `InterProcessSemaphoreV2(client, path, SharedCountReader)`): every participant reads
    /// the same count node (each through a [`SharedCount`] of its own), so a change made by
    /// anyone, Curator peers included, changes the number of leases for all.
    ///
    /// A raised count wakes the acquisition waiting for a lease, which judges the leases
    /// again against the new count. A lowered count takes no lease back: leases held stay
    /// held, and new ones are granted only once enough have been returned to fit under it. A
    /// count of zero or less admits nobody new. The count used is the one `count` last read
    /// (while its connection is down, the last before), as with Curator; the semaphore keeps
    /// `count` following its node for as long as the semaphore lives.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use zookeeper_recipes::{Semaphore, SharedCount};
    ///
    /// let servers = "127.0.0.1:2181";
    /// # let servers = &zookeeper_testkit::shared_server()
    /// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_shared_semaphore"));
    /// let client = zookeeper_tokio::Client::connect(servers).await?;
    /// // As many database connections as /config/db-connections says, across every process.
    /// let connections = SharedCount::start(&client, "/config/db-connections", 1).await?;
    /// let pool = Semaphore::with_shared_count(&client, "/semaphores/db", &connections)?;
    /// let first = pool.acquire().await?;
    /// assert!(pool.try_acquire().await?.is_none(), "the one lease is out");
    ///
    /// connections.set_count(2).await?; // anyone may raise it, Curator's SharedCount too
    /// let second = pool.acquire().await?;
    /// assert_eq!(pool.max_leases(), 2);
    /// first.release().await?;
    /// second.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_shared_count(
        sessions: impl Into<Sessions>,
        path: &str,
        count: &SharedCount,
    ) -> Result<Semaphore> {
        validate(path)?;
        Ok(Semaphore::make(
            sessions.into(),
            path,
            MaxLeases::Shared(count.clone()),
        ))
    }

    fn make(sessions: Sessions, path: &str, max_leases: MaxLeases) -> Semaphore {
        Semaphore {
            sessions,
            leases_path: join(path, "leases"),
            max_leases,
            data: Vec::new(),
            locks_path: join(path, "locks"),
        }
    }

    /// The number of leases granted at most now: the fixed number, or the shared count as last
    /// read (0 when it is zero or less).
    pub fn max_leases(&self) -> usize {
        match &self.max_leases {
            MaxLeases::Fixed(max) => *max,
            MaxLeases::Shared(count) => usize::try_from(count.count()).unwrap_or(0),
        }
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
        acquire_call(
            &self.sessions.client(),
            Recipe::Semaphore,
            &self.leases_path,
            &patience,
            self.sessions
                .each_session(|client| self.attempt(client, patience.clone())),
        )
        .await
    }

    /// One acquisition on `client`'s session.
    async fn attempt(&self, client: Client, patience: Patience) -> Result<Option<Lease>> {
        // A gate handle per acquisition (not per semaphore): concurrent acquisitions through
        // one handle queue in ZooKeeper like any others instead of re-entering the gate.
        let mutex = Mutex::new(&client, &self.locks_path)?.recorded_as(Recipe::SemaphoreGate);
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
        let lease = self.take_lease(&client, patience).await;
        // The gate goes in the background, retried until it is gone (a failure is logged),
        // so the acquisition waits no round trip for it. Its delete is queued now: every
        // later request of this session, the lease's release included, reaches the server
        // after it.
        drop(gate);
        lease
    }

    /// With the gate held: create our lease and wait until the leases fit.
    async fn take_lease(&self, client: &Client, patience: Patience) -> Result<Option<Lease>> {
        let mut room = match &self.max_leases {
            MaxLeases::Fixed(max) => LeaseRoom::fixed(*max),
            MaxLeases::Shared(count) => LeaseRoom::shared(count.subscribe()),
        };
        let entry = Entry {
            recipe: Recipe::Semaphore,
            dir: &self.leases_path,
            layout: Layout::Curator,
            markers: &[CURATOR_LEASE],
            marker: CURATOR_LEASE,
            data: &self.data,
            slot: None,
        };
        queue_for_guard(client, entry, patience, Rule::Whole(&mut room)).await
    }

    /// The lease node names currently held.
    pub async fn participants(&self) -> Result<Vec<String>> {
        let client = self.sessions.live().await?;
        Ok(list_children(&client, &self.leases_path)
            .await?
            .unwrap_or_default())
    }
}

/// Curator's rule for a lease (`InterProcessSemaphoreV2`): ours while the leases number at most
/// the maximum, counting every child of the leases path. Taken with the gate held, ours is the
/// newest lease, so only a change of the listing (a lease returned) or of the maximum can grant
/// it: the listing is watched, and a shared count's changes wake the waiter. The count covers
/// the leases behind us, and the maximum is not the queue's: no deletion alone is the grant.
pub(crate) struct LeaseRoom {
    max: Max,
    /// The zxid of the shared count's value last judged by, so that a change made after the
    /// judgement and before [`WholeRule::changed`] is waited on is not missed.
    judged: AtomicI64,
}

enum Max {
    Fixed(usize),
    /// A shared count's value as its follower last read it.
    Shared(watch::Receiver<VersionedCount>),
}

impl LeaseRoom {
    /// Room for `max` leases.
    pub(crate) fn fixed(max: usize) -> LeaseRoom {
        LeaseRoom {
            max: Max::Fixed(max),
            judged: AtomicI64::new(i64::MIN),
        }
    }

    /// Room for as many leases as the count says (none when it is zero or less), followed as
    /// it changes.
    pub(crate) fn shared(count: watch::Receiver<VersionedCount>) -> LeaseRoom {
        LeaseRoom {
            max: Max::Shared(count),
            judged: AtomicI64::new(i64::MIN),
        }
    }

    /// The maximum to judge by now.
    fn max(&self) -> usize {
        match &self.max {
            Max::Fixed(max) => *max,
            Max::Shared(count) => {
                let now = *count.borrow();
                self.judged.store(now.mzxid, Ordering::SeqCst);
                usize::try_from(now.count).unwrap_or(0)
            }
        }
    }
}

impl WholeRule for LeaseRoom {
    fn judge(&self, queue: &[Contender], _ours: usize) -> Verdict {
        if queue.len() <= self.max() {
            Verdict::Granted
        } else {
            Verdict::WaitForChange
        }
    }

    fn by_order(&self) -> bool {
        false
    }

    fn changed(&mut self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        let judged = self.judged.load(Ordering::SeqCst);
        match &mut self.max {
            Max::Fixed(_) => Box::pin(std::future::pending()),
            Max::Shared(count) => Box::pin(async move {
                loop {
                    if count.borrow().mzxid != judged {
                        return;
                    }
                    if count.changed().await.is_err() {
                        // The count is closed: its last value stays.
                        std::future::pending::<()>().await;
                    }
                }
            }),
        }
    }
}
