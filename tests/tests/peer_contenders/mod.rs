//! The peers' lock algorithms, each a small contender written with the client alone (no
//! recipes), from the peers' source as `recipes/src/peer_model.rs` describes it: Curator's
//! `InterProcessMutex` and kazoo's `Lock`. The simulation workloads contend against them on
//! one lock path with our recipes, and judge every holder by its own layout's order
//! (`curator::is_first`, `kazoo::is_first`).
//!
//! What both peers share is here: the create that looks for its node before repeating a
//! create that may have made it (Curator's protected mode, kazoo's `create_tried` and
//! `_find_node`), calls retried on a lost connection as their retry loops do, and a delete
//! retried until the node is gone or its session ended.

pub mod curator;
pub mod kazoo;

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;
use zookeeper_testkit::sim::SimRng;
use zookeeper_tokio::{Client, CreateOptions, Error, ErrorKind};

/// How long a peer waits before repeating a call that failed on a lost connection.
const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// A peer's node in the queue.
#[derive(Clone, Debug)]
pub struct PeerNode {
    /// Its full path.
    pub path: String,
    /// Its name under the lock path.
    pub name: String,
}

/// A random version 4 GUID's 32 hex digits, drawn from `rng` (Python's `uuid4().hex`).
pub fn guid_hex(rng: &mut SimRng) -> String {
    let (high, low) = (rng.next_u64(), rng.next_u64());
    // Version 4, variant 1, as `uuid4()` and `UUID.randomUUID()` make them.
    let high = (high & !0xf000) | 0x4000;
    let low = (low & !(0xc << 60)) | (0x8 << 60);
    format!("{high:016x}{low:016x}")
}

/// The same GUID as Java's `UUID.toString()` writes it: 8-4-4-4-12, with dashes.
pub fn hyphenated(hex: &str) -> String {
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// `call`, repeated after a lost connection (or a request that timed out) until `deadline`:
/// what the peers' retry loops (Curator's `RetryLoop`, kazoo's `KazooRetry`) do.
pub async fn retrying<T, F, Fut>(deadline: Instant, mut call: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    loop {
        match call().await {
            Err(e) if e.is_retryable() && Instant::now() < deadline => {
                tokio::time::sleep(RETRY_PAUSE).await
            }
            outcome => return outcome,
        }
    }
}

/// Creates `<dir>/<prefix><sequence>`, or finds it: once a create has been tried (`tried`, or
/// an earlier create whose outcome is unknown), the children of `dir` are listed first and a
/// child whose name begins with `prefix` is taken as ours. Returns our node's name. A create
/// that finally fails leaves no node behind: a child with our prefix is looked for and
/// deleted (Curator's protected mode does so in the background).
pub async fn find_or_create(
    c: &Client,
    dir: &str,
    prefix: &str,
    data: &[u8],
    options: &CreateOptions,
    tried: bool,
    deadline: Instant,
) -> Result<String, Error> {
    let outcome = create_or_find(c, dir, prefix, data, options, tried, deadline).await;
    if outcome.is_err() {
        loop {
            match c.get_children(dir).await {
                Ok((children, _)) => {
                    for name in children.iter().filter(|n| n.starts_with(prefix)) {
                        delete_until_gone(c, &format!("{dir}/{name}")).await;
                    }
                    break;
                }
                Err(e) if e.is_retryable() => tokio::time::sleep(RETRY_PAUSE).await,
                // No parent, or the session ended (its ephemerals with it).
                Err(_) => break,
            }
        }
    }
    outcome
}

async fn create_or_find(
    c: &Client,
    dir: &str,
    prefix: &str,
    data: &[u8],
    options: &CreateOptions,
    mut tried: bool,
    deadline: Instant,
) -> Result<String, Error> {
    loop {
        if tried {
            match retrying(deadline, || c.get_children(dir)).await {
                Ok((children, _)) => {
                    if let Some(ours) = children.into_iter().find(|n| n.starts_with(prefix)) {
                        return Ok(ours);
                    }
                }
                // No parent (a container the server removed): nothing of ours there.
                Err(e) if e == ErrorKind::NoNode => {}
                Err(e) => return Err(e),
            }
        }
        tried = true;
        match c.create(&format!("{dir}/{prefix}"), data, options).await {
            Ok((path, _)) => return Ok(name_in(&path).to_owned()),
            Err(e) if e.is_retryable() && Instant::now() < deadline => {
                tokio::time::sleep(RETRY_PAUSE).await
            }
            Err(e) => return Err(e),
        }
    }
}

/// Deletes `path` until it is gone, or its session ended (its ephemerals with it): Curator's
/// guaranteed delete on release. kazoo's release retries its delete as well; its cleanup
/// after a failed acquisition tries once, which here would leave a waiter's node blocking
/// the lock until its session ends (kazoo #732).
pub async fn delete_until_gone(c: &Client, path: &str) {
    loop {
        match c.delete(path, None).await {
            Err(e) if e.is_retryable() => tokio::time::sleep(RETRY_PAUSE).await,
            // Deleted, already gone (`NoNode`), or the session ended.
            _ => return,
        }
    }
}

/// The name of a node under its parent.
pub fn name_in(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, name)| name)
}
