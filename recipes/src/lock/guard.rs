//! What a holder gets: a guard on its node, with the fencing token and the lost signal.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex as StdMutex};

use zookeeper_tokio::{Client, ErrorKind, MultiOp, MultiResult, Stat};

use crate::error::{Error, Result};
use crate::hold::{FencingToken, HoldState, Holding, HoldingChanges, StateWatcher};
use crate::lock::loss_monitor::LossMonitor;
use crate::metrics::{Hold, Recipe};
use crate::node::release::{delete_and_wait, spawn_delete};
use crate::spans::{self, Op};

/// A node we hold, shared by every reentrant guard on it.
pub(crate) struct HeldNode {
    client: Client,
    path: String,
    stat: Stat,
    wakeups: u32,
    holds: StdMutex<usize>,
    monitor: LossMonitor,
}

impl HeldNode {
    /// A node of `recipe` just granted.
    pub(crate) fn new(
        client: &Client,
        recipe: Recipe,
        path: String,
        stat: Stat,
        wakeups: u32,
    ) -> Arc<HeldNode> {
        let monitor = LossMonitor::start(
            client,
            &path,
            stat.ephemeral_owner,
            FencingToken(stat.czxid),
            Hold::granted(recipe),
        );
        Arc::new(HeldNode {
            client: client.clone(),
            path,
            stat,
            wakeups,
            holds: StdMutex::new(0),
            monitor,
        })
    }

    pub(crate) fn is_lost(&self) -> bool {
        self.monitor.current().is_final()
    }

    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// The client of the session that holds the node.
    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    pub(crate) fn fencing_token(&self) -> FencingToken {
        FencingToken(self.stat.czxid)
    }

    pub(crate) fn state(&self) -> Holding {
        self.monitor.current()
    }

    /// The node's state as every reader sees it.
    pub(crate) fn holding(&self) -> std::sync::Arc<HoldState> {
        self.monitor.holding()
    }

    pub(crate) fn state_changes(&self) -> HoldingChanges {
        self.monitor.changes()
    }

    pub(crate) fn lost(&self) -> impl Future<Output = Holding> + Send + 'static {
        self.monitor.lost()
    }

    pub(crate) fn suspended(&self) -> impl Future<Output = Holding> + Send + 'static {
        self.monitor.suspended()
    }

    /// The first state from now on that `stop` accepts, or `Lost` (see `LossMonitor::until`).
    pub(crate) fn until(
        &self,
        stop: fn(Holding) -> bool,
    ) -> impl Future<Output = Holding> + Send + 'static {
        self.monitor.until(stop)
    }

    pub(crate) fn check_op(&self) -> MultiOp {
        MultiOp::check(&self.path, -1)
    }

    /// `ops` after a check of our node, in one transaction (see
    /// [`LockGuard::guarded_multi`]).
    pub(crate) async fn guarded_multi(&self, ops: Vec<MultiOp>) -> Result<Vec<MultiResult>> {
        // Known lost (the lease ran out, the session ended, the node went): the server would
        // refuse it, or the write would wait on a connection that cannot bring the lock back.
        if self.is_lost() {
            return Err(Error::NotHeld {
                path: self.path.clone(),
            });
        }
        let mut transaction = Vec::with_capacity(ops.len() + 1);
        transaction.push(self.check_op());
        transaction.extend(ops);
        match self.client.multi(transaction).await {
            Ok(mut results) => {
                results.remove(0);
                Ok(results)
            }
            Err(e) if matches!(e.kind(), ErrorKind::MultiFailed { index: 0, .. }) => {
                Err(Error::NotHeld {
                    path: self.path.clone(),
                })
            }
            // Numbered among the caller's operations: the check is ours, not theirs.
            Err(e) => Err(Error::Client(e.multi_relative_to(1))),
        }
    }
}

/// Where a lock handle remembers the node it holds, so that acquiring again through the same
/// handle re-enters instead of queueing behind itself.
pub(crate) type HoldSlot = Arc<StdMutex<Option<Arc<HeldNode>>>>;

