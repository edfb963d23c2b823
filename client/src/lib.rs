//! An asynchronous ZooKeeper client, written from the wire protocol up.
//!
//! * One [`Client`] is one session; clones share it. Requests are queued in call order and
//!   pipelined; replies are matched in order with the xid checked. The requests a caller makes
//!   before it waits go out in one write, when it first waits; on an idle connection the
//!   caller writes them itself, from any thread, instead of waiting for the session's task to
//!   be scheduled.
//! * Watches are futures ([`OneshotWatcher`]) and streams ([`PersistentWatcher`]); an event is
//!   always delivered before the reply that observes its change.
//! * The session survives connection loss: it reconnects across the ensemble, resumes with its
//!   id, password and last zxid, replays authentication and restores every watch still wanted;
//!   changes made while it was cut off fire one-shot and persistent watches alike.
//!   Expiry is terminal and reported to every watcher and to [`Client::state_watcher`].
//! * With [`ClientBuilder::read_only`], a member without quorum serves reads while the client
//!   looks for a read-write one.
//! * SASL logins (DIGEST-MD5 with the `sasl-digest` feature, Kerberos with `sasl-gssapi`) run
//!   after every handshake, before anything else is sent; a refused one is terminal
//!   ([`ErrorKind::AuthFailed`]).
//! * The ensemble may change: [`Client::get_config`] and the `reconfig_*` operations,
//!   [`Client::update_server_list`] with load-evening moves, and
//!   [`ClientBuilder::follow_config`] to track `/zookeeper/config` by itself.
//! * An [`Error`] names the operation and the path it failed on
//!   (`create /config/missing/child: node does not exist`); its [`ErrorKind`] says what went
//!   wrong, and [`Error::is_retryable`] and [`Error::is_session_terminal`] what to do next. Bad
//!   input (paths, sizes, TTLs) is refused before anything is sent.
//! * With the cargo feature `tls`, `ClientBuilder::tls` speaks TLS (rustls) to ZooKeeper's
//!   secure client port: server certificates verified against given or platform
//!   authorities, hostnames checked, client certificates re-read from disk on every
//!   reconnect; certificate problems fail with [`ErrorKind::Tls`] naming a [`TlsCause`].
//! * With the cargo feature `blocking`, `blocking::Client` offers every operation to code
//!   without a runtime (plain threads), the session running on a thread of its own.
//! * With the cargo feature `metrics`, requests, connections, the session state, watches and
//!   bytes are recorded through the [`metrics`](https://docs.rs/metrics) facade, into whatever
//!   recorder the application installed (see [Metrics](#metrics)).
//! * With the cargo feature `tracing-spans`, every request is a `tracing` span named after the
//!   operation, a child of the caller's span, closed when the reply arrives, with
//!   OpenTelemetry's database attributes (`db.system.name`, `db.operation.name`,
//!   `server.address`, `error.type`...) and ZooKeeper's own (`zookeeper.path`,
//!   `zookeeper.session_id`, `zookeeper.xid`, `zookeeper.outcome_unknown`). Without it no span
//!   code is compiled in.
//!
//! ```
//! use zookeeper_tokio::{Client, CreateOptions, MultiOp, Error};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Error> {
//! // Several servers and a chroot: every path below lives under /app.
//! let servers = "127.0.0.1:2181,127.0.0.1:2182/app";
//! # let servers = &zookeeper_testkit::shared_server()
//! #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_crate"));
//! let client = Client::builder(servers)
//!     .session_timeout(std::time::Duration::from_secs(10))
//!     .connect()
//!     .await?;
//!
//! let (path, _stat) = client.create("/config", b"v1", &CreateOptions::persistent()).await?;
//! assert_eq!(path, "/config");
//!
//! // Read and watch: the watcher resolves on the next change.
//! let (data, stat, watcher) = client.get_data_and_watch("/config").await?;
//! assert_eq!(&data[..], b"v1");
//! client.set_data("/config", b"v2", Some(stat.version)).await?;
//! let event = watcher.await;
//! assert_eq!(event.path, "/config");
//!
//! // Several writes, all or nothing.
//! client
//!     .multi(vec![
//!         MultiOp::check("/config", stat.version + 1),
//!         MultiOp::create("/config/a", b"", &CreateOptions::ephemeral()),
//!         MultiOp::set_data("/config", b"v3", None),
//!     ])
//!     .await?;
//!
//! client.close().await;
//! # Ok(())
//! # }
//! ```
//!
//! # Metrics
//!
//! With the cargo feature `metrics` (off by default; without it the crate has no `metrics`
//! dependency and records nothing), the client records these through the
//! [`metrics`](https://docs.rs/metrics) facade. Install a recorder (a Prometheus exporter such as
//! `metrics-exporter-prometheus`, a StatsD one, an OpenTelemetry bridge) before connecting;
//! `zookeeper_tokio::metrics::describe()` gives each metric its description and unit there.
//! Labels are few and bounded: never a path or a session id. Histograms are in seconds.
//!
//! | Metric | Kind | Labels | What it counts |
//! |---|---|---|---|
//! | `zookeeper_requests_total` | counter | `operation` | requests made, by client method (`get_data`, `create`, `multi`...), those refused before sending and those whose future was dropped included; a method that makes several requests (`create` with parents, `delete_recursive`) counts each |
//! | `zookeeper_request_duration_seconds` | histogram | `operation` | time from the call until its future completed (when the reply arrived, unless the future was polled late), of every request that finished |
//! | `zookeeper_request_errors_total` | counter | `operation`, `kind` | failed requests, by [`ErrorKind`] in snake case (`no_node`, `connection_loss`, `timeout`...) |
//! | `zookeeper_requests_in_flight` | gauge | | requests the session holds, queued or sent, whose reply has not arrived |
//! | `zookeeper_connection_attempts_total` | counter | | connections opened towards a server |
//! | `zookeeper_connections_established_total` | counter | | connections on which a server accepted the session |
//! | `zookeeper_reconnects_total` | counter | | established connections that resumed an existing session |
//! | `zookeeper_connection_losses_total` | counter | `reason` | established connections lost: `closed` (by the server, or an I/O or TLS error), `read_timeout`, `protocol_error`, `moved` (to a read-write server, or to rebalance) |
//! | `zookeeper_session_state_changes_total` | counter | `state` | session state transitions, by the [`SessionState`] entered (`connected`, `disconnected`, `expired`...) |
//! | `zookeeper_sessions` | gauge | `state` | this process's sessions in each state |
//! | `zookeeper_session_expirations_total` | counter | | sessions that expired |
//! | `zookeeper_watch_registrations_total` | counter | `kind` | watches the server set: `data`, `exist`, `child`, `persistent`, `persistent_recursive` |
//! | `zookeeper_watch_events_total` | counter | `event` | events handed to watchers, by type (`node_created`, `node_data_changed`...); not the session's end |
//! | `zookeeper_watch_events_coalesced_total` | counter | | events a persistent watch's stream folded because its reader was behind (see [`ClientBuilder::max_queued_events`]) |
//! | `zookeeper_bytes_sent_total` | counter | | bytes written to servers (before TLS) |
//! | `zookeeper_bytes_received_total` | counter | | bytes read from servers (after TLS) |
//! | `zookeeper_frames_over_limit_total` | counter | | frames over the incoming limit ([`ClientBuilder::max_incoming_frame`]) |
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "blocking")]
pub mod blocking;
mod builder;
mod client;
mod connect_string;
mod connector;
mod dial;
mod driver;
mod ensemble_config;
mod error;
mod event_queue;
pub mod folding;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
#[cfg(all(test, not(feature = "fuzzing")))]
mod fuzzing;
mod home;
mod limits;
#[cfg(feature = "metrics")]
pub mod metrics;
#[cfg(not(feature = "metrics"))]
mod metrics;
mod net_change;
mod ops;
mod options;
mod orphan;
mod packet;
mod path;
mod queue;
mod random;
mod sasl;
mod secret;
mod servers;
mod session;
mod span;
mod state;
#[cfg(feature = "tls")]
mod tls;
pub mod transitions;
mod transport;
mod watched_event;
mod watcher;

