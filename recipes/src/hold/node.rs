//! Whether a node we created is still ours, and how a hold's task stops.

use std::sync::Mutex as StdMutex;
use std::time::Duration;

use tokio::sync::oneshot;
use zookeeper_tokio::{Client, Error as ClientError, ErrorKind, OneshotWatcher};

/// How soon a look at our node that failed on a live connection is tried again.
pub(crate) const RECHECK: Duration = Duration::from_millis(20);

/// What one look at our node found.
pub(crate) enum NodeCheck {
    /// It is there and our session owns it; the watcher hears of its next change.
    Ours(OneshotWatcher),
    /// It is gone, or another session's node has its name.
    Gone,
    /// No answer that tells: the connection (or the session) decides what comes next.
    Unknown(ClientError),
}

/// Reads `node` and watches it: ours while it exists and `owner`, our session, owns it. A
/// fresh read, not a listing: a stale listing must not make a second holder.
pub(crate) async fn check_node(client: &Client, node: &str, owner: i64) -> NodeCheck {
    match client.get_data_and_watch(node).await {
        Ok((_, stat, watcher)) if stat.ephemeral_owner == owner => NodeCheck::Ours(watcher),
        Ok(_) => NodeCheck::Gone,
        Err(e) if e == ErrorKind::NoNode => NodeCheck::Gone,
        Err(e) => NodeCheck::Unknown(e),
    }
}

/// The handle that stops a hold's background task.
pub(crate) struct TaskStop(StdMutex<Option<oneshot::Sender<()>>>);

impl TaskStop {
    /// A stop, and what the task selects on to hear it.
    pub(crate) fn new() -> (TaskStop, oneshot::Receiver<()>) {
        let (tx, rx) = oneshot::channel();
        (TaskStop(StdMutex::new(Some(tx))), rx)
    }

    /// Stops the task; true when it had not been stopped before.
    pub(crate) fn stop(&self) -> bool {
        match self.0.lock().unwrap_or_else(|e| e.into_inner()).take() {
            Some(stop) => {
                let _ = stop.send(());
                true
            }
            None => false,
        }
    }
}
