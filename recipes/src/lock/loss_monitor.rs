//! The lost-lock signal: whether a held node can still be trusted.
//!
//! One task per held node follows the session (see `hold::session_follower`): on a disconnect
//! the node is *suspended* (it may still be ours, but nobody can tell); if a server takes the
//! session back it is held again; once the session's lease runs out, or the session ends,
//! it is *lost*. The task reads every session transition in order, from the moment the node
//! is handed over, so a disconnect healed at once still shows as a suspension. Once somebody
//! asks for the lost signal the task also watches the node itself (a `getData` watch, armed on
//! demand so that a lock nobody watches costs no extra request and no extra notification on
//! release) and reports it lost when someone else deletes it.
//!
//! The task is not the only judge: every look at the state ([`LockGuard::state`], polling
//! [`LockGuard::lost`], the watcher, the change stream) goes through the node's `HoldState`,
//! which checks the lease against the clock first, so a process that was paused past its
//! lease reads `Lost` before any task of it has run again.
//!
//! [`LockGuard::state`]: crate::LockGuard::state
//! [`LockGuard::lost`]: crate::LockGuard::lost

use std::sync::Arc;

use tokio::sync::{oneshot, Notify};
use tracing::{debug, info, warn};
use zookeeper_tokio::{Client, EventType, OneshotWatcher};

use crate::hold::{
    check_node, FencingToken, HoldState, Holding, HoldingChanges, LossReason, Narrate, NodeCheck,
    SessionFollower, SessionSignal, StateWatcher, TaskStop, RECHECK,
};
use crate::metrics::Hold;
use crate::node::path::child_name;

/// What a lock's log lines and metrics say of its moves.
struct LockNarrator {
    /// Our node's full path.
    node: String,
    token: FencingToken,
    hold: Hold,
}

impl Narrate for LockNarrator {
    fn moved(&self, _old: Holding, new: Holding) {
        let path = self.node.rsplit_once('/').map_or("", |(parent, _)| parent);
        let (node, token) = (child_name(&self.node), self.token);
        match new {
            Holding::Released => {
                self.hold.ended(None);
                debug!(path = %path, node = %node, %token, "lock released")
            }
            Holding::Lost(reason) => {
                self.hold.ended(Some(reason.label()));
                warn!(path = %path, node = %node, %token, %reason, "lock lost: stop the work it protects")
            }
            Holding::Suspended => warn!(
                path = %path,
                node = %node,
                %token,
                "lock suspended: connection lost; pause the work it protects"
            ),
            Holding::Held => {
                info!(path = %path, node = %node, %token, "lock held again: reconnected within the lease")
            }
            // A lock's state is only ever held, suspended or over.
            Holding::Joining | Holding::Waiting | Holding::Idle => {}
        }
    }
}

/// The handle on a node's monitor task.
pub(crate) struct LossMonitor {
    holding: Arc<HoldState>,
    arm: Arc<Notify>,
    stop: TaskStop,
}

impl LossMonitor {
    /// Starts watching `path`, a node our session (`owner`) created with fencing token
    /// `token`, granted as `hold`.
    pub(crate) fn start(
        client: &Client,
        path: &str,
        owner: i64,
        token: FencingToken,
        hold: Hold,
    ) -> LossMonitor {
        let follower = SessionFollower::start(client);
        let narrator = LockNarrator {
            node: path.to_owned(),
            token,
            hold,
        };
        let holding = HoldState::new(Holding::Held, client, narrator);
        let arm = Arc::new(Notify::new());
        let (stop, stop_rx) = TaskStop::new();
        let task = Monitor {
            client: client.clone(),
            node: path.to_owned(),
            owner,
            holding: holding.clone(),
        };
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(task.run(follower, arm.clone(), stop_rx));
        }
        LossMonitor { holding, arm, stop }
    }

    /// The state now, the lease checked against the clock first.
    pub(crate) fn current(&self) -> Holding {
        self.holding.current()
    }

    /// The state as every reader sees it.
    pub(crate) fn holding(&self) -> Arc<HoldState> {
        self.holding.clone()
    }

    /// The latest state, read against the lease on every look; also starts watching the node
    /// itself.
    pub(crate) fn watcher(&self) -> StateWatcher<Holding> {
        self.arm.notify_one();
        self.holding.watcher()
    }

    /// Every state from now on, in order, the lease checked before each; also starts watching
    /// the node itself.
    pub(crate) fn changes(&self) -> HoldingChanges {
        self.arm.notify_one();
        self.holding.changes()
    }

    /// Resolves with the final state once the lock is lost (or released); checks the lease
    /// on every poll, so it is ready at once when polled after the lease ran out. Does not
    /// borrow the monitor.
    pub(crate) fn lost(&self) -> impl std::future::Future<Output = Holding> + Send + 'static {
        self.arm.notify_one();
        self.holding.finished()
    }

    /// Resolves with the first state other than `Held` (a suspension counts even if the
    /// connection is back by the time anyone looks), the lease checked on every poll.
    pub(crate) fn suspended(&self) -> impl std::future::Future<Output = Holding> + Send + 'static {
        self.until(|state| state != Holding::Held)
    }

    /// Resolves with the first state from now on that `stop` accepts, or `Lost`, the lease
    /// checked on every poll; also starts watching the node itself.
    pub(crate) fn until(
        &self,
        stop: fn(Holding) -> bool,
    ) -> impl std::future::Future<Output = Holding> + Send + 'static {
        self.arm.notify_one();
        self.holding.first(stop)
    }

    /// Stops the task and tells every receiver the lock was released.
    pub(crate) fn stop(&self) {
        self.holding.set(Holding::Released);
        self.stop.stop();
    }
}

