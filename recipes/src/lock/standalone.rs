//! Recipes that open their own session from a connect string, for users who want a lock and
//! nothing else: no client to build and share first.
//!
//! The session belongs to the recipe: it closes (and the server deletes its nodes at once)
//! when the recipe and every guard, lease or latch from it are dropped.

use zookeeper_tokio::{Client, ClientBuilder};

use crate::error::Result;
use crate::lock::mutex::Mutex;
use crate::lock::rwlock::ReadWriteLock;
use crate::node::naming::Layout;

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
        crate::node::ensure_path::validate(path)?;
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
        crate::node::ensure_path::validate(path)?;
        ReadWriteLock::new(&builder.connect().await?, path)
    }
}
