//! Locks, read-write locks and semaphores for threads: the async recipes' acquisitions,
//! waited for on the calling thread.

use std::time::Duration;

use zookeeper_tokio::blocking::Client;

use super::guard::LockGuard;
use crate::error::Result;
use crate::node::naming::Layout;

/// Options for a recipe made on a blocking client: its async counterpart on the same session.
fn sessions(client: &Client) -> crate::Sessions {
    crate::Sessions::fixed(client.as_async())
}

/// Maps an acquisition's guard to the blocking one.
fn blocking(client: &Client, guard: Result<Option<crate::LockGuard>>) -> Result<Option<LockGuard>> {
    Ok(guard?.map(|g| LockGuard::new(g, client)))
}

/// A distributed mutex for threads (see [`crate::Mutex`]: the same layouts, fairness,
/// cancel-safety and fencing). Threads sharing one `Mutex` exclude each other.
#[derive(Debug)]
pub struct Mutex {
    inner: crate::Mutex,
    client: Client,
}

impl Mutex {
    /// A mutex on `path` in Curator's layout (`InterProcessMutex`).
    pub fn new(client: &Client, path: &str) -> Result<Mutex> {
        Mutex::with_layout(client, path, Layout::Curator)
    }

    /// A mutex on `path` in the given layout.
    pub fn with_layout(client: &Client, path: &str, layout: Layout) -> Result<Mutex> {
        Ok(Mutex {
            inner: crate::Mutex::with_layout(sessions(client), path, layout)?,
            client: client.clone(),
        })
    }

    /// Data written into our lock node (Curator writes the host's address).
    pub fn with_data(self, data: &[u8]) -> Mutex {
        Mutex {
            inner: self.inner.with_data(data),
            client: self.client,
        }
    }

    /// The lock's path.
    pub fn path(&self) -> &str {
        self.inner.path()
    }

    /// Blocks until the lock is ours.
    pub fn acquire(&self) -> Result<LockGuard> {
        let guard = self.client.block_on(self.inner.acquire())?;
        Ok(LockGuard::new(guard, &self.client))
    }

    /// The lock if it is free now; `None` otherwise (our node is deleted again).
    pub fn try_acquire(&self) -> Result<Option<LockGuard>> {
        blocking(&self.client, self.client.block_on(self.inner.try_acquire()))
    }

    /// Blocks for the lock for at most `timeout` (whatever the connection does); `None` if
    /// it was not granted by then.
    pub fn acquire_timeout(&self, timeout: Duration) -> Result<Option<LockGuard>> {
        blocking(
            &self.client,
            self.client.block_on(self.inner.acquire_timeout(timeout)),
        )
    }

    /// The contenders' node names, holder first.
    pub fn participants(&self) -> Result<Vec<String>> {
        self.client.block_on(self.inner.participants())
    }
}

/// A distributed read-write lock for threads (see [`crate::ReadWriteLock`]).
///
/// A handle cannot tell which of the threads sharing it holds its read lock: while any does,
/// a write through the same handle fails with
/// [`Error::UpgradeWouldDeadlock`](crate::Error::UpgradeWouldDeadlock). Threads that write
/// take a handle each, on the same path.
#[derive(Debug)]
pub struct ReadWriteLock {
    inner: crate::ReadWriteLock,
    client: Client,
}

impl ReadWriteLock {
    /// A read-write lock on `path` in Curator's layout (`InterProcessReadWriteLock`).
    pub fn new(client: &Client, path: &str) -> Result<ReadWriteLock> {
        ReadWriteLock::with_layout(client, path, Layout::Curator)
    }

    /// A read-write lock on `path` in the given layout.
    pub fn with_layout(client: &Client, path: &str, layout: Layout) -> Result<ReadWriteLock> {
        Ok(ReadWriteLock {
            inner: crate::ReadWriteLock::with_layout(sessions(client), path, layout)?,
            client: client.clone(),
        })
    }

    /// Data written into our lock nodes.
    pub fn with_data(self, data: &[u8]) -> ReadWriteLock {
        ReadWriteLock {
            inner: self.inner.with_data(data),
            client: self.client,
        }
    }

    /// The lock's path.
    pub fn path(&self) -> &str {
        self.inner.path()
    }

    /// Blocks until a read lock is ours.
    pub fn read(&self) -> Result<LockGuard> {
        let guard = self.client.block_on(self.inner.read())?;
        Ok(LockGuard::new(guard, &self.client))
    }

    /// A read lock if one can be had now.
    pub fn try_read(&self) -> Result<Option<LockGuard>> {
        blocking(&self.client, self.client.block_on(self.inner.try_read()))
    }

    /// Blocks for a read lock for at most `timeout`.
    pub fn read_timeout(&self, timeout: Duration) -> Result<Option<LockGuard>> {
        blocking(
            &self.client,
            self.client.block_on(self.inner.read_timeout(timeout)),
        )
    }

    /// Blocks until the write lock is ours.
    pub fn write(&self) -> Result<LockGuard> {
        let guard = self.client.block_on(self.inner.write())?;
        Ok(LockGuard::new(guard, &self.client))
    }

    /// The write lock if it can be had now.
    pub fn try_write(&self) -> Result<Option<LockGuard>> {
        blocking(&self.client, self.client.block_on(self.inner.try_write()))
    }

    /// Blocks for the write lock for at most `timeout`.
    pub fn write_timeout(&self, timeout: Duration) -> Result<Option<LockGuard>> {
        blocking(
            &self.client,
            self.client.block_on(self.inner.write_timeout(timeout)),
        )
    }

    /// The contenders' node names, in queue order.
    pub fn participants(&self) -> Result<Vec<String>> {
        self.client.block_on(self.inner.participants())
    }
}

/// A held semaphore lease (see [`crate::Lease`]).
pub type Lease = LockGuard;

/// A distributed counting semaphore for threads (see [`crate::Semaphore`]: Curator's
/// `InterProcessSemaphoreV2` layout).
#[derive(Debug)]
pub struct Semaphore {
    inner: crate::Semaphore,
    client: Client,
}

impl Semaphore {
    /// A semaphore on `path` granting at most `max_leases` leases at once.
    pub fn new(client: &Client, path: &str, max_leases: usize) -> Result<Semaphore> {
        Ok(Semaphore {
            inner: crate::Semaphore::new(sessions(client), path, max_leases)?,
            client: client.clone(),
        })
    }

    /// Data written into our lease nodes.
    pub fn with_data(self, data: &[u8]) -> Semaphore {
        Semaphore {
            inner: self.inner.with_data(data),
            client: self.client,
        }
    }

    /// The number of leases.
    pub fn max_leases(&self) -> usize {
        self.inner.max_leases()
    }

    /// Blocks until a lease is ours.
    pub fn acquire(&self) -> Result<Lease> {
        let lease = self.client.block_on(self.inner.acquire())?;
        Ok(LockGuard::new(lease, &self.client))
    }

    /// A lease if one is free now.
    pub fn try_acquire(&self) -> Result<Option<Lease>> {
        blocking(&self.client, self.client.block_on(self.inner.try_acquire()))
    }

    /// Blocks for a lease for at most `timeout`.
    pub fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Lease>> {
        blocking(
            &self.client,
            self.client.block_on(self.inner.acquire_timeout(timeout)),
        )
    }

    /// The lease holders' and waiters' node names.
    pub fn participants(&self) -> Result<Vec<String>> {
        self.client.block_on(self.inner.participants())
    }
}
