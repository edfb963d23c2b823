//! A leader latch for threads.

use std::time::Duration;

use zookeeper_tokio::blocking::Client;

use super::changes::Changes;
use crate::election::participation::Participant;
use crate::error::Result;
use crate::hold::FencingToken;
use crate::hold::{Holding, HoldingChanges};

/// A participant in a leader election that only says who leads (see
/// [`crate::LeaderLatch`]: Curator's `LeaderLatch` layout). Leaves the election when dropped,
/// from any thread.
#[derive(Debug)]
pub struct LeaderLatch {
    /// Taken by `Drop`, to drop it within the session's runtime.
    inner: Option<crate::LeaderLatch>,
    client: Client,
}

impl LeaderLatch {
    /// Joins the election on `path` with the participant id `id`.
    pub fn start(client: &Client, path: &str, id: &str) -> Result<LeaderLatch> {
        let sessions = crate::Sessions::fixed(client.as_async());
        let inner = client.block_on(crate::LeaderLatch::start(sessions, path, id))?;
        Ok(LeaderLatch {
            inner: Some(inner),
            client: client.clone(),
        })
    }

    fn inner(&self) -> &crate::LeaderLatch {
        self.inner.as_ref().expect("present until dropped")
    }

    /// Where this participant stands, the lease read against the clock first.
    pub fn state(&self) -> Holding {
        self.inner().state()
    }

    /// Whether we lead right now, the lease read against the clock first.
    pub fn has_leadership(&self) -> bool {
        self.inner().has_leadership()
    }

    /// The participant id.
    pub fn id(&self) -> &str {
        self.inner().id()
    }

    /// Our node's path.
    pub fn node(&self) -> String {
        self.inner().node()
    }

    /// Our node's fencing token (its czxid).
    pub fn fencing_token(&self) -> FencingToken {
        self.inner().fencing_token()
    }

    /// Every [`Holding`] from now on, in order, as a blocking iterator.
    pub fn changes(&self) -> Changes<HoldingChanges> {
        let _entered = self.client.enter();
        Changes::new(self.inner().changes(), &self.client)
    }

    /// Blocks until we lead (see [`crate::LeaderLatch::await_leadership`]).
    pub fn await_leadership(&self) -> Result<()> {
        self.client.block_on(self.inner().await_leadership())
    }

    /// Blocks until we lead, for at most `timeout`: false if we did not by then.
    pub fn await_leadership_timeout(&self, timeout: Duration) -> Result<bool> {
        self.client
            .block_on(self.inner().await_leadership_timeout(timeout))
    }

    /// Blocks until leadership ends after we led (see [`crate::LeaderLatch::lost`]).
    pub fn wait_lost(&self) -> Holding {
        let lost = {
            let _entered = self.client.enter();
            self.inner().lost()
        };
        self.client.block_on(lost)
    }

    /// The participants, leader first.
    pub fn participants(&self) -> Result<Vec<Participant>> {
        self.client.block_on(self.inner().participants())
    }

    /// Leaves the election: deletes our node (see [`crate::LeaderLatch::resign`]).
    pub fn resign(&self) -> Result<()> {
        self.client.block_on(self.inner().resign())
    }
}

impl Drop for LeaderLatch {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            let _entered = self.client.enter();
            drop(inner);
        }
    }
}
