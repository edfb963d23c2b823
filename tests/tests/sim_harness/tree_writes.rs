//! Random writes to a small tree, for the workloads that watch one (caches, watches).

use std::time::Duration;

use zookeeper_testkit::sim::{SimRng, SimServer};
use zookeeper_tokio::{Client, CreateOptions};

use super::{running, Reconnecting};

/// Writes to one of `paths` at random, through `session`, every 150 ms at most, until the run
/// ends.
pub async fn write_while_running(
    session: &mut Reconnecting,
    server: &SimServer,
    who: &str,
    root: &str,
    paths: &[&str],
    rng: &mut SimRng,
) {
    let mut n = 0u64;
    while running() {
        let Some(c) = session.client(rng).await else {
            continue;
        };
        n += 1;
        let path = paths[rng.below(paths.len() as u64) as usize];
        let data = format!("{who}-{n}");
        write_something(&c, server, who, root, path, &data, rng).await;
        session.keep(c);
        tokio::time::sleep(Duration::from_millis(rng.below(150))).await;
    }
}

/// One write to `path` that the server's present tree makes meaningful: a create under an
/// existing parent (ephemeral one time in four), else a delete (one time in three) or a change
/// of data. It may still fail, the tree having moved on meanwhile; the failure goes to the
/// server's trace.
pub async fn write_something(
    c: &Client,
    server: &SimServer,
    who: &str,
    root: &str,
    path: &str,
    data: &str,
    rng: &mut SimRng,
) {
    let exists = server.node(path).is_some();
    let parent_exists = path == root || server.node(parent(path)).is_some();
    let outcome = if !exists && parent_exists {
        let options = if rng.below(4) == 0 {
            CreateOptions::ephemeral()
        } else {
            CreateOptions::persistent()
        };
        c.create(path, data.as_bytes(), &options).await.map(drop)
    } else if rng.below(3) == 0 {
        c.delete(path, None).await
    } else {
        c.set_data(path, data.as_bytes(), None).await.map(drop)
    };
    if let Err(e) = outcome {
        server.note(format!("{who}: {e}"));
    }
}

/// The parent of an absolute path (`""` for a child of the root).
pub fn parent(path: &str) -> &str {
    &path[..path.rfind('/').unwrap_or(0)]
}
