//! Events in: numbering them, covering ancestors never reported created, and folding them
//! when too many are pending.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use tracing::{debug, warn};

use super::{Engine, Queued, Track};
use crate::cache::expect::{Expect, Kind};
use crate::cache::view::NodeState;
use crate::node::path::{parent, within};

impl Engine {
    /// Takes events from the watch, in the order received.
    pub fn on_events(&mut self, events: impl IntoIterator<Item = (Kind, String)>) {
        self.dirty = true;
        for (kind, path) in events {
            if !within(&self.root, &path) || (!self.recursive && *path != *self.root) {
                continue;
            }
            if kind == Kind::Children {
                if self.recursive {
                    let below = self.known_below(&path);
                    self.touch_unseen(below);
                }
                continue;
            }
            self.push_event(kind, path.into());
        }
        if std::mem::take(&mut self.anomaly) {
            // The stream was read to its end: whatever the client held back has come.
            self.settle_from = self.settle_from.max(self.received_g());
            self.hidden_until = self.settle_from;
        }
        if self.queue.len() >= self.fold_at {
            self.fold_pending();
        }
    }

    pub(super) fn push_event(&mut self, kind: Kind, path: Arc<str>) {
        if kind != Kind::Deleted {
            self.cover_ancestors(&path);
        }
        let ordered = self.stretch_from.is_none() && !self.anomaly;
        let g = self.received_g();
        let base = self.base_for_new_track(&path);
        let track = self
            .tracks
            .entry(path.clone())
            .or_insert_with(|| Track::new(base));
        let last = last_expect(track, &self.queue, self.applied_g);
        let anomaly = ordered && last.after(kind, true).is_none();
        track.events.push_back(g);
        self.queue.push_back(Queued {
            path: path.clone(),
            kind,
            ordered,
            known: (kind == Kind::Deleted).then_some(NodeState::Absent),
        });
        if kind == Kind::Deleted {
            // Gone, and its children before it: nothing below it to list.
            if self.fresh {
                self.undecided.remove(&path);
                self.decided.insert(path.clone());
            }
        } else {
            self.undecide(&path);
            self.want_read(&path);
        }
        if anomaly {
            warn!(
                path = &*path,
                ?kind,
                "a watch event does not follow what was known of its node: treating what is pending as unordered"
            );
            self.mark_unordered();
            self.anomaly = true;
        }
    }

    /// A node exists only below existing ancestors: one not known to exist (never reported
    /// created) must be read. After a reconnect, the client can miss reporting a node created
    /// while it was cut off when a live event of one of its children arrives before its own
    /// walk reaches it. Such an ancestor gets an unordered `Touched` event (and what is pending
    /// becomes unordered); in a fresh view, where undiscovered nodes are normal, it is merely
    /// read and listed.
    pub(super) fn cover_ancestors(&mut self, path: &str) {
        let mut ancestors = Vec::new();
        let mut at = path;
        while let Some(up) = parent(at).filter(|up| within(&self.root, up)) {
            ancestors.push(up);
            at = up;
        }
        for ancestor in ancestors.into_iter().rev() {
            let maybe_present = match self.tracks.get(ancestor) {
                Some(track) => last_expect(track, &self.queue, self.applied_g) != Expect::Absent,
                None => !self.fresh && self.shared.get(ancestor).is_some(),
            };
            if maybe_present {
                continue;
            }
            let ancestor: Arc<str> = ancestor.into();
            if self.fresh && !self.tracks.contains_key(&ancestor) {
                self.tracks.insert(ancestor.clone(), Track::new(None));
                self.undecide(&ancestor);
                self.want_read(&ancestor);
                continue;
            }
            warn!(
                path = &*ancestor,
                below = path,
                "a node below one never reported created: reading it, and treating what is pending as unordered"
            );
            self.queue_touched(ancestor);
            self.mark_unordered();
            self.anomaly = true;
        }
    }

    /// Every node strictly below `path` that the view holds or that has a track, parents
    /// before their children.
    pub(super) fn known_below(&self, path: &str) -> Vec<Arc<str>> {
        let mut below: Vec<Arc<str>> = self
            .tracks
            .keys()
            .filter(|p| ***p != *path && within(path, p))
            .cloned()
            .collect();
        if !self.fresh {
            self.shared.with_view(|view| {
                for p in view.nodes.keys() {
                    if p != path && within(path, p) && !self.tracks.contains_key(p.as_str()) {
                        below.push(p.as_str().into());
                    }
                }
            });
        }
        below.sort();
        below
    }

