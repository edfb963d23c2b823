//! A node that stays: created again when deleted, and after session expiry in a new session
//! (Curator's `PersistentNode`).

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};
use zookeeper_tokio::{Client, CreateOptions, ErrorKind, Stat};

use crate::error::{Error, Result};
use crate::node::cleanup::run_detached;
use crate::node::ensure_path::{ensure_path, validate};
use crate::node::release::delete_until_gone;
use crate::session::sessions::Sessions;
use crate::session::wait::{fired, wait_connected};

/// The first wait after a create the server refused for a reason other than a conflict (an
/// ACL, say); doubled up to 5 seconds.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Where a [`PersistentNode`] stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PersistentNodeState {
    /// Being created (at start, after a deletion, in a new session).
    Creating,
    /// The node exists, as ours: its stat when created or adopted.
    Created(Stat),
    /// Another session's ephemeral node holds the path: ours is created once it goes (an
    /// ephemeral node of another session is never taken over: it would vanish with that
    /// session).
    Blocked {
        /// The session holding the path.
        owner: i64,
    },
    /// The server refused the create (an ACL, a missing parent we may not create): tried
    /// again with a backoff.
    Refused(Error),
    /// Stopped for good: closed, or the session ended and no new one could be had.
    Ended(Error),
}

/// A node kept in existence with the given data, as Curator's `PersistentNode`: created at
/// start (its missing parents as containers), created again whenever it is deleted and,
/// with renewing [`Sessions`], in each new session after an expiry, with the latest data given
/// to [`PersistentNode::set_data`]. Non-sequential modes: ephemeral (the usual: a presence
/// that survives expiry), persistent, container, and TTL nodes.
///
/// Unlike Curator's: an existing node is adopted only if it is ours (an ephemeral node of our
/// session, whose create reply was lost) or not ephemeral; another session's ephemeral node is
/// waited out, not taken over (CURATOR-258). The node is watched for as long as the recipe
/// runs, data changes included (CURATOR-258). A node whose session expired is created again
/// in the next one (CURATOR-97). Closing, even right after start with the create under way,
/// leaves no node behind (CURATOR-297).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use zookeeper_recipes::{PersistentNode, Sessions};
/// use zookeeper_tokio::{Client, CreateOptions};
///
/// let servers = "127.0.0.1:2181";
/// # let servers = &zookeeper_testkit::shared_server()
/// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_persistent_node"));
/// // A new session after expiry, and the node with it.
/// let sessions = Sessions::connect(Client::builder(servers)).await?;
/// let node = PersistentNode::start(
///     &sessions,
///     "/services/api/host-1",
///     b"10.0.0.1:8080",
///     CreateOptions::ephemeral(),
/// )?;
/// assert!(node.wait_for_initial_create(Duration::from_secs(10)).await?);
///
/// // Deleted by someone: back at once.
/// sessions.client().delete("/services/api/host-1", None).await?;
/// let mut states = node.states();
/// states.wait_for(|s| matches!(s, zookeeper_recipes::PersistentNodeState::Created(_))).await?;
/// node.close().await?; // gone for good
/// # Ok(())
/// # }
/// ```
pub struct PersistentNode {
    inner: Arc<Inner>,
    task: StdMutex<Option<JoinHandle<()>>>,
}

struct Inner {
    sessions: Sessions,
    path: String,
    options: CreateOptions,
    data: StdMutex<Vec<u8>>,
    state: watch::Sender<PersistentNodeState>,
    /// Wakes the task when the data changes.
    data_changed: tokio::sync::Notify,
}

impl std::fmt::Debug for PersistentNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersistentNode")
            .field("path", &self.inner.path)
            .field("state", &*self.inner.state.borrow())
            .finish()
    }
}