impl Drop for LossMonitor {
    fn drop(&mut self) {
        self.stop();
    }
}

struct Monitor {
    client: Client,
    /// Our node's full path.
    node: String,
    owner: i64,
    holding: Arc<HoldState>,
}

impl Monitor {
    /// Looks at our node and watches it again: `Some(true)` when it is ours, `Some(false)`
    /// when it is gone (the lock is then lost), `None` when the look told nothing
    /// (connection trouble).
    async fn look(&self, node_watch: &mut Option<OneshotWatcher>) -> Option<bool> {
        match check_node(&self.client, &self.node, self.owner).await {
            NodeCheck::Ours(w) => {
                *node_watch = Some(w);
                Some(true)
            }
            NodeCheck::Gone => {
                self.holding.lose(LossReason::NodeDeleted);
                Some(false)
            }
            NodeCheck::Unknown(_) => None,
        }
    }

    /// After a reconnect: held again once the node is known to be ours (when it is watched,
    /// it may have been deleted while we could not hear of it). False when it is gone.
    async fn confirm(
        &self,
        armed: bool,
        node_watch: &mut Option<OneshotWatcher>,
        recheck: &mut bool,
    ) -> bool {
        if armed {
            match self.look(node_watch).await {
                Some(true) => {}
                Some(false) => return false,
                // Connection trouble again (perhaps a disconnect is already queued): stay
                // suspended; look again at the next transition, or shortly.
                None => {
                    *recheck = true;
                    return true;
                }
            }
        }
        self.holding.set(Holding::Held);
        true
    }

    /// Follows the session through `follower`, and the node once `arm` is notified.
    async fn run(
        self,
        mut follower: SessionFollower,
        arm: Arc<Notify>,
        mut stop: oneshot::Receiver<()>,
    ) {
        let mut armed = false;
        let mut recheck = false;
        let mut node_watch: Option<OneshotWatcher> = None;
        loop {
            tokio::select! {
                biased;
                _ = &mut stop => return,
                signal = follower.next() => match signal {
                    SessionSignal::Reconnected => {
                        if !self.confirm(armed, &mut node_watch, &mut recheck).await {
                            return;
                        }
                    }
                    signal => {
                        recheck = false;
                        if !self.holding.follow(signal) {
                            return;
                        }
                    }
                },
                // Backoff, not synchronisation: a failed look is retried shortly.
                _ = tokio::time::sleep(RECHECK), if recheck => {
                    recheck = false;
                    if follower.is_connected()
                        && !self.confirm(armed, &mut node_watch, &mut recheck).await
                    {
                        return;
                    }
                }
                _ = arm.notified(), if !armed => {
                    armed = true;
                    // Connection trouble leaves it to the reconnect to look again.
                    if self.look(&mut node_watch).await == Some(false) {
                        return;
                    }
                }
                event = async { node_watch.as_mut().expect("guarded").await }, if node_watch.is_some() => {
                    node_watch = None;
                    match event.event_type {
                        EventType::NodeDeleted => {
                            self.holding.lose(LossReason::NodeDeleted);
                            return;
                        }
                        // A session event: the follower decides.
                        EventType::None => {}
                        // Data changed (someone wrote to our node): keep watching.
                        _ => {
                            if self.look(&mut node_watch).await == Some(false) {
                                return;
                            }
                        }
                    }
                }
            }
        }
    }
}