    /// Changes the events did not tell of happened to `paths` (a deletion reported only as a
    /// child change of the parent, or found by a probe): each gets an unordered `Touched`
    /// event and is read again, and what is pending becomes unordered.
    pub(super) fn touch_unseen(&mut self, paths: Vec<Arc<str>>) {
        if paths.is_empty() {
            return;
        }
        self.dirty = true;
        debug!(
            nodes = paths.len(),
            first = &*paths[0],
            "changes no event told of: reading the nodes again"
        );
        for path in paths {
            self.queue_touched(path);
        }
        self.mark_unordered();
    }

    /// Queues an unordered `Touched` event for `path`, which is read again to learn what it
    /// is now.
    fn queue_touched(&mut self, path: Arc<str>) {
        let g = self.received_g();
        let base = self.base_for_new_track(&path);
        let track = self
            .tracks
            .entry(path.clone())
            .or_insert_with(|| Track::new(base));
        track.events.push_back(g);
        self.queue.push_back(Queued {
            path: path.clone(),
            kind: Kind::Touched,
            ordered: false,
            known: None,
        });
        self.undecide(&path);
        self.want_read(&path);
    }

    /// The state a node had before its first pending event, when it has no track yet.
    pub(super) fn base_for_new_track(&self, path: &str) -> Option<NodeState> {
        if self.fresh {
            return None;
        }
        Some(
            self.shared
                .get(path)
                .map_or(NodeState::Absent, NodeState::Present),
        )
    }

    /// Counting failed: nothing pending can be placed by counting, and no prefix ending
    /// before what has arrived is applied.
    pub(super) fn mark_unordered(&mut self) {
        for q in self.queue.iter_mut() {
            q.ordered = false;
        }
        self.settle_from = self.settle_from.max(self.received_g());
        // Events folded by the client forget nodes that came and went.
        self.hidden_until = self.settle_from;
        // In path order: the reads are written in it, the same from run to run.
        let mut paths: Vec<Arc<str>> = self.tracks.keys().cloned().collect();
        paths.sort_unstable();
        for path in paths {
            if self.tracks[&path].events.is_empty() {
                continue;
            }
            self.want_read(&path);
        }
    }

    /// Too many pending events: fold them into one unordered `Touched` per node, to be read
    /// again. Reads under way no longer fit the counts and are ignored.
    pub(super) fn fold_pending(&mut self) {
        warn!(
            pending = self.queue.len(),
            "too many watch events pending: folding them per node"
        );
        let mut order: Vec<Arc<str>> = Vec::new();
        let mut seen = HashSet::new();
        for q in self.queue.drain(..) {
            if seen.insert(q.path.clone()) {
                order.push(q.path);
            }
        }
        for track in self.tracks.values_mut() {
            track.applied += track.events.len() as u64;
            track.events.clear();
            track.read = None;
            track.want_read = false;
        }
        self.reads.clear();
        self.want.clear();
        self.probe = None;
        self.probed = None;
        for path in order {
            let g = self.received_g();
            let track = self
                .tracks
                .get_mut(&path)
                .expect("pending events have tracks");
            track.events.push_back(g);
            self.queue.push_back(Queued {
                path: path.clone(),
                kind: Kind::Touched,
                ordered: false,
                known: None,
            });
        }
        self.settle_from = self.received_g();
        if self.stretch_from.is_some() {
            self.stretch_from = Some(self.received_g());
        }
        self.fold_at = self.max_pending.max(2 * self.queue.len());
        let reread: Vec<Arc<str>> = self
            .tracks
            .iter()
            .filter(|(_, t)| !t.events.is_empty() || t.base.is_none())
            .map(|(p, _)| p.clone())
            .collect();
        for path in reread {
            self.want_read(&path);
        }
    }
}

/// The expectation after a track's last pending event.
fn last_expect(track: &Track, queue: &VecDeque<Queued>, applied_g: u64) -> Expect {
    let mut expect = track.base.as_ref().map_or(Expect::Unknown, Expect::of);
    for g in &track.events {
        let q = &queue[(g - applied_g) as usize];
        expect = match &q.known {
            Some(known) => Expect::of(known),
            None => expect.after(q.kind, q.ordered).unwrap_or(Expect::Unknown),
        };
    }
    expect
}
