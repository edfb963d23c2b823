//! Applying a prefix to the view: the cache events it makes, and the bookkeeping it ends.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tracing::debug;

use super::Engine;
use crate::cache::view::{CacheEvent, CachedNode, NodeState};
use crate::node::path::depth;

impl Engine {
    /// Applies the prefix `..s` to the view (`zxid`: the point it reaches, if known; without
    /// it, only a prefix that changes nothing visible is applied).
    pub(super) fn apply_prefix(&mut self, s: u64, zxid: Option<i64>) -> bool {
        let n = (s - self.applied_g) as usize;
        // Each node's final state, with the position of its last event.
        let mut last: HashMap<Arc<str>, usize> = HashMap::new();
        for (i, q) in self.queue.iter().take(n).enumerate() {
            last.insert(q.path.clone(), i);
        }
        let mut finals: Vec<(usize, Arc<str>, NodeState)> = last
            .iter()
            .map(|(path, &i)| {
                let state = self.queue[i].known.clone().expect("scan checked it");
                (i, path.clone(), state)
            })
            .collect();
        if self.fresh {
            for (path, track) in &self.tracks {
                if !last.contains_key(path) {
                    let state = track.base.clone().expect("scan checked it");
                    finals.push((usize::MAX, path.clone(), state));
                }
            }
        }
        finals.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));

        let (changes, mut events) = self.shared.with_view(|view| {
            let mut changes: Vec<(String, Option<CachedNode>)> = Vec::new();

            let mut deleted: Vec<(String, CachedNode)> = Vec::new();
            let mut rest: Vec<(usize, String, Option<CachedNode>, CachedNode)> = Vec::new();
            let mut touched: HashSet<&str> = HashSet::new();
            for (i, path, state) in &finals {
                touched.insert(path);
                let old = view.nodes.get(&**path);
                match (old, state) {
                    (None, NodeState::Absent) => {}
                    (None, NodeState::Present(node)) => {
                        rest.push((*i, path.to_string(), None, node.clone()))
                    }
                    (Some(old), NodeState::Absent) => deleted.push((path.to_string(), old.clone())),
                    (Some(old), NodeState::Present(node)) => {
                        if old.stat.czxid != node.stat.czxid {
                            deleted.push((path.to_string(), old.clone()));
                            rest.push((*i, path.to_string(), None, node.clone()));
                        } else if old.stat.version != node.stat.version || old.data != node.data {
                            rest.push((*i, path.to_string(), Some(old.clone()), node.clone()));
                        }
                        // Else only fields that change without an event for the node differ
                        // (child counters): the view changes only with an event.
                    }
                }
            }
            if self.fresh {
                for (path, old) in &view.nodes {
                    if !touched.contains(path.as_str()) {
                        deleted.push((path.clone(), old.clone()));
                    }
                }
            }
            deleted.sort_by_key(|(p, _)| std::cmp::Reverse(depth(p)));
            rest.sort_by_key(|(i, p, _, _)| (depth(p), *i));
            let mut events = Vec::new();
            let zxid = zxid.unwrap_or(view.zxid);
            for (path, old) in deleted {
                changes.push((path.clone(), None));
                events.push(CacheEvent::Deleted { path, old, zxid });
            }
            for (_, path, old, node) in rest {
                changes.push((path.clone(), Some(node.clone())));
                events.push(match old {
                    None => CacheEvent::Created { path, node, zxid },
                    Some(old) => CacheEvent::Changed {
                        path,
                        old,
                        node,
                        zxid,
                    },
                });
            }
            (changes, events)
        });
        if !events.is_empty() && zxid.is_none() {
            // A visible change needs its zxid: wait for the probe.
            return false;
        }
        let first = !self.initialized;
        if first {
            self.initialized = true;
            events.push(CacheEvent::Initialized {
                zxid: zxid.unwrap_or_else(|| self.shared.zxid()),
            });
        }
        let moves_zxid = events
            .iter()
            .any(|e| !matches!(e, CacheEvent::Initialized { .. }));
        debug!(prefix = s, events = events.len(), ?zxid, "view advanced");
        self.shared
            .apply(changes, zxid.filter(|_| moves_zxid || first), events);
        if first {
            self.shared.set_running();
        }

        // Drop the applied events.
        for (path, &i) in &last {
            let state = self.queue[i].known.clone();
            let track = self
                .tracks
                .get_mut(path)
                .expect("queued events have tracks");
            while track.events.front().is_some_and(|&g| g < s) {
                track.events.pop_front();
                track.applied += 1;
            }
            track.base = state;
        }
        self.queue.drain(..n);
        self.applied_g = s;
        self.fresh = false;
        if self.probed.is_some_and(|(p, _)| p <= s) {
            self.probed = None;
        }
        self.tracks.retain(|_, t| {
            !t.events.is_empty() || t.read.is_some() || t.want_read || t.base.is_none()
        });
        self.release_memory();
        true
    }

    /// Gives back what a burst (a fresh walk, a flood of events) left allocated: the view is
    /// what must stay, not the bookkeeping of how it was reached.
    pub(super) fn release_memory(&mut self) {
        fn oversized(capacity: usize, len: usize) -> bool {
            capacity > 64 && capacity > 4 * len
        }
        if oversized(self.tracks.capacity(), self.tracks.len()) {
            self.tracks.shrink_to_fit();
        }
        if oversized(self.queue.capacity(), self.queue.len()) {
            self.queue.shrink_to_fit();
        }
        if oversized(self.want.capacity(), self.want.len()) {
            self.want.shrink_to_fit();
        }
        if oversized(self.reads.capacity(), self.reads.len()) {
            self.reads.shrink_to_fit();
        }
        if !self.fresh {
            self.decided = HashSet::new();
            self.listed = HashSet::new();
            self.undecided.shrink_to_fit();
        }
    }
}
