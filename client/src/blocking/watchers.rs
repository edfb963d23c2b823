//! Watches and session states for threads: waits on the async watchers, with and without a
//! bound. None of these needs the session's thread to wait, nor keeps it alive.

use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use crate::state::SessionState;
use crate::watched_event::WatchedEvent;

use super::park;

/// A one-shot watch (see [`crate::OneshotWatcher`]): [`wait`](Self::wait) blocks for its one
/// event. If the session ends first, the event is of type
/// [`EventType::None`](crate::EventType::None) and carries the terminal state.
#[derive(Debug)]
pub struct OneshotWatcher {
    inner: crate::OneshotWatcher,
}

impl OneshotWatcher {
    pub(crate) fn new(inner: crate::OneshotWatcher) -> OneshotWatcher {
        OneshotWatcher { inner }
    }

    /// Blocks until the event.
    pub fn wait(mut self) -> WatchedEvent {
        park::wait(&mut self.inner, None).expect("no deadline")
    }

    /// Blocks until the event, for at most `timeout`; `None` if it did not come by then (the
    /// watch stays set: wait again).
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<WatchedEvent> {
        park::wait(&mut self.inner, Some(deadline(timeout)))
    }

    /// The async watcher, to await it instead.
    pub fn into_async(self) -> crate::OneshotWatcher {
        self.inner
    }
}

/// A persistent watch (see [`crate::PersistentWatcher`]) as a blocking iterator of its
/// events: `next` blocks for the next one, and returns `None` once the watch has ended.
#[derive(Debug)]
pub struct PersistentWatcher {
    inner: crate::PersistentWatcher,
}

impl PersistentWatcher {
    pub(crate) fn new(inner: crate::PersistentWatcher) -> PersistentWatcher {
        PersistentWatcher { inner }
    }

    /// The next event, waiting at most `timeout`: [`RecvTimeoutError::Timeout`] when none
    /// came by then, [`RecvTimeoutError::Disconnected`] once the watch has ended.
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<WatchedEvent, RecvTimeoutError> {
        match park::wait(self.inner.next(), Some(deadline(timeout))) {
            Some(Some(event)) => Ok(event),
            Some(None) => Err(RecvTimeoutError::Disconnected),
            None => Err(RecvTimeoutError::Timeout),
        }
    }

    /// The next event if one is already queued.
    pub fn try_next(&mut self) -> Option<WatchedEvent> {
        self.inner.try_next()
    }

    /// The async stream, to await it instead.
    pub fn into_async(self) -> crate::PersistentWatcher {
        self.inner
    }
}

impl Iterator for PersistentWatcher {
    type Item = WatchedEvent;

    fn next(&mut self) -> Option<WatchedEvent> {
        park::wait(self.inner.next(), None).expect("no deadline")
    }
}

/// Every session state transition, in order (see [`crate::StateChanges`]), as a blocking
/// iterator that ends after a terminal state.
#[derive(Debug)]
pub struct StateChanges {
    inner: crate::StateChanges,
}

impl StateChanges {
    pub(crate) fn new(inner: crate::StateChanges) -> StateChanges {
        StateChanges { inner }
    }

    /// Blocks until a state satisfying `pred`; `None` if the session ended first without one.
    pub fn wait_for(&mut self, pred: impl Fn(SessionState) -> bool) -> Option<SessionState> {
        park::wait(self.inner.wait_for(pred), None).expect("no deadline")
    }

    /// The next state, waiting at most `timeout`: [`RecvTimeoutError::Timeout`] when none
    /// came by then, [`RecvTimeoutError::Disconnected`] after a terminal state.
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<SessionState, RecvTimeoutError> {
        match park::wait(self.inner.next(), Some(deadline(timeout))) {
            Some(Some(state)) => Ok(state),
            Some(None) => Err(RecvTimeoutError::Disconnected),
            None => Err(RecvTimeoutError::Timeout),
        }
    }
}

impl Iterator for StateChanges {
    type Item = SessionState;

    fn next(&mut self) -> Option<SessionState> {
        park::wait(self.inner.next(), None).expect("no deadline")
    }
}

/// `timeout` from now; a timeout too large for the clock waits for ever.
fn deadline(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(60 * 60 * 24 * 365 * 100))
}