pub use builder::{
    ClientBuilder, DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_INCOMING_FRAME, DEFAULT_MAX_OUTSTANDING,
    DEFAULT_MAX_QUEUED_EVENTS, DEFAULT_MAX_RECURSIVE_WATCH_MEMORY, DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_SESSION_TIMEOUT,
};
pub use client::Client;
pub use connect_string::{ConnectString, HostPort, DEFAULT_PORT};
pub use connector::Connect;
#[cfg(feature = "turmoil")]
pub use connector::TurmoilConnector;
pub use ensemble_config::{EnsembleConfig, EnsembleMember, MemberRole};
pub use error::{Error, ErrorKind, Result, TlsCause};
pub use limits::{MAX_FRAME_LIMIT, MAX_TIMEOUT, MIN_FRAME_LIMIT};
pub use ops::{MultiOp, MultiResult, ReadOp, ReadResult};
pub use options::{CreateOptions, Parents, MAX_TTL};
pub use path::{validate_create_path, validate_path};
pub use state::{SessionId, SessionState, StateChanges};
#[cfg(feature = "tls")]
pub use tls::TlsConfig;
pub use watched_event::WatchedEvent;
pub use watcher::{OneshotWatcher, PersistentWatcher};

pub use zookeeper_jute::{
    perms, Acl, AddWatchMode, ClientInfo, CreateMode, ErrorCode, EventType, Id, Stat, WatcherType,
};

#[cfg(test)]
mod contract {
    //! The shapes other crates rely on, checked at compile time.

    fn send_sync<T: Send + Sync + Clone>() {}
    fn watcher<T: std::future::Future<Output = crate::WatchedEvent> + Send + Unpin>() {}
    fn stream<T: futures_core::Stream<Item = crate::WatchedEvent> + Send + Unpin>() {}
    fn static_future<F: std::future::Future + Send + 'static>(_: F) {}

    #[test]
    fn handles_and_watchers_have_the_promised_traits() {
        send_sync::<crate::Client>();
        watcher::<crate::OneshotWatcher>();
        stream::<crate::PersistentWatcher>();
    }

    #[allow(dead_code)]
    fn operation_futures_are_send_and_static(c: &crate::Client) {
        static_future(c.get_data("/"));
        static_future(c.create("/", b"", &crate::CreateOptions::persistent()));
        static_future(c.multi(vec![]));
        static_future(c.add_watch("/", crate::AddWatchMode::Persistent));
        static_future(c.close());
    }
}

// The README's examples, compiled and run with this crate's doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
