//! The subtree the `scale` and `cache` workloads watch: a root with directories of leaves,
//! built and removed through a setup session of its own.

use futures_util::future::try_join_all;
use zookeeper_tokio::{Client, CreateOptions, ErrorKind};

use crate::{BenchError, Ctx};

/// Requests kept in flight while building, changing and removing the subtree.
pub const SETUP_WINDOW: usize = 1_000;

/// A subtree `root/d<i>/l<j>`, and the session that made it.
pub struct WideTree {
    pub setup: Client,
    pub root: String,
    pub dirs: Vec<String>,
    pub leaves: Vec<String>,
}

impl WideTree {
    /// Creates `/zookeeper-bench/<name>-<pid>` with `dirs` directories of `leaves` leaves,
    /// each leaf and directory holding `data`.
    pub async fn create(
        ctx: &Ctx,
        name: &str,
        dirs: usize,
        leaves: usize,
        data: &[u8],
    ) -> Result<WideTree, BenchError> {
        let root = format!("/zookeeper-bench/{name}-{}", std::process::id());
        let setup = Client::connect(&ctx.zk.to_string()).await?;
        for path in ["/zookeeper-bench", root.as_str()] {
            match setup.create(path, b"", &CreateOptions::persistent()).await {
                Ok(_) => {}
                Err(e) if e == ErrorKind::NodeExists => {}
                Err(e) => return Err(e.into()),
            }
        }
        let dir_paths: Vec<String> = (0..dirs).map(|d| format!("{root}/d{d}")).collect();
        let leaf_paths: Vec<String> = dir_paths
            .iter()
            .flat_map(|d| (0..leaves).map(move |l| format!("{d}/l{l}")))
            .collect();
        for batch in dir_paths
            .chunks(SETUP_WINDOW)
            .chain(leaf_paths.chunks(SETUP_WINDOW))
        {
            try_join_all(
                batch
                    .iter()
                    .map(|p| setup.create(p, data, &CreateOptions::persistent())),
            )
            .await?;
        }
        Ok(WideTree {
            setup,
            root,
            dirs: dir_paths,
            leaves: leaf_paths,
        })
    }

    /// Every node of the subtree, its root included.
    pub fn nodes(&self) -> usize {
        1 + self.dirs.len() + self.leaves.len()
    }

    /// Deletes the subtree, leaves first, and closes the setup session.
    pub async fn remove(self) -> Result<(), BenchError> {
        for batch in self
            .leaves
            .chunks(SETUP_WINDOW)
            .chain(self.dirs.chunks(SETUP_WINDOW))
        {
            try_join_all(batch.iter().map(|p| self.setup.delete(p, None))).await?;
        }
        self.setup.delete(&self.root, None).await?;
        self.setup.close().await;
        Ok(())
    }
}
