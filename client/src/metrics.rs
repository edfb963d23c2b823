//! The client's metrics: their names, and the hooks that record them through the
//! [`metrics`](https://docs.rs/metrics) facade. The table of what each one counts is in the
//! crate docs.
//!
//! Without the cargo feature `metrics` every hook is an empty inline function and the types
//! below hold nothing: the crate then has no `metrics` dependency and no code to run. With it,
//! the metrics go to whatever recorder the application installed (a Prometheus exporter, a
//! StatsD one, an OpenTelemetry bridge...), and to nowhere when none is.
//!
//! Labels stay few and bounded: an operation name, an error kind, a state, a reason class.
//! Never a path or a session id.
#![cfg_attr(not(feature = "metrics"), allow(dead_code, unused_variables))]

#[cfg(feature = "metrics")]
use std::time::Instant;

#[cfg(feature = "metrics")]
use ::metrics::{counter, gauge, histogram};
use zookeeper_jute::EventType;

use crate::error::{ErrorKind, Result};
use crate::state::SessionState;

/// Requests made, by `operation` (the client method, e.g. `get_data`).
pub const REQUESTS: &str = "zookeeper_requests_total";
/// Seconds from a request's call to its outcome, by `operation`.
pub const REQUEST_DURATION: &str = "zookeeper_request_duration_seconds";
/// Failed requests, by `operation` and `kind` (the [`ErrorKind`], e.g. `no_node`).
pub const REQUEST_ERRORS: &str = "zookeeper_request_errors_total";
/// Requests the session holds, queued or sent, whose reply has not arrived yet.
pub const REQUESTS_IN_FLIGHT: &str = "zookeeper_requests_in_flight";
/// Connections opened towards a server, the first one and every retry.
pub const CONNECTION_ATTEMPTS: &str = "zookeeper_connection_attempts_total";
/// Connections on which a server accepted the session (handshake done).
pub const CONNECTIONS_ESTABLISHED: &str = "zookeeper_connections_established_total";
/// Established connections that resumed an existing session.
pub const RECONNECTS: &str = "zookeeper_reconnects_total";
/// Established connections that were lost, by `reason`.
pub const CONNECTION_LOSSES: &str = "zookeeper_connection_losses_total";
/// Session state transitions, by the `state` entered.
pub const SESSION_STATE_CHANGES: &str = "zookeeper_session_state_changes_total";
/// Sessions of this process in each `state`.
pub const SESSIONS: &str = "zookeeper_sessions";
/// Sessions that expired.
pub const SESSION_EXPIRATIONS: &str = "zookeeper_session_expirations_total";
/// Watches the server set, by `kind`.
pub const WATCH_REGISTRATIONS: &str = "zookeeper_watch_registrations_total";
/// Events handed to watchers, by `event` type.
pub const WATCH_EVENTS: &str = "zookeeper_watch_events_total";
/// Events a persistent watch's stream folded because its reader was behind.
pub const WATCH_EVENTS_COALESCED: &str = "zookeeper_watch_events_coalesced_total";
/// Bytes written to servers.
pub const BYTES_SENT: &str = "zookeeper_bytes_sent_total";
/// Bytes read from servers.
pub const BYTES_RECEIVED: &str = "zookeeper_bytes_received_total";
/// Frames from a server over the incoming frame limit.
pub const FRAMES_OVER_LIMIT: &str = "zookeeper_frames_over_limit_total";

