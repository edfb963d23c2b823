//! Leader selection, compatible with Curator's `LeaderSelector`: a [`Mutex`] on the election
//! path (`_c_<uuid>-lock-<seq>`, whose data is the participant id), held while the leader's
//! work runs, and released when it ends.
//!
//! The work is a future, run in a task of its own, and polled only while leadership is trusted
//! (the state read against the lease clock before every poll, see `hold::fenced_work`): a leader
//! paused past its session is cancelled on its first poll after resuming, never stepped. It
//! is cancelled (dropped at its next await point) when leadership can no longer be trusted: on a disconnect ([`CancelOn::Suspended`],
//! the default, as Curator advises) or only once it is lost ([`CancelOn::Lost`]). Either way
//! the task has stopped before our node is deleted, so the next leader starts after ours
//! stopped; and loss is reported no later than the session's lease runs out, before the server
//! can expire the session and let anyone else lead (see `hold::session_follower`).

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};
use zookeeper_tokio::{Client, ErrorKind, MultiOp, MultiResult};

use crate::election::participation::{read_participants, Participant};
use crate::error::{Error, Result};
use crate::hold::{
    publisher, Fenced, FencedWork, FencingToken, Holding, HoldingChanges, LossReason, Transitions,
};
use crate::lock::guard::{HeldNode, LockGuard};
use crate::lock::mutex::Mutex;
use crate::metrics::Recipe;
use crate::node::naming::CURATOR_LOCK;
use crate::session::sessions::Sessions;
use crate::spans::{self, Op};

/// How long the selector waits before queueing again after an acquisition failed for a reason
/// other than the session's end (our waiting node deleted by someone, a wrapped sequence).
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// When a leader's work is cancelled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CancelOn {
    /// As soon as leadership is not plainly held: on a disconnect, and on loss. Leadership
    /// may still be ours while disconnected, but nothing proves it until a server answers, so
    /// this is Curator's advice (its `LeaderSelectorListenerAdapter` interrupts the leader on
    /// `SUSPENDED`) and the safe default. With auto-requeue the selector queues again and
    /// leads again once connected, under a new node.
    #[default]
    Suspended,
    /// Only once leadership is lost: the session's lease ran out, the session ended, or our
    /// node was deleted. The work runs on through disconnects that heal within the session
    /// timeout (a server failover). Safe against the server expiring the session, as long as
    /// the work reaches an await point promptly: the loss is reported no later than the
    /// lease's end, and the server cannot expire the session sooner. Not against what no
    /// clock can see: while we are cut off, someone deleting our node, or closing our session
    /// with its password, lets another lead at once, and we hear of it only on reconnecting.
    Lost,
}

impl CancelOn {
    /// The states of the term's lock in which the work is cancelled (besides `Lost`, which
    /// always cancels it): what the selector's task waits for, and what every poll of the
    /// work is checked against.
    fn stops_in(self) -> fn(Holding) -> bool {
        match self {
            CancelOn::Suspended => |state| state != Holding::Held,
            CancelOn::Lost => |state| state.is_final(),
        }
    }
}

/// What a leader's work is given: its term's fencing token and the signals that end it.
///
/// The work is cancelled for it when leadership ends (see [`CancelOn`]); these are for work
/// that wants to look by itself (before each step of a long computation between await
/// points), to fence a resource, or to write to ZooKeeper only while leading.
pub struct LeaderContext {
    node: Arc<HeldNode>,
    client: Client,
    id: String,
    term: u64,
}

impl std::fmt::Debug for LeaderContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderContext")
            .field("node", &self.node.path())
            .field("id", &self.id)
            .field("term", &self.term)
            .field("fencing_token", &self.fencing_token())
            .finish()
    }
}

impl LeaderContext {
    /// This term's fencing token: our lock node's czxid. Every later term, of any participant,
    /// has a larger one.
    pub fn fencing_token(&self) -> FencingToken {
        self.node.fencing_token()
    }

