//! Recipes that open their own session from a connect string, for users who want a lock and
//! nothing else: no client to build and share first.
//!
//! The session belongs to the recipe: it closes (and the server deletes its nodes at once)
//! when the recipe and every guard, lease or latch from it are dropped.

use zookeeper_tokio::{Client, ClientBuilder};

use crate::error::Result;
use crate::latch::LeaderLatch;
use crate::mutex::Mutex;
use crate::naming::Layout;
use crate::rwlock::ReadWriteLock;
use crate::semaphore::Semaphore;
use crate::semaphore_mutex::SemaphoreMutex;

impl Mutex {
    /// A mutex in Curator's layout on a session of its own, opened on `connect_string`
    /// (`host:port[,host:port...][/chroot]`) with default settings.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), zookeeper_recipes::Error> {
    /// let mutex = zookeeper_recipes::Mutex::connect("127.0.0.1:2181", "/locks/x").await?;
    /// let guard = mutex.acquire().await?;
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect(connect_string: &str, path: &str) -> Result<Mutex> {
        Mutex::connect_with(Client::builder(connect_string), path, Layout::Curator).await
    }

    /// A mutex in `layout` on a session of its own, opened by `builder` (session timeout,
    /// authentication, ...).
    pub async fn connect_with(builder: ClientBuilder, path: &str, layout: Layout) -> Result<Mutex> {
        crate::ensure_path::validate(path)?;
        Mutex::with_layout(&builder.connect().await?, path, layout)
    }
}

impl ReadWriteLock {
    /// A read-write lock on a session of its own, opened on `connect_string` with default
    /// settings.
    pub async fn connect(connect_string: &str, path: &str) -> Result<ReadWriteLock> {
        ReadWriteLock::connect_with(Client::builder(connect_string), path).await
    }

    /// A read-write lock on a session of its own, opened by `builder`.
    pub async fn connect_with(builder: ClientBuilder, path: &str) -> Result<ReadWriteLock> {
        crate::ensure_path::validate(path)?;
        ReadWriteLock::new(&builder.connect().await?, path)
    }
}

impl Semaphore {
    /// A semaphore of `max_leases` on a session of its own, opened on `connect_string` with
    /// default settings.
    pub async fn connect(connect_string: &str, path: &str, max_leases: usize) -> Result<Semaphore> {
        Semaphore::connect_with(Client::builder(connect_string), path, max_leases).await
    }

    /// A semaphore of `max_leases` on a session of its own, opened by `builder`.
    pub async fn connect_with(
        builder: ClientBuilder,
        path: &str,
        max_leases: usize,
    ) -> Result<Semaphore> {
        crate::ensure_path::validate(path)?;
        Semaphore::new(&builder.connect().await?, path, max_leases)
    }
}

impl SemaphoreMutex {
    /// A semaphore mutex on a session of its own, opened on `connect_string` with default
    /// settings.
    pub async fn connect(connect_string: &str, path: &str) -> Result<SemaphoreMutex> {
        SemaphoreMutex::connect_with(Client::builder(connect_string), path).await
    }

    /// A semaphore mutex on a session of its own, opened by `builder`.
    pub async fn connect_with(builder: ClientBuilder, path: &str) -> Result<SemaphoreMutex> {
        crate::ensure_path::validate(path)?;
        SemaphoreMutex::new(&builder.connect().await?, path)
    }
}

impl LeaderLatch {
    /// Joins the election on `path` as `id` on a session of its own, opened on
    /// `connect_string` with default settings.
    pub async fn connect(connect_string: &str, path: &str, id: &str) -> Result<LeaderLatch> {
        LeaderLatch::connect_with(Client::builder(connect_string), path, id).await
    }

    /// Joins the election on `path` as `id` on a session of its own, opened by `builder`.
    pub async fn connect_with(builder: ClientBuilder, path: &str, id: &str) -> Result<LeaderLatch> {
        crate::ensure_path::validate(path)?;
        LeaderLatch::start(&builder.connect().await?, path, id).await
    }
}
