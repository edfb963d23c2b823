//! Semaphores that open their own session from a connect string (see the locks'
//! `standalone`): the session closes when the semaphore and every lease from it are dropped.

use zookeeper_tokio::{Client, ClientBuilder};

use crate::error::Result;
use crate::semaphore::counting::Semaphore;
use crate::semaphore::mutex::SemaphoreMutex;

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
        crate::node::ensure_path::validate(path)?;
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
        crate::node::ensure_path::validate(path)?;
        SemaphoreMutex::new(&builder.connect().await?, path)
    }
}
