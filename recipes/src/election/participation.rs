//! Leader election, compatible with Curator's `LeaderLatch` (`_c_<uuid>-latch-<seq>` children
//! whose data is the participant id).
//!
//! We lead only when our node sorts first **and** a fresh read of it shows our session as its
//! `ephemeralOwner` (a stale listing must not make a second leader). A follower watches only
//! the participant just before it and the one before that (see `contend`). Leadership is
//! suspended on a disconnect and lost on the same signals as a lock (see
//! `hold::session_follower`): the session's lease ran out, the session expired or was closed,
//! or our node was deleted by someone else.

use std::sync::Arc;

use tokio::sync::oneshot;
use tracing::{info, warn};
use zookeeper_tokio::{Client, ErrorKind, EventType};

use crate::contend::{predecessor, wait_turn, AheadRule, Line, Patience, Rule};
use crate::error::{Error, Result};
use crate::hold::{
    check_node, FencingToken, HoldState, Holding, HoldingChanges, LossReason, Narrate, NodeCheck,
    SessionFollower, TaskStop, RECHECK,
};
use crate::metrics;
use crate::node::ensure_path::validate;
use crate::node::naming::{attempt_prefix, peer_queue, Layout, CURATOR_LATCH};
use crate::node::path::{child_name, join};
use crate::node::protection::{list_children, PendingNode};
use crate::node::release::{delete_and_wait, spawn_delete};
use crate::spans::{self, Op};

/// The rule a latch hands the contention core: the participant just before us blocks us.
pub(crate) const RULE: AheadRule = predecessor;

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

/// One participation in an election, on one session: our node, and the task that follows the
/// queue for it. It ends with its session; the public [`LeaderLatch`](crate::LeaderLatch)
/// starts a new one on the next session when it can.
pub(crate) struct Participation {
    client: Client,
    path: String,
    id: String,
    node: String,
    token: FencingToken,
    holding: Arc<HoldState>,
    stop: TaskStop,
}

impl std::fmt::Debug for Participation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Participation")
            .field("node", &self.node)
            .field("id", &self.id)
            .field("state", &self.state())
            .finish()
    }
}

impl Participation {
    /// Joins the election on `path` as `id`: creates our node (protected like a lock's) and
    /// starts following the queue in a background task.
    pub(crate) async fn start(client: &Client, path: &str, id: &str) -> Result<Participation> {
        validate(path)?;
        let prefix = attempt_prefix(client, Layout::Curator, CURATOR_LATCH);
        let mut pending = PendingNode::new(client, path, prefix, id.as_bytes());
        let joining = async {
            pending.send_create();
            pending.created().await
        };
        spans::traced(Op::Join, "leader_latch", path, joining).await?;
        let (node, stat) = pending.keep();
        let follower = SessionFollower::start(client);
        let narrator = LatchNarrator {
            path: path.to_owned(),
            node: node.clone(),
            token: FencingToken(stat.czxid),
        };
        let holding = HoldState::new(Holding::Joining, client, narrator);
        let (stop, stop_rx) = TaskStop::new();
        let task = Follow {
            client: client.clone(),
            path: path.to_owned(),
            ours: child_name(&node).to_owned(),
            owner: stat.ephemeral_owner,
            holding: holding.clone(),
        };
        tokio::spawn(task.run(follower, stop_rx));
        Ok(Participation {
            client: client.clone(),
            path: path.to_owned(),
            id: id.to_owned(),
            node,
            token: FencingToken(stat.czxid),
            holding,
            stop,
        })
    }

    /// Where we stand now. Checks the session's lease against the monotonic clock on every
    /// call, before anything the background task published: once the lease has run out this
    /// reads `Lost`, also on the first look of a process resuming from a pause.
    pub(crate) fn state(&self) -> Holding {
        self.holding.current()
    }

    /// True while we lead (not while suspended, nor once the lease ran out).
    pub(crate) fn has_leadership(&self) -> bool {
        self.state() == Holding::Held
    }

    /// The client of this participation's session.
    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    /// The full path of our node.
    pub(crate) fn node(&self) -> &str {
        &self.node
    }

    /// Our node's czxid: grows with every participant that joins later, so a resource can
    /// refuse an old leader.
    pub(crate) fn fencing_token(&self) -> FencingToken {
        self.token
    }

    /// Every change of [`Holding`] from now on, in order, starting with the current state;
    /// the lease is checked before each, so the first look after a pause past the session
    /// reads `Lost`. Does not borrow the latch.
    pub(crate) fn changes(&self) -> HoldingChanges {
        self.holding.changes()
    }

