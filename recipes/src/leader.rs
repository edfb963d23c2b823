//! Leader election, compatible with Curator's `LeaderLatch` (`_c_<uuid>-latch-<seq>` children
//! whose data is the participant id).
//!
//! We lead only when our node sorts first **and** a fresh read of it shows our session as its
//! `ephemeralOwner` (a stale listing must not make a second leader). A follower watches only
//! the participant just before it. Leadership is suspended on a disconnect and lost on the
//! same signals as a lock: session expired or closed, disconnected longer than the session
//! timeout, or our node deleted by someone else.

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;
use zookeeper_tokio::{Client, ErrorKind, EventType, SessionState, StateChanges};

use crate::contend::ordered_queue;
use crate::ensure_path::validate;
use crate::error::{Error, Result};
use crate::guard::FencingToken;
use crate::lost::LossReason;
use crate::naming::{attempt_prefix, child_name, join, Layout, CURATOR_LATCH};
use crate::protection::{list_children, PendingNode};
use crate::release::{delete_until_gone, spawn_delete};
use crate::transitions::{changes_stream, Phase, Transitions};

/// Where a participant stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Leadership {
    /// Our node is created; the first look at the queue is under way.
    Starting,
    /// We lead.
    Leader,
    /// Someone else leads; we wait for the participant before us.
    Follower,
    /// The connection is down: a leader must pause until it is `Leader` again.
    Suspended,
    /// Our participation ended without us asking: the latch must be started anew (with a new
    /// client if the session ended).
    Lost(LossReason),
    /// We resigned.
    Closed,
}

impl Leadership {
    /// True when nothing more will happen on this latch.
    pub fn is_final(self) -> bool {
        matches!(self, Leadership::Lost(_) | Leadership::Closed)
    }
}

/// A participant as seen in the election queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Participant {
    /// The id it registered with (its node's data).
    pub id: String,
    /// Its node's name.
    pub node: String,
    /// True for the first in the queue.
    pub is_leader: bool,
}

impl Phase for Leadership {
    // A latch whose state is no longer published is gone.
    const ENDED: Self = Leadership::Closed;

    fn is_final(self) -> bool {
        Leadership::is_final(self)
    }
}

changes_stream! {
    /// Every [`Leadership`] a latch goes through, in order: the current state first, then each
    /// change (a `Suspended` and the `Leader` after it, however quickly the connection came
    /// back), ending after a final state ([`Leadership::Lost`] or [`Leadership::Closed`]).
    /// Also a [`futures_core::Stream`].
    ///
    /// A receiver that falls more than 32 changes behind loses the oldest of them.
    LeadershipChanges of Leadership
}

/// A participant in a leader election on a path.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use zookeeper_recipes::{LeaderLatch, Leadership};
///
/// let servers = "127.0.0.1:2181";
/// # let servers = &zookeeper_testkit::shared_server()
/// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_leader_latch"));
/// let client = zookeeper_tokio::Client::connect(servers).await?;
/// let a = LeaderLatch::start(&client, "/election/scheduler", "node-a").await?;
/// a.await_leadership().await?;
/// println!("{} leads with token {}", a.id(), a.fencing_token());
///
/// // A second participant (normally another process) follows until the leader resigns.
/// let b = LeaderLatch::start(&client, "/election/scheduler", "node-b").await?;
/// let mut changes = b.changes();
/// while changes.next().await != Some(Leadership::Follower) {}
/// a.resign().await?;
/// b.await_leadership().await?;
/// assert!(b.fencing_token() > a.fencing_token());
/// assert_eq!(a.state(), Leadership::Closed);
/// b.resign().await?;
/// # Ok(())
/// # }
/// ```
pub struct LeaderLatch {
    client: Client,
    path: String,
    id: String,
    node: String,
    token: FencingToken,
    state: Arc<Transitions<Leadership>>,
    stop: StdMutex<Option<oneshot::Sender<()>>>,
}

impl std::fmt::Debug for LeaderLatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderLatch")
            .field("node", &self.node)
            .field("id", &self.id)
            .field("state", &self.state())
            .finish()
    }
}