/// Gives every metric of this crate its description and unit in the installed recorder (the
/// `# HELP` lines of a Prometheus exporter). Call it once the recorder is installed;
/// recording works without it.
#[cfg(feature = "metrics")]
pub fn describe() {
    use ::metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!(REQUESTS, "Requests made, by operation");
    describe_histogram!(
        REQUEST_DURATION,
        Unit::Seconds,
        "Time from a request's call to its outcome, by operation"
    );
    describe_counter!(
        REQUEST_ERRORS,
        "Failed requests, by operation and error kind"
    );
    describe_gauge!(
        REQUESTS_IN_FLIGHT,
        "Requests queued or sent, awaiting their reply"
    );
    describe_counter!(CONNECTION_ATTEMPTS, "Connections opened towards a server");
    describe_counter!(
        CONNECTIONS_ESTABLISHED,
        "Connections on which a server accepted the session"
    );
    describe_counter!(RECONNECTS, "Established connections that resumed a session");
    describe_counter!(CONNECTION_LOSSES, "Established connections lost, by reason");
    describe_counter!(
        SESSION_STATE_CHANGES,
        "Session state transitions, by state entered"
    );
    describe_gauge!(SESSIONS, "Sessions in each state");
    describe_counter!(SESSION_EXPIRATIONS, "Sessions that expired");
    describe_counter!(WATCH_REGISTRATIONS, "Watches set, by kind");
    describe_counter!(WATCH_EVENTS, "Events handed to watchers, by event type");
    describe_counter!(
        WATCH_EVENTS_COALESCED,
        "Events folded for persistent-watch readers that fell behind"
    );
    describe_counter!(BYTES_SENT, Unit::Bytes, "Bytes written to servers");
    describe_counter!(BYTES_RECEIVED, Unit::Bytes, "Bytes read from servers");
    describe_counter!(FRAMES_OVER_LIMIT, "Frames over the incoming frame limit");
}

/// The operations whose request metrics a client keeps handles for, the most frequent first
/// (one is found by a scan of this list). An operation missing here is recorded all the same,
/// through the recorder's own lookup on every request.
#[cfg(feature = "metrics")]
const OPERATIONS: [&str; 24] = [
    "get_data",
    "exists",
    "set_data",
    "create",
    "delete",
    "get_children",
    "multi",
    "get_data_and_watch",
    "exists_and_watch",
    "get_children_and_watch",
    "add_watch",
    "remove_watches",
    "multi_read",
    "sync",
    "get_acl",
    "set_acl",
    "get_all_children_number",
    "get_ephemerals",
    "get_config",
    "get_config_and_watch",
    "reconfig_incremental",
    "reconfig_members",
    "add_auth",
    "who_am_i",
];

/// A client's handles on its request metrics, shared by its clones and its requests.
///
/// A recorder hands out a handle per metric and label set after a lookup (a hash of the name
/// and labels, a map under a lock); a request that kept none would pay that twice. Handles
/// are taken from the recorder current when the client first makes a request of an
/// operation: install the recorder before.
#[derive(Clone, Default)]
pub(crate) struct ClientMetrics {
    #[cfg(feature = "metrics")]
    handles: Option<std::sync::Arc<Handles>>,
}

#[cfg(feature = "metrics")]
struct Handles {
    operations: [std::sync::OnceLock<Operation>; OPERATIONS.len()],
}

/// The handles of one operation.
#[cfg(feature = "metrics")]
struct Operation {
    requests: ::metrics::Counter,
    duration: ::metrics::Histogram,
}

#[cfg(feature = "metrics")]
impl Operation {
    fn register(operation: &'static str) -> Operation {
        Operation {
            requests: counter!(REQUESTS, "operation" => operation),
            duration: histogram!(REQUEST_DURATION, "operation" => operation),
        }
    }
}

impl ClientMetrics {
    /// The handles of a new client.
    pub(crate) fn new() -> ClientMetrics {
        ClientMetrics {
            #[cfg(feature = "metrics")]
            handles: Some(std::sync::Arc::new(Handles {
                operations: Default::default(),
            })),
        }
    }
}

#[cfg(feature = "metrics")]
impl Handles {
    fn operation(&self, operation: &'static str) -> Option<&Operation> {
        let i = OPERATIONS.iter().position(|o| *o == operation)?;
        Some(self.operations[i].get_or_init(|| Operation::register(operation)))
    }
}

/// One request, from its call to its outcome: counted by operation, with its duration and, if
/// it failed, its error kind. A request whose future is dropped first is counted, without an
/// outcome.
pub(crate) struct RequestTimer {
    #[cfg(feature = "metrics")]
    started: Option<Started>,
}

