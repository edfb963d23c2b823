//! The lost-lock signal: whether a held node can still be trusted.
//!
//! One task per held node follows the session state: on a disconnect the node is
//! *suspended* (it may still be ours, but nobody can tell); if the connection is back within
//! the session timeout it is held again; if not, or if the session ends, it is *lost*. The
//! task reads every session transition in order, from the moment the node is handed over, so
//! a disconnect healed at once still shows as a suspension. Once
//! somebody asks for the lost signal the task also watches the node itself (a `getData`
//! watch, armed on demand so that a lock nobody watches costs no extra request and no extra
//! notification on release) and reports it lost when someone else deletes it.

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use tokio::sync::{oneshot, watch, Notify};
use tokio::time::Instant;
use zookeeper_tokio::{Client, ErrorKind, EventType, OneshotWatcher, SessionState, StateChanges};

use crate::transitions::{changes_stream, Phase, Transitions};

/// Whether a lock (or lease, or leadership) can be trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockState {
    /// Connected, and our node is ours.
    Held,
    /// The connection is down: the node may still be ours, but work protected by it should
    /// pause. Becomes `Held` again on reconnect, or `Lost` once the session timeout passes.
    Suspended,
    /// The lock can no longer be trusted; another contender may hold it now.
    Lost(LossReason),
}

/// Why a lock was lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LossReason {
    /// The session expired: the server removed our ephemeral node.
    SessionExpired,
    /// The client was closed, or its authentication failed.
    SessionClosed,
    /// Disconnected for longer than the session timeout: the server has expired the session.
    DisconnectedTooLong,
    /// Our node was deleted by someone else.
    NodeDeleted,
    /// We released it.
    Released,
}

impl LockState {
    /// True only for [`LockState::Held`].
    pub fn is_held(self) -> bool {
        self == LockState::Held
    }
}

impl Phase for LockState {
    // A lock whose state is no longer published was released.
    const ENDED: Self = LockState::Lost(LossReason::Released);

    fn is_final(self) -> bool {
        matches!(self, LockState::Lost(_))
    }
}

changes_stream! {
    /// Every state a lock goes through, in order: the current state first, then each
    /// transition, ending after [`LockState::Lost`]. Unlike [`LockGuard::state_watcher`],
    /// which keeps only the latest state, this sees a suspension even when the connection was
    /// back before anyone looked. Also a [`futures_core::Stream`].
    ///
    /// A receiver that falls more than 32 transitions behind loses the oldest of them.
    ///
    /// [`LockGuard::state_watcher`]: crate::LockGuard::state_watcher
    LockStateChanges of LockState
}

/// The handle on a node's monitor task.
pub(crate) struct LossMonitor {
    state: Arc<Transitions<LockState>>,
    arm: Arc<Notify>,
    stop: StdMutex<Option<oneshot::Sender<()>>>,
}

impl LossMonitor {
    /// Starts watching `path`, a node our session (`owner`) created.
    pub(crate) fn start(client: &Client, path: &str, owner: i64) -> LossMonitor {
        // Subscribe before reading the state: a transition in between is seen twice at worst
        // (harmless), never missed.
        let session_changes = client.state_changes();
        let session = client.state();
        let state = Arc::new(Transitions::new(LockState::Held));
        let arm = Arc::new(Notify::new());
        let (stop_tx, stop_rx) = oneshot::channel();
        let task = Monitor {
            client: client.clone(),
            path: path.to_owned(),
            owner,
            state: state.clone(),
        };
        let arm_rx = arm.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(task.run(session, session_changes, arm_rx, stop_rx));
        }
        LossMonitor {
            state,
            arm,
            stop: StdMutex::new(Some(stop_tx)),
        }
    }

    /// The state now.
    pub(crate) fn current(&self) -> LockState {
        self.state.current()
    }

    /// A receiver of the latest state; also starts watching the node itself.
    pub(crate) fn subscribe(&self) -> watch::Receiver<LockState> {
        self.arm.notify_one();
        self.state.watch()
    }

    /// Every state from now on, in order; also starts watching the node itself.
    pub(crate) fn changes(&self) -> LockStateChanges {
        self.arm.notify_one();
        self.state.changes().into()
    }

    /// Stops the task and tells every receiver the lock was released.
    pub(crate) fn stop(&self) {
        self.state.set(LockState::Lost(LossReason::Released));
        if let Some(stop) = self.stop.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = stop.send(());
        }
    }
}

