//! The client-side watch registry: who gets which event, and what to re-register after a
//! reconnect.
//!
//! Keys are server paths (chroot included), because that is what notifications and
//! `setWatches` carry; events handed to users carry client paths.

use std::collections::HashMap;

use tokio::sync::{mpsc, oneshot};
use zk_protocol::{EventType, WatcherType};

use crate::path::Chroot;
use crate::state::SessionState;
use crate::watcher::WatchedEvent;

type OneshotTx = oneshot::Sender<WatchedEvent>;
type StreamTx = mpsc::UnboundedSender<WatchedEvent>;

/// Every watch the client holds, by kind.
#[derive(Debug, Default)]
pub(crate) struct WatchRegistry {
    data: HashMap<String, Vec<OneshotTx>>,
    exist: HashMap<String, Vec<OneshotTx>>,
    child: HashMap<String, Vec<OneshotTx>>,
    persistent: HashMap<String, Vec<StreamTx>>,
    recursive: HashMap<String, Vec<StreamTx>>,
}

/// The paths to re-register after a reconnect, in `setWatches2` order.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct WatchSet {
    pub data: Vec<String>,
    pub exist: Vec<String>,
    pub child: Vec<String>,
    pub persistent: Vec<String>,
    pub recursive: Vec<String>,
}

impl WatchSet {
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
            && self.exist.is_empty()
            && self.child.is_empty()
            && self.persistent.is_empty()
            && self.recursive.is_empty()
    }
}

impl WatchRegistry {
    pub fn add_data(&mut self, path: String, tx: OneshotTx) {
        self.data.entry(path).or_default().push(tx);
    }

    pub fn add_exist(&mut self, path: String, tx: OneshotTx) {
        self.exist.entry(path).or_default().push(tx);
    }

    pub fn add_child(&mut self, path: String, tx: OneshotTx) {
        self.child.entry(path).or_default().push(tx);
    }

    pub fn add_persistent(&mut self, path: String, recursive: bool, tx: StreamTx) {
        let map = if recursive {
            &mut self.recursive
        } else {
            &mut self.persistent
        };
        map.entry(path).or_default().push(tx);
    }

    /// Delivers a server notification to every watcher it concerns (§4.7 of the protocol notes:
    /// created/changed fire data and exist watches, children-changed fires child watches,
    /// deleted fires all three; persistent watches see everything on their path, recursive ones
    /// everything but children-changed on their path and below).
    pub fn dispatch(&mut self, event_type: EventType, server_path: &str, chroot: &Chroot) {
        let event = WatchedEvent {
            event_type,
            state: SessionState::Connected,
            path: chroot.strip(server_path),
        };
        let (data, exist, child) = match event_type {
            EventType::NodeCreated | EventType::NodeDataChanged => (true, true, false),
            EventType::NodeChildrenChanged => (false, false, true),
            EventType::NodeDeleted => (true, true, true),
            _ => (false, false, false),
        };
        if data {
            fire_oneshots(&mut self.data, server_path, &event);
        }
        if exist {
            fire_oneshots(&mut self.exist, server_path, &event);
        }
        if child {
            fire_oneshots(&mut self.child, server_path, &event);
        }
        send_stream(&mut self.persistent, server_path, &event);
        if event_type != EventType::NodeChildrenChanged && !self.recursive.is_empty() {
            let mut path = server_path;
            loop {
                send_stream(&mut self.recursive, path, &event);
                if path == "/" {
                    break;
                }
                path = match path.rfind('/') {
                    Some(0) => "/",
                    Some(i) => &path[..i],
                    None => break,
                };
            }
        }
    }

    /// Drops the watchers `removeWatches` removed on the server, telling each of them.
    pub fn remove(&mut self, server_path: &str, watcher_type: WatcherType, chroot: &Chroot) {
        let path = chroot.strip(server_path);
        let event = |event_type| WatchedEvent {
            event_type,
            state: SessionState::Connected,
            path: path.clone(),
        };
        let (data, child, persistent, recursive) = match watcher_type {
            WatcherType::Data => (true, false, false, false),
            WatcherType::Children => (false, true, false, false),
            WatcherType::Any => (true, true, true, true),
            WatcherType::Persistent => (false, false, true, false),
            WatcherType::PersistentRecursive => (false, false, false, true),
            _ => (false, false, false, false),
        };
        if data {
            fire_oneshots(
                &mut self.data,
                server_path,
                &event(EventType::DataWatchRemoved),
            );
            fire_oneshots(
                &mut self.exist,
                server_path,
                &event(EventType::DataWatchRemoved),
            );
        }
        if child {
            fire_oneshots(
                &mut self.child,
                server_path,
                &event(EventType::ChildWatchRemoved),
            );
        }
        let removed = event(EventType::PersistentWatchRemoved);
        if persistent {
            for tx in self.persistent.remove(server_path).unwrap_or_default() {
                let _ = tx.send(removed.clone());
            }
        }
        if recursive {
            for tx in self.recursive.remove(server_path).unwrap_or_default() {
                let _ = tx.send(removed.clone());
            }
        }
    }

    /// Ends every watch with a session event carrying the terminal `state`.
    pub fn terminate(&mut self, state: SessionState, chroot: &Chroot) {
        for map in [&mut self.data, &mut self.exist, &mut self.child] {
            for (path, txs) in map.drain() {
                let event = WatchedEvent::session(state, &chroot.strip(&path));
                for tx in txs {
                    let _ = tx.send(event.clone());
                }
            }
        }
        for map in [&mut self.persistent, &mut self.recursive] {
            for (path, txs) in map.drain() {
                let event = WatchedEvent::session(state, &chroot.strip(&path));
                for tx in txs {
                    let _ = tx.send(event.clone());
                }
            }
        }
    }

