//! One consumer's stream of cache events, bounded whatever the consumer's pace.
//!
//! At most `max` events wait. Past that, further changes are folded per node into the net
//! change since what the consumer last saw; once it has read the queue, it gets them as one
//! step (each with the latest zxid, deletions first, children before parents; then the rest,
//! parents first), and the stream goes on. Applying every event received keeps a copy of the
//! view exact, folded or not.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex as StdMutex};

use tokio::sync::Notify;

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

#[derive(Debug, Default)]
struct State {
    queue: VecDeque<CacheEvent>,
    max: usize,
    /// Net changes held back while the consumer is behind, by path.
    folded: BTreeMap<String, Fold>,
    folded_zxid: i64,
    /// An `Initialized` held back with the folded changes.
    folded_initialized: bool,
    end: Option<Error>,
    gone: bool,
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
                max: max.max(1),
                ..State::default()
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
        if state.folded.is_empty()
            && !state.folded_initialized
            && state.queue.len() + events.len() <= state.max
        {
            state.queue.extend(events.iter().cloned());
        } else {
            for event in events {
                state.fold(event);
            }
        }
        drop(state);
        self.notify.notify_one();
    }

    pub fn end(&self, error: Error) {
        self.state().end.get_or_insert(error);
        self.notify.notify_one();
    }

    fn pop(&self) -> Option<Result<CacheEvent>> {
        let mut state = self.state();
        if state.queue.is_empty() {
            state.release_folded();
        }
        match state.queue.pop_front() {
            Some(event) => Some(Ok(event)),
            None => state.end.clone().map(Err),
        }
    }
}

impl State {
    fn fold(&mut self, event: &CacheEvent) {
        self.folded_zxid = self.folded_zxid.max(event.zxid());
        let (path, before, now) = match event {
            CacheEvent::Created { path, node, .. } => (path, None, Some(node)),
            CacheEvent::Changed {
                path, old, node, ..
            } => (path, Some(old), Some(node)),
            CacheEvent::Deleted { path, old, .. } => (path, Some(old), None),
            CacheEvent::Initialized { .. } => {
                self.folded_initialized = true;
                return;
            }
        };
        self.folded
            .entry(path.clone())
            .and_modify(|f| f.now = now.cloned())
            .or_insert_with(|| Fold {
                before: before.cloned(),
                now: now.cloned(),
            });
    }

    /// Turns the folded changes into events, once the queue is read.
    fn release_folded(&mut self) {
        if self.folded.is_empty() && !self.folded_initialized {
            return;
        }
        let zxid = self.folded_zxid;
        let mut deleted = Vec::new();
        let mut rest = Vec::new();
        for (path, fold) in std::mem::take(&mut self.folded) {
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
        self.queue.extend(deleted);
        self.queue.extend(rest);
        if std::mem::take(&mut self.folded_initialized) {
            self.queue.push_back(CacheEvent::Initialized { zxid });
        }
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