#[cfg(feature = "metrics")]
struct Started {
    operation: &'static str,
    at: Instant,
    /// The client's handles; `None` for a request refused before it was queued.
    handles: Option<std::sync::Arc<Handles>>,
}

#[cfg(feature = "metrics")]
impl Started {
    /// Counts the request; records its duration when it finished.
    fn count(&self, finished: bool) {
        let handles = self.handles.as_ref();
        match handles.and_then(|h| h.operation(self.operation)) {
            Some(op) => {
                op.requests.increment(1);
                if finished {
                    op.duration.record(self.at.elapsed().as_secs_f64());
                }
            }
            None => {
                counter!(REQUESTS, "operation" => self.operation).increment(1);
                if finished {
                    histogram!(REQUEST_DURATION, "operation" => self.operation)
                        .record(self.at.elapsed().as_secs_f64());
                }
            }
        }
    }
}

impl RequestTimer {
    /// A request of `operation` made now, on the client of `metrics` (`None`: refused before
    /// it was queued).
    #[inline]
    pub(crate) fn start(operation: &'static str, metrics: Option<ClientMetrics>) -> RequestTimer {
        RequestTimer {
            #[cfg(feature = "metrics")]
            started: Some(Started {
                operation,
                at: Instant::now(),
                handles: metrics.and_then(|m| m.handles),
            }),
        }
    }

    #[inline]
    pub(crate) fn finish<T>(&mut self, outcome: &Result<T>) {
        #[cfg(feature = "metrics")]
        if let Some(started) = self.started.take() {
            started.count(true);
            if let Err(e) = outcome {
                let kind = error_kind(e.kind());
                counter!(REQUEST_ERRORS, "operation" => started.operation, "kind" => kind)
                    .increment(1);
            }
        }
    }
}

#[cfg(feature = "metrics")]
impl Drop for RequestTimer {
    fn drop(&mut self) {
        if let Some(started) = self.started.take() {
            started.count(false);
        }
    }
}

/// One session's requests in the [`REQUESTS_IN_FLIGHT`] gauge: counted as the session takes
/// them and as they complete (answered, failed, or dropped unsent), and moved into the gauge
/// once per turn of the session task rather than twice per request.
pub(crate) struct InFlight {
    #[cfg(feature = "metrics")]
    gauge: ::metrics::Gauge,
    /// Requests taken and not completed.
    #[cfg(feature = "metrics")]
    held: i64,
    /// What the gauge holds of them.
    #[cfg(feature = "metrics")]
    recorded: i64,
}

impl InFlight {
    #[inline]
    pub(crate) fn new() -> InFlight {
        InFlight {
            #[cfg(feature = "metrics")]
            gauge: gauge!(REQUESTS_IN_FLIGHT),
            #[cfg(feature = "metrics")]
            held: 0,
            #[cfg(feature = "metrics")]
            recorded: 0,
        }
    }

    /// The session took a request.
    #[inline]
    pub(crate) fn taken(&mut self) {
        #[cfg(feature = "metrics")]
        {
            self.held += 1;
        }
    }

    /// `n` requests completed; the gauge catches up.
    #[inline]
    pub(crate) fn completed(&mut self, n: usize) {
        #[cfg(feature = "metrics")]
        {
            self.held -= n as i64;
            if self.held != self.recorded {
                self.gauge.increment((self.held - self.recorded) as f64);
                self.recorded = self.held;
            }
        }
    }
}

#[cfg(feature = "metrics")]
impl Drop for InFlight {
    fn drop(&mut self) {
        self.gauge.decrement(self.recorded as f64);
    }
}

/// The state of one session in the [`SESSIONS`] gauge, from its start until it is dropped.
pub(crate) struct SessionGauge {
    #[cfg(feature = "metrics")]
    state: SessionState,
}

impl SessionGauge {
    #[inline]
    pub(crate) fn new(state: SessionState) -> SessionGauge {
        SessionGauge {
            #[cfg(feature = "metrics")]
            state: {
                gauge!(SESSIONS, "state" => session_state(state)).increment(1.0);
                state
            },
        }
    }

