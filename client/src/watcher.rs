//! What watches hand to users: one-shot futures and persistent streams.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::oneshot;

use crate::event_queue::EventReceiver;
use crate::state::SessionState;
use crate::watched_event::WatchedEvent;

/// A one-shot watch: resolves once, to the first event for its node.
///
/// Set by `get_data_and_watch`, `exists_and_watch` and `get_children_and_watch`. It survives
/// reconnects (the client re-registers it); if the session ends (expired, closed, auth failed)
/// it resolves to an event of type [`EventType::None`](crate::EventType::None) carrying that state. Dropping it
/// unregisters the client side: the watch is not re-registered after a reconnect.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> zookeeper_tokio::Result<()> {
/// use zookeeper_tokio::{Client, CreateOptions, EventType};
///
/// let servers = "127.0.0.1:2181";
/// # let servers = &zookeeper_testkit::shared_server()
/// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_oneshot"));
/// let client = Client::connect(servers).await?;
///
/// // Watch a node that does not exist yet: the watcher fires when it is created.
/// let (stat, created) = client.exists_and_watch("/ready").await?;
/// assert!(stat.is_none());
/// client.create("/ready", b"", &CreateOptions::persistent()).await?;
/// let event = created.await;
/// assert_eq!((event.event_type, event.path.as_str()), (EventType::NodeCreated, "/ready"));
///
/// // One event per watch: read again to watch again.
/// let (_data, stat, changed) = client.get_data_and_watch("/ready").await?;
/// client.set_data("/ready", b"go", Some(stat.version)).await?;
/// assert_eq!(changed.await.event_type, EventType::NodeDataChanged);
/// # Ok(())
/// # }
/// ```
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
/// type [`EventType::None`](crate::EventType::None) with the terminal state, or after `remove_watches` removed it (the
/// last event is then [`EventType::PersistentWatchRemoved`](crate::EventType::PersistentWatchRemoved)). Dropping it unregisters the client
/// side; the server-side watch stays until the session ends or `remove_watches` is called.
///
/// **A consumer that falls behind.** Events wait for the consumer in a queue of at most
/// [`ClientBuilder::max_queued_events`](crate::ClientBuilder::max_queued_events) (default
/// 10,000). Once it is full, further events are not queued: they are folded per node into what
/// changed since, and a consumer that has read everything queued then gets, per node in path
/// order, the events a reconnect would report for the same changes: `NodeDeleted` for a node
/// that went away, `NodeCreated` for one that appeared (not its later changes), `NodeDeleted`
/// then `NodeCreated` for one deleted and created again, and otherwise one `NodeDataChanged`
/// and one `NodeChildrenChanged` however many there were; a node that came and went reports
/// nothing. Events then flow one by one again. The event that ends the stream always comes
/// last. So the stream's memory stays bounded (the queue, and one small entry per node that
/// changed while its consumer was behind) and no change goes unreported.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> zookeeper_tokio::Result<()> {
/// use zookeeper_tokio::{AddWatchMode, Client, CreateOptions, EventType};
///
/// let servers = "127.0.0.1:2181";
/// # let servers = &zookeeper_testkit::shared_server()
/// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_persistent"));
/// let client = Client::connect(servers).await?;
/// client.create("/jobs", b"", &CreateOptions::persistent()).await?;
///
/// // Every change under /jobs, for as long as the watcher is kept.
/// let mut events = client.add_watch("/jobs", AddWatchMode::PersistentRecursive).await?;
/// client.create("/jobs/1", b"", &CreateOptions::persistent()).await?;
/// client.set_data("/jobs/1", b"done", None).await?;
/// client.delete("/jobs/1", None).await?;
///
/// let mut seen = Vec::new();
/// while seen.len() < 3 {
///     let event = events.next().await.expect("the session is alive");
///     seen.push((event.event_type, event.path));
/// }
/// assert_eq!(
///     seen,
///     [
///         (EventType::NodeCreated, "/jobs/1".to_string()),
///         (EventType::NodeDataChanged, "/jobs/1".to_string()),
///         (EventType::NodeDeleted, "/jobs/1".to_string()),
///     ]
/// );
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct PersistentWatcher {
    rx: EventReceiver,
}

impl PersistentWatcher {
    pub(crate) fn new(rx: EventReceiver) -> Self {
        PersistentWatcher { rx }
    }

    /// The next event, or `None` once the watch has ended.
    pub async fn next(&mut self) -> Option<WatchedEvent> {
        std::future::poll_fn(|cx| self.rx.poll_recv(cx)).await
    }

    /// The next event if one is already queued.
    pub fn try_next(&mut self) -> Option<WatchedEvent> {
        self.rx.try_recv()
    }
}

impl futures_core::Stream for PersistentWatcher {
    type Item = WatchedEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<WatchedEvent>> {
        self.rx.poll_recv(cx)
    }
}
