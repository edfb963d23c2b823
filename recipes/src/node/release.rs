//! Guaranteed deletion of our node: retried across reconnects until the node or the session
//! is gone, and carried on in the background when the guard is dropped or the release
//! cancelled, so that neither leaves the node behind.
//!
//! The first delete is queued on the session when the release happens, not when a task
//! first runs: the client puts requests on the wire in call order, so whatever this process
//! asks of the session afterwards (a new acquisition's create included) reaches the server
//! after the delete.

use std::future::Future;

use tracing::{debug, warn};
use zookeeper_tokio::{Client, ErrorKind};

use crate::error::{Error, Result};
use crate::node::cleanup::run_detached;
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

/// Queues the delete of `path` now; the future returned follows it to the end
/// ([`delete_until_gone`]) and logs a failure retrying cannot mend.
fn queued_delete(
    client: Client,
    path: String,
) -> impl Future<Output = Result<()>> + Send + 'static {
    let first = client.delete(&path, None);
    async move {
        let outcome = follow_delete(&client, &path, first).await;
        if let Err(e) = &outcome {
            warn!(path, error = %e, "could not delete lock node");
        }
        outcome
    }
}

/// Deletes `path` and returns once it is gone (or the session ended). The delete goes on in
/// the background if this future is dropped.
pub(crate) async fn delete_and_wait(client: &Client, path: &str) -> Result<()> {
    let follow = queued_delete(client.clone(), path.to_owned());
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => rt.spawn(follow).await.unwrap_or(Ok(())),
        Err(_) => follow.await,
    }
}

/// Queues the delete of `path` now and follows it to the end in the background, inside a
/// tokio runtime or not (see `cleanup`).
pub(crate) fn spawn_delete(client: Client, path: String) {
    run_detached(queued_delete(client, path));
}
