//! An asynchronous ZooKeeper client, written from the wire protocol up.
//!
//! * One [`Client`] is one session; clones share it. Requests are queued in call order and
//!   pipelined; replies are matched in order with the xid checked.
//! * Watches are futures ([`OneshotWatcher`]) and streams ([`PersistentWatcher`]); an event is
//!   always delivered before the reply that observes its change.
//! * The session survives connection loss: it reconnects across the ensemble, resumes with its
//!   id, password and last zxid, replays authentication and restores every watch still wanted;
//!   changes made while it was cut off fire one-shot and persistent watches alike.
//!   Expiry is terminal and reported to every watcher and to [`Client::state_watcher`].
//! * With [`ClientBuilder::read_only`], a member without quorum serves reads while the client
//!   looks for a read-write one.
//! * An [`Error`] names the operation and the path it failed on
//!   (`create /config/missing/child: node does not exist`); its [`ErrorKind`] says what went
//!   wrong, and [`Error::is_retryable`] and [`Error::is_session_terminal`] what to do next. Bad
//!   input (paths, sizes, TTLs) is refused before anything is sent.
//!
//! ```no_run
//! use zookeeper_tokio::{Client, CreateOptions, MultiOp, Error};
//!
//! # async fn demo() -> Result<(), Error> {
//! let client = Client::builder("127.0.0.1:2181,127.0.0.1:2182/app")
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
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod builder;
mod client;
mod connect_string;
mod driver;
mod error;
mod event_queue;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
#[cfg(all(test, not(feature = "fuzzing")))]
mod fuzzing;
mod limits;
mod ops;
mod options;
mod packet;
mod path;
mod queue;
mod secret;
mod session;
mod state;
mod watcher;

pub use builder::{
    ClientBuilder, DEFAULT_MAX_INCOMING_FRAME, DEFAULT_MAX_OUTSTANDING, DEFAULT_MAX_QUEUED_EVENTS,
    DEFAULT_REQUEST_TIMEOUT, DEFAULT_SESSION_TIMEOUT,
};
pub use client::Client;
pub use connect_string::{ConnectString, HostPort, DEFAULT_PORT};
pub use error::{Error, ErrorKind, Result};
pub use limits::{MAX_FRAME_LIMIT, MAX_TIMEOUT, MIN_FRAME_LIMIT};
pub use ops::{MultiOp, MultiResult, ReadOp, ReadResult};
pub use options::{CreateOptions, MAX_TTL};
pub use path::{validate_create_path, validate_path};
pub use state::{SessionId, SessionState, StateChanges};
pub use watcher::{OneshotWatcher, PersistentWatcher, WatchedEvent};

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
