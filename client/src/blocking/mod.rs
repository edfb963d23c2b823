//! A blocking client, for code that cannot `.await`: build scripts, command-line tools, test
//! fixtures, synchronous services, FFI hosts. (Cargo feature `blocking`.)
//!
//! [`Client`] has every operation of the async [`crate::Client`], with the same arguments,
//! errors and guarantees; each returns when its reply is in. Watches are blocking:
//! [`OneshotWatcher::wait`] for a one-shot watch, and an [`Iterator`] of events for a
//! persistent one ([`PersistentWatcher`]) and for the session's states ([`StateChanges`]),
//! each with a `_timeout` variant.
//!
//! The session runs on a thread the client starts (a current-thread tokio runtime of its
//! own), so callers need no runtime. A call does not hop through that thread: the calling
//! thread queues its request on the session as an async call does (on an idle connection it
//! writes it to the socket itself), then parks until the reply wakes it. Nothing is built per
//! call. Request timeouts ([`ClientBuilder::request_timeout`](crate::ClientBuilder::request_timeout),
//! [`Client::with_request_timeout`]) and the session's lease ([`Client::lease_deadline`]) work
//! exactly as in the async API: they are the async client's own.
//!
//! The thread ends once every handle is dropped and the session has closed; dropping the last
//! handle, from any thread, closes the session as the async client's does.
//!
//! Called from a task on a tokio runtime, a blocking operation works, but holds that
//! runtime's thread until its reply, as any blocking call would: use the async client there.
//! [`Client::block_on`] runs any future of the async API to completion from a plain thread;
//! [`Client::as_async`] lends the async handle on the same session.
//!
//! ```
//! use std::time::Duration;
//! use zookeeper_tokio::blocking::Client;
//! use zookeeper_tokio::{CreateOptions, EventType};
//!
//! # fn main() -> zookeeper_tokio::Result<()> {
//! let servers = "127.0.0.1:2181/app";
//! # let servers = &zookeeper_testkit::shared_server()
//! #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_blocking"));
//! let client = Client::connect_with(
//!     zookeeper_tokio::Client::builder(servers)
//!         .session_timeout(Duration::from_secs(10))
//!         .request_timeout(Duration::from_secs(5)),
//! )?;
//!
//! client.create("/config", b"v1", &CreateOptions::persistent())?;
//! let (data, stat, watcher) = client.get_data_and_watch("/config")?;
//! assert_eq!(&data[..], b"v1");
//!
//! // Another thread changes the node; this one blocks until the watch fires.
//! let writer = client.clone();
//! std::thread::spawn(move || writer.set_data("/config", b"v2", Some(stat.version)));
//! let event = watcher.wait();
//! assert_eq!(event.event_type, EventType::NodeDataChanged);
//!
//! // A persistent watch is an iterator of events.
//! let events = client.add_watch("/config", zookeeper_tokio::AddWatchMode::Persistent)?;
//! client.delete("/config", None)?;
//! for event in events.take(1) {
//!     assert_eq!(event.to_string(), "NodeDeleted /config");
//! }
//! # Ok(())
//! # }
//! ```
//!
//! See `docs/blocking.md` in the repository for the recipes' blocking forms (locks, leader
//! election) in `zookeeper_recipes::blocking`.

mod client;
mod park;
mod runtime;
mod watchers;

pub use client::Client;
pub use watchers::{OneshotWatcher, PersistentWatcher, StateChanges};

#[cfg(test)]
mod contract {
    //! The shapes threads rely on, checked at compile time.

    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}

    #[test]
    fn handles_are_shared_and_watchers_moved_between_threads() {
        send_sync::<super::Client>();
        send::<super::OneshotWatcher>();
        send::<super::PersistentWatcher>();
        send::<super::StateChanges>();
    }
}