fn lock<T>(m: &StdMutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Re-enters the node held in `slot`, if it is still trustworthy. A lost node is forgotten so
/// that the next acquisition makes a fresh one.
pub(crate) fn reenter(slot: &HoldSlot) -> Option<LockGuard> {
    let mut held = lock(slot);
    let node = held.as_ref()?.clone();
    if node.is_lost() {
        *held = None;
        return None;
    }
    *lock(&node.holds) += 1;
    Some(LockGuard {
        node,
        slot: Some(slot.clone()),
        done: false,
    })
}

/// The first guard on a freshly acquired node, remembered in `slot` when there is one.
pub(crate) fn first_guard(node: Arc<HeldNode>, slot: Option<&HoldSlot>) -> LockGuard {
    *lock(&node.holds) = 1;
    if let Some(slot) = slot {
        *lock(slot) = Some(node.clone());
    }
    LockGuard {
        node,
        slot: slot.cloned(),
        done: false,
    }
}

/// Proof of holding a lock, a read or write lock, or a semaphore lease.
///
/// * [`fencing_token`](LockGuard::fencing_token): hand it to the resource you protect.
/// * [`lost`](LockGuard::lost): resolves when the lock can no longer be trusted; select on it
///   next to the protected work. [`suspended`](LockGuard::suspended) resolves earlier, on a
///   disconnect; [`state_changes`](LockGuard::state_changes) reports every transition.
/// * [`state`](LockGuard::state): checked against the clock on every call, so a holder that
///   looks before each step of its work never acts after its lease ran out.
/// * [`guarded_multi`](LockGuard::guarded_multi): ZooKeeper writes that the server applies
///   only while our lock node exists.
/// * [`release`](LockGuard::release): deletes the node; dropping the guard does the same in
///   the background. Either way the delete is retried across reconnects until the node (or
///   the session) is gone.
///
/// # What to do at each signal
///
/// | Signal | Meaning | The protected work should |
/// |---|---|---|
/// | [`Holding::Held`] | connected, the lease runs, our node is ours | go on |
/// | [`Holding::Suspended`] | disconnected: still ours only if a server takes the session back in time | pause; when in doubt, stop (Curator's advice): nothing proves the lock is ours until it reads `Held` again |
/// | [`Holding::Lost`] | the lease ran out, the session ended, or our node was deleted | stop at once: another contender may hold the lock |
///
/// The lease ([`zookeeper_tokio::Client::lease_deadline`]) ends no later than the server
/// could expire our session, so `Lost` comes before anyone else can be granted the lock —
/// as long as this process runs. A process that is paused (a long GC, `SIGSTOP`) cannot
/// react while paused: its first look at [`state`](LockGuard::state) after resuming says
/// `Lost`, but work already under way may have crossed the deadline. Resources that must
/// never see two holders should check the [`fencing_token`](LockGuard::fencing_token), or,
/// for state kept in ZooKeeper, be written through
/// [`guarded_multi`](LockGuard::guarded_multi).
///
/// Guards made by [`reenter`](LockGuard::reenter) share one node, deleted when the last of
/// them goes.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use zookeeper_recipes::{Holding, LossReason, Mutex};
///
/// let servers = "127.0.0.1:2181";
/// # let servers = &zookeeper_testkit::shared_server()
/// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_lock_guard"));
/// let client = zookeeper_tokio::Client::connect(servers).await?;
/// let mutex = Mutex::new(&client, "/locks/report")?;
/// let guard = mutex.acquire().await?;
/// assert_eq!(guard.state(), Holding::Held);
///
/// // Reentrant only when asked: one node, two holds.
/// let again = guard.reenter()?;
/// assert_eq!((again.path(), guard.hold_count()), (guard.path(), 2));
/// again.release().await?;
///
/// // The lost signal fires the moment the lock cannot be trusted; here someone deletes our
/// // node (a session expiry or a long disconnect does the same).
/// let lost = guard.lost();
/// client.delete(guard.path(), None).await?;
/// assert_eq!(lost.await, Holding::Lost(LossReason::NodeDeleted));
/// assert_eq!(guard.state(), Holding::Lost(LossReason::NodeDeleted));
/// # Ok(())
/// # }
/// ```
#[must_use = "the lock is released when the guard is dropped"]
pub struct LockGuard {
    node: Arc<HeldNode>,
    slot: Option<HoldSlot>,
    done: bool,
}

impl fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockGuard")
            .field("path", &self.node.path)
            .field("fencing_token", &self.fencing_token())
            .field("state", &self.state())
            .finish()
    }
}