impl LeaderLatch {
    /// Joins the election on `path` as `id`: creates our node (protected like a lock's) and
    /// starts following the queue in a background task.
    pub async fn start(client: &Client, path: &str, id: &str) -> Result<LeaderLatch> {
        validate(path)?;
        let prefix = attempt_prefix(Layout::Curator, CURATOR_LATCH);
        let mut pending = PendingNode::new(client, path, prefix, id.as_bytes());
        pending.send_create();
        pending.created().await?;
        let (node, stat) = pending.keep();
        // Subscribe before reading the state: a transition in between is seen twice at worst
        // (harmless), never missed.
        let session_changes = client.state_changes();
        let session = client.state();
        let state = Arc::new(Transitions::new(Leadership::Starting));
        let (stop_tx, stop_rx) = oneshot::channel();
        let task = Follow {
            client: client.clone(),
            path: path.to_owned(),
            ours: child_name(&node).to_owned(),
            owner: stat.ephemeral_owner,
            state: state.clone(),
        };
        tokio::spawn(task.run(session, session_changes, stop_rx));
        Ok(LeaderLatch {
            client: client.clone(),
            path: path.to_owned(),
            id: id.to_owned(),
            node,
            token: FencingToken(stat.czxid),
            state,
            stop: StdMutex::new(Some(stop_tx)),
        })
    }

    /// Where we stand now.
    pub fn state(&self) -> Leadership {
        self.state.current()
    }

    /// True while we lead (not while suspended).
    pub fn has_leadership(&self) -> bool {
        self.state() == Leadership::Leader
    }

    /// Our id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The full path of our node.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Our node's czxid: grows with every participant that joins later, so a resource can
    /// refuse an old leader.
    pub fn fencing_token(&self) -> FencingToken {
        self.token
    }

    /// Every change of [`Leadership`] from now on, in order, starting with the current state.
    /// Does not borrow the latch.
    pub fn changes(&self) -> LeadershipChanges {
        self.state.changes().into()
    }

    /// Waits until we lead. Fails with [`Error::LatchClosed`] if the latch ends first.
    pub async fn await_leadership(&self) -> Result<()> {
        let mut rx = self.state.watch();
        loop {
            let s = *rx.borrow_and_update();
            if s == Leadership::Leader {
                return Ok(());
            }
            if s.is_final() || rx.changed().await.is_err() {
                return Err(Error::LatchClosed);
            }
        }
    }

    /// Resolves when leadership (or participation) ends for a reason other than
    /// [`resign`](Self::resign); returns the final state. Use it like a lock's `lost()`.
    pub fn lost(&self) -> impl std::future::Future<Output = Leadership> + Send + 'static {
        let mut rx = self.state.watch();
        async move {
            loop {
                let s = *rx.borrow_and_update();
                if s.is_final() || rx.changed().await.is_err() {
                    return *rx.borrow();
                }
            }
        }
    }

    /// The participants in queue order, the leader first.
    pub async fn participants(&self) -> Result<Vec<Participant>> {
        participants(&self.client, &self.path).await
    }

    /// Leaves the election: stops following and deletes our node (retried across reconnects
    /// until it or the session is gone).
    pub async fn resign(&self) -> Result<()> {
        self.halt(Leadership::Closed);
        match spawn_delete(self.client.clone(), self.node.clone()) {
            Some(task) => task.await.unwrap_or(Ok(())),
            None => delete_until_gone(&self.client, &self.node).await,
        }
    }

    fn halt(&self, final_state: Leadership) {
        if let Some(stop) = self.stop.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = stop.send(());
        }
        self.state.set(final_state);
    }
}

impl Drop for LeaderLatch {
    fn drop(&mut self) {
        let was_running = self
            .stop
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some();
        self.halt(Leadership::Closed);
        if was_running {
            spawn_delete(self.client.clone(), self.node.clone());
        }
    }
}

/// The participants of the election on `path`, in queue order, read by anyone.
pub async fn participants(client: &Client, path: &str) -> Result<Vec<Participant>> {
    let children = list_children(client, path).await?.unwrap_or_default();
    let queue = ordered_queue(client, path, &children, &[CURATOR_LATCH]).await?;
    let reads: Vec<_> = queue
        .iter()
        .map(|c| client.get_data(&join(path, &c.name)))
        .collect();
    let mut out = Vec::with_capacity(queue.len());
    for (c, read) in queue.into_iter().zip(reads) {
        match read.await {
            Ok((data, _)) => out.push(Participant {
                id: String::from_utf8_lossy(&data).into_owned(),
                node: c.name,
                is_leader: false,
            }),
            Err(e) if e == ErrorKind::NoNode => {}
            Err(e) => return Err(Error::Client(e)),
        }
    }
    if let Some(first) = out.first_mut() {
        first.is_leader = true;
    }
    Ok(out)
}

