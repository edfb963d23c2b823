//! One consumer's stream of cache events, bounded whatever the consumer's pace.
//!
//! At most `max` events wait. Past that, further changes are folded per node into the net
//! change since what the consumer last saw; once it has read the queue, it gets them as one
//! step (each with the latest zxid, deletions first, children before parents; then the rest,
//! parents first), and the stream goes on. Applying every event received keeps a copy of the
//! view exact, folded or not. The queuing and folding are a [`FoldingQueue`]'s;
//! [`NodeFolds`] is the rule it folds and releases by.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex as StdMutex};

use tokio::sync::Notify;
use zookeeper_tokio::folding::{FoldRule, FoldingQueue};

use crate::node::path::depth;

use crate::cache::view::{CacheEvent, CachedNode};
use crate::error::{Error, Result};

/// The events of a cache, from the view it was opened on; see
/// [`TreeCache::events`](super::TreeCache::events).
#[derive(Debug)]
pub struct CacheEvents {
    queue: Arc<SubQueue>,
}

impl CacheEvents {
    pub(crate) fn new(queue: Arc<SubQueue>) -> CacheEvents {
        CacheEvents { queue }
    }

    /// The next event. Fails once every event was read and the cache has stopped: with the
    /// error that ended its session (no new session could be had), or
    /// [`Error::Closed`] when it was closed or dropped.
    pub async fn next(&mut self) -> Result<CacheEvent> {
        let queue = self.queue.clone();
        loop {
            let notified = queue.notify.notified();
            if let Some(item) = queue.pop() {
                return item;
            }
            notified.await;
        }
    }

    /// The next event if one is waiting.
    pub fn try_next(&mut self) -> Option<Result<CacheEvent>> {
        self.queue.pop()
    }
}

impl Drop for CacheEvents {
    fn drop(&mut self) {
        self.queue.state().gone = true;
    }
}

/// What a consumer has not read yet.
#[derive(Debug)]
pub(crate) struct SubQueue {
    state: StdMutex<State>,
    notify: Notify,
}

#[derive(Debug)]
struct State {
    events: FoldingQueue<NodeFolds>,
    end: Option<Error>,
    gone: bool,
}

/// Folds each node's events into its [`Fold`], and releases every held node at once as one
/// step.
#[derive(Debug, Default)]
struct NodeFolds {
    /// The latest zxid of any folded event.
    zxid: i64,
    /// An `Initialized` held back with the folded changes.
    initialized: bool,
}

/// One node's net change while folded: as the consumer last saw it, and now.
#[derive(Debug)]
struct Fold {
    before: Option<CachedNode>,
    now: Option<CachedNode>,
}

