//! What watches hand to users: one-shot futures and persistent streams.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::{mpsc, oneshot};
use zookeeper_jute::EventType;

use crate::state::SessionState;

/// A change to a watched node, or a session event (`event_type == EventType::None`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchedEvent {
    /// What happened.
    pub event_type: EventType,
    /// The session state when the event was delivered. For node events it is `Connected`; for
    /// `EventType::None` it is the terminal state that ended the watch.
    pub state: SessionState,
    /// The node's path, chroot stripped.
    pub path: String,
}

/// `NodeDeleted /locks/a` for a node event; `session Expired while watching /locks/a` for a
/// session event.
impl std::fmt::Display for WatchedEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.event_type {
            EventType::None => write!(f, "session {} while watching {}", self.state, self.path),
            kind => write!(f, "{} {}", kind.name(), self.path),
        }
    }
}

impl WatchedEvent {
    pub(crate) fn session(state: SessionState, path: &str) -> WatchedEvent {
        WatchedEvent {
            event_type: EventType::None,
            state,
            path: path.to_owned(),
        }
    }
}

/// A one-shot watch: resolves once, to the first event for its node.
///
/// Set by `get_data_and_watch`, `exists_and_watch` and `get_children_and_watch`. It survives
/// reconnects (the client re-registers it); if the session ends (expired, closed, auth failed)
/// it resolves to an event of type [`EventType::None`] carrying that state. Dropping it
/// unregisters the client side: the watch is not re-registered after a reconnect.
#[derive(Debug)]
pub struct OneshotWatcher {
    rx: oneshot::Receiver<WatchedEvent>,
    path: String,
}

impl OneshotWatcher {
    pub(crate) fn new(rx: oneshot::Receiver<WatchedEvent>, path: String) -> Self {
        OneshotWatcher { rx, path }
    }
}

impl Future for OneshotWatcher {
    type Output = WatchedEvent;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<WatchedEvent> {
        match Pin::new(&mut self.rx).poll(cx) {
            Poll::Ready(Ok(event)) => Poll::Ready(event),
            // The session machine is gone without a word: only possible once it has stopped.
            Poll::Ready(Err(_)) => {
                Poll::Ready(WatchedEvent::session(SessionState::Closed, &self.path))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// A persistent (or persistent recursive) watch set by `add_watch`: a stream of every event.
///
/// It survives reconnects, and changes made while the client was cut off are reported once it
/// is back (see `Client::add_watch`). The stream ends (`None`) after the session ends, after an event of
/// type [`EventType::None`] with the terminal state, or after `remove_watches` removed it (the
/// last event is then [`EventType::PersistentWatchRemoved`]). Dropping it unregisters the client
/// side; the server-side watch stays until the session ends or `remove_watches` is called.
#[derive(Debug)]
pub struct PersistentWatcher {
    rx: mpsc::UnboundedReceiver<WatchedEvent>,
}

impl PersistentWatcher {
    pub(crate) fn new(rx: mpsc::UnboundedReceiver<WatchedEvent>) -> Self {
        PersistentWatcher { rx }
    }

    /// The next event, or `None` once the watch has ended.
    pub async fn next(&mut self) -> Option<WatchedEvent> {
        self.rx.recv().await
    }

    /// The next event if one is already queued.
    pub fn try_next(&mut self) -> Option<WatchedEvent> {
        self.rx.try_recv().ok()
    }
}

impl futures_core::Stream for PersistentWatcher {
    type Item = WatchedEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<WatchedEvent>> {
        self.rx.poll_recv(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_print_what_happened_and_where() {
        let deleted = WatchedEvent {
            event_type: EventType::NodeDeleted,
            state: SessionState::Connected,
            path: "/locks/a".into(),
        };
        assert_eq!(deleted.to_string(), "NodeDeleted /locks/a");
        let expired = WatchedEvent::session(SessionState::Expired, "/locks/a");
        assert_eq!(
            expired.to_string(),
            "session Expired while watching /locks/a"
        );
    }
}
