//! A leader selector for threads: the leader's work is a closure run on a thread of its own
//! for each term, as Curator's `takeLeadership` is.
//!
//! A thread cannot be cancelled. When a term must end (leadership suspended or lost, as
//! [`CancelOn`] says; interrupted; the selector closed), the work is told so through its
//! [`LeaderContext`] and the term ends when the closure returns: our node is kept until then,
//! so no other participant leads while our work still runs (unless the session itself ends,
//! which the context's [`state`](LeaderContext::state) reads at once). The queueing, requeueing
//! and states are the async [`crate::LeaderSelector`]'s, on the same path layout.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use tokio::sync::{oneshot, Notify};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};
use zookeeper_tokio::blocking::Client;
use zookeeper_tokio::{ErrorKind, MultiOp, MultiResult};

use super::changes::Changes;
use crate::election::participation::{read_participants, Participant};
use crate::election::selector::CancelOn;
use crate::error::{Error, Result};
use crate::hold::FencingToken;
use crate::hold::LossReason;
use crate::hold::{publisher, Transitions};
use crate::hold::{Holding, HoldingChanges};
use crate::lock::guard::HeldNode;
use crate::metrics::Recipe;
use crate::node::naming::CURATOR_LOCK;

/// How long a failed attempt to queue waits before the next (as the async selector does).
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// What a term's work is given: its fencing token, whether it must stop, and fenced writes.
pub struct LeaderContext {
    node: Arc<HeldNode>,
    client: Client,
    id: String,
    term: u64,
    stop: CancellationToken,
    cancel_on: CancelOn,
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
    /// This term's fencing token: our lock node's czxid; every later term has a larger one.
    pub fn fencing_token(&self) -> FencingToken {
        self.node.fencing_token()
    }

    /// The term's number for this selector, from 1.
    pub fn term(&self) -> u64 {
        self.term
    }

    /// The participant id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Our lock node's path.
    pub fn node(&self) -> &str {
        self.node.path()
    }

    /// The blocking client of the selector's session.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The term's lock state, the lease read against the clock first.
    pub fn state(&self) -> Holding {
        self.node.state()
    }

    /// Whether the work must stop now: the term was ended (interrupted, closed), or the lock
    /// is no longer trusted as [`CancelOn`] asks (read against the lease clock, so a look
    /// after a pause past the session timeout reads true). Look before each step.
    pub fn is_cancelled(&self) -> bool {
        self.stop.is_cancelled()
            || match self.cancel_on {
                CancelOn::Suspended => self.state() != Holding::Held,
                CancelOn::Lost => self.state().is_final(),
            }
    }

    /// Blocks until the work must stop, for at most `timeout`; true if it must.
    pub fn wait_cancelled(&self, timeout: Duration) -> bool {
        if self.is_cancelled() {
            return true;
        }
        let stop = self.stop.clone();
        let stopped = self.client.block_on(async move {
            tokio::time::timeout(timeout, stop.cancelled())
                .await
                .is_ok()
        });
        stopped || self.is_cancelled()
    }

    /// A `check` of our lock node, for a transaction of your own.
    pub fn check_op(&self) -> MultiOp {
        self.node.check_op()
    }

    /// Writes `ops` in one transaction the server applies only while we lead (see
    /// [`crate::LockGuard::guarded_multi`]).
    pub fn guarded_multi(&self, ops: Vec<MultiOp>) -> Result<Vec<MultiResult>> {
        self.client.block_on(self.node.guarded_multi(ops))
    }
}

/// Configures a [`LeaderSelector`]; see [`LeaderSelector::builder`].
#[derive(Debug)]
pub struct LeaderSelectorBuilder {
    client: Client,
    path: String,
    id: String,
    auto_requeue: bool,
    cancel_on: CancelOn,
}

impl LeaderSelectorBuilder {
    /// The participant id, written into our node (empty by default).
    pub fn id(mut self, id: &str) -> Self {
        self.id = id.to_owned();
        self
    }

    /// Queue again after every term (Curator's `autoRequeue()`); off by default.
    pub fn auto_requeue(mut self, yes: bool) -> Self {
        self.auto_requeue = yes;
        self
    }

