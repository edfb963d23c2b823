//! The session's state as seen by users, and the session id.

use std::fmt;

use tokio::sync::watch;

use crate::secret::Secret;
use crate::transitions::{Changes, Phase, Transitions};

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
    /// [`ErrorKind::NotReadOnly`](crate::ErrorKind::NotReadOnly).
    ConnectedReadOnly,
    /// The connection was lost; the client is reconnecting and the session may still be alive.
    Disconnected,
    /// The session expired (reported by a server, or the session timeout passed without any
    /// server). Ephemerals are gone.
    Expired,
    /// Authentication failed.
    AuthFailed,
    /// The client was closed, or the runtime that ran its session shut down (nothing can
    /// renew it then; the server expires it a session timeout later).
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
///
/// Printed in hexadecimal, as ZooKeeper's own logs and four-letter words print it:
/// `0x1000008321d000b` (`Display`), `SessionId(0x1000008321d000b)` (`Debug`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SessionId(pub i64);

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:x}", self.0 as u64)
    }
}

impl fmt::Debug for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SessionId({self})")
    }
}

/// Every state transition, in order, as [`Client::state_changes`](crate::Client::state_changes)
/// hands them out. Unlike the `watch` receiver, which only keeps the latest state, this sees
/// short-lived states such as a `Disconnected` followed at once by `Connected`. A receiver
/// that falls more than 64 transitions behind loses the oldest of them.
#[derive(Debug)]
pub struct StateChanges {
    changes: Changes<SessionState>,
}

impl StateChanges {
    /// The next state the session entered, or `None` after a terminal state was returned.
    pub async fn next(&mut self) -> Option<SessionState> {
        self.changes.next().await
    }

    /// Waits for a state satisfying `pred`; `None` if the session ended first without one.
    pub async fn wait_for(&mut self, pred: impl Fn(SessionState) -> bool) -> Option<SessionState> {
        while let Some(state) = self.next().await {
            if pred(state) {
                return Some(state);
            }
        }
        None
    }
}

impl Phase for SessionState {
    fn is_final(self) -> bool {
        self.is_terminal()
    }
}

/// Session facts the handles read without asking the session task. Written by the session
/// machine before it announces a connected state, so that a handle woken by that state sees
/// them.
#[derive(Debug)]
pub(crate) struct SessionInfo {
    pub session_id: std::sync::atomic::AtomicI64,
    pub timeout_ms: std::sync::atomic::AtomicU64,
    pub password: std::sync::Mutex<Secret>,
    /// The server list in rotation order, and the server of the current connection.
    pub servers: std::sync::Mutex<(
        Vec<crate::connect_string::HostPort>,
        Option<crate::connect_string::HostPort>,
    )>,
    /// What connection attempts ran into: published as a `watch` so that `connect` can stop
    /// waiting once certificates alone stand in the way.
    pub failures: watch::Sender<AttemptFailures>,
    /// The lease deadline in nanoseconds after `epoch` ([`NO_LEASE`] for none), so that
    /// handles read it with one atomic load.
    lease_nanos: std::sync::atomic::AtomicI64,
    epoch: std::time::Instant,
}

/// `lease_nanos` when no server vouches for the session.
const NO_LEASE: i64 = i64::MIN;

impl Default for SessionInfo {
    fn default() -> Self {
        SessionInfo {
            session_id: Default::default(),
            timeout_ms: Default::default(),
            password: Default::default(),
            servers: Default::default(),
            failures: Default::default(),
            lease_nanos: std::sync::atomic::AtomicI64::new(NO_LEASE),
            // tokio's clock, the one every deadline comes from (simulated under turmoil).
            epoch: tokio::time::Instant::now().into_std(),
        }
    }
}

/// What failed connection attempts ran into that the session state does not show.
#[derive(Debug, Clone, Default)]
pub(crate) struct AttemptFailures {
    /// Since the last session was established: each server whose connection attempt failed
    /// and its last failure, in the order first tried. `connect` names them when it gives up.
    pub by_server: Vec<(crate::connect_string::HostPort, String)>,
    /// The last TLS failure ([`ErrorKind::Tls`](crate::ErrorKind::Tls)), kept after later successes.
    pub last_tls: Option<crate::error::ErrorKind>,
    /// Every server of the connect string, in a row up to now, failed on TLS: certificates
    /// must change before any attempt can succeed, so `connect` stops waiting.
    pub every_server_tls: bool,
}

/// At most this many servers are remembered in [`AttemptFailures::by_server`]: a server
/// list replaced again and again while disconnected must not grow it without bound.
const ATTEMPT_FAILURES_MAX: usize = 64;

impl SessionInfo {
    /// Publishes the lease deadline.
    pub fn set_lease(&self, deadline: Option<std::time::Instant>) {
        use std::sync::atomic::Ordering;
        let nanos = match deadline {
            None => NO_LEASE,
            // Deadlines are near `epoch` (within the process's life), far inside i64 range;
            // the clamps only keep a nonsense value from wrapping into a long lease.
            Some(d) => match d.checked_duration_since(self.epoch) {
                Some(after) => i64::try_from(after.as_nanos()).unwrap_or(i64::MAX),
                None => -i64::try_from(self.epoch.duration_since(d).as_nanos()).unwrap_or(i64::MAX),
            },
        };
        self.lease_nanos.store(nanos, Ordering::Release);
    }

