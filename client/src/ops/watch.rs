//! addWatch, removeWatches.

use std::future::Future;

use tokio::sync::mpsc;
use zk_protocol::{AddWatchMode, AddWatchRequest, RemoveWatchesRequest, Request, WatcherType};

use crate::client::Client;
use crate::error::{Error, Result};
use crate::packet::WatchRegistration;
use crate::watcher::PersistentWatcher;

impl Client {
    /// Sets a persistent watch on `path` (servers 3.6+): [`AddWatchMode::Persistent`] sees data,
    /// create, delete and child-list events of the node; [`AddWatchMode::PersistentRecursive`]
    /// sees data, create and delete events of the node and every descendant (no child-list
    /// events). The watch works whether or not the node exists, and survives reconnects: it is
    /// re-registered on the new connection. Servers replay no missed events for persistent
    /// watches (unlike one-shot ones), so changes made while the client was disconnected are
    /// not reported; re-read the state after a `Disconnected` → `Connected` transition if that
    /// matters.
    pub fn add_watch(
        &self,
        path: &str,
        mode: AddWatchMode,
    ) -> impl Future<Output = Result<PersistentWatcher>> + Send + 'static {
        let (tx, rx) = mpsc::unbounded_channel();
        let recursive = match mode {
            AddWatchMode::Persistent => Ok(false),
            AddWatchMode::PersistentRecursive => Ok(true),
            other => Err(Error::InvalidArgument(format!(
                "unknown watch mode {other:?}"
            ))),
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
        async move {
            call?.await?;
            Ok(PersistentWatcher::new(rx))
        }
    }

    /// Removes this session's watches of `watcher_type` on `path`, on the server and here:
    /// one-shot watchers resolve to `DataWatchRemoved`/`ChildWatchRemoved`, persistent ones get
    /// `PersistentWatchRemoved` and end.
    ///
    /// `WatcherType::Data` covers data and exist watches, `Any` every kind. `Persistent` and
    /// `PersistentRecursive` need servers 3.9+ (older ones answer
    /// [`Error::MarshallingError`]); on 3.6–3.8 servers `Any` removes persistent watches too.
    /// Fails with [`Error::NoWatcher`] if the server holds no such watch.
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
        async move {
            call?.await?;
            Ok(())
        }
    }
}