impl Drop for LossMonitor {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Waits until the state is `Lost` and returns why.
pub(crate) async fn until_lost(mut rx: watch::Receiver<LockState>) -> LossReason {
    loop {
        if let LockState::Lost(reason) = *rx.borrow_and_update() {
            return reason;
        }
        if rx.changed().await.is_err() {
            return match *rx.borrow() {
                LockState::Lost(reason) => reason,
                _ => LossReason::Released,
            };
        }
    }
}

/// Waits for the first state other than `Held` (a suspension counts even if the connection is
/// back by the time anyone looks) and returns it.
pub(crate) async fn until_not_held(mut changes: LockStateChanges) -> LockState {
    while let Some(s) = changes.next().await {
        if s != LockState::Held {
            return s;
        }
    }
    LockState::Lost(LossReason::Released)
}

/// How soon a look at our node that failed on a live connection is tried again.
const RECHECK: Duration = Duration::from_millis(20);

struct Monitor {
    client: Client,
    path: String,
    owner: i64,
    state: Arc<Transitions<LockState>>,
}

/// What one look at the node found.
enum NodeCheck {
    Watching(OneshotWatcher),
    Gone,
    Unknown,
}

impl Monitor {
    fn set(&self, s: LockState) {
        self.state.set(s);
    }

    async fn check_node(&self) -> NodeCheck {
        match self.client.get_data_and_watch(&self.path).await {
            Ok((_, stat, watcher)) if stat.ephemeral_owner == self.owner => {
                NodeCheck::Watching(watcher)
            }
            Ok(_) => NodeCheck::Gone,
            Err(e) if e == ErrorKind::NoNode => NodeCheck::Gone,
            Err(_) => NodeCheck::Unknown,
        }
    }

    /// Follows the session from `session` on, through every transition `changes` reports.
    async fn run(
        self,
        mut session: SessionState,
        mut changes: StateChanges,
        arm: Arc<Notify>,
        mut stop: oneshot::Receiver<()>,
    ) {
        let session_timeout = self.client.session_timeout().max(Duration::from_millis(1));
        let mut suspended_since: Option<Instant> = None;
        let mut armed = false;
        let mut node_watch: Option<OneshotWatcher> = None;
        loop {
            let mut recheck = false;
            match session {
                s if s.is_terminal() => {
                    self.set(LockState::Lost(match s {
                        SessionState::Expired => LossReason::SessionExpired,
                        _ => LossReason::SessionClosed,
                    }));
                    return;
                }
                SessionState::Connected if suspended_since.is_some() => {
                    let mut confirmed = true;
                    if armed {
                        // The node may have been deleted while we could not hear of it.
                        match self.check_node().await {
                            NodeCheck::Watching(w) => node_watch = Some(w),
                            NodeCheck::Gone => {
                                self.set(LockState::Lost(LossReason::NodeDeleted));
                                return;
                            }
                            // Connection trouble again (perhaps a disconnect is already
                            // queued): stay suspended; look again at the next transition,
                            // or shortly.
                            NodeCheck::Unknown => {
                                suspended_since = Some(Instant::now());
                                recheck = true;
                                confirmed = false;
                            }
                        }
                    }
                    if confirmed {
                        suspended_since = None;
                        self.set(LockState::Held);
                    }
                }
                SessionState::Connected => {}
                _ => {
                    if suspended_since.is_none() {
                        suspended_since = Some(Instant::now());
                        self.set(LockState::Suspended);
                    }
                }
            }
            let deadline = suspended_since.map(|t| t + session_timeout);
            let far = Instant::now() + Duration::from_secs(86_400);
            tokio::select! {
                _ = &mut stop => return,
                next = changes.next() => match next {
                    Some(next) => session = next,
                    None => {
                        self.set(LockState::Lost(LossReason::SessionClosed));
                        return;
                    }
                },
                _ = tokio::time::sleep_until(deadline.unwrap_or(far)), if deadline.is_some() => {
                    self.set(LockState::Lost(LossReason::DisconnectedTooLong));
                    return;
                }
                // Backoff, not synchronisation: a failed look is retried shortly.
                _ = tokio::time::sleep(RECHECK), if recheck => {}
                _ = arm.notified(), if !armed => {
                    armed = true;
                    match self.check_node().await {
                        NodeCheck::Watching(w) => node_watch = Some(w),
                        NodeCheck::Gone => {
                            self.set(LockState::Lost(LossReason::NodeDeleted));
                            return;
                        }
                        // Connection trouble: the reconnect branch above looks again.
                        NodeCheck::Unknown => {}
                    }
                }
                event = async { node_watch.as_mut().expect("guarded").await }, if node_watch.is_some() => {
                    node_watch = None;
                    match event.event_type {
                        EventType::NodeDeleted => {
                            self.set(LockState::Lost(LossReason::NodeDeleted));
                            return;
                        }
                        // A session event: the state branch decides.
                        EventType::None => {}
                        // Data changed (someone wrote to our node): keep watching.
                        _ => match self.check_node().await {
                            NodeCheck::Watching(w) => node_watch = Some(w),
                            NodeCheck::Gone => {
                                self.set(LockState::Lost(LossReason::NodeDeleted));
                                return;
                            }
                            NodeCheck::Unknown => {}
                        },
                    }
                }
            }
        }
    }
}