    /// Which term of this selector this is: 1 for its first leadership, 2 for the next, ...
    pub fn term(&self) -> u64 {
        self.term
    }

    /// The participant id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Our lock node's full path.
    pub fn node(&self) -> &str {
        self.node.path()
    }

    /// The client of this term's session.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Whether leadership can be trusted right now; checks the session's lease against the
    /// clock on every call (see [`LockGuard::state`]).
    pub fn state(&self) -> Holding {
        self.node.state()
    }

    /// Every state of this term's leadership, in order (see [`LockGuard::state_changes`]).
    pub fn state_changes(&self) -> HoldingChanges {
        self.node.state_changes()
    }

    /// Resolves when leadership is lost (see [`LockGuard::lost`]).
    pub fn lost(&self) -> impl Future<Output = Holding> + Send + 'static {
        self.node.lost()
    }

    /// Resolves when leadership is not plainly held: a disconnect, or loss (see
    /// [`LockGuard::suspended`]).
    pub fn suspended(&self) -> impl Future<Output = Holding> + Send + 'static {
        self.node.suspended()
    }

    /// A `check` of our lock node, to put first in a `multi` of your own (see
    /// [`LockGuard::check_op`]).
    pub fn check_op(&self) -> MultiOp {
        self.node.check_op()
    }

    /// Publishes `data` as our node's data while we lead (etcd's `Proclaim`): every
    /// [`LeaderObserver`](crate::LeaderObserver) then sees it, and the selector's
    /// participants (Curator's included) read it as our id. Written through
    /// [`guarded_multi`](Self::guarded_multi): refused with [`Error::NotHeld`], nothing
    /// written, once the term's lock is lost.
    pub async fn proclaim(&self, data: &[u8]) -> Result<()> {
        let write = MultiOp::set_data(self.node.path(), data, None);
        self.node.guarded_multi(vec![write]).await.map(drop)
    }

    /// Writes `ops` in one transaction the server applies only while we lead (see
    /// [`LockGuard::guarded_multi`]).
    pub async fn guarded_multi(&self, ops: Vec<MultiOp>) -> Result<Vec<MultiResult>> {
        self.node.guarded_multi(ops).await
    }
}

/// Builds a [`LeaderSelector`]: its participant id, whether it queues again after each term,
/// and when its work is cancelled.
#[derive(Debug)]
pub struct LeaderSelectorBuilder {
    sessions: Sessions,
    path: String,
    id: String,
    auto_requeue: bool,
    cancel_on: CancelOn,
}

impl LeaderSelectorBuilder {
    /// The participant id, written into our node (Curator's `setId`; empty by default).
    pub fn id(mut self, id: &str) -> Self {
        self.id = id.to_owned();
        self
    }

    /// Queue again after every term, however it ended (Curator's `autoRequeue()`). Off by
    /// default: the selector leads once, then waits for [`LeaderSelector::requeue`].
    pub fn auto_requeue(mut self, yes: bool) -> Self {
        self.auto_requeue = yes;
        self
    }

    /// When the leader's work is cancelled: [`CancelOn::Suspended`] by default.
    pub fn cancel_on(mut self, cancel_on: CancelOn) -> Self {
        self.cancel_on = cancel_on;
        self
    }

    /// Joins the election: queues for leadership in a background task, and runs `leader` for
    /// every term it wins. The term ends when the future returns (or panics), or when it is
    /// cancelled; then our node is deleted. Must be called within a tokio runtime.
    pub fn start<F, Fut>(self, leader: F) -> Result<LeaderSelector>
    where
        F: FnMut(LeaderContext) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            Error::InvalidArgument("a LeaderSelector must be started within a tokio runtime")
        })?;
        let mutex = Mutex::new(&self.sessions, &self.path)?
            .with_data(self.id.as_bytes())
            .recorded_as(Recipe::LeaderSelector);
        let shared = Arc::new(Shared {
            state: publisher(Holding::Waiting),
            term: StdMutex::new(None),
            requeue: Notify::new(),
            requeue_asked: AtomicBool::new(false),
            close: CancellationToken::new(),
        });
        let task = Selection {
            mutex,
            leader,
            shared: shared.clone(),
            path: self.path.clone(),
            id: self.id.clone(),
            auto_requeue: self.auto_requeue,
            cancel_on: self.cancel_on,
        };
        let task = runtime.spawn(task.run());
        Ok(LeaderSelector {
            sessions: self.sessions,
            path: self.path,
            id: self.id,
            shared,
            task: tokio::sync::Mutex::new(Some(task)),
        })
    }
}