    /// The session entered `state`.
    #[inline]
    pub(crate) fn set(&mut self, state: SessionState) {
        #[cfg(feature = "metrics")]
        {
            let entered = session_state(state);
            gauge!(SESSIONS, "state" => session_state(self.state)).decrement(1.0);
            gauge!(SESSIONS, "state" => entered).increment(1.0);
            counter!(SESSION_STATE_CHANGES, "state" => entered).increment(1);
            if state == SessionState::Expired {
                counter!(SESSION_EXPIRATIONS).increment(1);
            }
            self.state = state;
        }
    }
}

#[cfg(feature = "metrics")]
impl Drop for SessionGauge {
    fn drop(&mut self) {
        gauge!(SESSIONS, "state" => session_state(self.state)).decrement(1.0);
    }
}

/// Why an established connection was lost: the `reason` label of [`CONNECTION_LOSSES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Loss {
    /// The server closed it, or reading or writing failed (TLS included).
    Closed,
    /// Nothing was heard from the server for two thirds of the session timeout.
    ReadTimeout,
    /// The server broke the protocol.
    ProtocolError,
    /// The client left on purpose: for a read-write server, or to rebalance the ensemble.
    Moved,
}

/// A connection attempt starts.
#[inline]
pub(crate) fn connection_attempt() {
    #[cfg(feature = "metrics")]
    counter!(CONNECTION_ATTEMPTS).increment(1);
}

/// A server accepted the session on a new connection; `resumed` when the session existed
/// before it.
#[inline]
pub(crate) fn connection_established(resumed: bool) {
    #[cfg(feature = "metrics")]
    {
        counter!(CONNECTIONS_ESTABLISHED).increment(1);
        if resumed {
            counter!(RECONNECTS).increment(1);
        }
    }
}

/// An established connection is gone.
#[inline]
pub(crate) fn connection_lost(reason: Loss) {
    #[cfg(feature = "metrics")]
    {
        let reason = match reason {
            Loss::Closed => "closed",
            Loss::ReadTimeout => "read_timeout",
            Loss::ProtocolError => "protocol_error",
            Loss::Moved => "moved",
        };
        counter!(CONNECTION_LOSSES, "reason" => reason).increment(1);
    }
}

/// The kinds of watch the client keeps: the `kind` label of [`WATCH_REGISTRATIONS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WatchKind {
    /// Fires on a change or deletion of an existing node (`get_data`, `exists` on a node).
    Data,
    /// Fires on the creation of a missing node (`exists` on no node).
    Exist,
    /// Fires on a change of a node's children.
    Child,
    /// `add_watch`, persistent.
    Persistent,
    /// `add_watch`, persistent and recursive.
    PersistentRecursive,
}

impl WatchKind {
    pub(crate) fn persistent(recursive: bool) -> WatchKind {
        if recursive {
            WatchKind::PersistentRecursive
        } else {
            WatchKind::Persistent
        }
    }
}

/// The server set a watch.
#[inline]
pub(crate) fn watch_registered(kind: WatchKind) {
    #[cfg(feature = "metrics")]
    {
        let kind = match kind {
            WatchKind::Data => "data",
            WatchKind::Exist => "exist",
            WatchKind::Child => "child",
            WatchKind::Persistent => "persistent",
            WatchKind::PersistentRecursive => "persistent_recursive",
        };
        counter!(WATCH_REGISTRATIONS, "kind" => kind).increment(1);
    }
}

/// An event was handed to `watchers` watchers. The event that ends every watcher with the
/// session's end is not counted (the session state metrics tell of that).
#[inline]
pub(crate) fn watch_events(event_type: EventType, watchers: usize) {
    #[cfg(feature = "metrics")]
    if watchers > 0 {
        let event = match event_type {
            EventType::NodeCreated => "node_created",
            EventType::NodeDeleted => "node_deleted",
            EventType::NodeDataChanged => "node_data_changed",
            EventType::NodeChildrenChanged => "node_children_changed",
            EventType::DataWatchRemoved => "data_watch_removed",
            EventType::ChildWatchRemoved => "child_watch_removed",
            EventType::PersistentWatchRemoved => "persistent_watch_removed",
            _ => return,
        };
        counter!(WATCH_EVENTS, "event" => event).increment(watchers as u64);
    }
}

