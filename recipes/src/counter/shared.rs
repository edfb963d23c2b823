//! A count every participant sees and may change, compatible with Curator's `SharedCount`.

use std::sync::Arc;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};
use zookeeper_tokio::{Client, CreateOptions, ErrorKind, Stat};

use super::{decode_i32, encode_i32};
use crate::error::{Error, Result};
use crate::node::ensure_path::{ensure_path, validate};
use crate::session::sessions::Sessions;
use crate::session::wait::{fired, retried, wait_connected};

/// A count and the node version it was read at: what [`SharedCount::try_set_count`] compares
/// against (Curator's `VersionedValue<Integer>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VersionedCount {
    /// The count.
    pub count: i32,
    /// The node's data version when it held `count`.
    pub version: i32,
    /// The zxid of the change that wrote `count`: values are taken in this order, so the
    /// count never goes back, even when the version wraps.
    pub mzxid: i64,
}

/// An `i32` in a node (4 bytes, big-endian, as Curator's `SharedCount`), created with a seed
/// if missing, cached and kept current by a `getData` watch, read again after every change,
/// reconnect and (with renewing [`Sessions`]) session expiry.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use zookeeper_recipes::SharedCount;
///
/// let servers = "127.0.0.1:2181";
/// # let servers = &zookeeper_testkit::shared_server()
/// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_shared_count"));
/// let client = zookeeper_tokio::Client::connect(servers).await?;
/// let workers = SharedCount::start(&client, "/config/workers", 4).await?;
/// let mut changes = workers.changes();
///
/// // Compare-and-set: only from the value we saw.
/// let seen = workers.versioned();
/// assert!(workers.try_set_count(seen.count + 1, seen).await?);
/// assert!(!workers.try_set_count(10, seen).await?, "stale");
/// assert_eq!(changes.next().await?.count, 5);
/// assert_eq!(workers.count(), 5);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct SharedCount {
    inner: Arc<Inner>,
}

struct Inner {
    sessions: Sessions,
    path: String,
    current: watch::Sender<VersionedCount>,
    stop: CancellationToken,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl std::fmt::Debug for SharedCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedCount")
            .field("path", &self.inner.path)
            .field("current", &*self.inner.current.borrow())
            .finish()
    }
}

impl SharedCount {
    /// Creates the node with `seed` if it does not exist (its missing parents as containers,
    /// as Curator does), reads it, and keeps it watched. A lost connection is waited out, and
    /// on renewing [`Sessions`] an expiry too, for as long as no server can be reached: bound
    /// it with `tokio::time::timeout` where the ensemble may be down.
    pub async fn start(
        sessions: impl Into<Sessions>,
        path: &str,
        seed: i32,
    ) -> Result<SharedCount> {
        validate(path)?;
        let sessions = sessions.into();
        // Across lost connections, and on renewing sessions across expiries, as the count is
        // followed afterwards: every step may be repeated.
        let first = sessions
            .each_session(|client| async move {
                if let Some(parent) = crate::node::path::parent(path).filter(|p| *p != "/") {
                    ensure_path(&client, parent).await?;
                }
                let seeded = retried(&client, || async {
                    match client
                        .create(path, &encode_i32(seed), &CreateOptions::persistent())
                        .await
                    {
                        Err(e) if e == ErrorKind::NodeExists => Ok(()),
                        other => other.map(drop),
                    }
                });
                seeded.await?;
                let (data, stat) = retried(&client, || client.get_data(path)).await?;
                versioned(path, &data, &stat)
            })
            .await?;
        let inner = Arc::new(Inner {
            sessions,
            path: path.to_owned(),
            current: watch::channel(first).0,
            stop: CancellationToken::new(),
        });
        tokio::spawn(follow(
            Arc::downgrade(&inner),
            inner.sessions.clone(),
            inner.path.clone(),
            inner.stop.clone(),
        ));
        Ok(SharedCount { inner })
    }

    /// The cached count.
    pub fn count(&self) -> i32 {
        self.inner.current.borrow().count
    }

    /// The cached count with its version, for [`SharedCount::try_set_count`].
    pub fn versioned(&self) -> VersionedCount {
        *self.inner.current.borrow()
    }

    /// The counter's path.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// Sets the count, whatever it was (a plain `setData`).
    ///
    /// A lost connection fails it with a retryable error; it may have been applied when the
    /// error [`is_outcome_unknown`](crate::Error::is_outcome_unknown).
    pub async fn set_count(&self, count: i32) -> Result<()> {
        let client = self.inner.sessions.live().await?;
        let stat = client
            .set_data(&self.inner.path, &encode_i32(count), None)
            .await?;
        self.update(VersionedCount {
            count,
            version: stat.version,
            mzxid: stat.mzxid,
        });
        Ok(())
    }