/// A participant in a leader election that runs a future while it leads, as Curator's
/// `LeaderSelector` (beside [`LeaderLatch`](crate::LeaderLatch), which only says who leads).
///
/// Shares its path with Curator's `LeaderSelector` (and `InterProcessMutex`): at most one of
/// them leads at a time, and their participants read each other's ids.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use zookeeper_recipes::{LeaderContext, LeaderSelector};
///
/// let servers = "127.0.0.1:2181";
/// # let servers = &zookeeper_testkit::shared_server()
/// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_leader_selector"));
/// let client = zookeeper_tokio::Client::connect(servers).await?;
/// let (done, mut terms) = tokio::sync::mpsc::unbounded_channel();
/// let selector = LeaderSelector::builder(&client, "/election/compactor")
///     .id("node-a")
///     .auto_requeue(true) // lead again after each term
///     .start(move |ctx: LeaderContext| {
///         let done = done.clone();
///         async move {
///             // Cancelled here if leadership is suspended or lost.
///             println!("term {} with token {}", ctx.term(), ctx.fencing_token());
///             let _ = done.send(ctx.fencing_token());
///         }
///     })?;
/// let first = terms.recv().await.unwrap();
/// let second = terms.recv().await.unwrap();
/// assert!(second > first, "every term has a larger token");
/// selector.close().await;
/// # Ok(())
/// # }
/// ```
pub struct LeaderSelector {
    sessions: Sessions,
    path: String,
    id: String,
    shared: Arc<Shared>,
    task: tokio::sync::Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for LeaderSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderSelector")
            .field("path", &self.path)
            .field("id", &self.id)
            .field("state", &self.state())
            .finish()
    }
}

impl LeaderSelector {
    /// A selector on `path`, in Curator's `LeaderSelector` layout; configure it, then
    /// [`start`](LeaderSelectorBuilder::start) it with the leader's work.
    pub fn builder(sessions: impl Into<Sessions>, path: &str) -> LeaderSelectorBuilder {
        LeaderSelectorBuilder {
            sessions: sessions.into(),
            path: path.to_owned(),
            id: String::new(),
            auto_requeue: false,
            cancel_on: CancelOn::default(),
        }
    }

    /// Where the selector stands now.
    pub fn state(&self) -> Holding {
        self.shared.state.current()
    }

    /// True while the leader's work runs and leadership is plainly held: the term's lock read
    /// against the lease clock (as [`LockGuard::state`] is), so a look right after a pause past
    /// the session reads false, before the selector's task has run again. (`state()` stays
    /// `Held` until that task has ended the term.)
    pub fn has_leadership(&self) -> bool {
        self.state() == Holding::Held
            && lock(&self.shared.term)
                .as_ref()
                .is_some_and(|(_, node)| node.state() == Holding::Held)
    }

    /// Every state from now on, in order, starting with the current one.
    pub fn changes(&self) -> HoldingChanges {
        HoldingChanges::new(self.shared.state.changes(), None)
    }

    /// The participant id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Queues for leadership again after a term ended (Curator's `requeue()`): true when it
    /// did; false when the selector is queued or leading already, or ended.
    pub fn requeue(&self) -> bool {
        if self.state() != Holding::Idle {
            return false;
        }
        if !self.shared.requeue_asked.swap(true, Ordering::SeqCst) {
            self.shared.requeue.notify_one();
        }
        true
    }

    /// Cancels the current term's work, if one runs (Curator's `interruptLeadership()`); the
    /// term then ends as if the work had returned.
    pub fn interrupt_leadership(&self) {
        if let Some((term, _)) = lock(&self.shared.term).as_ref() {
            term.cancel();
        }
    }