    /// The paths still wanted by someone, dropping watchers whose receiver is gone.
    pub fn wanted(&mut self) -> WatchSet {
        WatchSet {
            data: live_paths(&mut self.data, |tx| tx.is_closed()),
            exist: live_paths(&mut self.exist, |tx| tx.is_closed()),
            child: live_paths(&mut self.child, |tx| tx.is_closed()),
            persistent: live_paths(&mut self.persistent, |tx| tx.is_closed()),
            recursive: live_paths(&mut self.recursive, |tx| tx.is_closed()),
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.data.len()
            + self.exist.len()
            + self.child.len()
            + self.persistent.len()
            + self.recursive.len()
    }
}

fn fire_oneshots(map: &mut HashMap<String, Vec<OneshotTx>>, path: &str, event: &WatchedEvent) {
    if let Some(txs) = map.remove(path) {
        for tx in txs {
            let _ = tx.send(event.clone());
        }
    }
}

fn send_stream(map: &mut HashMap<String, Vec<StreamTx>>, path: &str, event: &WatchedEvent) {
    if let Some(txs) = map.get_mut(path) {
        txs.retain(|tx| tx.send(event.clone()).is_ok());
        if txs.is_empty() {
            map.remove(path);
        }
    }
}

fn live_paths<T>(map: &mut HashMap<String, Vec<T>>, closed: impl Fn(&T) -> bool) -> Vec<String> {
    map.retain(|_, txs| {
        txs.retain(|tx| !closed(tx));
        !txs.is_empty()
    });
    let mut paths: Vec<String> = map.keys().cloned().collect();
    paths.sort();
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event_type: EventType, path: &str) -> WatchedEvent {
        WatchedEvent {
            event_type,
            state: SessionState::Connected,
            path: path.into(),
        }
    }

    #[test]
    fn deleted_fires_data_exist_and_child_watches_once() {
        let mut reg = WatchRegistry::default();
        let root = Chroot::new(Some("/app"));
        let (d, mut dr) = oneshot::channel();
        let (c, mut cr) = oneshot::channel();
        reg.add_data("/app/a".into(), d);
        reg.add_child("/app/a".into(), c);
        reg.dispatch(EventType::NodeDeleted, "/app/a", &root);
        assert_eq!(dr.try_recv().unwrap(), ev(EventType::NodeDeleted, "/a"));
        assert_eq!(cr.try_recv().unwrap(), ev(EventType::NodeDeleted, "/a"));
        assert_eq!(reg.len(), 0);
    }

    #[test]
    fn children_changed_only_fires_child_and_persistent_not_recursive() {
        let mut reg = WatchRegistry::default();
        let root = Chroot::new(None);
        let (d, mut dr) = oneshot::channel();
        reg.add_data("/a".into(), d);
        let (p, mut pr) = mpsc::unbounded_channel();
        reg.add_persistent("/a".into(), false, p);
        let (r, mut rr) = mpsc::unbounded_channel();
        reg.add_persistent("/".into(), true, r);
        reg.dispatch(EventType::NodeChildrenChanged, "/a", &root);
        assert!(dr.try_recv().is_err());
        assert_eq!(
            pr.try_recv().unwrap(),
            ev(EventType::NodeChildrenChanged, "/a")
        );
        assert!(rr.try_recv().is_err());
        reg.dispatch(EventType::NodeCreated, "/a/b/c", &root);
        assert_eq!(rr.try_recv().unwrap(), ev(EventType::NodeCreated, "/a/b/c"));
        assert!(pr.try_recv().is_err(), "persistent watch is not recursive");
        reg.dispatch(EventType::NodeDataChanged, "/a", &root);
        assert_eq!(dr.try_recv().unwrap(), ev(EventType::NodeDataChanged, "/a"));
        assert_eq!(pr.try_recv().unwrap(), ev(EventType::NodeDataChanged, "/a"));
        assert_eq!(rr.try_recv().unwrap(), ev(EventType::NodeDataChanged, "/a"));
    }

    #[test]
    fn wanted_skips_dropped_watchers() {
        let mut reg = WatchRegistry::default();
        let (d, dr) = oneshot::channel();
        reg.add_data("/a".into(), d);
        let (e, _er) = oneshot::channel();
        reg.add_exist("/b".into(), e);
        let (r, _rr) = mpsc::unbounded_channel();
        reg.add_persistent("/r".into(), true, r);
        drop(dr);
        let set = reg.wanted();
        assert_eq!(set.data, Vec::<String>::new());
        assert_eq!(set.exist, vec!["/b".to_string()]);
        assert_eq!(set.recursive, vec!["/r".to_string()]);
    }

    #[test]
    fn terminate_resolves_everything_with_the_state() {
        let mut reg = WatchRegistry::default();
        let root = Chroot::new(Some("/app"));
        let (d, mut dr) = oneshot::channel();
        reg.add_data("/app".into(), d);
        let (p, mut pr) = mpsc::unbounded_channel();
        reg.add_persistent("/app/x".into(), false, p);
        reg.terminate(SessionState::Expired, &root);
        assert_eq!(
            dr.try_recv().unwrap(),
            WatchedEvent::session(SessionState::Expired, "/")
        );
        assert_eq!(
            pr.try_recv().unwrap(),
            WatchedEvent::session(SessionState::Expired, "/x")
        );
        assert!(pr.try_recv().is_err());
        assert_eq!(reg.len(), 0);
    }
}