/// The background task following the queue.
struct Follow {
    client: Client,
    path: String,
    ours: String,
    owner: i64,
    state: Arc<Transitions<Leadership>>,
}

/// What one look at the queue concluded.
enum Step {
    /// Wait for this watch, then look again.
    Wait(zookeeper_tokio::OneshotWatcher, bool),
    /// Look again now.
    Again,
    /// Participation is over.
    End(LossReason),
}

impl Follow {
    fn set(&self, s: Leadership) {
        self.state.set(s);
    }

    async fn look(&self) -> Step {
        let children = match self.client.get_children(&self.path).await {
            Ok((c, _)) => c,
            Err(e) => return self.on_error(e),
        };
        let queue = match ordered_queue(&self.client, &self.path, &children, &[CURATOR_LATCH]).await
        {
            Ok(q) => q,
            Err(Error::Client(e)) => return self.on_error(e),
            Err(_) => return Step::Again,
        };
        let Some(index) = queue.iter().position(|c| c.name == self.ours) else {
            return Step::End(LossReason::NodeDeleted);
        };
        let leading = index == 0;
        // The leader watches its own node (to hear of its deletion); a follower watches the
        // participant just before it.
        let target = if leading {
            &self.ours
        } else {
            &queue[index - 1].name
        };
        match self
            .client
            .get_data_and_watch(&join(&self.path, target))
            .await
        {
            Ok((_, stat, watcher)) => {
                if leading {
                    if stat.ephemeral_owner != self.owner {
                        return Step::End(LossReason::NodeDeleted);
                    }
                    self.set(Leadership::Leader);
                } else {
                    self.set(Leadership::Follower);
                }
                Step::Wait(watcher, leading)
            }
            Err(e) if e == ErrorKind::NoNode && leading => Step::End(LossReason::NodeDeleted),
            Err(e) if e == ErrorKind::NoNode => Step::Again,
            Err(e) => self.on_error(e),
        }
    }

    fn on_error(&self, e: zookeeper_tokio::Error) -> Step {
        match e.kind() {
            ErrorKind::SessionExpired => Step::End(LossReason::SessionExpired),
            _ if e.is_session_terminal() => Step::End(LossReason::SessionClosed),
            // Connection trouble: the session state decides what comes next.
            _ => Step::Again,
        }
    }

    /// Follows the queue, and the session from `session` on through every transition
    /// `changes` reports: a disconnect healed before this task looks still suspends us.
    async fn run(
        self,
        mut session: SessionState,
        mut changes: StateChanges,
        mut stop: oneshot::Receiver<()>,
    ) {
        let session_timeout = self.client.session_timeout().max(Duration::from_millis(1));
        let mut suspended_since: Option<Instant> = None;
        loop {
            if session.is_terminal() {
                self.set(Leadership::Lost(match session {
                    SessionState::Expired => LossReason::SessionExpired,
                    _ => LossReason::SessionClosed,
                }));
                return;
            }
            if session != SessionState::Connected {
                let since = *suspended_since.get_or_insert_with(Instant::now);
                self.set(Leadership::Suspended);
                tokio::select! {
                    _ = &mut stop => return,
                    // No more transitions: the client is gone, as if closed.
                    next = changes.next() => session = next.unwrap_or(SessionState::Closed),
                    _ = tokio::time::sleep_until(since + session_timeout) => {
                        self.set(Leadership::Lost(LossReason::DisconnectedTooLong));
                        return;
                    }
                }
                continue;
            }
            suspended_since = None;
            let step = tokio::select! {
                _ = &mut stop => return,
                step = self.look() => step,
            };
            // Transitions during the look wait in `changes`: the next one is taken below, and
            // the loop judges each in turn.
            match step {
                Step::End(reason) => {
                    self.set(Leadership::Lost(reason));
                    return;
                }
                Step::Again => {
                    tokio::select! {
                        _ = &mut stop => return,
                        next = changes.next() => session = next.unwrap_or(SessionState::Closed),
                        // Backoff, not synchronisation: a failed look is retried shortly.
                        _ = tokio::time::sleep(Duration::from_millis(20)) => {}
                    }
                }
                Step::Wait(watcher, leading) => {
                    tokio::select! {
                        _ = &mut stop => return,
                        event = watcher => {
                            if leading && event.event_type == EventType::NodeDeleted {
                                self.set(Leadership::Lost(LossReason::NodeDeleted));
                                return;
                            }
                        }
                        // A new watch is set once connected again.
                        next = changes.next() => session = next.unwrap_or(SessionState::Closed),
                    }
                }
            }
        }
    }
}