    /// The participants in queue order, the leader first, each with its id. Curator's
    /// participants on the same path are among them.
    pub async fn participants(&self) -> Result<Vec<Participant>> {
        let client = self.sessions.live().await?;
        read_participants(&client, &self.path, CURATOR_LOCK).await
    }

    /// The current leader, if anyone leads.
    pub async fn leader(&self) -> Result<Option<Participant>> {
        Ok(self.participants().await?.into_iter().next())
    }

    /// Leaves the election: cancels the work if it runs, waits until it stopped, and deletes
    /// our node (retried across reconnects until it or the session is gone). Dropping the
    /// selector does the same in the background.
    pub async fn close(&self) {
        self.shared.close.cancel();
        if let Some(task) = self.task.lock().await.take() {
            let _ = task.await;
        }
    }
}

impl Drop for LeaderSelector {
    fn drop(&mut self) {
        self.shared.close.cancel();
    }
}

fn lock<T>(m: &StdMutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the selector and its task share.
struct Shared {
    state: Transitions<Holding>,
    /// The running term's cancellation, for [`LeaderSelector::interrupt_leadership`], and its
    /// node, for [`LeaderSelector::has_leadership`].
    term: StdMutex<Option<(CancellationToken, Arc<HeldNode>)>>,
    requeue: Notify,
    requeue_asked: AtomicBool,
    close: CancellationToken,
}

/// The background task: queue, lead, repeat.
struct Selection<F> {
    mutex: Mutex,
    leader: F,
    shared: Arc<Shared>,
    path: String,
    id: String,
    auto_requeue: bool,
    cancel_on: CancelOn,
}

/// How a term ended.
enum TermEnd {
    Returned,
    Panicked,
    Cancelled(Holding),
    Interrupted,
    Closed,
}

impl<F, Fut> Selection<F>
where
    F: FnMut(LeaderContext) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    async fn run(mut self) {
        let mut terms = 0u64;
        let end = loop {
            self.shared.state.set(Holding::Waiting);
            // A close while queued returns once our waiting node is deleted.
            let acquired = self.mutex.acquire_until(self.shared.close.clone()).await;
            let guard = match acquired {
                Ok(Some(guard)) => guard,
                Ok(None) => break Holding::Released,
                Err(e) if e.is_session_terminal() => {
                    warn!(path = %self.path, id = %self.id, error = %e, "leader selection ends with the session");
                    break Holding::Lost(loss_of(&e));
                }
                Err(e) => {
                    warn!(path = %self.path, id = %self.id, error = %e, "could not queue for leadership; trying again");
                    if pause(&self.shared).await {
                        continue;
                    }
                    break Holding::Released;
                }
            };
            terms += 1;
            let path = self.path.clone();
            let term = self.lead(guard, terms);
            if let TermEnd::Closed = spans::traced(Op::Lead, "leader_selector", &path, term).await {
                break Holding::Released;
            }
            if !self.auto_requeue {
                self.shared.state.set(Holding::Idle);
                if !until_requeued(&self.shared).await {
                    break Holding::Released;
                }
            }
        };
        self.shared.state.set(end);
    }

    /// One term: runs the work until it returns or is cancelled, then lets go of the lock.
    async fn lead(&mut self, guard: LockGuard, term: u64) -> TermEnd {
        let node = guard.held();
        let stops = self.cancel_on.stops_in();
        // Made before the work starts, so a suspension from the grant on counts.
        let mut signal = Box::pin(node.until(stops));
        let interrupt = CancellationToken::new();
        *lock(&self.shared.term) = Some((interrupt.clone(), guard.held()));
        let token = node.fencing_token();
        self.shared.state.set(Holding::Held);
        info!(path = %self.path, id = %self.id, %token, term, "leading");
        let context = LeaderContext {
            client: node.client().clone(),
            node,
            id: self.id.clone(),
            term,
        };
        let fenced = FencedWork::new((self.leader)(context), guard.held().holding(), stops);
        let mut work = tokio::spawn(spans::in_current_span(fenced));
        let end = tokio::select! {
            biased;
            _ = self.shared.close.cancelled() => TermEnd::Closed,
            state = &mut signal => TermEnd::Cancelled(state),
            _ = interrupt.cancelled() => TermEnd::Interrupted,
            done = &mut work => match done {
                Ok(Fenced::Returned) => TermEnd::Returned,
                Ok(Fenced::Stopped(state)) => TermEnd::Cancelled(state),
                Err(_) => TermEnd::Panicked,
            },
        };
        if !work.is_finished() {
            // The work has stopped once its task is joined: only then may anyone else lead.
            work.abort();
            let _ = work.await;
        }
        *lock(&self.shared.term) = None;
        match end {
            TermEnd::Returned => {
                info!(path = %self.path, id = %self.id, %token, term, "leadership given up: the work returned")
            }
            TermEnd::Panicked => {
                error!(path = %self.path, id = %self.id, %token, term, "leadership given up: the work panicked")
            }
            TermEnd::Cancelled(state) => {
                warn!(path = %self.path, id = %self.id, %token, term, %state, "leadership cancelled")
            }
            TermEnd::Interrupted => {
                info!(path = %self.path, id = %self.id, %token, term, "leadership interrupted")
            }
            TermEnd::Closed => {
                info!(path = %self.path, id = %self.id, %token, term, "leadership given up: closed")
            }
        }
        // While closing, wait for the deletion (bounded by the session); otherwise not beyond
        // a close: the deletion goes on in the background.
        if let TermEnd::Closed = end {
            let _ = guard.release().await;
        } else {
            tokio::select! {
                biased;
                _ = self.shared.close.cancelled() => {}
                _ = guard.release() => {}
            }
        }
        end
    }
}

