//! A held lock (or semaphore lease) for threads.

use std::time::Duration;

use zookeeper_tokio::blocking::Client;
use zookeeper_tokio::Stat;
use zookeeper_tokio::{MultiOp, MultiResult};

use super::changes::Changes;
use crate::error::Result;
use crate::hold::FencingToken;
use crate::hold::StateWatcher;
use crate::hold::{Holding, HoldingChanges};

/// A held lock, read-write lock half or semaphore lease (see [`crate::LockGuard`]); released
/// when dropped, from any thread.
///
/// Its state is the async guard's, read against the session's lease clock on every look:
/// [`state`](Self::state) after a pause past the session timeout reads
/// [`Holding::Lost`], before anything else has run.
#[must_use = "the lock is released when the guard is dropped"]
#[derive(Debug)]
pub struct LockGuard {
    /// Taken by `release`; dropped within the session's runtime otherwise.
    inner: Option<crate::LockGuard>,
    client: Client,
}

impl LockGuard {
    pub(crate) fn new(inner: crate::LockGuard, client: &Client) -> LockGuard {
        LockGuard {
            inner: Some(inner),
            client: client.clone(),
        }
    }

    fn inner(&self) -> &crate::LockGuard {
        self.inner.as_ref().expect("present until released")
    }

    /// The fencing token of this grant: our node's czxid.
    pub fn fencing_token(&self) -> FencingToken {
        self.inner().fencing_token()
    }

    /// The full path of our node.
    pub fn path(&self) -> &str {
        self.inner().path()
    }

    /// The stat of our node when it was created.
    pub fn stat(&self) -> &Stat {
        self.inner().stat()
    }

    /// How many watch notifications the acquisition waited through.
    pub fn wakeups(&self) -> u32 {
        self.inner().wakeups()
    }

    /// How many guards share this node (see [`reenter`](Self::reenter)).
    pub fn hold_count(&self) -> usize {
        self.inner().hold_count()
    }

    /// Another hold on the same node (see [`crate::LockGuard::reenter`]).
    pub fn reenter(&self) -> Result<LockGuard> {
        Ok(LockGuard::new(self.inner().reenter()?, &self.client))
    }

    /// Whether the lock can be trusted right now, the lease checked against the clock first
    /// (see [`crate::LockGuard::state`]).
    pub fn state(&self) -> Holding {
        self.inner().state()
    }

    /// A watcher of the latest state; its `get` reads the lease clock, from any thread.
    pub fn state_watcher(&self) -> StateWatcher<Holding> {
        self.inner().state_watcher()
    }

    /// Every [`Holding`] from now on, in order, as a blocking iterator ending after `Lost`.
    pub fn state_changes(&self) -> Changes<HoldingChanges> {
        let _entered = self.client.enter();
        Changes::new(self.inner().state_changes(), &self.client)
    }

    /// Blocks until the lock can no longer be trusted, and returns the final state, which
    /// says why (see [`crate::LockGuard::lost`]). A call after a pause past the lease returns
    /// at once.
    pub fn wait_lost(&self) -> Holding {
        let lost = {
            let _entered = self.client.enter();
            self.inner().lost()
        };
        self.client.block_on(lost)
    }

    /// [`wait_lost`](Self::wait_lost) for at most `timeout`; `None` while still trusted.
    pub fn wait_lost_timeout(&self, timeout: Duration) -> Option<Holding> {
        let lost = {
            let _entered = self.client.enter();
            self.inner().lost()
        };
        // The timer is made within the runtime, where `block_on` enters it.
        self.client
            .block_on(async move { tokio::time::timeout(timeout, lost).await })
            .ok()
    }

    /// Blocks until the lock is not plainly held: a disconnect (pause the protected work) or
    /// a loss (see [`crate::LockGuard::suspended`]).
    pub fn wait_suspended(&self) -> Holding {
        let suspended = {
            let _entered = self.client.enter();
            self.inner().suspended()
        };
        self.client.block_on(suspended)
    }

    /// A `check` of our lock node for a transaction of your own (see
    /// [`crate::LockGuard::check_op`]).
    pub fn check_op(&self) -> MultiOp {
        self.inner().check_op()
    }

    /// Writes `ops` in one transaction the server applies only while this lock is ours (see
    /// [`crate::LockGuard::guarded_multi`]).
    pub fn guarded_multi(&self, ops: Vec<MultiOp>) -> Result<Vec<MultiResult>> {
        self.client.block_on(self.inner().guarded_multi(ops))
    }

    /// Releases this hold (see [`crate::LockGuard::release`]): returns once our node is gone
    /// (or the session ended).
    pub fn release(mut self) -> Result<()> {
        let inner = self.inner.take().expect("present until released");
        self.client.block_on(inner.release())
    }

    /// The async guard, to use within a runtime instead. Dropped outside the session's
    /// runtime, it cannot follow its delete (see [`crate::LockGuard::release`]).
    pub fn into_async(mut self) -> crate::LockGuard {
        self.inner.take().expect("present until released")
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            // The delete is followed by a task on the session's runtime.
            let _entered = self.client.enter();
            drop(inner);
        }
    }
}
