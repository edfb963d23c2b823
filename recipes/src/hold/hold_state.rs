//! The state of one hold, as every public reader sees it: whatever a background task last
//! published, corrected by the lease clock on every look.
//!
//! A lock's node, a semaphore's lease and a latch's participation each keep their state in a
//! [`HoldState`]. Their tasks move it (suspended, held again, lost); every reader — a `state()`
//! call, a watcher, a change stream, a `lost()` future — goes through it, and it reads the
//! session's lease first: once the lease has run out the hold reads lost, on the first look
//! after a pause, from any thread, before any task of the process has run again.

use std::future::Future;
use std::sync::Arc;

use zookeeper_tokio::transitions::Transitions;
use zookeeper_tokio::Client;

use super::holding::{publisher, Holding, HoldingChanges};
use super::loss_reason::LossReason;
use super::session_follower::SessionSignal;
use super::session_lease;
use super::state_watcher::{Refresh, StateWatcher};

/// What a hold says (its log lines, its metrics) when its state moves from `old` to `new`.
pub(crate) trait Narrate: Send + Sync + 'static {
    fn moved(&self, old: Holding, new: Holding);
}

/// One hold's state: published for the readers, checked against the session's lease on
/// every look.
pub(crate) struct HoldState {
    state: Transitions<Holding>,
    client: Client,
    narrator: Box<dyn Narrate>,
}

impl HoldState {
    /// A hold in `initial` state, on `client`'s session.
    pub(crate) fn new(initial: Holding, client: &Client, narrator: impl Narrate) -> Arc<HoldState> {
        Arc::new(HoldState {
            state: publisher(initial),
            client: client.clone(),
            narrator: Box::new(narrator),
        })
    }

    /// The state now, the lease checked against the clock first.
    pub(crate) fn current(&self) -> Holding {
        let state = self.state.current();
        if state.is_final() {
            return state;
        }
        match session_lease::loss(&self.client) {
            Some(reason) => {
                self.lose(reason);
                self.state.current()
            }
            None => state,
        }
    }

    /// Moves to `new` (unless the hold is over already), narrating the move; true when it
    /// moved.
    pub(crate) fn set(&self, new: Holding) -> bool {
        match self.state.set(new) {
            Some(old) => {
                self.narrator.moved(old, new);
                true
            }
            None => false,
        }
    }

    /// The hold is over for `reason`.
    pub(crate) fn lose(&self, reason: LossReason) {
        self.set(Holding::Lost(reason));
    }

    /// The connection is down.
    pub(crate) fn suspend(&self) {
        self.set(Holding::Suspended);
    }

    /// Follows a signal of the session: suspended on a disconnect, lost when the session is.
    /// False once the hold is over; a reconnect leaves the state to the caller, who knows
    /// what to look at before the hold is trusted again.
    pub(crate) fn follow(&self, signal: SessionSignal) -> bool {
        match signal {
            SessionSignal::Suspended => {
                self.suspend();
                true
            }
            SessionSignal::Reconnected => true,
            SessionSignal::Lost(reason) => {
                self.lose(reason);
                false
            }
        }
    }

    /// What the readers call before every look.
    fn refresh(self: &Arc<Self>) -> Refresh<Holding> {
        let holding = self.clone();
        Arc::new(move || holding.current())
    }

    /// The latest state, read against the lease on every look.
    pub(crate) fn watcher(self: &Arc<Self>) -> StateWatcher<Holding> {
        self.current();
        StateWatcher::new(self.state.watch(), self.refresh())
    }

    /// Every state from now on, in order, the lease checked before each.
    pub(crate) fn changes(self: &Arc<Self>) -> HoldingChanges {
        self.current();
        HoldingChanges::new(self.state.changes(), Some(self.refresh()))
    }

    /// Resolves with the final state; checks the lease on every poll, so it is ready at once
    /// when polled after the lease ran out. Does not borrow the hold's owner.
    pub(crate) fn finished(self: &Arc<Self>) -> impl Future<Output = Holding> + Send + 'static {
        self.first(|_| false)
    }

    /// Resolves with the first state from now on (the current one included) that `stop`
    /// accepts, or with a final one; the lease checked on every poll. A state that lasted
    /// only a moment counts: the wait follows every transition.
    pub(crate) fn first(
        self: &Arc<Self>,
        stop: fn(Holding) -> bool,
    ) -> impl Future<Output = Holding> + Send + 'static {
        let mut changes = self.changes();
        let holding = self.clone();
        async move {
            let seen = async {
                while let Some(state) = changes.next().await {
                    if stop(state) || state.is_final() {
                        return state;
                    }
                }
                Holding::Released
            };
            tokio::select! {
                biased;
                state = seen => state,
                reason = session_lease::until_over(&holding.client) => {
                    holding.lose(reason);
                    holding.state.current()
                }
            }
        }
    }

    /// Waits until `ready` accepts the state now (read against the lease at every change),
    /// and returns it; a final state ends the wait too.
    pub(crate) async fn wait_for(&self, ready: fn(Holding) -> bool) -> Holding {
        let mut rx = self.state.watch();
        loop {
            let state = self.current();
            rx.borrow_and_update();
            if ready(state) || state.is_final() {
                return state;
            }
            if rx.changed().await.is_err() {
                return Holding::Released;
            }
        }
    }
}
