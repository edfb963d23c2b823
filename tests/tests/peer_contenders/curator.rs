//! Curator's `InterProcessMutex` (5.x): `LockInternals.attemptLock` and `internalLockLoop`
//! with `StandardLockInternalsDriver`, over a protected ephemeral-sequential create
//! (`_c_<uuid>-lock-<seq>`, parents made as containers).

use std::time::Duration;

use tokio::time::Instant;
use zookeeper_tokio::{Client, CreateOptions, Error, ErrorKind};

use super::{delete_until_gone, find_or_create, hyphenated, retrying, PeerNode};

/// The lock name of `InterProcessMutex`.
pub const LOCK_NAME: &str = "lock-";

/// `StandardLockInternalsDriver.fixForSorting`: the text after the last lock name, or the
/// whole name without one.
fn sort_key(name: &str) -> &str {
    name.rfind(LOCK_NAME)
        .map_or(name, |at| &name[at + LOCK_NAME.len()..])
}

/// `LockInternals.getSortedChildren`: every child, in a stable sort by `sort_key` compared as
/// Java's `String.compareTo` (UTF-16 code units; bytewise for these ASCII names).
fn sorted(children: &[String]) -> Vec<&String> {
    let mut sorted: Vec<&String> = children.iter().collect();
    sorted.sort_by(|a, b| sort_key(a).cmp(sort_key(b)));
    sorted
}

/// `getsTheLock` with one lease: whether `ours` is first among `children`.
pub fn is_first(children: &[String], ours: &str) -> bool {
    sorted(children).first().is_some_and(|n| *n == ours)
}

/// Takes the lock at `dir` within `patience`, writing `data` into its node: `Ok(None)` once
/// the time ran out (the node deleted, as `attemptLock` does).
pub async fn acquire(
    c: &Client,
    dir: &str,
    guid_hex: &str,
    data: &[u8],
    patience: Duration,
) -> Result<Option<PeerNode>, Error> {
    let deadline = Instant::now() + patience;
    let prefix = format!("_c_{}-{LOCK_NAME}", hyphenated(guid_hex));
    let options = CreateOptions::ephemeral_sequential().creating_parent_containers();
    let name = find_or_create(c, dir, &prefix, data, &options, false, deadline).await?;
    let node = PeerNode {
        path: format!("{dir}/{name}"),
        name,
    };
    match lock_loop(c, dir, &node.name, deadline).await {
        Ok(true) => Ok(Some(node)),
        // Out of time, or failed: `doDelete`.
        outcome => {
            delete_until_gone(c, &node.path).await;
            outcome.map(|_| None)
        }
    }
}

/// `internalLockLoop`: list, hold when first, else watch the child just before ours with
/// `getData` and list again once it fires (or is already gone). False when `deadline` passed.
async fn lock_loop(c: &Client, dir: &str, ours: &str, deadline: Instant) -> Result<bool, Error> {
    loop {
        let (children, _) = retrying(deadline, || c.get_children(dir)).await?;
        let sorted = sorted(&children);
        // `validateOurIndex`: "Sequential path not found".
        let Some(index) = sorted.iter().position(|n| *n == ours) else {
            return Err(ErrorKind::NoNode.into());
        };
        if index == 0 {
            return Ok(true);
        }
        let previous = format!("{dir}/{}", sorted[index - 1]);
        match retrying(deadline, || c.get_data_and_watch(&previous)).await {
            Ok((_, _, fired)) => {
                if Instant::now() >= deadline
                    || tokio::time::timeout_at(deadline, fired).await.is_err()
                {
                    return Ok(false);
                }
            }
            // Deleted meanwhile: list again.
            Err(e) if e == ErrorKind::NoNode => {}
            Err(e) => return Err(e),
        }
    }
}
