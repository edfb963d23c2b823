//! What a cache's handles and its task share: the view, the event streams, and whether the
//! cache still runs.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, Mutex as StdMutex, RwLock};

use tokio::sync::watch;

use super::events::{CacheEvents, SubQueue};
use crate::cache::view::{CacheEvent, CachedNode};
use crate::error::Error;

/// The view at one zxid: every cached node by path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The zxid of the server state the view equals (0 before anything was read, or for a
    /// view of a node that never existed).
    pub zxid: i64,
    /// Every cached node, by path.
    pub nodes: BTreeMap<String, CachedNode>,
}

/// Whether the cache runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    /// Reading the first view.
    Starting,
    /// The view is complete and kept up to date.
    Running,
    /// Stopped for good: the session ended and no new one could be had, or the cache was
    /// closed.
    Ended(Error),
}

pub(crate) struct Shared {
    view: RwLock<Snapshot>,
    subscribers: StdMutex<Vec<Arc<SubQueue>>>,
    status: watch::Sender<Status>,
    max_queued_events: usize,
}

impl Shared {
    pub fn new(max_queued_events: usize) -> Shared {
        Shared {
            view: RwLock::new(Snapshot::default()),
            subscribers: StdMutex::new(Vec::new()),
            status: watch::channel(Status::Starting).0,
            max_queued_events: max_queued_events.max(1),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Snapshot> {
        self.view.read().unwrap_or_else(|e| e.into_inner())
    }

    pub fn get(&self, path: &str) -> Option<CachedNode> {
        self.read().nodes.get(path).cloned()
    }

    pub fn zxid(&self) -> i64 {
        self.read().zxid
    }

    pub fn len(&self) -> usize {
        self.read().nodes.len()
    }

    pub fn snapshot(&self) -> Snapshot {
        self.read().clone()
    }

    /// The names of `path`'s children in the view, sorted; `None` if `path` is not cached.
    pub fn children(&self, path: &str) -> Option<Vec<String>> {
        let view = self.read();
        view.nodes.get(path)?;
        let prefix = if path == "/" {
            "/".to_string()
        } else {
            format!("{path}/")
        };
        let mut names = Vec::new();
        let mut from = prefix.clone();
        // Jump from child to child: "<prefix><name>0" sorts after everything below
        // "<prefix><name>/" ('0' follows '/').
        while let Some((key, _)) = view
            .nodes
            .range::<str, _>((Bound::Included(from.as_str()), Bound::Unbounded))
            .next()
        {
            let Some(rest) = key.strip_prefix(&prefix) else {
                break;
            };
            let name = rest.split('/').next().unwrap_or(rest);
            if name.is_empty() {
                // The root itself ("/" is its own prefix): step past it.
                from = format!("{key}\u{0}");
                continue;
            }
            names.push(name.to_string());
            from = format!("{prefix}{name}0");
        }
        Some(names)
    }

    /// The view (read-only) for the engine.
    pub fn with_view<T>(&self, f: impl FnOnce(&Snapshot) -> T) -> T {
        f(&self.read())
    }

    /// Applies one step of the view, and queues its events for every stream, under one lock
    /// so that a stream opened at any time starts exactly after the view it was opened on.
    pub fn apply(
        &self,
        changes: Vec<(String, Option<CachedNode>)>,
        zxid: Option<i64>,
        events: Vec<CacheEvent>,
    ) {
        let mut view = self.view.write().unwrap_or_else(|e| e.into_inner());
        for (path, node) in changes {
            match node {
                Some(node) => {
                    view.nodes.insert(path, node);
                }
                None => {
                    view.nodes.remove(&path);
                }
            }
        }
        if let Some(zxid) = zxid {
            view.zxid = zxid;
        }
        if !events.is_empty() {
            let mut subs = self.subscribers.lock().unwrap_or_else(|e| e.into_inner());
            subs.retain(|s| !s.is_gone());
            for sub in subs.iter() {
                sub.push(&events);
            }
        }
    }

    /// A stream of the events after the current view.
    pub fn subscribe(&self) -> CacheEvents {
        let _view = self.read();
        let queue = Arc::new(SubQueue::new(self.max_queued_events));
        if let Status::Ended(e) = &*self.status.borrow() {
            queue.end(e.clone());
        }
        self.subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(queue.clone());
        CacheEvents::new(queue)
    }

    pub fn set_running(&self) {
        self.status.send_if_modified(|s| {
            let starting = *s == Status::Starting;
            if starting {
                *s = Status::Running;
            }
            starting
        });
    }

    /// Stops the cache for good: every stream ends with `error` once read.
    pub fn end(&self, error: Error) {
        let _view = self.read();
        self.status.send_if_modified(|s| {
            let running = !matches!(s, Status::Ended(_));
            if running {
                *s = Status::Ended(error.clone());
            }
            running
        });
        for sub in self
            .subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            sub.end(error.clone());
        }
    }

    pub fn status(&self) -> watch::Receiver<Status> {
        self.status.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zookeeper_tokio::Stat;

    fn node() -> CachedNode {
        CachedNode {
            data: None,
            stat: Stat::default(),
        }
    }

    #[test]
    fn children_skip_grandchildren_and_siblings_with_a_shared_prefix() {
        let shared = Shared::new(10);
        let changes = ["/r", "/r/a", "/r/a/x", "/r/a/y", "/r/b", "/ra", "/r/c/d"]
            .iter()
            .map(|p| (p.to_string(), Some(node())))
            .collect();
        shared.apply(changes, Some(1), vec![]);
        assert_eq!(
            shared.children("/r").unwrap(),
            vec!["a".to_string(), "b".into(), "c".into()]
        );
        assert_eq!(
            shared.children("/r/a").unwrap(),
            vec!["x".to_string(), "y".into()]
        );
        assert_eq!(shared.children("/r/b").unwrap(), Vec::<String>::new());
        assert!(shared.children("/nope").is_none());
        assert!(shared.children("/").is_none(), "not cached");

        let whole = Shared::new(10);
        let changes = ["/", "/a", "/a/b", "/c"]
            .iter()
            .map(|p| (p.to_string(), Some(node())))
            .collect();
        whole.apply(changes, Some(1), vec![]);
        assert_eq!(whole.children("/").unwrap(), ["a", "c"]);
    }
}
