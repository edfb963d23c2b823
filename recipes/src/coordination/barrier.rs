//! A barrier: a node whose presence holds everyone back, compatible with Curator's
//! `DistributedBarrier`.

use std::time::Duration;

use tokio::time::Instant;
use zookeeper_tokio::{Client, CreateOptions, ErrorKind};

use crate::error::{Error, Result};
use crate::node::ensure_path::{ensure_path, validate};
use crate::session::sessions::Sessions;
use crate::session::wait::{by_deadline, fired, reconnected_after, retried};

/// Holds waiters back while its node exists (Curator's `DistributedBarrier`: `<path>`,
/// persistent, its parents as containers). Whoever sets it removes it, and everyone waiting
/// goes on.
///
/// A wait survives reconnects and, with renewing [`Sessions`], session expiry (the node is
/// persistent, so the wait goes on in the new session). A timed wait returns by its deadline
/// whatever the connection does. A wait begins with a `sync`, so that a barrier set before
/// it, through any server of the ensemble, holds it (Curator's and kazoo's barriers read the
/// node at once, and a server behind the leader lets their waiter through).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use zookeeper_recipes::DistributedBarrier;
///
/// let servers = "127.0.0.1:2181";
/// # let servers = &zookeeper_testkit::shared_server()
/// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_barrier"));
/// let client = zookeeper_tokio::Client::connect(servers).await?;
/// let barrier = DistributedBarrier::new(&client, "/deploy/hold")?;
/// barrier.set_barrier().await?;
/// assert!(!barrier.wait_on_barrier_timeout(Duration::from_millis(100)).await?);
///
/// let waiter = DistributedBarrier::new(&client, "/deploy/hold")?;
/// let waiting = tokio::spawn(async move { waiter.wait_on_barrier().await });
/// barrier.remove_barrier().await?;
/// waiting.await??; // released
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct DistributedBarrier {
    sessions: Sessions,
    path: String,
}

impl DistributedBarrier {
    /// The barrier at `path`.
    pub fn new(sessions: impl Into<Sessions>, path: &str) -> Result<DistributedBarrier> {
        validate(path)?;
        Ok(DistributedBarrier {
            sessions: sessions.into(),
            path: path.to_owned(),
        })
    }

    /// The barrier's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Sets the barrier (creates the node; already set is fine).
    pub async fn set_barrier(&self) -> Result<()> {
        let client = self.sessions.live().await?;
        if let Some(parent) = crate::node::path::parent(&self.path).filter(|p| *p != "/") {
            ensure_path(&client, parent).await?;
        }
        match client
            .create(&self.path, &[], &CreateOptions::persistent())
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e == ErrorKind::NodeExists => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Removes the barrier (already removed is fine): every waiter goes on.
    pub async fn remove_barrier(&self) -> Result<()> {
        let client = self.sessions.live().await?;
        match client.delete(&self.path, None).await {
            Ok(()) => Ok(()),
            Err(e) if e == ErrorKind::NoNode => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Waits until the barrier is removed (at once if it is not set).
    pub async fn wait_on_barrier(&self) -> Result<()> {
        self.wait_until(None).await.map(drop)
    }

    /// Waits at most `timeout` for the barrier to be removed: `false` if it is still set. It
    /// returns by the deadline, connected or not.
    pub async fn wait_on_barrier_timeout(&self, timeout: Duration) -> Result<bool> {
        self.wait_until(Some(Instant::now() + timeout)).await
    }

    async fn wait_until(&self, deadline: Option<Instant>) -> Result<bool> {
        // A session that ends under the wait, at any step (a request, the watch, waiting to
        // reconnect), gives way to the next one when the sessions renew: the node is
        // persistent, so the wait goes on there.
        let wait = self.sessions.each_session(|client| self.wait_in(client));
        by_deadline(deadline, wait).await.unwrap_or(Ok(false))
    }

    /// Waits in one session until the barrier is gone.
    async fn wait_in(&self, client: Client) -> Result<bool> {
        // The first look follows a sync: a barrier set before the wait began, through another
        // server, then holds it even when this one has not applied the set yet. Later looks,
        // on this server or one the session moves to (which has seen as much), need none.
        retried(&client, || client.sync(&self.path)).await?;
        loop {
            // Each wakeup is only a reason to look again: the answer is the node.
            let step = async {
                let (stat, watcher) = client.exists_and_watch(&self.path).await?;
                if stat.is_none() {
                    return Ok(true);
                }
                fired(watcher).await?;
                Ok::<bool, Error>(false)
            };
            match step.await {
                Ok(true) => return Ok(true),
                Ok(false) => {}
                Err(Error::Client(e)) if e.is_retryable() => reconnected_after(&client, &e).await?,
                Err(e) => return Err(e),
            }
        }
    }
}