    /// The published lease deadline.
    pub fn lease(&self) -> Option<std::time::Instant> {
        use std::sync::atomic::Ordering;
        use std::time::Duration;
        match self.lease_nanos.load(Ordering::Acquire) {
            NO_LEASE => None,
            n if n >= 0 => self.epoch.checked_add(Duration::from_nanos(n as u64)),
            n => self
                .epoch
                .checked_sub(Duration::from_nanos(n.unsigned_abs())),
        }
    }

    pub fn record(&self, session_id: i64, timeout: std::time::Duration, password: &Secret) {
        use std::sync::atomic::Ordering;
        *self.password.lock().unwrap_or_else(|e| e.into_inner()) = password.clone();
        self.timeout_ms
            .store(timeout.as_millis() as u64, Ordering::Release);
        self.session_id.store(session_id, Ordering::Release);
        self.failures.send_modify(|f| f.by_server.clear());
    }

    pub fn record_attempt_failure(&self, host: &crate::connect_string::HostPort, reason: &str) {
        self.failures.send_modify(|f| {
            let failures = &mut f.by_server;
            match failures.iter_mut().find(|(h, _)| h == host) {
                Some((_, last)) => reason.clone_into(last),
                None => {
                    if failures.len() == ATTEMPT_FAILURES_MAX {
                        failures.remove(0);
                    }
                    failures.push((host.clone(), reason.to_owned()));
                }
            }
        });
    }

    /// Why `connect` gave up after `waited`: every server tried and how it last failed, and
    /// the servers of `hosts` not tried in that time.
    pub fn connect_failure(
        &self,
        hosts: &[crate::connect_string::HostPort],
        waited: std::time::Duration,
    ) -> String {
        let failures = self.failures.borrow();
        let failures = &failures.by_server;
        let mut text = format!("no server accepted a session within {waited:?}");
        let tried: Vec<String> = failures
            .iter()
            .map(|(host, reason)| format!("{} ({reason})", host.to_addr_string()))
            .collect();
        if !tried.is_empty() {
            text.push_str("; tried ");
            text.push_str(&tried.join(", "));
        }
        let untried: Vec<String> = hosts
            .iter()
            .filter(|h| !failures.iter().any(|(f, _)| f == *h))
            .map(|h| h.to_addr_string())
            .collect();
        if !untried.is_empty() {
            text.push_str(if tried.is_empty() { "; " } else { "; and " });
            text.push_str("no answer yet from ");
            text.push_str(&untried.join(", "));
        }
        text
    }

    pub fn record_servers(
        &self,
        list: Option<&[crate::connect_string::HostPort]>,
        current: Option<&crate::connect_string::HostPort>,
    ) {
        let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(list) = list {
            servers.0 = list.to_vec();
        }
        servers.1 = current.cloned();
    }
}

/// Publishes the session state: the latest to `watch` receivers, every transition to each
/// [`StateChanges`].
#[derive(Debug, Clone)]
pub(crate) struct StatePublisher {
    states: std::sync::Arc<Transitions<SessionState>>,
    pub info: std::sync::Arc<SessionInfo>,
}

/// How many transitions a [`StateChanges`] may fall behind before it loses the oldest.
const BACKLOG: usize = 64;

impl StatePublisher {
    pub fn new() -> (StatePublisher, watch::Receiver<SessionState>) {
        let states = Transitions::new(SessionState::Connecting, BACKLOG);
        let rx = states.watch();
        (
            StatePublisher {
                states: std::sync::Arc::new(states),
                info: Default::default(),
            },
            rx,
        )
    }

    pub fn publish(&self, state: SessionState) {
        self.states.set(state);
    }

    pub fn changes(&self) -> StateChanges {
        StateChanges {
            changes: self.states.later_changes(),
        }
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
        assert_eq!(
            format!("{:?}", SessionId(0x1000008321d000b)),
            "SessionId(0x1000008321d000b)"
        );
    }

    #[test]
    fn lease_deadlines_round_trip_through_the_atomic() {
        use std::time::Duration;
        let info = SessionInfo::default();
        assert_eq!(info.lease(), None);
        let later = info.epoch + Duration::from_millis(6001);
        info.set_lease(Some(later));
        assert_eq!(info.lease(), Some(later));
        // A clock that started before the info (tokio's paused clock can lag behind).
        if let Some(earlier) = info.epoch.checked_sub(Duration::from_millis(5)) {
            info.set_lease(Some(earlier));
            assert_eq!(info.lease(), Some(earlier));
        }
        info.set_lease(None);
        assert_eq!(info.lease(), None);
    }

    #[test]
    fn terminal_states() {
        assert!(SessionState::Expired.is_terminal());
        assert!(!SessionState::Disconnected.is_terminal());
        assert!(SessionState::ConnectedReadOnly.is_connected());
    }
}
