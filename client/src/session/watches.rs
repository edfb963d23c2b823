//! The client-side watch registry: who gets which event, and what to re-register after a
//! reconnect.
//!
//! Keys are server paths (chroot included), because that is what notifications and
//! `setWatches` carry; events handed to users carry client paths.

use std::collections::HashMap;

use tracing::warn;

use tokio::sync::oneshot;
use zookeeper_jute::{EventType, Stat, WatcherType};

use super::watch_memo::{Missed, NodeState, SubtreeCache};
use crate::error::Error;
use crate::event_queue::EventSender;
use crate::metrics::{self, WatchKind};
use crate::packet::{RawReply, ReplyTx};
use crate::path::Chroot;
use crate::state::SessionState;
use crate::watched_event::WatchedEvent;

type OneshotTx = oneshot::Sender<WatchedEvent>;
type StreamTx = EventSender;

/// An `addWatch` reply held until the watched node or subtree is known, so that once the call
/// returns no change can go unreported, even across a reconnect.
pub(crate) type HeldReply = (ReplyTx, RawReply);

/// Every watch the client holds, by kind.
#[derive(Debug)]
pub(crate) struct WatchRegistry {
    data: HashMap<String, Vec<OneshotTx>>,
    exist: HashMap<String, Vec<OneshotTx>>,
    child: HashMap<String, Vec<OneshotTx>>,
    persistent: HashMap<String, Persistent>,
    recursive: HashMap<String, Recursive>,
    /// Tags the session's reads, so that a reply meant for a watch since removed (and maybe
    /// set again) or for an earlier read is not taken for the current one.
    last_tag: u64,
    /// Bytes of its subtree a recursive watch remembers at most (see `SubtreeCache`).
    max_subtree_bytes: usize,
    /// The `setWatches` batches of a reconnect still unanswered. Until the last is answered,
    /// the persistent watches are not all set on the server again: the events that come meanwhile
    /// are those of one-shot watches, and those `setWatches` sends for them report the net
    /// change since the last zxid the client saw, not the changes in order. Persistent watches
    /// take none of them: the reads that follow the batches report what they missed.
    reregistering: usize,
}

#[cfg(test)]
impl Default for WatchRegistry {
    fn default() -> WatchRegistry {
        WatchRegistry::new(usize::MAX)
    }
}

/// The watchers of one persistent watch and what is known of its node.
#[derive(Debug, Default)]
struct Persistent {
    txs: Vec<StreamTx>,
    node: NodeState,
    held: Vec<HeldReply>,
    /// Tag of the latest read of the node.
    read: u64,
}

/// The watchers of one persistent-recursive watch and what is known of its subtree.
#[derive(Debug)]
struct Recursive {
    txs: Vec<StreamTx>,
    cache: SubtreeCache,
    held: Vec<HeldReply>,
    /// Tag of the listings of the walk under way.
    walk: u64,
}

/// A request to make after a live event: a read for what the event could not tell (the
/// creation zxid of a node created under a persistent watch), or a persistent watch to set
/// again.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FollowUp {
    /// Read the node of the persistent watch on this path.
    Node(String),
    /// Read `path` in the subtree of the recursive watch on `root`.
    Stat { root: String, path: String },
    /// Set the persistent (or recursive) watch on `path` again on the server, and read what
    /// it watches to report what it missed meanwhile (see `displaced`).
    Restore { path: String, recursive: bool },
    /// Set the one-shot watches on `path` again on the server (see `displaced`).
    Oneshots(String),
}

/// What a request did on the server to the watches of one path. A 3.8 server keeps one watch
/// per connection, path and table: data and existence watches in one table, child watches in
/// the other; a persistent watch in both, a recursive one in the data table. Each watch set
/// takes the place of what the session held in its tables there, and a removal takes the
/// path's entry out of its table whatever its kind (ZOOKEEPER-4466).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Touched {
    /// A one-shot data or existence watch was set, or data watches removed.
    Data,
    /// A one-shot child watch was set, or child watches removed.
    Children,
    /// A persistent (not recursive) watch was set.
    Persistent,
    /// Persistent, recursive or all watches were removed.
    RemovedPersistent,
}