impl PersistentNode {
    /// Starts keeping the node at `path` with `data` (inside a tokio runtime). Sequential
    /// modes are refused: a node that changes name is not one node.
    pub fn start(
        sessions: impl Into<Sessions>,
        path: &str,
        data: &[u8],
        options: CreateOptions,
    ) -> Result<PersistentNode> {
        validate(path)?;
        if options.mode.is_sequential() {
            return Err(Error::InvalidArgument(
                "a persistent node cannot be sequential",
            ));
        }
        let inner = Arc::new(Inner {
            sessions: sessions.into(),
            path: path.to_owned(),
            options,
            data: StdMutex::new(data.to_vec()),
            state: watch::channel(PersistentNodeState::Creating).0,
            data_changed: tokio::sync::Notify::new(),
        });
        let task = tokio::spawn(keep(inner.clone()));
        Ok(PersistentNode {
            inner,
            task: StdMutex::new(Some(task)),
        })
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// Where it stands now.
    pub fn state(&self) -> PersistentNodeState {
        self.inner.state.borrow().clone()
    }

    /// Its states as they change.
    pub fn states(&self) -> watch::Receiver<PersistentNodeState> {
        self.inner.state.subscribe()
    }

    /// The data the node is created with.
    pub fn data(&self) -> Vec<u8> {
        self.inner
            .data
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Waits at most `timeout` for the node to exist as ours: `false` if it does not yet.
    /// Fails if the recipe ended first.
    pub async fn wait_for_initial_create(&self, timeout: Duration) -> Result<bool> {
        let mut states = self.states();
        let created = tokio::time::timeout(
            timeout,
            states.wait_for(|s| {
                matches!(
                    s,
                    PersistentNodeState::Created(_) | PersistentNodeState::Ended(_)
                )
            }),
        )
        .await;
        match created {
            Err(_) => Ok(false),
            Ok(Err(_)) => Err(Error::Closed),
            Ok(Ok(state)) => match &*state {
                PersistentNodeState::Ended(e) => Err(e.clone()),
                _ => Ok(true),
            },
        }
    }

    /// Changes the data: written now if the node exists, and used whenever it is created
    /// again.
    pub fn set_data(&self, data: &[u8]) {
        *self.inner.data.lock().unwrap_or_else(|e| e.into_inner()) = data.to_vec();
        self.inner.data_changed.notify_one();
    }

    /// Stops keeping the node and deletes it (retried across reconnects until it or the
    /// session is gone). A create still under way is answered first: nothing is left behind.
    pub async fn close(&self) -> Result<()> {
        let task = self.task.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(task) = task {
            task.abort();
            // Once it has stopped, no create of it can follow our delete.
            let _ = task.await;
        }
        self.inner
            .state
            .send_replace(PersistentNodeState::Ended(Error::Closed));
        let client = self.inner.sessions.client();
        delete_until_gone(&client, &self.inner.path).await
    }
}

impl Drop for PersistentNode {
    fn drop(&mut self) {
        let task = self.task.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(task) = task else {
            return;
        };
        task.abort();
        let inner = self.inner.clone();
        run_detached(async move {
            let _ = task.await;
            inner
                .state
                .send_replace(PersistentNodeState::Ended(Error::Closed));
            let client = inner.sessions.client();
            if let Err(e) = delete_until_gone(&client, &inner.path).await {
                warn!(path = inner.path, error = %e, "could not delete a dropped persistent node");
            }
        });
    }
}

/// Keeps the node, session after session, until aborted or no session can be had.
async fn keep(inner: Arc<Inner>) {
    let mut client = match inner.sessions.live().await {
        Ok(c) => c,
        Err(e) => {
            inner.state.send_replace(PersistentNodeState::Ended(e));
            return;
        }
    };
    let mut backoff = FIRST_BACKOFF;
    loop {
        match keep_once(&inner, &client).await {
            Ok(()) => backoff = FIRST_BACKOFF,
            Err(e) if e.is_session_terminal() => match inner.sessions.replace(&client).await {
                Ok(next) => {
                    if next.session_id() != client.session_id() {
                        info!(
                            path = inner.path,
                            "creating the node again in a new session"
                        );
                    }
                    client = next;
                    inner.state.send_replace(PersistentNodeState::Creating);
                }
                Err(e) => {
                    inner.state.send_replace(PersistentNodeState::Ended(e));
                    return;
                }
            },
            Err(e) if e.is_retryable() => {
                if let Err(e) = wait_connected(&client).await {
                    debug!(path = inner.path, error = %e, "still cut off");
                }
            }
            Err(e) => {
                warn!(path = inner.path, error = %e, "could not create the node; trying again");
                inner.state.send_replace(PersistentNodeState::Refused(e));
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// Makes the node exist as ours, then watches it until something calls for another look
/// (it was deleted, the data was changed); `Ok` means look again.
async fn keep_once(inner: &Inner, client: &Client) -> Result<()> {
    let path = &inner.path;
    let data = inner.data.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let stat = match client.create(path, &data, &inner.options).await {
        Ok((_, stat)) => stat,
        Err(e) if e == ErrorKind::NoNode => {
            // Missing parents (or a container parent removed meanwhile).
            if let Some(parent) = crate::node::path::parent(path).filter(|p| *p != "/") {
                ensure_path(client, parent).await?;
            }
            return Ok(());
        }
        Err(e) if e == ErrorKind::NodeExists => match adopt(inner, client, &data).await? {
            Some(stat) => stat,
            None => return Ok(()),
        },
        Err(e) => return Err(e.into()),
    };
    debug!(path, czxid = stat.czxid, "persistent node in place");
    inner.state.send_replace(PersistentNodeState::Created(stat));
    // Watch it for as long as it is ours: any event (a data change included) is a reason to
    // look again, not to stop watching.
    loop {
        let (stat, watcher) = client.exists_and_watch(path).await?;
        let Some(stat) = stat else {
            inner.state.send_replace(PersistentNodeState::Creating);
            return Ok(());
        };
        if !owned(inner, client, &stat) {
            return Ok(());
        }
        // The node's fate (or the session's end) before a write to it.
        tokio::select! {
            biased;
            fired = fired(watcher) => fired?,
            _ = inner.data_changed.notified() => {
                let data = inner.data.lock().unwrap_or_else(|e| e.into_inner()).clone();
                match client.set_data(path, &data, None).await {
                    Ok(stat) => {
                        inner.state.send_replace(PersistentNodeState::Created(stat));
                    }
                    Err(e) if e == ErrorKind::NoNode => return Ok(()),
                    Err(e) => return Err(e.into()),
                }
            }
        }
    }
}

/// Whether an existing node counts as ours: not ephemeral, or ephemeral in our session.
fn owned(inner: &Inner, client: &Client, stat: &Stat) -> bool {
    !inner.options.mode.is_ephemeral() || stat.ephemeral_owner == client.session_id().0
}

/// The path is taken: ours (a create whose reply was lost, or a persistent node) gets our data;
/// another session's ephemeral node is waited out. `None`: look again.
async fn adopt(inner: &Inner, client: &Client, data: &[u8]) -> Result<Option<Stat>> {
    let path = &inner.path;
    let (stat, watcher) = client.exists_and_watch(path).await?;
    let Some(stat) = stat else {
        return Ok(None);
    };
    if owned(inner, client, &stat) {
        let stat = match client.set_data(path, data, Some(stat.version)).await {
            Ok(stat) => stat,
            Err(e) if e == ErrorKind::BadVersion || e == ErrorKind::NoNode => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        return Ok(Some(stat));
    }
    if stat.ephemeral_owner == 0 {
        // A persistent node where we keep an ephemeral one: someone else's; wait it out.
        warn!(
            path,
            "a persistent node holds the path of our ephemeral node"
        );
    }
    inner.state.send_replace(PersistentNodeState::Blocked {
        owner: stat.ephemeral_owner,
    });
    fired(watcher).await?;
    Ok(None)
}
