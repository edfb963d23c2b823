//! Our contender node from the moment its create is sent until it is either handed to a guard
//! or gone.
//!
//! * A create whose reply was lost may have been applied (the client says so:
//!   `is_outcome_unknown`). After reconnecting we list the parent and adopt the child that
//!   carries this attempt's GUID, but only if its
//!   `ephemeralOwner` is our session: a server may still list a node of an ended session, and
//!   any session may create a node with the same name. Such a node is not ours and is left
//!   alone: we create our own, and the queue treats the other like any contender.
//! * Whatever way the acquiring code exits without the lock (error, timeout, or its future
//!   being dropped at any await point), the node is deleted, including a node whose create
//!   is still in flight: the create's future is kept here, so its late result is awaited and
//!   deleted in the background.

use std::future::Future;
use std::pin::Pin;

use tracing::debug;
use zookeeper_tokio::{Client, CreateOptions, ErrorKind, Stat};

use crate::error::{Error, Result};
use crate::node::cleanup::run_detached;
use crate::node::ensure_path::ensure_path;
use crate::node::path::join;
use crate::node::release::delete_until_gone;
use crate::session::wait::{reconnected_after, retried, wait_connected};

type CreateFuture = Pin<Box<dyn Future<Output = zookeeper_tokio::Result<(String, Stat)>> + Send>>;

/// How many times a create is re-sent after finding the parent missing (a container parent
/// can be removed by the server between our `ensure_path` and our create).
const PARENT_RETRIES: usize = 5;

/// A contender node being created, owned until [`PendingNode::keep`] or deleted.
pub(crate) struct PendingNode {
    client: Client,
    dir: String,
    prefix: String,
    data: Vec<u8>,
    in_flight: Option<CreateFuture>,
    node: Option<(String, Stat)>,
    /// A create failed with an unknown outcome and we have not yet looked for its node.
    maybe_applied: bool,
    settled: bool,
}

impl PendingNode {
    /// `prefix` is the child name up to the sequence, GUID included.
    pub(crate) fn new(client: &Client, dir: &str, prefix: String, data: &[u8]) -> Self {
        PendingNode {
            client: client.clone(),
            dir: dir.to_owned(),
            prefix,
            data: data.to_vec(),
            in_flight: None,
            node: None,
            maybe_applied: false,
            settled: false,
        }
    }

    /// Puts the create on the wire now (the client queues requests when they are made, so a
    /// request made right after this one is answered after it).
    pub(crate) fn send_create(&mut self) {
        let path = join(&self.dir, &self.prefix);
        let create = self
            .client
            .create(&path, &self.data, &CreateOptions::ephemeral_sequential());
        self.in_flight = Some(Box::pin(create));
    }

    /// The created node (full path and stat), after any retries the protection needs.
    pub(crate) async fn created(&mut self) -> Result<(String, Stat)> {
        let mut parent_retries = 0;
        loop {
            let Some(create) = self.in_flight.as_mut() else {
                self.send_create();
                continue;
            };
            let outcome = create.await;
            self.in_flight = None;
            match outcome {
                Ok((path, stat)) => {
                    crate::node::sequence_wrap::check_created(&self.dir, &path, &self.prefix);
                    self.node = Some((path.clone(), stat));
                    return Ok((path, stat));
                }
                Err(e) if e == ErrorKind::NoNode && parent_retries < PARENT_RETRIES => {
                    parent_retries += 1;
                    ensure_path(&self.client, &self.dir).await?;
                    self.send_create();
                }
                Err(e) if e.is_outcome_unknown() && e.is_retryable() => {
                    self.maybe_applied = true;
                    reconnected_after(&self.client, &e).await?;
                    if let Some(found) = find_ours(&self.client, &self.dir, &self.prefix).await? {
                        debug!(path = %found.0, "adopted our node after a lost create reply");
                        crate::node::sequence_wrap::check_created(
                            &self.dir,
                            &found.0,
                            &self.prefix,
                        );
                        self.maybe_applied = false;
                        self.node = Some(found.clone());
                        return Ok(found);
                    }
                    // Listed after reconnecting and not there: the create was not applied.
                    self.maybe_applied = false;
                    self.send_create();
                }
                // Never ran (not sent, or refused by a busy or read-only server): no node to
                // look for.
                Err(e) if e.is_retryable() => {
                    reconnected_after(&self.client, &e).await?;
                    self.send_create();
                }
                Err(e) => return Err(Error::Client(e)),
            }
        }
    }

    /// Hands the node over: it is no longer deleted when this is dropped.
    pub(crate) fn keep(mut self) -> (String, Stat) {
        self.settled = true;
        self.node.take().expect("keep() after created()")
    }