    /// Sets the count only if it is still `previous` (a `setData` at `previous.version`):
    /// `false`, with the cache read again, if someone changed it since. `previous` must come
    /// from [`SharedCount::versioned`]; an older one fails at once.
    ///
    /// A lost connection fails it with a retryable error; it may have been applied when the
    /// error [`is_outcome_unknown`](crate::Error::is_outcome_unknown).
    pub async fn try_set_count(&self, count: i32, previous: VersionedCount) -> Result<bool> {
        if previous != self.versioned() {
            return Ok(false);
        }
        let client = self.inner.sessions.live().await?;
        match client
            .set_data(&self.inner.path, &encode_i32(count), Some(previous.version))
            .await
        {
            Ok(stat) => {
                self.update(VersionedCount {
                    count,
                    version: stat.version,
                    mzxid: stat.mzxid,
                });
                Ok(true)
            }
            Err(e) if e == ErrorKind::BadVersion => {
                if let Ok((data, stat)) = client.get_data(&self.inner.path).await {
                    if let Ok(v) = versioned(&self.inner.path, &data, &stat) {
                        self.update(v);
                    }
                }
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Changes of the count, from now on. A consumer that reads slowly sees the latest count,
    /// not every one in between.
    pub fn changes(&self) -> CountChanges {
        let mut rx = self.inner.current.subscribe();
        rx.borrow_and_update();
        CountChanges { rx }
    }

    /// The count as it changes, every read included: what a semaphore judges by.
    pub(crate) fn subscribe(&self) -> watch::Receiver<VersionedCount> {
        self.inner.current.subscribe()
    }

    /// Stops following the node (also done when the last clone is dropped).
    pub fn close(&self) {
        self.inner.stop.cancel();
    }

    fn update(&self, value: VersionedCount) {
        update(&self.inner.current, value);
    }
}

/// Takes `value` if it is newer than the cached one.
fn update(current: &watch::Sender<VersionedCount>, value: VersionedCount) {
    current.send_if_modified(|c| {
        let newer = value.mzxid > c.mzxid;
        if newer {
            *c = value;
        }
        newer
    });
}

fn versioned(path: &str, data: &[u8], stat: &Stat) -> Result<VersionedCount> {
    Ok(VersionedCount {
        count: decode_i32(path, data)?,
        version: stat.version,
        mzxid: stat.mzxid,
    })
}

/// The changes of a [`SharedCount`].
#[derive(Debug)]
pub struct CountChanges {
    rx: watch::Receiver<VersionedCount>,
}

impl CountChanges {
    /// The next count that differs from the last one returned (or from the count when this
    /// was made). Fails with [`Error::Closed`] once the counter is closed.
    pub async fn next(&mut self) -> Result<VersionedCount> {
        self.rx.changed().await.map_err(|_| Error::Closed)?;
        Ok(*self.rx.borrow_and_update())
    }
}

/// Keeps the cached count current: reads with a watch, and again whenever it fires, the
/// connection comes back or a new session takes over.
async fn follow(
    inner: std::sync::Weak<Inner>,
    sessions: Sessions,
    path: String,
    stop: CancellationToken,
) {
    let run = async {
        let mut client = sessions.client();
        loop {
            match read_and_wait(&client, &path, &inner).await {
                Ok(()) => {}
                Err(e) if e.is_session_terminal() => match sessions.replace(&client).await {
                    Ok(next) => client = next,
                    Err(e) => {
                        debug!(path, error = %e, "shared count stops following");
                        return;
                    }
                },
                Err(Error::Closed) => return,
                Err(e) => {
                    warn!(path, error = %e, "reading the shared count failed; trying again");
                    if let Err(e) = wait_connected(&client).await {
                        if !e.is_session_terminal() {
                            return;
                        }
                    }
                }
            }
        }
    };
    tokio::select! {
        biased;
        _ = stop.cancelled() => {}
        _ = run => {}
    }
}

/// One read with a watch, then waits for the watch; `Ok` when it is time to read again.
async fn read_and_wait(client: &Client, path: &str, inner: &std::sync::Weak<Inner>) -> Result<()> {
    let watcher = match client.get_data_and_watch(path).await {
        Ok((data, stat, watcher)) => {
            let Some(inner) = inner.upgrade() else {
                return Err(Error::Closed);
            };
            match versioned(path, &data, &stat) {
                Ok(v) => update(&inner.current, v),
                Err(e) => warn!(path, error = %e, "keeping the last readable count"),
            }
            watcher
        }
        Err(e) if e == ErrorKind::NoNode => {
            // Deleted: keep the last count, and wait for it to come back.
            let (stat, watcher) = client.exists_and_watch(path).await?;
            if stat.is_some() {
                return Ok(());
            }
            watcher
        }
        Err(e) => return Err(e.into()),
    };
    fired(watcher).await
}