/// Waits for [`LeaderSelector::requeue`]; false when closed first.
async fn until_requeued(shared: &Shared) -> bool {
    loop {
        if shared.requeue_asked.swap(false, Ordering::SeqCst) {
            return true;
        }
        tokio::select! {
            biased;
            _ = shared.close.cancelled() => return false,
            _ = shared.requeue.notified() => {}
        }
    }
}

/// Backoff, not synchronisation: a failed acquisition is tried again after a while. False
/// when closed first.
async fn pause(shared: &Shared) -> bool {
    tokio::select! {
        biased;
        _ = shared.close.cancelled() => false,
        _ = tokio::time::sleep(RETRY_AFTER) => true,
    }
}

/// Why the session behind a failed acquisition is over.
fn loss_of(e: &Error) -> LossReason {
    match e {
        Error::Client(e) if *e == ErrorKind::SessionExpired => LossReason::SessionExpired,
        Error::Disconnected => LossReason::LeaseExpired,
        _ => LossReason::SessionClosed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selector_whose_session_ended_is_lost_for_the_sessions_reason() {
        let cases = [
            (
                Error::Client(ErrorKind::SessionExpired.into()),
                LossReason::SessionExpired,
            ),
            (
                Error::Client(ErrorKind::Closed.into()),
                LossReason::SessionClosed,
            ),
            (Error::Disconnected, LossReason::LeaseExpired),
        ];
        for (error, reason) in cases {
            assert!(error.is_session_terminal(), "{error}");
            assert_eq!(Holding::Lost(loss_of(&error)), Holding::Lost(reason));
        }
    }

    #[test]
    fn the_work_stops_in_the_states_its_cancel_on_names() {
        let suspended = CancelOn::Suspended.stops_in();
        let lost = CancelOn::Lost.stops_in();
        let gone = [Holding::Lost(LossReason::NodeDeleted), Holding::Released];
        assert!(!suspended(Holding::Held) && !lost(Holding::Held));
        assert!(suspended(Holding::Suspended) && !lost(Holding::Suspended));
        assert!(gone.into_iter().all(|s| suspended(s) && lost(s)));
    }
}