impl LockGuard {
    /// The fencing token of this grant: our node's czxid.
    pub fn fencing_token(&self) -> FencingToken {
        self.node.fencing_token()
    }

    /// The full path of our node.
    pub fn path(&self) -> &str {
        &self.node.path
    }

    /// The stat of our node when it was created.
    pub fn stat(&self) -> &Stat {
        &self.node.stat
    }

    /// How many watch notifications the acquisition waited through before it was granted
    /// (zero when it was uncontended). A waiter watches the contender in its way and the one
    /// it would wait for next, so this is at most two per contender in our way that released
    /// or gave up: a mutex waiter with several ahead is typically woken twice, once when the
    /// second-nearest goes and once by its grant.
    pub fn wakeups(&self) -> u32 {
        self.node.wakeups
    }

    /// How many guards share this node (this one and those made by [`reenter`](Self::reenter)).
    pub fn hold_count(&self) -> usize {
        *lock(&self.node.holds)
    }

    /// Another hold on the same node, for code that must take the lock again while it holds
    /// it (a recursive call, or a read under one's own write lock): the node is deleted when
    /// every guard on it is gone. Fails with [`Error::NotHeld`] once the lock can no longer be
    /// trusted. Reentrancy is only this: an `acquire` through the lock's handle contends like
    /// any other caller, so tasks sharing a handle exclude each other.
    pub fn reenter(&self) -> Result<LockGuard> {
        if self.node.is_lost() {
            return Err(Error::NotHeld {
                path: self.node.path.clone(),
            });
        }
        *lock(&self.node.holds) += 1;
        Ok(LockGuard {
            node: self.node.clone(),
            slot: self.slot.clone(),
            done: false,
        })
    }

    /// Whether the lock can be trusted right now. Checks the session's lease against the
    /// monotonic clock on every call, before anything a background task published: once the
    /// lease has run out this reads `Lost`, also on the first look of a process resuming
    /// from a pause, before any round trip. The node itself is only watched (for a deletion
    /// by someone else) once [`lost`](Self::lost), [`suspended`](Self::suspended),
    /// [`state_watcher`](Self::state_watcher) or [`state_changes`](Self::state_changes) has
    /// been called.
    pub fn state(&self) -> Holding {
        self.node.state()
    }

    /// A watcher of the latest [`Holding`], read against the lease clock on every look (as
    /// [`state`](Self::state) is), from any thread. It keeps only the latest value: a
    /// disconnect healed before the watcher looks leaves no trace in it. Use
    /// [`state_changes`](Self::state_changes) to see every transition.
    pub fn state_watcher(&self) -> StateWatcher<Holding> {
        self.node.monitor.watcher()
    }

    /// Every [`Holding`] from now on, in order: the current one first, then each
    /// transition (a `Suspended` and the `Held` after it, however quickly the connection came
    /// back), ending after `Lost`. Does not borrow the guard.
    pub fn state_changes(&self) -> HoldingChanges {
        self.node.state_changes()
    }