impl SubQueue {
    pub fn new(max: usize) -> SubQueue {
        SubQueue {
            state: StdMutex::new(State {
                events: FoldingQueue::new(max, NodeFolds::default()),
                end: None,
                gone: false,
            }),
            notify: Notify::new(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn is_gone(&self) -> bool {
        self.state().gone
    }

    /// Queues one step's events (all with one zxid), or folds them.
    pub fn push(&self, events: &[CacheEvent]) {
        let mut state = self.state();
        if state.gone {
            return;
        }
        state.events.push_step(events);
        drop(state);
        self.notify.notify_one();
    }

    pub fn end(&self, error: Error) {
        self.state().end.get_or_insert(error);
        self.notify.notify_one();
    }

    fn pop(&self) -> Option<Result<CacheEvent>> {
        let mut state = self.state();
        match state.events.pop() {
            Some(event) => Some(Ok(event)),
            None => state.end.clone().map(Err),
        }
    }
}

impl FoldRule for NodeFolds {
    type Item = CacheEvent;
    type Key = String;
    type Change = Fold;

    fn key<'a>(&self, event: &'a CacheEvent) -> Option<&'a String> {
        match event {
            CacheEvent::Created { path, .. }
            | CacheEvent::Changed { path, .. }
            | CacheEvent::Deleted { path, .. } => Some(path),
            CacheEvent::Initialized { .. } => None,
        }
    }

    fn start(&mut self, event: &CacheEvent) -> Fold {
        self.zxid = self.zxid.max(event.zxid());
        let before = match event {
            CacheEvent::Changed { old, .. } | CacheEvent::Deleted { old, .. } => Some(old.clone()),
            _ => None,
        };
        Fold {
            before,
            now: now(event),
        }
    }

    fn then(&mut self, fold: &mut Fold, event: &CacheEvent) {
        self.zxid = self.zxid.max(event.zxid());
        fold.now = now(event);
    }

    /// A node that came and went while the consumer was behind is no change: forgotten, so
    /// that what is held stays bounded by the nodes that are, or were, there (sequential lock
    /// and queue nodes would otherwise pile up, one per name, until the consumer reads).
    fn is_nothing(&self, fold: &Fold) -> bool {
        fold.before.is_none() && fold.now.is_none()
    }

    fn hold_unkeyed(&mut self, event: &CacheEvent) {
        self.zxid = self.zxid.max(event.zxid());
        self.initialized = true;
    }

    fn holds_unkeyed(&self) -> bool {
        self.initialized
    }

    /// Deletions first, children before parents; then the rest, parents first; each with the
    /// latest zxid folded, and a held `Initialized` after them.
    fn release(
        &mut self,
        held: &mut BTreeMap<String, Fold>,
        queue: &mut VecDeque<CacheEvent>,
        _max: usize,
    ) {
        let zxid = self.zxid;
        let mut deleted = Vec::new();
        let mut rest = Vec::new();
        for (path, fold) in std::mem::take(held) {
            match (fold.before, fold.now) {
                (None, None) => {}
                (None, Some(node)) => rest.push(CacheEvent::Created { path, node, zxid }),
                (Some(old), None) => deleted.push(CacheEvent::Deleted { path, old, zxid }),
                (Some(old), Some(node)) if old.stat.czxid != node.stat.czxid => {
                    deleted.push(CacheEvent::Deleted {
                        path: path.clone(),
                        old,
                        zxid,
                    });
                    rest.push(CacheEvent::Created { path, node, zxid });
                }
                (Some(old), Some(node)) if old != node => rest.push(CacheEvent::Changed {
                    path,
                    old,
                    node,
                    zxid,
                }),
                _ => {}
            }
        }
        let depth_of = |e: &CacheEvent| depth(e.path().unwrap_or("/"));
        deleted.sort_by_key(|e| std::cmp::Reverse(depth_of(e)));
        rest.sort_by_key(depth_of);
        queue.extend(deleted);
        queue.extend(rest);
        if std::mem::take(&mut self.initialized) {
            queue.push_back(CacheEvent::Initialized { zxid });
        }
    }
}

/// The node as `event` leaves it.
fn now(event: &CacheEvent) -> Option<CachedNode> {
    match event {
        CacheEvent::Created { node, .. } | CacheEvent::Changed { node, .. } => Some(node.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zookeeper_tokio::Stat;

    fn node(czxid: i64, version: i32) -> CachedNode {
        CachedNode {
            data: Some(bytes::Bytes::from(format!("{czxid}.{version}"))),
            stat: Stat {
                czxid,
                version,
                ..Stat::default()
            },
        }
    }

    fn created(path: &str, n: CachedNode, zxid: i64) -> CacheEvent {
        CacheEvent::Created {
            path: path.into(),
            node: n,
            zxid,
        }
    }

    fn drain(q: &SubQueue) -> Vec<CacheEvent> {
        std::iter::from_fn(|| q.pop().map(|r| r.unwrap())).collect()
    }

    #[test]
    fn a_slow_consumer_gets_the_net_change_of_each_node_once() {
        let q = SubQueue::new(2);
        q.push(&[created("/a", node(1, 0), 1), created("/b", node(2, 0), 2)]);
        // Full from here: a changes a thousand times, b is deleted and created again, c comes
        // and goes, d appears.
        let mut old = node(1, 0);
        for v in 1..=1000 {
            let n = node(1, v);
            q.push(&[CacheEvent::Changed {
                path: "/a".into(),
                old: old.clone(),
                node: n.clone(),
                zxid: 10 + v as i64,
            }]);
            old = n;
        }
        q.push(&[CacheEvent::Deleted {
            path: "/b".into(),
            old: node(2, 0),
            zxid: 2000,
        }]);
        q.push(&[created("/b", node(2001, 0), 2001)]);
        q.push(&[created("/c", node(2002, 0), 2002)]);
        q.push(&[CacheEvent::Deleted {
            path: "/c".into(),
            old: node(2002, 0),
            zxid: 2003,
        }]);
        q.push(&[created("/d/e", node(2005, 0), 2005)]);
        q.push(&[created("/d", node(2004, 0), 2005)]);
        let got = drain(&q);
        assert_eq!(
            got,
            vec![
                created("/a", node(1, 0), 1),
                created("/b", node(2, 0), 2),
                CacheEvent::Deleted {
                    path: "/b".into(),
                    old: node(2, 0),
                    zxid: 2005
                },
                CacheEvent::Changed {
                    path: "/a".into(),
                    old: node(1, 0),
                    node: node(1, 1000),
                    zxid: 2005
                },
                created("/b", node(2001, 0), 2005),
                created("/d", node(2004, 0), 2005),
                created("/d/e", node(2005, 0), 2005),
            ]
        );
        // Then event by event again.
        q.push(&[created("/f", node(3000, 0), 3000)]);
        assert_eq!(drain(&q), vec![created("/f", node(3000, 0), 3000)]);
    }

    /// Nodes that come and go under a consumer that does not read leave nothing held.
    #[test]
    fn nodes_that_came_and_went_are_not_held() {
        let q = SubQueue::new(1);
        q.push(&[created("/a", node(1, 0), 1)]);
        for i in 0..10_000 {
            let path = format!("/q/n{i:010}");
            q.push(&[created(&path, node(10 + i, 0), 10 + i)]);
            q.push(&[CacheEvent::Deleted {
                path,
                old: node(10 + i, 0),
                zxid: 20_000 + i,
            }]);
        }
        assert_eq!(q.state().events.held_keys(), 0);
        assert_eq!(drain(&q), vec![created("/a", node(1, 0), 1)]);
    }

    #[test]
    fn the_end_comes_after_everything_queued() {
        let q = SubQueue::new(10);
        q.push(&[created("/a", node(1, 0), 1)]);
        q.end(Error::Closed);
        assert!(q.pop().unwrap().is_ok());
        assert_eq!(q.pop().unwrap(), Err(Error::Closed));
        assert_eq!(q.pop().unwrap(), Err(Error::Closed));
    }
}
