//! A leader latch that opens its own session from a connect string (see the locks'
//! `standalone`): the session closes when the latch is dropped.

use zookeeper_tokio::{Client, ClientBuilder};

use crate::election::latch::LeaderLatch;
use crate::error::Result;

impl LeaderLatch {
    /// Joins the election on `path` as `id` on a session of its own, opened on
    /// `connect_string` with default settings.
    pub async fn connect(connect_string: &str, path: &str, id: &str) -> Result<LeaderLatch> {
        LeaderLatch::connect_with(Client::builder(connect_string), path, id).await
    }

    /// Joins the election on `path` as `id` on a session of its own, opened by `builder`.
    pub async fn connect_with(builder: ClientBuilder, path: &str, id: &str) -> Result<LeaderLatch> {
        crate::node::ensure_path::validate(path)?;
        LeaderLatch::start(&builder.connect().await?, path, id).await
    }
}
