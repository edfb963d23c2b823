//! addWatch, removeWatches.

use std::future::Future;

use zookeeper_jute::{AddWatchMode, AddWatchRequest, RemoveWatchesRequest, Request, WatcherType};

use super::reply::{at, reply};
use crate::client::Client;
use crate::error::{ErrorKind, Result};
use crate::event_queue;
use crate::packet::WatchRegistration;
use crate::watcher::PersistentWatcher;

impl Client {
    /// Sets a persistent watch on `path` (servers 3.6+): [`AddWatchMode::Persistent`] sees data,
    /// create, delete and child-list events of the node; [`AddWatchMode::PersistentRecursive`]
    /// sees data, create and delete events of the node and every descendant (no child-list
    /// events). The watch works whether or not the node exists, and survives reconnects: it is
    /// re-registered on the new connection.
    ///
    /// Servers replay no missed events for persistent watches, so the client does: it reads
    /// the watched node (or lists the whole subtree, one `getChildren2` per node) when the
    /// watch is set, keeps what it read up to date from the events, and reads again after
    /// every reconnect. Changes made while it was cut off are then reported once per node and
    /// kind of change (two missed data changes give one `NodeDataChanged`; a node created while
    /// cut off gives `NodeCreated` only; a node created and deleted again while cut off gives
    /// nothing, as it was never there to be read), and a change whose event did arrive is never
    /// reported again. The call returns once that first read is done, so from then on no
    /// change goes unreported. A recursive watch therefore costs a listing of its subtree on
    /// every reconnect and the subtree's paths in memory; and before 3.9, whose notifications
    /// carry the zxid of the change, each node created under a persistent watch is read once,
    /// so that its deletion and creation again while cut off are not mistaken for no change.
    /// The memory is bounded: past
    /// [`ClientBuilder::max_recursive_watch_memory`](crate::ClientBuilder::max_recursive_watch_memory)
    /// a recursive watch keeps only its root, and a reconnect reports by zxid instead, which
    /// loses nothing but may report a change again.
    ///
    /// A consumer that reads more slowly than events come is treated the same way: past
    /// [`ClientBuilder::max_queued_events`](crate::ClientBuilder::max_queued_events) queued
    /// events, changes are folded per node and reported once it has caught up (see
    /// [`PersistentWatcher`]), so memory stays bounded and nothing goes unreported.
    ///
    /// If a listing of the subtree is larger than the incoming limit
    /// ([`ClientBuilder::max_incoming_frame`](crate::ClientBuilder::max_incoming_frame)), the
    /// call fails with [`ErrorKind::ReplyTooLarge`]; the watch the server set stays until the
    /// session ends, and the client drops its events. A listing that outgrows the limit later
    /// is left out of the reads after a reconnect: changes below it made while cut off are not
    /// reported.
    pub fn add_watch(
        &self,
        path: &str,
        mode: AddWatchMode,
    ) -> impl Future<Output = Result<PersistentWatcher>> + Send + 'static {
        let (tx, rx) = event_queue::channel(self.max_queued_events());
        let recursive = match mode {
            AddWatchMode::Persistent => Ok(false),
            AddWatchMode::PersistentRecursive => Ok(true),
            other => {
                Err(ErrorKind::InvalidArgument(format!("unknown watch mode {other:?}")).into())
            }
        };
        let call = recursive.and_then(|recursive| {
            let path = self.server_path(path)?;
            self.call(
                Request::AddWatch(AddWatchRequest {
                    path: path.clone(),
                    mode: mode.as_i32(),
                }),
                Some(WatchRegistration::Persistent {
                    path,
                    recursive,
                    tx,
                }),
            )
        });
        reply(call, at("add_watch", path), move |reply| {
            reply?;
            Ok(PersistentWatcher::new(rx))
        })
    }

    /// Removes this session's watches of `watcher_type` on `path`, on the server and here:
    /// one-shot watchers resolve to `DataWatchRemoved`/`ChildWatchRemoved`, persistent ones get
    /// `PersistentWatchRemoved` and end.
    ///
    /// `WatcherType::Data` covers data and exist watches, `Any` every kind. `Persistent` and
    /// `PersistentRecursive` need servers 3.9+ (older ones answer
    /// [`ErrorKind::MarshallingError`]); on 3.6–3.8 servers `Any` removes persistent watches too.
    /// Fails with [`ErrorKind::NoWatcher`] if the server holds no such watch.
    pub fn remove_watches(
        &self,
        path: &str,
        watcher_type: WatcherType,
    ) -> impl Future<Output = Result<()>> + Send + 'static {
        let call = self.server_path(path).and_then(|path| {
            self.call(
                Request::RemoveWatches(RemoveWatchesRequest {
                    path: path.clone(),
                    watcher_type: watcher_type.as_i32(),
                }),
                Some(WatchRegistration::Remove(path, watcher_type)),
            )
        });
        reply(call, at("remove_watches", path), |reply| reply.map(drop))
    }
}