/// A persistent watch's stream folded an event because its reader was behind.
#[inline]
pub(crate) fn watch_event_coalesced() {
    #[cfg(feature = "metrics")]
    counter!(WATCH_EVENTS_COALESCED).increment(1);
}

/// `n` bytes went to the server.
#[inline]
pub(crate) fn bytes_sent(n: usize) {
    #[cfg(feature = "metrics")]
    counter!(BYTES_SENT).increment(n as u64);
}

/// `n` bytes came from the server.
#[inline]
pub(crate) fn bytes_received(n: usize) {
    #[cfg(feature = "metrics")]
    counter!(BYTES_RECEIVED).increment(n as u64);
}

/// A frame announced a length over the incoming limit.
#[inline]
pub(crate) fn frame_over_limit() {
    #[cfg(feature = "metrics")]
    counter!(FRAMES_OVER_LIMIT).increment(1);
}

/// The `state` label.
#[cfg(feature = "metrics")]
fn session_state(state: SessionState) -> &'static str {
    match state {
        SessionState::Connecting => "connecting",
        SessionState::Connected => "connected",
        SessionState::ConnectedReadOnly => "connected_read_only",
        SessionState::Disconnected => "disconnected",
        SessionState::Expired => "expired",
        SessionState::AuthFailed => "auth_failed",
        SessionState::Closed => "closed",
    }
}

/// The `kind` label of an error: the [`ErrorKind`] variant in snake case. Every variant is
/// listed, so that a new one cannot go unnamed.
pub(crate) fn error_kind(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::NoNode => "no_node",
        ErrorKind::NodeExists => "node_exists",
        ErrorKind::BadVersion => "bad_version",
        ErrorKind::NotEmpty => "not_empty",
        ErrorKind::NoChildrenForEphemerals => "no_children_for_ephemerals",
        ErrorKind::InvalidAcl => "invalid_acl",
        ErrorKind::NoAuth => "no_auth",
        ErrorKind::BadArguments => "bad_arguments",
        ErrorKind::Unimplemented => "unimplemented",
        ErrorKind::NotReadOnly => "not_read_only",
        ErrorKind::NoWatcher => "no_watcher",
        ErrorKind::MarshallingError => "marshalling_error",
        ErrorKind::SessionMoved => "session_moved",
        ErrorKind::Throttled => "throttled",
        ErrorKind::QuotaExceeded => "quota_exceeded",
        ErrorKind::EphemeralOnLocalSession => "ephemeral_on_local_session",
        ErrorKind::Server(_) => "server",
        ErrorKind::MultiFailed { .. } => "multi_failed",
        ErrorKind::ConnectionLoss => "connection_loss",
        ErrorKind::SessionExpired => "session_expired",
        ErrorKind::Closed => "closed",
        ErrorKind::AuthFailed => "auth_failed",
        ErrorKind::Timeout => "timeout",
        ErrorKind::Connect(_) => "connect",
        ErrorKind::Tls { .. } => "tls",
        ErrorKind::Protocol(_) => "protocol",
        ErrorKind::ReplyTooLarge { .. } => "reply_too_large",
        ErrorKind::InvalidPath { .. } => "invalid_path",
        ErrorKind::DataTooLarge { .. } => "data_too_large",
        ErrorKind::InvalidArgument(_) => "invalid_argument",
        ErrorKind::InvalidConnectString { .. } => "invalid_connect_string",
    }
}

#[cfg(all(test, feature = "metrics"))]
mod tests {
    use zookeeper_testkit::metrics::recorded;

    use super::*;