    /// Resolves with the final state when the lock can no longer be trusted:
    /// [`Holding::Lost`] when the session's lease ran out (no later than its end: before the
    /// server can expire the session and grant the lock to anyone else), the session expired
    /// or was closed, or someone else deleted our node; [`Holding::Released`] when the lock
    /// was released first. Every poll checks the lease first, so a future polled after a
    /// pause is ready at once. The future does not borrow the guard.
    pub fn lost(&self) -> impl Future<Output = Holding> + Send + 'static {
        self.node.lost()
    }

    /// Resolves as soon as the lock is not plainly held: on a disconnect (the early warning;
    /// it may come back) or on loss. Returns the state that ended the wait: a suspension that
    /// happened after this call still resolves it with `Suspended` even if the lock is held
    /// again by the time the future is polled. The future does not borrow the guard.
    ///
    /// At `Suspended`, pause the protected work, and stop it when in doubt: until the state
    /// reads `Held` again nothing proves the lock is still ours.
    pub fn suspended(&self) -> impl Future<Output = Holding> + Send + 'static {
        self.node.suspended()
    }

    /// A `check` of our lock node, to put first in a [`Client::multi`] of your own: the server
    /// applies the transaction only while the node exists, that is while the lock is ours
    /// (the node goes with our session, or when released or deleted, and no later holder can
    /// bring it back). See [`guarded_multi`](Self::guarded_multi).
    pub fn check_op(&self) -> MultiOp {
        self.node.check_op()
    }

    /// Writes `ops` in one transaction that the server applies only while this lock is ours:
    /// our lock node is checked first, in the same transaction, on our session. A holder
    /// that outlived its lock (paused, partitioned, or deleted by someone else) has its
    /// write refused with [`Error::NotHeld`], and nothing of `ops` is applied: at once,
    /// without sending anything, when the guard already reads lost; by the server otherwise.
    ///
    /// This is the strongest fencing ZooKeeper offers for state kept in ZooKeeper itself:
    /// the check and the writes are one atomic step at the server, so no pause or delay on
    /// the client's side can slip a stale write in after the lock changed hands. (For
    /// resources outside ZooKeeper, use the [`fencing_token`](Self::fencing_token).)
    ///
    /// Returns the results of `ops` (without the check's). When one of `ops` fails, the
    /// error is the client's [`ErrorKind::MultiFailed`], whose index is that of the failing
    /// operation in `ops` (the check is not counted): your first operation is 0. A write that
    /// failed with connection loss may have been applied, like any ZooKeeper write.
    pub async fn guarded_multi(&self, ops: Vec<MultiOp>) -> Result<Vec<MultiResult>> {
        self.node.guarded_multi(ops).await
    }

    /// The node this guard holds, shared.
    pub(crate) fn held(&self) -> Arc<HeldNode> {
        self.node.clone()
    }

    /// Releases this hold. When it is the last hold on the node, deletes the node, and returns
    /// once the node is gone: the next contender can be granted, and the process may exit,
    /// the moment this returns.
    ///
    /// The delete is retried across reconnects until the node or the session is gone (a
    /// session that ended took the node with it: that is a success too); it waits at most
    /// twice the session timeout for a server. A failure retrying cannot mend (the parent's
    /// ACL forbidding the delete) is returned, and the node then goes with the session. If
    /// this future is dropped before it is done, the delete goes on in the background, as it
    /// does for a guard dropped without a release.
    ///
    /// Dropping the guard instead releases without waiting: the delete is queued at once,
    /// ahead of anything this session asks next (acquiring again included: both go out in one
    /// write, a round trip saved), and followed in the background, so the program must not
    /// stop its runtime before it is answered.
    pub async fn release(mut self) -> Result<()> {
        let Some(node) = self.let_go() else {
            return Ok(());
        };
        let path = node.path.clone();
        let releasing = async move { delete_and_wait(&node.client, &node.path).await };
        spans::traced(Op::Release, "lock", &path, releasing).await
    }

    /// Drops one hold; returns the node when it was the last one.
    fn let_go(&mut self) -> Option<Arc<HeldNode>> {
        self.done = true;
        let slot = self.slot.as_ref().map(|s| lock(s));
        let mut holds = lock(&self.node.holds);
        *holds = holds.saturating_sub(1);
        if *holds > 0 {
            return None;
        }
        drop(holds);
        if let Some(mut slot) = slot {
            if slot.as_ref().is_some_and(|n| Arc::ptr_eq(n, &self.node)) {
                *slot = None;
            }
        }
        self.node.monitor.stop();
        Some(self.node.clone())
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Some(node) = self.let_go() {
            spawn_delete(node.client.clone(), node.path.clone());
        }
    }
}