/// What a new persistent watch needs before its node or subtree is known.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Learn {
    /// Already known.
    Nothing,
    /// A read of the node of a persistent watch.
    Node,
    /// A walk of the subtree of a persistent-recursive watch.
    Subtree,
    /// The walk under way.
    Walk,
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
    /// No watches yet; each recursive watch remembers at most `max_subtree_bytes` of its
    /// subtree.
    pub fn new(max_subtree_bytes: usize) -> WatchRegistry {
        WatchRegistry {
            data: HashMap::new(),
            exist: HashMap::new(),
            child: HashMap::new(),
            persistent: HashMap::new(),
            recursive: HashMap::new(),
            last_tag: 0,
            max_subtree_bytes,
            reregistering: 0,
        }
    }

    pub fn add_data(&mut self, path: String, tx: OneshotTx) {
        metrics::watch_registered(WatchKind::Data);
        push_pruned(self.data.entry(path).or_default(), tx, OneshotTx::is_closed);
    }

    pub fn add_exist(&mut self, path: String, tx: OneshotTx) {
        metrics::watch_registered(WatchKind::Exist);
        push_pruned(
            self.exist.entry(path).or_default(),
            tx,
            OneshotTx::is_closed,
        );
    }

    pub fn add_child(&mut self, path: String, tx: OneshotTx) {
        metrics::watch_registered(WatchKind::Child);
        push_pruned(
            self.child.entry(path).or_default(),
            tx,
            OneshotTx::is_closed,
        );
    }

    /// A reconnect sent its `setWatches` in `batches` frames.
    pub fn reregistering(&mut self, batches: usize) {
        self.reregistering = batches;
    }

    /// One of a reconnect's `setWatches` batches was answered.
    pub fn reregistered(&mut self) {
        self.reregistering = self.reregistering.saturating_sub(1);
    }

    /// Adds a persistent watcher; says what must be read to learn the watched node or subtree.
    pub fn add_persistent(&mut self, path: String, recursive: bool, tx: StreamTx) -> Learn {
        metrics::watch_registered(WatchKind::persistent(recursive));
        if recursive {
            let max_bytes = self.max_subtree_bytes;
            let entry = self
                .recursive
                .entry(path)
                .or_insert_with_key(|root| Recursive {
                    txs: vec![],
                    cache: SubtreeCache::new(root.clone(), max_bytes),
                    held: vec![],
                    walk: 0,
                });
            push_pruned(&mut entry.txs, tx, StreamTx::is_closed);
            if entry.cache.needs_walk() {
                Learn::Subtree
            } else if entry.cache.is_walking() {
                Learn::Walk
            } else {
                Learn::Nothing
            }
        } else {
            let entry = self.persistent.entry(path).or_default();
            push_pruned(&mut entry.txs, tx, StreamTx::is_closed);
            if entry.node.is_unknown() {
                Learn::Node
            } else {
                Learn::Nothing
            }
        }
    }

    /// Holds the reply of the `addWatch` that set the watch on `path` until what it watches is
    /// known.
    pub fn hold_reply(&mut self, path: &str, recursive: bool, reply: HeldReply) {
        let held = if recursive {
            self.recursive.get_mut(path).map(|e| &mut e.held)
        } else {
            self.persistent.get_mut(path).map(|e| &mut e.held)
        };
        match held {
            Some(held) => held.push(reply),
            None => release(vec![reply]),
        }
    }

    /// Fails the `addWatch` calls held for the watch on `path` with `err`: what they watch
    /// cannot be read.
    pub fn fail_held(&mut self, path: &str, recursive: bool, err: &Error) {
        let held = if recursive {
            self.recursive.get_mut(path).map(|e| &mut e.held)
        } else {
            self.persistent.get_mut(path).map(|e| &mut e.held)
        };
        for (reply, _) in held.map(std::mem::take).unwrap_or_default() {
            let _ = reply.send(Err(err.clone()));
        }
    }

    /// Delivers a server notification to every watcher it concerns (§4.7 of the protocol notes:
    /// created/changed fire data and exist watches, children-changed fires child watches,
    /// deleted fires all three; persistent watches see everything on their path, recursive ones
    /// everything but children-changed on their path and below). `zxid` is the notification's
    /// (3.9+ servers give the zxid of the change, older ones −1). Returns the reads that must
    /// follow, to learn what the event could not tell.
    pub fn dispatch(
        &mut self,
        event_type: EventType,
        server_path: &str,
        zxid: i64,
        chroot: &Chroot,
    ) -> Vec<FollowUp> {
        let zxid = (zxid > 0).then_some(zxid);
        let mut follow = vec![];
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
        if matches!(event_type, EventType::NodeCreated | EventType::NodeDeleted) {
            self.fire_child_watches_of_parent(server_path, chroot);
        }
        if self.reregistering > 0 {
            return follow;
        }
        // Beside a recursive watch on its path, a persistent watch hears its children change
        // from the recursive watch's creations and deletions below (see `children_beside`).
        let beside_recursive = event_type == EventType::NodeChildrenChanged
            && self.recursive.contains_key(server_path);
        if let Some(entry) = self
            .persistent
            .get_mut(server_path)
            .filter(|_| !beside_recursive)
        {
            let missed = entry.node.on_event(event_type, zxid);
            if let Some(missed) = missed {
                send_all(&mut entry.txs, &with_type(&event, missed));
            }
            send_all(&mut entry.txs, &event);
            let created =
                event_type == EventType::NodeCreated || missed == Some(EventType::NodeCreated);
            if created && entry.node.needs_czxid() {
                follow.push(FollowUp::Node(server_path.to_string()));
            }
            if entry.txs.is_empty() {
                if let Some(entry) = self.persistent.remove(server_path) {
                    release(entry.held);
                }
            }
        }
        if matches!(event_type, EventType::NodeCreated | EventType::NodeDeleted) {
            self.children_beside(server_path, zxid, chroot);
        }
        if event_type != EventType::NodeChildrenChanged && !self.recursive.is_empty() {
            let mut path = server_path;
            loop {
                if let Some(entry) = self.recursive.get_mut(path) {
                    // `None`: left for the walk under way, which reports it.
                    if let Some(missed) = entry.cache.on_event(event_type, server_path, zxid) {
                        send_missed(&mut entry.txs, missed, chroot);
                        send_all(&mut entry.txs, &event);
                        if event_type == EventType::NodeCreated
                            && entry.cache.needs_czxid(server_path)
                        {
                            follow.push(FollowUp::Stat {
                                root: path.to_string(),
                                path: server_path.to_string(),
                            });
                        }
                    }
                    if entry.txs.is_empty() {
                        if let Some(entry) = self.recursive.remove(path) {
                            release(entry.held);
                        }
                    }
                }
                path = match parent_of(path) {
                    Some(parent) => parent,
                    None => break,
                };
            }
        }
        follow
    }

    /// Fires the one-shot child watches of the parent of `server_path`, just created or
    /// deleted, when a recursive watch covers that parent: its event is the parent's children
    /// changing. The server may not send that event itself: 3.8 keeps one watch mode per
    /// connection and path, so a recursive watch set on the same path, by `addWatch` or by the
    /// `setWatches2` that restores both after a reconnect, turns the child watch recursive, and
    /// recursive watchers get no child events (ZOOKEEPER-4466). Where the server does send it,
    /// the watches have already fired and it finds none.
    fn fire_child_watches_of_parent(&mut self, server_path: &str, chroot: &Chroot) {
        if self.child.is_empty() || self.recursive.is_empty() {
            return;
        }
        let Some(parent) = parent_of(server_path) else {
            return;
        };
        if !self.child.contains_key(parent) {
            return;
        }
        let mut covering = Some(parent);
        while let Some(path) = covering {
            if self.recursive.contains_key(path) {
                let event = WatchedEvent {
                    event_type: EventType::NodeChildrenChanged,
                    state: SessionState::Connected,
                    path: chroot.strip(parent),
                };
                fire_oneshots(&mut self.child, parent, &event);
                return;
            }
            covering = parent_of(path);
        }
    }

    /// Tells the persistent watch on the parent of `server_path`, just created or deleted, that
    /// its children changed, when a recursive watch is set on that parent too. A 3.8 server
    /// sends a connection holding both watches on one path no child events for it (only one
    /// of the two takes effect there, see [`Touched`]); the recursive watch hears every
    /// creation and deletion below, which are those events. The server's own, where it sends
    /// one, is not passed on (`beside_recursive` in `dispatch`), so that each is told once.
    fn children_beside(&mut self, server_path: &str, zxid: Option<i64>, chroot: &Chroot) {
        let Some(parent) = parent_of(server_path) else {
            return;
        };
        if !self.recursive.contains_key(parent) {
            return;
        }
        if let Some(entry) = self.persistent.get_mut(parent) {
            let event = WatchedEvent {
                event_type: EventType::NodeChildrenChanged,
                state: SessionState::Connected,
                path: chroot.strip(parent),
            };
            if let Some(missed) = entry.node.on_event(event.event_type, zxid) {
                send_all(&mut entry.txs, &with_type(&event, missed));
            }
            send_all(&mut entry.txs, &event);
        }
    }

    /// What the session must set again on the server after a request `touched` the watches of
    /// `path` there (see [`Touched`]), in this order: the persistent watch (which takes both
    /// tables), then the recursive one (which then takes the data table back), each followed
    /// by a read that reports what it missed meanwhile; or, once persistent watches were
    /// removed, the one-shot watches they stood for. A one-shot watch whose place a persistent
    /// one takes is fired by the persistent watch's events, which include its own.
    ///
    /// Without this, a one-shot watch set on a recursive watch's root (a cache's root that a
    /// recipe also watches) silenced the recursive watch below it until the one-shot fired,
    /// and a persistent watch set on its root for good.
    pub fn displaced(&self, path: &str, touched: Touched) -> Vec<FollowUp> {
        let persistent = self.persistent.contains_key(path);
        let recursive = self.recursive.contains_key(path);
        let restore = |recursive| FollowUp::Restore {
            path: path.to_string(),
            recursive,
        };
        let mut follow = vec![];
        match touched {
            Touched::Data | Touched::Children => {
                if persistent {
                    follow.push(restore(false));
                }
                if recursive && (touched == Touched::Data || persistent) {
                    follow.push(restore(true));
                }
            }
            Touched::Persistent => {
                if recursive {
                    follow.push(restore(true));
                }
            }
            Touched::RemovedPersistent => {
                if self.data.contains_key(path)
                    || self.exist.contains_key(path)
                    || self.child.contains_key(path)
                {
                    follow.push(FollowUp::Oneshots(path.to_string()));
                }
                if persistent {
                    follow.push(restore(false));
                }
                if recursive {
                    follow.push(restore(true));
                }
            }
        }
        follow
    }

    /// The one-shot watches held on `path`, to set again on the server.
    pub fn oneshots_on(&self, path: &str) -> WatchSet {
        let on = |map: &HashMap<String, Vec<OneshotTx>>| {
            map.get(path)
                .filter(|txs| txs.iter().any(|tx| !tx.is_closed()))
                .map(|_| vec![path.to_string()])
                .unwrap_or_default()
        };
        WatchSet {
            data: on(&self.data),
            exist: on(&self.exist),
            child: on(&self.child),
            ..WatchSet::default()
        }
    }

    /// A read of a persistent watch's node is about to be sent: its tag, `None` when the
    /// watch is gone.
    pub fn start_node_read(&mut self, server_path: &str) -> Option<u64> {
        let entry = self.persistent.get_mut(server_path)?;
        self.last_tag += 1;
        entry.read = self.last_tag;
        Some(self.last_tag)
    }

    /// Takes the read tagged `tag` of a persistent watch's node (`None`: no such node) and
    /// reports the changes it shows were missed.
    pub fn learn_node(
        &mut self,
        server_path: &str,
        tag: u64,
        stat: Option<&Stat>,
        chroot: &Chroot,
    ) {
        let Some(entry) = self.persistent.get_mut(server_path) else {
            return;
        };
        if entry.read != tag {
            return;
        }
        let missed = entry.node.on_read(stat);
        let missed = missed.into_iter().map(|t| (t, server_path.to_string()));
        send_missed(&mut entry.txs, missed.collect(), chroot);
        release(std::mem::take(&mut entry.held));
    }

    /// Starts a walk of a recursive watch's subtree, `seen_through` being the last zxid the
    /// session has seen: the tag of its listings, `None` when the watch is gone.
    pub fn start_walk(&mut self, root: &str, seen_through: i64) -> Option<u64> {
        let entry = self.recursive.get_mut(root)?;
        self.last_tag += 1;
        entry.walk = self.last_tag;
        // A walk under way is replaced: its listings are no longer counted.
        entry.cache.walk_abandoned();
        entry.cache.walk_started(seen_through);
        Some(self.last_tag)
    }

    /// Whether the recursive watch on `root` went past the memory bound.
    #[cfg(test)]
    pub fn is_folded(&self, root: &str) -> bool {
        self.recursive
            .get(root)
            .is_some_and(|e| e.cache.is_folded())
    }

    /// The nodes the recursive watch on `root` remembers.
    #[cfg(test)]
    pub fn remembered(&self, root: &str) -> usize {
        self.recursive.get(root).map_or(0, |e| e.cache.len())
    }

    /// Whether `tag` is the walk under way of the recursive watch on `root`.
    pub fn is_walk(&self, root: &str, tag: u64) -> bool {
        self.recursive.get(root).is_some_and(|e| e.walk == tag)
    }

    /// The walk `tag` of the recursive watch on `root`, if it is still the one under way.
    fn walk_of(&mut self, root: &str, tag: u64) -> Option<&mut Recursive> {
        self.recursive.get_mut(root).filter(|e| e.walk == tag)
    }

    /// Takes one listing of walk `tag` (`None`: no such node), reports the changes it shows
    /// were missed, and returns the paths to list next.
    pub fn learn_listing(
        &mut self,
        root: &str,
        tag: u64,
        path: &str,
        listing: Option<(&[String], &Stat)>,
        chroot: &Chroot,
    ) -> Vec<String> {
        let Some(entry) = self.walk_of(root, tag) else {
            return vec![];
        };
        let (missed, visit) = entry.cache.on_listing(path, listing);
        send_missed(&mut entry.txs, missed, chroot);
        if !entry.cache.is_walking() {
            release(std::mem::take(&mut entry.held));
        }
        visit
    }

    /// Takes a read of one node of a recursive watch's subtree, made while connected.
    pub fn learn_stat(&mut self, root: &str, path: &str, stat: &Stat) {
        if let Some(entry) = self.recursive.get_mut(root) {
            entry.cache.on_stat(path, stat);
        }
    }

    /// A listing of walk `tag` could not be read: the walk goes on without it.
    pub fn skip_listing(&mut self, root: &str, tag: u64, path: &str) {
        if let Some(entry) = self.walk_of(root, tag) {
            entry.cache.listing_skipped(path);
            if !entry.cache.is_walking() {
                release(std::mem::take(&mut entry.held));
            }
        }
    }

    /// The connection was lost: reads and `setWatches` batches under way will get no answer. The
    /// watches stay set, so the calls that set them succeed.
    pub fn abandon_reads(&mut self) {
        self.reregistering = 0;
        for path in sorted_keys(&self.recursive) {
            let entry = self.recursive.get_mut(&path).expect("a key just listed");
            entry.cache.walk_abandoned();
            release(std::mem::take(&mut entry.held));
        }
        for path in sorted_keys(&self.persistent) {
            let entry = self.persistent.get_mut(&path).expect("a key just listed");
            release(std::mem::take(&mut entry.held));
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
            if let Some(mut entry) = self.persistent.remove(server_path) {
                release(entry.held);
                send_all(&mut entry.txs, &removed);
            }
        }
        if recursive {
            if let Some(mut entry) = self.recursive.remove(server_path) {
                release(entry.held);
                send_all(&mut entry.txs, &removed);
            }
        }
    }

    /// Ends the recursive watches that may cover a node whose notification could not be read,
    /// its path beginning with `prefix`: each would otherwise go on as if the change had not
    /// happened. Its watchers are told the watch was removed.
    pub fn end_unreadable(&mut self, prefix: &[u8], chroot: &Chroot) {
        let may_cover = |root: &str| {
            let root = root.as_bytes();
            root == b"/"
                || match prefix.get(root.len()) {
                    Some(&next) => prefix.starts_with(root) && next == b'/',
                    // The path is cut short before the root ends: it may be below it.
                    None => root.starts_with(prefix),
                }
        };
        let ending: Vec<String> = sorted_keys(&self.recursive)
            .into_iter()
            .filter(|root| may_cover(root))
            .collect();
        for root in ending {
            warn!(
                root,
                "a recursive watch ends: a change below it could not be read"
            );
            self.remove(&root, WatcherType::PersistentRecursive, chroot);
        }
    }

    /// Ends every watch with a session event carrying the terminal `state`.
    pub fn terminate(&mut self, state: SessionState, chroot: &Chroot) {
        for map in [&mut self.data, &mut self.exist, &mut self.child] {
            for (path, txs) in drain_sorted(map) {
                let event = WatchedEvent::session(state, &chroot.strip(&path));
                for tx in txs {
                    let _ = tx.send(event.clone());
                }
            }
        }
        // The watches were set: calls still held for their first read succeed, and the
        // stream they return then ends with the terminal event.
        for (path, mut entry) in drain_sorted(&mut self.persistent) {
            release(entry.held);
            send_all(
                &mut entry.txs,
                &WatchedEvent::session(state, &chroot.strip(&path)),
            );
        }
        for (path, mut entry) in drain_sorted(&mut self.recursive) {
            release(entry.held);
            send_all(
                &mut entry.txs,
                &WatchedEvent::session(state, &chroot.strip(&path)),
            );
        }
    }

    /// The paths still wanted by someone, dropping watchers whose receiver is gone.
    pub fn wanted(&mut self) -> WatchSet {
        WatchSet {
            data: live_paths(&mut self.data, |txs| prune(txs, OneshotTx::is_closed)),
            exist: live_paths(&mut self.exist, |txs| prune(txs, OneshotTx::is_closed)),
            child: live_paths(&mut self.child, |txs| prune(txs, OneshotTx::is_closed)),
            persistent: live_paths(&mut self.persistent, |e| {
                prune_streams(&mut e.txs, &mut e.held)
            }),
            recursive: live_paths(&mut self.recursive, |e| {
                prune_streams(&mut e.txs, &mut e.held)
            }),
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

/// Fires and forgets the one-shot watches on `path`; false when there were none.
fn fire_oneshots(
    map: &mut HashMap<String, Vec<OneshotTx>>,
    path: &str,
    event: &WatchedEvent,
) -> bool {
    let Some(txs) = map.remove(path) else {
        return false;
    };
    let delivered = txs
        .into_iter()
        .filter_map(|tx| tx.send(event.clone()).ok())
        .count();
    metrics::watch_events(event.event_type, delivered);
    true
}

/// The parent of a server path, `None` for the root.
fn parent_of(path: &str) -> Option<&str> {
    match path.rfind('/') {
        Some(0) if path.len() > 1 => Some("/"),
        Some(i) if i > 0 => Some(&path[..i]),
        _ => None,
    }
}

fn release(held: Vec<HeldReply>) {
    for (reply, raw) in held {
        let _ = reply.send(Ok(raw));
    }
}

fn with_type(event: &WatchedEvent, event_type: EventType) -> WatchedEvent {
    WatchedEvent {
        event_type,
        ..event.clone()
    }
}

/// Sends to every stream, dropping those whose receiver is gone.
fn send_all(txs: &mut Vec<StreamTx>, event: &WatchedEvent) {
    txs.retain(|tx| tx.send(event.clone()).is_ok());
    metrics::watch_events(event.event_type, txs.len());
}

fn send_missed(txs: &mut Vec<StreamTx>, missed: Vec<Missed>, chroot: &Chroot) {
    for (event_type, server_path) in missed {
        let event = WatchedEvent {
            event_type,
            state: SessionState::Connected,
            path: chroot.strip(&server_path),
        };
        send_all(txs, &event);
    }
}

/// Adds `tx` to the watchers of one watch, first dropping those whose receiver is gone each
/// time the list has doubled. A watcher dropped unfired (a wait that timed out, and the watch
/// armed again) would otherwise stay until its node changes, which may be never; a path's
/// entry itself stays, as the server keeps its watch there. Doubling keeps the walks linear in
/// the watchers added, however many stay alive.
fn push_pruned<T>(txs: &mut Vec<T>, tx: T, closed: impl Fn(&T) -> bool) {
    if txs.len() >= 4 && txs.len().is_power_of_two() {
        prune(txs, closed);
    }
    txs.push(tx);
}

/// Drops closed watchers; true while any is left.
fn prune<T>(txs: &mut Vec<T>, closed: impl Fn(&T) -> bool) -> bool {
    txs.retain(|tx| !closed(tx));
    !txs.is_empty()
}

/// [`prune`] for the streams of a persistent watch: a watch that nobody reads any more is
/// dropped, and the calls still held for it are answered (every call gets its answer, whatever
/// became of the stream it set up).
fn prune_streams(txs: &mut Vec<StreamTx>, held: &mut Vec<HeldReply>) -> bool {
    let alive = prune(txs, StreamTx::is_closed);
    if !alive {
        release(std::mem::take(held));
    }
    alive
}

/// The paths of `map` in order. Where the watches are told or released together, they are
/// told in path order, not the map's: the order callers wake in is then the same from run to
/// run (a simulated run is a function of its seed), whatever the map's random state.
fn sorted_keys<V>(map: &HashMap<String, V>) -> Vec<String> {
    let mut paths: Vec<String> = map.keys().cloned().collect();
    paths.sort_unstable();
    paths
}

/// Empties `map`, in path order (see `sorted_keys`).
fn drain_sorted<V>(map: &mut HashMap<String, V>) -> Vec<(String, V)> {
    let mut all: Vec<(String, V)> = map.drain().collect();
    all.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    all
}

fn live_paths<V>(
    map: &mut HashMap<String, V>,
    mut alive: impl FnMut(&mut V) -> bool,
) -> Vec<String> {
    map.retain(|_, v| alive(v));
    let mut paths: Vec<String> = map.keys().cloned().collect();
    paths.sort();
    paths
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_queue;

    fn ev(event_type: EventType, path: &str) -> WatchedEvent {
        WatchedEvent {
            event_type,
            state: SessionState::Connected,
            path: path.into(),
        }
    }

    #[test]
    fn watchers_dropped_unfired_do_not_pile_up_on_a_quiet_path() {
        let mut reg = WatchRegistry::default();
        let root = Chroot::new(None);
        // A service's loop: arm, wait in vain, drop, arm again; the node never changes.
        for _ in 0..10_000 {
            let (d, dr) = oneshot::channel();
            reg.add_data("/config".into(), d);
            drop(dr);
            let (e, er) = oneshot::channel();
            reg.add_exist("/config".into(), e);
            drop(er);
            let (c, cr) = oneshot::channel();
            reg.add_child("/config".into(), c);
            drop(cr);
            let (p, pr) = event_queue::channel(16);
            reg.add_persistent("/config".into(), false, p);
            drop(pr);
            let (r, rr) = event_queue::channel(16);
            reg.add_persistent("/config".into(), true, r);
            drop(rr);
        }
        assert!(reg.data["/config"].len() <= 4);
        assert!(reg.exist["/config"].len() <= 4);
        assert!(reg.child["/config"].len() <= 4);
        assert!(reg.persistent["/config"].txs.len() <= 4);
        assert!(reg.recursive["/config"].txs.len() <= 4);
        // Live watchers are all kept, and fire.
        let live: Vec<_> = (0..100)
            .map(|_| {
                let (d, dr) = oneshot::channel();
                reg.add_data("/config".into(), d);
                dr
            })
            .collect();
        reg.dispatch(EventType::NodeDataChanged, "/config", -1, &root);
        for mut dr in live {
            assert_eq!(
                dr.try_recv().unwrap().event_type,
                EventType::NodeDataChanged
            );
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
        reg.dispatch(EventType::NodeDeleted, "/app/a", -1, &root);
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
        let (p, mut pr) = event_queue::channel(usize::MAX);
        reg.add_persistent("/a".into(), false, p);
        let (r, mut rr) = event_queue::channel(usize::MAX);
        reg.add_persistent("/".into(), true, r);
        reg.dispatch(EventType::NodeChildrenChanged, "/a", -1, &root);
        assert!(dr.try_recv().is_err());
        assert_eq!(
            pr.try_recv().unwrap(),
            ev(EventType::NodeChildrenChanged, "/a")
        );
        assert!(rr.try_recv().is_none());
        reg.dispatch(EventType::NodeCreated, "/a/b/c", -1, &root);
        assert_eq!(rr.try_recv().unwrap(), ev(EventType::NodeCreated, "/a/b/c"));
        assert!(pr.try_recv().is_none(), "persistent watch is not recursive");
        reg.dispatch(EventType::NodeDataChanged, "/a", -1, &root);
        assert_eq!(dr.try_recv().unwrap(), ev(EventType::NodeDataChanged, "/a"));
        assert_eq!(pr.try_recv().unwrap(), ev(EventType::NodeDataChanged, "/a"));
        assert_eq!(rr.try_recv().unwrap(), ev(EventType::NodeDataChanged, "/a"));
    }

    #[test]
    fn a_recursive_watch_fires_the_child_watches_of_a_parent_it_covers() {
        let mut reg = WatchRegistry::default();
        let root = Chroot::new(Some("/app"));
        let (r, _rr) = event_queue::channel(usize::MAX);
        reg.add_persistent("/app/p".into(), true, r);
        let (on_root, mut on_root_rx) = oneshot::channel();
        reg.add_child("/app/p".into(), on_root);
        let (below, mut below_rx) = oneshot::channel();
        reg.add_child("/app/p/q".into(), below);
        let (outside, mut outside_rx) = oneshot::channel();
        reg.add_child("/app".into(), outside);
        // A data change is no change of the parent's children.
        reg.dispatch(EventType::NodeDataChanged, "/app/p/kid", -1, &root);
        assert!(on_root_rx.try_recv().is_err());
        reg.dispatch(EventType::NodeCreated, "/app/p/kid", -1, &root);
        assert_eq!(
            on_root_rx.try_recv().unwrap(),
            ev(EventType::NodeChildrenChanged, "/p")
        );
        reg.dispatch(EventType::NodeDeleted, "/app/p/q/kid", -1, &root);
        assert_eq!(
            below_rx.try_recv().unwrap(),
            ev(EventType::NodeChildrenChanged, "/p/q")
        );
        // The server's own event, if it sends one, finds the watch already fired.
        reg.dispatch(EventType::NodeChildrenChanged, "/app/p/q", -1, &root);
        // The root's parent is not covered: its child watch waits for the server.
        reg.dispatch(EventType::NodeDeleted, "/app/p", -1, &root);
        assert!(outside_rx.try_recv().is_err());
        reg.dispatch(EventType::NodeChildrenChanged, "/app", -1, &root);
        assert_eq!(
            outside_rx.try_recv().unwrap(),
            ev(EventType::NodeChildrenChanged, "/")
        );
    }

    #[test]
    fn wanted_skips_dropped_watchers() {
        let mut reg = WatchRegistry::default();
        let (d, dr) = oneshot::channel();
        reg.add_data("/a".into(), d);
        let (e, _er) = oneshot::channel();
        reg.add_exist("/b".into(), e);
        let (r, _rr) = event_queue::channel(usize::MAX);
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
        let (p, mut pr) = event_queue::channel(usize::MAX);
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
        assert!(pr.try_recv().is_none());
        assert_eq!(reg.len(), 0);
    }
}