    /// Waits until we lead. Fails with [`Error::LatchLost`] (session-terminal when the
    /// session ended) if the latch loses its place first, [`Error::LatchClosed`] if it is
    /// closed first.
    pub(crate) async fn await_leadership(&self) -> Result<()> {
        match self.holding.wait_for(|state| state == Holding::Held).await {
            Holding::Held => Ok(()),
            Holding::Lost(reason) => Err(Error::LatchLost { reason }),
            _ => Err(Error::LatchClosed),
        }
    }

    /// Resolves when leadership (or participation) ends for a reason other than
    /// [`resign`](Self::resign); returns the final state. Use it like a lock's `lost()`: it
    /// resolves no later than the session's lease runs out, and every poll checks the lease
    /// first.
    pub(crate) fn lost(&self) -> impl std::future::Future<Output = Holding> + Send + 'static {
        self.holding.finished()
    }

    /// The participants in queue order, the leader first.
    pub(crate) async fn participants(&self) -> Result<Vec<Participant>> {
        participants(&self.client, &self.path).await
    }

    /// Replaces our node's data with `data` while we lead (see
    /// [`LeaderLatch::proclaim`](crate::LeaderLatch::proclaim)).
    pub(crate) async fn proclaim(&self, data: &[u8]) -> Result<()> {
        if self.state() != Holding::Held {
            return Err(Error::NotLeader {
                path: self.node.clone(),
            });
        }
        // Our node exists only while it is ours (ephemeral, named with our attempt's GUID),
        // and nobody is granted leadership before it is gone: the write's own existence
        // check at the server is the guard.
        match self.client.set_data(&self.node, data, None).await {
            Ok(_) => Ok(()),
            Err(e) if e == ErrorKind::NoNode => Err(Error::NotLeader {
                path: self.node.clone(),
            }),
            Err(e) => Err(Error::Client(e)),
        }
    }

    /// Leaves the election: stops following and deletes our node (retried across reconnects
    /// until it or the session is gone).
    pub(crate) async fn resign(&self) -> Result<()> {
        self.halt(Holding::Released);
        delete_and_wait(&self.client, &self.node).await
    }

    /// Stops following and ends in `final_state`; true when it was still following.
    fn halt(&self, final_state: Holding) -> bool {
        let was_running = self.stop.stop();
        self.holding.set(final_state);
        was_running
    }
}

impl Drop for Participation {
    fn drop(&mut self) {
        if self.halt(Holding::Released) {
            spawn_delete(self.client.clone(), self.node.clone());
        }
    }
}

/// The participants of the election on `path`, in queue order, read by anyone.
pub async fn participants(client: &Client, path: &str) -> Result<Vec<Participant>> {
    read_participants(client, path, CURATOR_LATCH).await
}