    /// When the work is told to stop: [`CancelOn::Suspended`] by default.
    pub fn cancel_on(mut self, cancel_on: CancelOn) -> Self {
        self.cancel_on = cancel_on;
        self
    }

    /// Joins the election: queues for leadership on the session's thread, and runs `leader`
    /// on a thread of its own for every term won. The term ends when `leader` returns (or
    /// panics); it should return soon after its context reads cancelled.
    pub fn start<F>(self, leader: F) -> Result<LeaderSelector>
    where
        F: FnMut(LeaderContext) + Send + 'static,
    {
        let mutex = crate::Mutex::new(crate::Sessions::fixed(self.client.as_async()), &self.path)?
            .with_data(self.id.as_bytes())
            .recorded_as(Recipe::LeaderSelector);
        let shared = Arc::new(Shared {
            state: publisher(Holding::Waiting),
            term: StdMutex::new(None),
            requeue: Notify::new(),
            requeue_asked: AtomicBool::new(false),
            close: CancellationToken::new(),
        });
        let selection = Selection {
            mutex,
            leader: Some(leader),
            client: self.client.clone(),
            shared: shared.clone(),
            path: self.path.clone(),
            id: self.id.clone(),
            auto_requeue: self.auto_requeue,
            cancel_on: self.cancel_on,
        };
        let task = {
            let _entered = self.client.enter();
            tokio::spawn(selection.run())
        };
        Ok(LeaderSelector {
            client: self.client,
            path: self.path,
            id: self.id,
            shared,
            task: StdMutex::new(Some(task)),
        })
    }
}

