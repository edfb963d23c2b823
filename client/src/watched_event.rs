//! The event a watch delivers, shared by the watchers that hand it to users and the queues
//! and sessions that produce it.

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