/// The participants queued under `path` with nodes named by `marker` (Curator's layout), in
/// queue order, each with the id its node holds; the first leads.
pub(crate) async fn read_participants(
    client: &Client,
    path: &str,
    marker: &str,
) -> Result<Vec<Participant>> {
    let children = list_children(client, path).await?.unwrap_or_default();
    let queue = peer_queue(Layout::Curator, &children, &[marker], None).contenders;
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

/// What the metrics count of a latch's move from `old` to `new`. Every move into `Held` is
/// a gain and every move out of it a loss (a suspension included, as Curator's `LeaderLatch`
/// listeners see it), so gains minus losses is the number of latches leading now.
fn record_leadership(old: Holding, new: Holding) {
    match (old, new) {
        (Holding::Held, Holding::Held) => {}
        (_, Holding::Held) => metrics::leadership_gained(),
        (Holding::Held, new) => metrics::leadership_lost(match new {
            Holding::Suspended => "suspended",
            Holding::Lost(reason) => reason.label(),
            Holding::Released => "resigned",
            Holding::Joining | Holding::Waiting | Holding::Idle | Holding::Held => "follower",
        }),
        _ => {}
    }
}

/// What a latch's log lines and metrics say of its moves: the changes someone chasing an
/// incident needs.
struct LatchNarrator {
    path: String,
    node: String,
    token: FencingToken,
}

impl Narrate for LatchNarrator {
    fn moved(&self, old: Holding, new: Holding) {
        record_leadership(old, new);
        let (path, node, token) = (&*self.path, child_name(&self.node), self.token);
        match new {
            Holding::Held => info!(path = %path, node = %node, %token, "leadership gained"),
            Holding::Lost(reason) => {
                warn!(path = %path, node = %node, %token, %reason, was = %old, "leadership lost: stop leading")
            }
            Holding::Suspended if old == Holding::Held => warn!(
                path = %path,
                node = %node,
                %token,
                "leadership suspended: connection lost; pause leading"
            ),
            Holding::Released if old == Holding::Held => {
                info!(path = %path, node = %node, %token, "leadership given up")
            }
            _ => {}
        }
    }
}

/// The background task following the queue.
struct Follow {
    client: Client,
    path: String,
    ours: String,
    owner: i64,
    holding: Arc<HoldState>,
}

/// What one step of following concluded.
enum Step {
    /// We lead: wait for this watch on our node, then look again.
    Lead(zookeeper_tokio::OneshotWatcher),
    /// Look again after a short pause.
    Again,
    /// Participation is over.
    End(LossReason),
}

impl Follow {
    fn set(&self, s: Holding) {
        self.holding.set(s);
    }

    /// Waits in the queue until we are first (see `contend`), as a follower once a watch on the
    /// participant before us is set; then leads if a fresh read of our node shows it is ours.
    async fn follow(&self) -> Step {
        spans::traced(
            Op::Elect,
            "leader_latch",
            &self.path,
            self.follow_untraced(),
        )
        .await
    }

    async fn follow_untraced(&self) -> Step {
        let line = Line {
            client: &self.client,
            dir: &self.path,
            layout: Layout::Curator,
            markers: &[CURATOR_LATCH],
        };
        let turn = wait_turn(
            line,
            &self.ours,
            None,
            Patience::Forever,
            Rule::Ahead(RULE),
            |_| self.set(Holding::Waiting),
        )
        .await;
        match turn {
            Ok(_) => self.lead().await,
            Err(Error::Client(e)) => self.on_error(e),
            Err(Error::NodeDeleted { .. }) => Step::End(LossReason::NodeDeleted),
            Err(Error::SequenceWrapped { .. }) => Step::End(LossReason::SequenceWrapped),
            // Connection trouble: the session state decides what comes next.
            Err(_) => Step::Again,
        }
    }

    /// First in the queue: we lead only if our node is still there and ours (a stale listing
    /// must not make a second leader). The read also watches it, to hear of its deletion.
    async fn lead(&self) -> Step {
        match check_node(&self.client, &join(&self.path, &self.ours), self.owner).await {
            NodeCheck::Ours(watcher) => {
                self.set(Holding::Held);
                Step::Lead(watcher)
            }
            NodeCheck::Gone => Step::End(LossReason::NodeDeleted),
            NodeCheck::Unknown(e) => self.on_error(e),
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

    /// Follows the queue, and the session through `follower`: a disconnect healed before
    /// this task looks still suspends us. Any session signal interrupts the step under way,
    /// and the next one looks afresh.
    async fn run(self, mut follower: SessionFollower, mut stop: oneshot::Receiver<()>) {
        loop {
            if !follower.is_connected() {
                self.set(Holding::Suspended);
                let signal = tokio::select! {
                    biased;
                    _ = &mut stop => return,
                    signal = follower.next() => signal,
                };
                if !self.holding.follow(signal) {
                    return;
                }
                continue;
            }
            let step = tokio::select! {
                biased;
                _ = &mut stop => return,
                signal = follower.next() => {
                    if !self.holding.follow(signal) {
                        return;
                    }
                    continue;
                }
                step = self.follow() => step,
            };
            match step {
                Step::End(reason) => {
                    self.set(Holding::Lost(reason));
                    return;
                }
                Step::Again => {
                    tokio::select! {
                        biased;
                        _ = &mut stop => return,
                        signal = follower.next() => {
                            if !self.holding.follow(signal) {
                                return;
                            }
                        }
                        // Backoff, not synchronisation: a failed look is retried shortly.
                        _ = tokio::time::sleep(RECHECK) => {}
                    }
                }
                Step::Lead(watcher) => {
                    tokio::select! {
                        biased;
                        _ = &mut stop => return,
                        signal = follower.next() => {
                            // A new watch is set once connected again.
                            if !self.holding.follow(signal) {
                                return;
                            }
                        }
                        event = watcher => {
                            if event.event_type == EventType::NodeDeleted {
                                self.set(Holding::Lost(LossReason::NodeDeleted));
                                return;
                            }
                        }
                    }
                }
            }
        }
    }
}
