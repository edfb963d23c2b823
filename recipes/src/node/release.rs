//! Guaranteed deletion of our node: retried across reconnects until the node or the session
//! is gone, in a task of its own so that neither a dropped guard nor a cancelled `release`
//! leaves the node behind.
//!
//! The first delete is queued on the session when the release happens, not when the task
//! first runs: the client puts requests on the wire in call order, so whatever this process
//! asks of the session afterwards (a new acquisition's create included) reaches the server
//! after the delete. That is what lets a release return without waiting for the reply.

use std::future::Future;

use tokio::task::JoinHandle;
use tracing::{debug, warn};
use zookeeper_tokio::{Client, ErrorKind};

use crate::error::{Error, Result};
use crate::session::wait::wait_connected;

/// Deletes `path`, retrying on connection loss. Succeeds once the node is gone: deleted by us,
/// already absent, or removed with our ended session (it is ephemeral).
pub(crate) async fn delete_until_gone(client: &Client, path: &str) -> Result<()> {
    follow_delete(client, path, client.delete(path, None)).await
}

/// [`delete_until_gone`] after a first attempt that is already queued.
async fn follow_delete(
    client: &Client,
    path: &str,
    first: impl Future<Output = zookeeper_tokio::Result<()>>,
) -> Result<()> {
    let mut outcome = first.await;
    loop {
        match outcome {
            Ok(()) => {}
            Err(e) if e == ErrorKind::NoNode => {}
            Err(e) if e.is_session_terminal() => return Ok(()),
            Err(e) if e.is_retryable() => match wait_connected(client).await {
                Ok(()) => {
                    outcome = client.delete(path, None).await;
                    continue;
                }
                Err(e) if e.is_session_terminal() => return Ok(()),
                Err(e) => return Err(e),
            },
            Err(e) => return Err(Error::Client(e)),
        }
        debug!(path, "lock node deleted");
        return Ok(());
    }
}

/// Queues the delete of `path` and returns, the delete followed to the end in the background
/// ([`spawn_delete`]); outside a tokio runtime, deletes it here.
pub(crate) async fn delete_queued(client: &Client, path: &str) -> Result<()> {
    match spawn_delete(client.clone(), path.to_owned()) {
        Some(_following) => Ok(()),
        None => delete_until_gone(client, path).await,
    }
}

/// Deletes `path` and returns once it is gone (or the session ended). The delete goes on in
/// the background if this future is dropped.
pub(crate) async fn delete_and_wait(client: &Client, path: &str) -> Result<()> {
    match spawn_delete(client.clone(), path.to_owned()) {
        Some(task) => task.await.unwrap_or(Ok(())),
        None => delete_until_gone(client, path).await,
    }
}

/// Queues the delete of `path` now and follows it to the end ([`delete_until_gone`]) in a
/// background task. Outside a tokio runtime nothing can follow it (and a request nobody
/// awaits is not sent): the node then lives until the session ends, and a warning says so.
pub(crate) fn spawn_delete(client: Client, path: String) -> Option<JoinHandle<Result<()>>> {
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => {
            let first = client.delete(&path, None);
            Some(rt.spawn(async move {
                let r = follow_delete(&client, &path, first).await;
                if let Err(e) = &r {
                    warn!(path, error = %e, "could not delete lock node");
                }
                r
            }))
        }
        Err(_) => {
            warn!(
                path,
                "dropped outside a tokio runtime: the lock node stays until the session ends"
            );
            None
        }
    }
}
