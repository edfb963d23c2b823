//! kazoo's `Lock` (2.9, `kazoo/recipe/lock.py`): `_inner_acquire` under `client.retry`, with
//! `_get_predecessor`'s order (`<uuid4 hex>__lock__<seq>`, parents made persistent by
//! `ensure_path`).

use std::time::Duration;

use tokio::time::Instant;
use zookeeper_tokio::{Client, CreateOptions, Error};

use super::{delete_until_gone, find_or_create, retrying, PeerNode};

/// `Lock._NODE_NAME`, the only name in its `_EXCLUDE_NAMES`.
pub const NODE_NAME: &str = "__lock__";

/// The sequence text kazoo's contender pattern `(?:__lock__)(-?\d{10})$` captures from a
/// child's name; `None` when the name does not match.
fn sequence(name: &str) -> Option<&str> {
    let at = name.len().checked_sub(10)?;
    let digits = name.get(at..)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let head = &name[..at];
    if head.ends_with("__lock__-") {
        Some(&name[at - 1..])
    } else if head.ends_with(NODE_NAME) {
        Some(digits)
    } else {
        None
    }
}

/// `_get_predecessor`: among the contenders whose sequence text is below ours (`str` `<`),
/// the one with the greatest (`sorted(...)[-1]`); `Err(())` when ours is not listed (kazoo's
/// `ForceRetryError`). `prefix` is our node's name without its sequence.
fn predecessor<'a>(
    children: &'a [String],
    ours: &str,
    prefix: &str,
) -> Result<Option<&'a String>, ()> {
    if !children.iter().any(|n| n == ours) {
        return Err(());
    }
    let our_sequence = &ours[prefix.len()..];
    Ok(children
        .iter()
        .filter_map(|n| sequence(n).map(|s| (s, n)))
        .filter(|(s, _)| *s < our_sequence)
        .max_by(|a, b| a.0.cmp(b.0))
        .map(|(_, n)| n))
}

/// Whether kazoo takes `ours` (a `Lock` node, named `<32 hex digits>__lock__<seq>`) to hold
/// the lock among `children`: listed, with no predecessor.
pub fn is_first(children: &[String], ours: &str) -> bool {
    ours.len() > 32 && predecessor(children, ours, &ours[..32 + NODE_NAME.len()]) == Ok(None)
}

/// Takes the lock at `dir` within `patience`, writing `data` (kazoo's identifier) into its
/// node: `Ok(None)` once the time ran out (`LockTimeout`; the node deleted).
pub async fn acquire(
    c: &Client,
    dir: &str,
    guid_hex: &str,
    data: &[u8],
    patience: Duration,
) -> Result<Option<PeerNode>, Error> {
    let deadline = Instant::now() + patience;
    let prefix = format!("{guid_hex}{NODE_NAME}");
    let options = CreateOptions::ephemeral_sequential().creating_parents();
    let mut tried = false;
    loop {
        // `_inner_acquire`: once a create was tried, our node is looked for first.
        let name = find_or_create(c, dir, &prefix, data, &options, tried, deadline).await?;
        tried = true;
        let node = PeerNode {
            path: format!("{dir}/{name}"),
            name,
        };
        match wait_for_predecessors(c, dir, &node.name, &prefix, deadline).await {
            Ok(Some(true)) => return Ok(Some(node)),
            // Not listed: `ForceRetryError`, `_inner_acquire` again.
            Ok(None) => {}
            // `LockTimeout` or another failure: `_best_effort_cleanup`.
            outcome => {
                delete_until_gone(c, &node.path).await;
                return outcome.map(|_| None);
            }
        }
    }
}

/// The loop of `_inner_acquire`: hold when no predecessor, else watch it with `get` and look
/// again once the watch fires (or it is already gone). `Some(false)` when `deadline` passed,
/// `None` when our node is not listed.
async fn wait_for_predecessors(
    c: &Client,
    dir: &str,
    ours: &str,
    prefix: &str,
    deadline: Instant,
) -> Result<Option<bool>, Error> {
    loop {
        let (children, _) = retrying(deadline, || c.get_children(dir)).await?;
        let predecessor = match predecessor(&children, ours, prefix) {
            Err(()) => return Ok(None),
            Ok(None) => return Ok(Some(true)),
            Ok(Some(p)) => format!("{dir}/{p}"),
        };
        match retrying(deadline, || c.get_data_and_watch(&predecessor)).await {
            Ok((_, _, fired)) => {
                // `wake_event.wait(timeout)`: any event of the watch, or the session's end.
                if tokio::time::timeout_at(deadline, fired).await.is_err() {
                    return Ok(Some(false));
                }
            }
            // `NoNodeError`: the predecessor has already been deleted.
            Err(e) if e == zookeeper_tokio::ErrorKind::NoNode => {}
            Err(e) => return Err(e),
        }
    }
}