/// A participant in a leader election that runs a closure on a thread while it leads (see
/// [`crate::LeaderSelector`]; Curator's `LeaderSelector` layout). Dropping it leaves the
/// election in the background; [`close`](Self::close) waits.
pub struct LeaderSelector {
    client: Client,
    path: String,
    id: String,
    shared: Arc<Shared>,
    task: StdMutex<Option<JoinHandle<()>>>,
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
    /// A selector on `path`; configure it, then [`start`](LeaderSelectorBuilder::start) it.
    pub fn builder(client: &Client, path: &str) -> LeaderSelectorBuilder {
        LeaderSelectorBuilder {
            client: client.clone(),
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

    /// True while the work runs and leadership is plainly held, read against the lease
    /// clock (see [`crate::LeaderSelector::has_leadership`]).
    pub fn has_leadership(&self) -> bool {
        self.state() == Holding::Held
            && lock(&self.shared.term)
                .as_ref()
                .is_some_and(|(_, node)| node.state() == Holding::Held)
    }

    /// Every state from now on, in order, as a blocking iterator.
    pub fn changes(&self) -> Changes<HoldingChanges> {
        Changes::new(
            HoldingChanges::new(self.shared.state.changes(), None),
            &self.client,
        )
    }

    /// The participant id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Queues again after a term ended; false when queued or leading already, or ended.
    pub fn requeue(&self) -> bool {
        if self.state() != Holding::Idle {
            return false;
        }
        if !self.shared.requeue_asked.swap(true, Ordering::SeqCst) {
            self.shared.requeue.notify_one();
        }
        true
    }

    /// Tells the current term's work to stop (Curator's `interruptLeadership()`); the term
    /// ends when it returns.
    pub fn interrupt_leadership(&self) {
        if let Some((stop, _)) = lock(&self.shared.term).as_ref() {
            stop.cancel();
        }
    }

    /// The participants in queue order, the leader first.
    pub fn participants(&self) -> Result<Vec<Participant>> {
        self.client.block_on(read_participants(
            self.client.as_async(),
            &self.path,
            CURATOR_LOCK,
        ))
    }

    /// The current leader, if anyone leads.
    pub fn leader(&self) -> Result<Option<Participant>> {
        Ok(self.participants()?.into_iter().next())
    }

    /// Leaves the election: tells the work to stop if it runs, and returns once it returned
    /// and our node is deleted (or the session ended). Not from the work itself, which this
    /// would wait for: the work returns instead (and drops the selector, or asks another
    /// thread to close it).
    pub fn close(&self) {
        self.shared.close.cancel();
        let task = lock(&self.task).take();
        if let Some(task) = task {
            let _ = self.client.block_on(task);
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
    /// The running term's stop signal and node.
    term: StdMutex<Option<(CancellationToken, Arc<HeldNode>)>>,
    requeue: Notify,
    requeue_asked: AtomicBool,
    close: CancellationToken,
}

/// The task on the session's thread: queue, lead, repeat.
struct Selection<F> {
    mutex: crate::Mutex,
    /// The work, lent to each term's thread and handed back when it returns.
    leader: Option<F>,
    client: Client,
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

impl<F: FnMut(LeaderContext) + Send + 'static> Selection<F> {
    async fn run(mut self) {
        let mut terms = 0u64;
        let end = loop {
            self.shared.state.set(Holding::Waiting);
            let guard = match self.mutex.acquire_until(self.shared.close.clone()).await {
                Ok(Some(guard)) => guard,
                Ok(None) => break Holding::Released,
                Err(e) if e.is_session_terminal() => {
                    warn!(path = %self.path, id = %self.id, error = %e, "leader selection ends with the session");
                    break Holding::Lost(loss_of(&e));
                }
                Err(e) => {
                    warn!(path = %self.path, id = %self.id, error = %e, "could not queue for leadership; trying again");
                    tokio::select! {
                        biased;
                        _ = self.shared.close.cancelled() => break Holding::Released,
                        _ = tokio::time::sleep(RETRY_AFTER) => continue,
                    }
                }
            };
            terms += 1;
            if let TermEnd::Closed = self.lead(guard, terms).await {
                break Holding::Released;
            }
            if self.leader.is_none() {
                // No thread could be started for the work: nothing can lead again.
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

    /// One term: runs the work on its thread until it returns, then lets go of the lock.
    async fn lead(&mut self, guard: crate::LockGuard, term: u64) -> TermEnd {
        let node = guard.held();
        // Made before the work starts, so a suspension from the grant on counts.
        let mut signal: Pin<Box<dyn Future<Output = Holding> + Send>> = match self.cancel_on {
            CancelOn::Suspended => Box::pin(node.suspended()),
            CancelOn::Lost => Box::pin(node.lost()),
        };
        let stop = CancellationToken::new();
        *lock(&self.shared.term) = Some((stop.clone(), node.clone()));
        let token = node.fencing_token();
        self.shared.state.set(Holding::Held);
        info!(path = %self.path, id = %self.id, %token, term, "leading");
        let context = LeaderContext {
            node: node.clone(),
            client: self.client.clone(),
            id: self.id.clone(),
            term,
            stop: stop.clone(),
            cancel_on: self.cancel_on,
        };
        let (done_tx, mut done) = oneshot::channel();
        let mut leader = self.leader.take().expect("handed back after every term");
        let started = std::thread::Builder::new()
            .name("zookeeper-leader".into())
            .spawn(move || {
                let panicked = catch_unwind(AssertUnwindSafe(|| leader(context))).is_err();
                let _ = done_tx.send((leader, panicked));
            });
        if let Err(e) = started {
            error!(path = %self.path, id = %self.id, error = %e, "could not start a thread for the leader's work");
        }
        let mut finished = |outcome: std::result::Result<(F, bool), _>| match outcome {
            Ok((leader, panicked)) => {
                self.leader = Some(leader);
                if panicked {
                    TermEnd::Panicked
                } else {
                    TermEnd::Returned
                }
            }
            Err(_) => TermEnd::Panicked,
        };
        let end = tokio::select! {
            biased;
            _ = self.shared.close.cancelled() => TermEnd::Closed,
            state = &mut signal => TermEnd::Cancelled(state),
            _ = stop.cancelled() => TermEnd::Interrupted,
            outcome = &mut done => finished(outcome),
        };
        if !matches!(end, TermEnd::Returned | TermEnd::Panicked) {
            // The work keeps our node until it returns: no one else leads meanwhile.
            stop.cancel();
            finished((&mut done).await);
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

/// Why the session behind a failed acquisition is over.
fn loss_of(e: &Error) -> LossReason {
    match e {
        Error::Client(e) if *e == ErrorKind::SessionExpired => LossReason::SessionExpired,
        Error::Disconnected => LossReason::LeaseExpired,
        _ => LossReason::SessionClosed,
    }
}