    #[test]
    fn in_flight_follows_taken_and_completed_requests_and_leaves_with_the_session() {
        let held = recorded(|| async {
            let mut in_flight = InFlight::new();
            for _ in 0..3 {
                in_flight.taken();
            }
            in_flight.completed(1);
            std::mem::forget(in_flight);
        });
        assert_eq!(held.gauge(REQUESTS_IN_FLIGHT, &[]), 2.0);

        let gone = recorded(|| async {
            let mut in_flight = InFlight::new();
            for _ in 0..3 {
                in_flight.taken();
            }
            in_flight.completed(1);
            // A session task dropped with requests still held (its runtime shut down).
        });
        assert_eq!(gone.gauge(REQUESTS_IN_FLIGHT, &[]), 0.0);
    }

    #[test]
    fn a_session_counts_in_its_current_state_only_and_leaves_when_dropped() {
        let live = recorded(|| async {
            let mut gauge = SessionGauge::new(SessionState::Connecting);
            gauge.set(SessionState::Connected);
            gauge.set(SessionState::Disconnected);
            gauge.set(SessionState::Connected);
            std::mem::forget(gauge);
        });
        let state = |s| [("state", s)];
        assert_eq!(live.gauge(SESSIONS, &state("connected")), 1.0);
        assert_eq!(live.gauge(SESSIONS, &state("disconnected")), 0.0);
        assert_eq!(live.gauge(SESSIONS, &state("connecting")), 0.0);
        assert_eq!(live.counter(SESSION_STATE_CHANGES, &state("connected")), 2);
        assert_eq!(
            live.counter(SESSION_STATE_CHANGES, &state("disconnected")),
            1
        );

        let ended = recorded(|| async {
            let mut gauge = SessionGauge::new(SessionState::Connecting);
            gauge.set(SessionState::Expired);
        });
        assert_eq!(ended.gauge(SESSIONS, &state("expired")), 0.0);
        assert_eq!(ended.counter(SESSION_EXPIRATIONS, &[]), 1);
    }

    #[test]
    fn every_error_kind_has_its_own_snake_case_label() {
        use zookeeper_jute::ErrorCode;
        // Every variant, so that two never share a label.
        let kinds = [
            ErrorKind::NoNode,
            ErrorKind::NodeExists,
            ErrorKind::BadVersion,
            ErrorKind::NotEmpty,
            ErrorKind::NoChildrenForEphemerals,
            ErrorKind::InvalidAcl,
            ErrorKind::NoAuth,
            ErrorKind::BadArguments,
            ErrorKind::Unimplemented,
            ErrorKind::NotReadOnly,
            ErrorKind::NoWatcher,
            ErrorKind::MarshallingError,
            ErrorKind::SessionMoved,
            ErrorKind::Throttled,
            ErrorKind::QuotaExceeded,
            ErrorKind::EphemeralOnLocalSession,
            ErrorKind::Server(ErrorCode::SystemError),
            ErrorKind::MultiFailed {
                index: 0,
                code: ErrorCode::NoNode,
            },
            ErrorKind::ConnectionLoss,
            ErrorKind::SessionExpired,
            ErrorKind::Closed,
            ErrorKind::AuthFailed,
            ErrorKind::Timeout,
            ErrorKind::Connect(String::new()),
            ErrorKind::Tls {
                cause: crate::TlsCause::Handshake,
                message: String::new(),
            },
            ErrorKind::Protocol(String::new()),
            ErrorKind::ReplyTooLarge { size: 2, max: 1 },
            ErrorKind::InvalidPath {
                path: "x".into(),
                reason: "relative",
            },
            ErrorKind::DataTooLarge { size: 2, max: 1 },
            ErrorKind::InvalidArgument(String::new()),
            ErrorKind::InvalidConnectString {
                input: String::new(),
                reason: String::new(),
            },
        ];
        let labels: Vec<&str> = kinds.iter().map(error_kind).collect();
        for label in &labels {
            assert!(
                label.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{label}"
            );
        }
        let mut distinct = labels.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), labels.len(), "{labels:?}");
    }
}
