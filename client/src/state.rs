//! The session's state as seen by users, and the session id.

use std::fmt;

/// Where the session stands. Watch it with [`Client::state_watcher`](crate::Client::state_watcher).
///
/// `Expired`, `AuthFailed` and `Closed` are terminal: the client never leaves them and never
/// opens a new session by itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SessionState {
    /// Looking for a server (before the first session is established).
    Connecting,
    /// Connected to a read-write server.
    Connected,
    /// Connected to a read-only server: reads work, writes fail with
    /// [`Error::NotReadOnly`](crate::Error::NotReadOnly).
    ConnectedReadOnly,
    /// The connection was lost; the client is reconnecting and the session may still be alive.
    Disconnected,
    /// The session expired (reported by a server, or the session timeout passed without any
    /// server). Ephemerals are gone.
    Expired,
    /// Authentication failed.
    AuthFailed,
    /// The client was closed.
    Closed,
}

impl SessionState {
    /// True for `Connected` and `ConnectedReadOnly`.
    pub fn is_connected(self) -> bool {
        matches!(
            self,
            SessionState::Connected | SessionState::ConnectedReadOnly
        )
    }

    /// True for `Expired`, `AuthFailed` and `Closed`.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            SessionState::Expired | SessionState::AuthFailed | SessionState::Closed
        )
    }
}

impl fmt::Display for SessionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// A session id as the server assigned it. Compare with `Stat::ephemeral_owner` through `.0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct SessionId(pub i64);

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:x}", self.0 as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_id_prints_as_unsigned_hex() {
        assert_eq!(
            SessionId(0x1000008321d000b).to_string(),
            "0x1000008321d000b"
        );
        assert_eq!(SessionId(-1).to_string(), "0xffffffffffffffff");
    }

    #[test]
    fn terminal_states() {
        assert!(SessionState::Expired.is_terminal());
        assert!(!SessionState::Disconnected.is_terminal());
        assert!(SessionState::ConnectedReadOnly.is_connected());
    }
}