    /// Deletes the node now (used on timeouts, so that the caller returns with nothing left
    /// behind). The deletion runs in a task of its own: cancelling this call does not stop it.
    pub(crate) async fn abandon(mut self) -> Result<()> {
        let cleanup = self.cleanup();
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => rt.spawn(cleanup).await.unwrap_or(Ok(())),
            Err(_) => cleanup.await,
        }
    }

    /// The work that removes whatever this attempt may have created; settles the node.
    fn cleanup(&mut self) -> impl Future<Output = Result<()>> + Send + 'static {
        self.settled = true;
        let (client, dir, prefix) = (self.client.clone(), self.dir.clone(), self.prefix.clone());
        let in_flight = self.in_flight.take();
        let node = self.node.take();
        let maybe_applied = self.maybe_applied;
        async move {
            if let Some(create) = in_flight {
                cleanup_after(&client, &dir, &prefix, create).await
            } else if let Some((path, _)) = node {
                delete_until_gone(&client, &path).await
            } else if maybe_applied {
                delete_by_prefix(&client, &dir, &prefix).await
            } else {
                Ok(())
            }
        }
    }
}

impl Drop for PendingNode {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        run_detached(self.cleanup());
    }
}

/// Waits for a create still in flight, then deletes whatever it made.
async fn cleanup_after(
    client: &Client,
    dir: &str,
    prefix: &str,
    create: CreateFuture,
) -> Result<()> {
    match create.await {
        Ok((path, _)) => delete_until_gone(client, &path).await,
        Err(e) if e.is_outcome_unknown() => delete_by_prefix(client, dir, prefix).await,
        Err(_) => Ok(()),
    }
}

/// Lists `dir` and returns our node of this attempt: its name starts with `prefix` and its
/// `ephemeralOwner` is our session.
pub(crate) async fn find_ours(
    client: &Client,
    dir: &str,
    prefix: &str,
) -> Result<Option<(String, Stat)>> {
    let children = match list_children(client, dir).await? {
        Some(c) => c,
        None => return Ok(None),
    };
    let session = client.session_id().0;
    for child in children.iter().filter(|c| c.starts_with(prefix)) {
        let path = join(dir, child);
        // Through lost connections too: a find that gave up here would leave our node behind,
        // blocking every contender queued after it until the session ends.
        match retried(client, || client.exists(&path)).await? {
            Some(stat) if stat.ephemeral_owner == session => return Ok(Some((path, stat))),
            _ => {}
        }
    }
    Ok(None)
}

/// Deletes every child of this attempt that our session owns.
async fn delete_by_prefix(client: &Client, dir: &str, prefix: &str) -> Result<()> {
    match wait_connected(client).await {
        Ok(()) => {}
        Err(e) if e.is_session_terminal() => return Ok(()),
        Err(e) => return Err(e),
    }
    while let Some((path, _)) = find_ours(client, dir, prefix).await? {
        delete_until_gone(client, &path).await?;
    }
    Ok(())
}

/// The children of `dir`, retried across reconnects; `None` if `dir` does not exist.
pub(crate) async fn list_children(client: &Client, dir: &str) -> Result<Option<Vec<String>>> {
    match retried(client, || client.get_children(dir)).await {
        Ok((children, _)) => Ok(Some(children)),
        Err(Error::Client(e)) if e == ErrorKind::NoNode => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use zookeeper_testkit::{FrameEvent, Proxy};

    use super::*;

    /// Requests the proxy forwarded, as opcodes.
    fn opcodes(proxy: &Proxy) -> Vec<i32> {
        proxy
            .take_frame_log()
            .into_iter()
            .filter_map(|e| match e {
                FrameEvent::ClientToServer { opcode, .. } if opcode > 0 => Some(opcode),
                _ => None,
            })
            .collect()
    }

    /// A create that failed with a retryable error of known outcome (here one that never left
    /// the client, as under `fail_fast` while disconnected) made no node: it is sent again at
    /// once, without listing the parent for a node to adopt. Listing then would cost a round
    /// trip, and after a lost reply is what protects against a second node.
    #[tokio::test]
    async fn a_create_that_was_never_sent_is_sent_again_without_a_search() {
        let chroot = zookeeper_testkit::chroot_for("protection_unsent");
        let proxy = Proxy::start(zookeeper_testkit::shared_server().addr())
            .await
            .unwrap();
        let c = Client::builder(&format!("{}{chroot}", proxy.connect_string()))
            .connect_timeout(Duration::from_secs(30))
            .connect()
            .await
            .unwrap();
        c.create("/lock", b"", &CreateOptions::persistent())
            .await
            .unwrap();
        proxy.record_frames(true);
        let mut pending = PendingNode::new(&c, "/lock", "_c_test-lock-".into(), b"");
        let never_sent = zookeeper_tokio::Error::from(ErrorKind::ConnectionLoss);
        assert!(never_sent.is_retryable() && !never_sent.is_outcome_unknown());
        pending.in_flight = Some(Box::pin(async move { Err(never_sent) }));
        let (path, _) = pending.created().await.unwrap();
        assert!(path.starts_with("/lock/_c_test-lock-"), "{path}");
        // 15 is create2; a search would have listed /lock (12, getChildren2) first.
        assert_eq!(opcodes(&proxy), [15]);
        pending.abandon().await.unwrap();
    }
}
