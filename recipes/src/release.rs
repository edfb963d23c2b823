//! Guaranteed deletion of our node: retried across reconnects until the node or the session
//! is gone, in a task of its own so that neither a dropped guard nor a cancelled `release`
//! leaves the node behind.

use tokio::task::JoinHandle;
use tracing::{debug, warn};
use zookeeper_tokio::{Client, ErrorKind};

use crate::error::{Error, Result};
use crate::session::wait_connected;

/// Deletes `path`, retrying on connection loss. Succeeds once the node is gone: deleted by us,
/// already absent, or removed with our ended session (it is ephemeral).
pub(crate) async fn delete_until_gone(client: &Client, path: &str) -> Result<()> {
    loop {
        match client.delete(path, None).await {
            Ok(()) => {}
            Err(e) if e == ErrorKind::NoNode => {}
            Err(e) if e.is_session_terminal() => return Ok(()),
            Err(e) if e.is_retryable() => match wait_connected(client).await {
                Ok(()) => continue,
                Err(e) if e.is_session_terminal() => return Ok(()),
                Err(e) => return Err(e),
            },
            Err(e) => return Err(Error::Client(e)),
        }
        debug!(path, "lock node deleted");
        return Ok(());
    }
}

/// Starts [`delete_until_gone`] in the background. Outside a tokio runtime nothing can run it:
/// the node then lives until the session ends, and a warning says so.
pub(crate) fn spawn_delete(client: Client, path: String) -> Option<JoinHandle<Result<()>>> {
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => Some(rt.spawn(async move {
            let r = delete_until_gone(&client, &path).await;
            if let Err(e) = &r {
                warn!(path, error = %e, "could not delete lock node");
            }
            r
        })),
        Err(_) => {
            warn!(
                path,
                "dropped outside a tokio runtime: the lock node stays until the session ends"
            );
            None
        }
    }
}
