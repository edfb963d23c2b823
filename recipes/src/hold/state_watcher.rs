//! The latest state of a hold, for readers who only need that: a `watch` receiver read
//! against the lease clock on every look.

use std::sync::Arc;

use tokio::sync::watch;

/// Reads the state now, after checking what the clock alone can tell (a session's lease run
/// out), publishing the change if there is one. What makes every look at a hold, from any
/// thread, read lost on the first look after a pause, before any task of the process ran.
pub(crate) type Refresh<S> = Arc<dyn Fn() -> S + Send + Sync>;

/// The latest state of a hold, read against the lease clock on every look: unlike a bare
/// `tokio::sync::watch::Receiver`, whose value is what a task last published, a look through it
/// right after a pause past the session timeout reads lost, from any thread, before any task of
/// the process has run again. It keeps only the latest state: a disconnect healed before anyone
/// looked leaves no trace (the `changes` streams see every transition).
pub struct StateWatcher<S> {
    rx: watch::Receiver<S>,
    refresh: Refresh<S>,
}

impl<S> Clone for StateWatcher<S> {
    fn clone(&self) -> Self {
        StateWatcher {
            rx: self.rx.clone(),
            refresh: self.refresh.clone(),
        }
    }
}

impl<S: std::fmt::Debug + Copy> std::fmt::Debug for StateWatcher<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateWatcher")
            .field("latest", &*self.rx.borrow())
            .finish()
    }
}

impl<S: Copy + Send + Sync + 'static> StateWatcher<S> {
    pub(crate) fn new(rx: watch::Receiver<S>, refresh: Refresh<S>) -> StateWatcher<S> {
        StateWatcher { rx, refresh }
    }

    /// The state now, the lease checked against the clock first.
    pub fn get(&self) -> S {
        (self.refresh)()
    }

    /// The state now (as [`get`](Self::get)), marked seen: [`changed`](Self::changed) waits
    /// for the next change after it.
    pub fn get_and_update(&mut self) -> S {
        (self.refresh)();
        *self.rx.borrow_and_update()
    }

    /// Waits until the state changes from the one last seen, the lease checked first (a look
    /// after a pause finds the loss at once). Fails once the hold is gone and nothing more
    /// will be published.
    pub async fn changed(&mut self) -> Result<(), watch::error::RecvError> {
        (self.refresh)();
        self.rx.changed().await
    }

    /// Waits until `ready` accepts the state, the lease checked first, and returns that state.
    /// Fails once the hold is gone and nothing more will be published.
    pub async fn wait_for(
        &mut self,
        ready: impl FnMut(&S) -> bool,
    ) -> Result<S, watch::error::RecvError> {
        (self.refresh)();
        self.rx.wait_for(ready).await.map(|state| *state)
    }
}
