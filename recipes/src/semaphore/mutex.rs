//! A mutex that is not reentrant, compatible with Curator's `InterProcessSemaphoreMutex`: a
//! [`Semaphore`] with one lease.

use std::time::Duration;

use crate::error::Result;
use crate::semaphore::counting::{Lease, Semaphore};
use crate::session::sessions::Sessions;

/// A distributed mutex that is not reentrant: Curator's `InterProcessSemaphoreMutex`, which is
/// `InterProcessSemaphoreV2` with one lease (`<path>/locks` and `<path>/leases`, shared with
/// Curator's on the same path).
///
/// Unlike [`Mutex`](crate::Mutex), holding the lock says nothing about who may take it next:
/// a second acquisition through the same handle waits like anyone else's until the lease is
/// returned, so one handle can be shared by tasks that must exclude each other. Acquiring
/// again from the task that holds the lease waits for itself: give such a call a timeout.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use zookeeper_recipes::SemaphoreMutex;
///
/// let servers = "127.0.0.1:2181";
/// # let servers = &zookeeper_testkit::shared_server()
/// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_semaphore_mutex"));
/// let client = zookeeper_tokio::Client::connect(servers).await?;
/// let mutex = SemaphoreMutex::new(&client, "/locks/report")?;
/// let held = mutex.acquire().await?;
/// // Not reentrant: the same handle does not get it again while it is held.
/// assert!(mutex.try_acquire().await?.is_none());
/// assert!(mutex.acquire_timeout(Duration::from_millis(50)).await?.is_none());
/// held.release().await?;
/// let again = mutex.acquire().await?;
/// again.release().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct SemaphoreMutex {
    semaphore: Semaphore,
}

impl SemaphoreMutex {
    /// A mutex on `path` in Curator's `InterProcessSemaphoreMutex` layout.
    pub fn new(sessions: impl Into<Sessions>, path: &str) -> Result<SemaphoreMutex> {
        Ok(SemaphoreMutex {
            semaphore: Semaphore::new(sessions, path, 1)?,
        })
    }

    /// The data written into our lease node.
    pub fn with_data(self, data: &[u8]) -> SemaphoreMutex {
        SemaphoreMutex {
            semaphore: self.semaphore.with_data(data),
        }
    }

    /// Waits until the lock is ours. Cancel-safe: dropping the future leaves no node behind.
    pub async fn acquire(&self) -> Result<Lease> {
        self.semaphore.acquire().await
    }

    /// Takes the lock only if it is free now. Returns within the session timeout whatever the
    /// connection does.
    pub async fn try_acquire(&self) -> Result<Option<Lease>> {
        self.semaphore.try_acquire().await
    }

    /// Waits at most `timeout`; `None` on timeout, with our nodes deleted. Returns within
    /// `timeout` plus at most 50 ms whatever the connection does.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Lease>> {
        self.semaphore.acquire_timeout(timeout).await
    }

    /// The lease node held, if any (at most one, unless a peer used another count).
    pub async fn participants(&self) -> Result<Vec<String>> {
        self.semaphore.participants().await
    }
}
