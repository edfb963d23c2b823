//! The leader latch: a participant in an election that, on renewing [`Sessions`], takes part
//! again on the next session when its session ends under it, so that a service keeps one
//! latch for its whole life. Each session's participation is a `Participation` (see
//! `participation`); this keeps the current one and starts the next.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use tracing::info;

use crate::election::participation::{Participant, Participation};
use crate::error::{Error, Result};
use crate::hold::{FencingToken, Holding, HoldingChanges, LossReason};
use crate::session::sessions::Sessions;

/// A participant in a leader election on a path.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use zookeeper_recipes::{Holding, LeaderLatch};
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
/// while changes.next().await != Some(Holding::Waiting) {}
/// a.resign().await?;
/// b.await_leadership().await?;
/// assert!(b.fencing_token() > a.fencing_token());
/// assert_eq!(a.state(), Holding::Released);
/// b.resign().await?;
/// # Ok(())
/// # }
/// ```
///
/// On a `&Client` the latch ends with its session. On renewing [`Sessions`], a latch whose
/// session ends while [`await_leadership`](Self::await_leadership) waits joins again on the
/// next session by itself (a new node, a new fencing token); a leader whose session ended
/// reads `Lost`, and its next `await_leadership` joins again.
pub struct LeaderLatch {
    sessions: Sessions,
    path: String,
    id: String,
    current: StdMutex<Arc<Participation>>,
    resigned: AtomicBool,
}

impl std::fmt::Debug for LeaderLatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderLatch")
            .field("node", &self.node())
            .field("id", &self.id)
            .field("state", &self.state())
            .finish()
    }
}

impl LeaderLatch {
    /// Joins the election on `path` as `id`, on `sessions` (a `&Client`, or [`Sessions`]):
    /// creates our node (protected like a lock's) and starts following the queue in a
    /// background task. On renewing [`Sessions`], a session that ends while we join is
    /// followed by joining on the next one.
    pub async fn start(sessions: impl Into<Sessions>, path: &str, id: &str) -> Result<LeaderLatch> {
        let sessions = sessions.into();
        let first = join(&sessions, path, id).await?;
        Ok(LeaderLatch {
            sessions,
            path: path.to_owned(),
            id: id.to_owned(),
            current: StdMutex::new(Arc::new(first)),
            resigned: AtomicBool::new(false),
        })
    }

    fn current(&self) -> Arc<Participation> {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Where we stand now. Checks the session's lease against the monotonic clock on every
    /// call, before anything the background task published: once the lease has run out this
    /// reads `Lost`, also on the first look of a process resuming from a pause.
    pub fn state(&self) -> Holding {
        self.current().state()
    }

    /// True while we lead (not while suspended, nor once the lease ran out).
    pub fn has_leadership(&self) -> bool {
        self.current().has_leadership()
    }

    /// Our id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The full path of our current node.
    pub fn node(&self) -> String {
        self.current().node().to_owned()
    }

    /// Our current node's czxid: grows with every participant that joins later (and with
    /// every time we join again), so a resource can refuse an old leader.
    pub fn fencing_token(&self) -> FencingToken {
        self.current().fencing_token()
    }

    /// Every change of [`Holding`] of the current participation, in order, starting with
    /// the current state; the lease is checked before each, so the first look after a pause
    /// past the session reads `Lost`. Ends after `Lost` or `Released`: a latch that joins again
    /// afterwards is followed by asking again. Does not borrow the latch.
    pub fn changes(&self) -> HoldingChanges {
        self.current().changes()
    }

    /// Waits until we lead. On renewing [`Sessions`], joins again on the next session when the
    /// session ends first. Fails with [`Error::LatchLost`] (session-terminal when the session
    /// ended) if the latch loses its place and cannot join again, [`Error::LatchClosed`] if it
    /// is closed first.
    pub async fn await_leadership(&self) -> Result<()> {
        loop {
            let participation = self.current();
            match participation.await_leadership().await {
                Err(Error::LatchLost { reason }) if self.joins_again(reason) => {
                    self.join_again(&participation).await?;
                }
                outcome => return outcome,
            }
        }
    }

    /// Waits at most `timeout` until we lead: `Ok(true)` when we do, `Ok(false)` when the
    /// time ran out first (we stay in the election). Returns within the timeout whatever the
    /// connection does. Fails as [`await_leadership`](Self::await_leadership) does.
    pub async fn await_leadership_timeout(&self, timeout: Duration) -> Result<bool> {
        match tokio::time::timeout(timeout, self.await_leadership()).await {
            Ok(r) => r.map(|()| true),
            Err(_) => Ok(false),
        }
    }

    /// Resolves when the current leadership (or participation) ends for a reason other than
    /// [`resign`](Self::resign); returns the final state. Use it like a lock's `lost()`: it
    /// resolves no later than the session's lease runs out, and every poll checks the lease
    /// first.
    pub fn lost(&self) -> impl std::future::Future<Output = Holding> + Send + 'static {
        self.current().lost()
    }

    /// The participants in queue order, the leader first.
    pub async fn participants(&self) -> Result<Vec<Participant>> {
        self.current().participants().await
    }

    /// Publishes `data` as our node's data while we lead, without giving up leadership
    /// (etcd's `Proclaim`): every [`LeaderObserver`](crate::LeaderObserver) then sees it, and
    /// [`participants`](Self::participants) (and Curator's peers) read it as our id. Fails with
    /// [`Error::NotLeader`] when we do not lead now (a follower, suspended, or lost: the state
    /// is read against the lease clock first), or when the server no longer has our node;
    /// nothing is written then. A failure with a lost connection may or may not have been
    /// applied.
    pub async fn proclaim(&self, data: &[u8]) -> Result<()> {
        self.current().proclaim(data).await
    }

    /// Leaves the election: stops following and deletes our node (retried across reconnects
    /// until it or the session is gone); the latch does not join again.
    pub async fn resign(&self) -> Result<()> {
        self.resigned.store(true, Ordering::SeqCst);
        self.current().resign().await
    }

    /// Whether a participation lost for `reason` is followed by a new one: on sessions that
    /// renew, when the session ended or its lease ran out, unless we resigned.
    fn joins_again(&self, reason: LossReason) -> bool {
        self.sessions.renews()
            && !self.resigned.load(Ordering::SeqCst)
            && matches!(
                reason,
                LossReason::SessionExpired | LossReason::LeaseExpired
            )
    }

    /// Replaces `ended` with a participation on a live session: the next one, or the same
    /// one if it turns out alive (the old node is deleted first, by dropping `ended`).
    async fn join_again(&self, ended: &Arc<Participation>) -> Result<()> {
        self.sessions.replace(ended.client()).await?;
        let next = Arc::new(join(&self.sessions, &self.path, &self.id).await?);
        info!(path = %self.path, id = %self.id, node = %next.node(), "joined the election again after the session ended");
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if Arc::ptr_eq(&current, ended) {
            *current = next;
        }
        Ok(())
    }
}

/// A participation on the current session, or on the next ones for as long as sessions end
/// while joining (on renewing [`Sessions`]): a create whose reply was lost to a session that
/// then expired left no node behind, so joining again is all there is to do.
async fn join(sessions: &Sessions, path: &str, id: &str) -> Result<Participation> {
    sessions
        .each_session(|client| async move { Participation::start(&client, path, id).await })
        .await
}
