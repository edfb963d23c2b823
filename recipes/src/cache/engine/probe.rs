//! Probes: reads of the nearest existing ancestors that date a prefix ending in a deletion.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use tracing::debug;

use super::{Engine, Outcome, Probe, Queued, Request};
use crate::cache::view::NodeState;
use crate::node::path::{parent, within};

impl Engine {
    /// A probe read completed: the larger of the `pzxid` and `mzxid` of `path`, `None` if
    /// absent.
    pub fn on_probe(&mut self, ticket: u64, outcome: Outcome<Option<i64>>) -> Vec<Request> {
        self.dirty = true;
        let mut next = Vec::new();
        let Some(probe) = self.probe.as_mut() else {
            return next;
        };
        let Some(path) = probe.outstanding.remove(&ticket) else {
            return next;
        };
        match outcome {
            Outcome::Done(Some(pzxid)) => probe.pzxid = probe.pzxid.max(pzxid),
            Outcome::Done(None) if !within(&self.root, &path) => {
                // Above the cache: the nearest existing ancestor is higher up.
                match parent(&path) {
                    Some(up) => {
                        self.next_ticket += 1;
                        probe.outstanding.insert(self.next_ticket, up.to_string());
                        next.push(Request::Probe {
                            ticket: self.next_ticket,
                            path: up.to_string(),
                        });
                    }
                    None => probe.failed = true,
                }
            }
            Outcome::Done(None) => {
                probe.failed = true;
                probe.gone.push(path.as_str().into());
            }
            Outcome::Retry => probe.failed = true,
        }
        if probe.outstanding.is_empty() {
            let probe = self.probe.take().expect("checked above");
            // Valid only if nothing happened after the prefix while the probe was made.
            let current = probe.prefix == self.received_g()
                && probe.generation == self.generation
                && self.stretch_from.is_none();
            if current && !probe.failed {
                let zxid = probe.pzxid.max(self.batch_mzxid(probe.prefix));
                self.probed = Some((probe.prefix, zxid));
            } else if current {
                self.probe_failed = Some((probe.prefix, probe.generation));
                // Nothing arrived after the prefix, yet a node it leaves present is gone:
                // its deletion was never reported. Read it, and what was below it, again.
                let mut gone = Vec::new();
                for path in probe.gone {
                    gone.extend(self.known_below(&path));
                    gone.push(path);
                }
                gone.sort();
                gone.dedup();
                self.touch_unseen(gone);
            }
        }
        next
    }

    /// The nodes whose stats bound the changes in the prefix `..s` that its events do not
    /// date: for each node the prefix leaves deleted, its nearest ancestor it leaves present
    /// (whose `pzxid` is at least the deletion's); when changes may be hidden, every node it
    /// leaves present (a node created and deleted unseen moved its parent's `pzxid`); and
    /// above the cache when the root is gone (walking up from its parent as far as needed).
    /// In path order, as the probes are written in it (the same from run to run).
    pub(super) fn probe_targets(&self, s: u64) -> BTreeSet<String> {
        let n = (s - self.applied_g) as usize;
        let mut last: HashMap<&Arc<str>, &Queued> = HashMap::new();
        for q in self.queue.iter().take(n) {
            last.insert(&q.path, q);
        }
        let present_at = |p: &str| -> bool {
            if let Some(q) = last.get(&Arc::<str>::from(p)) {
                return matches!(q.known, Some(NodeState::Present(_)));
            }
            match self.tracks.get(p) {
                Some(t) => matches!(t.base, Some(NodeState::Present(_))),
                None => !self.fresh && self.shared.get(p).is_some(),
            }
        };
        let mut targets = BTreeSet::new();
        if self.hidden() {
            for (path, track) in &self.tracks {
                let present = match last.get(path) {
                    Some(q) => matches!(q.known, Some(NodeState::Present(_))),
                    None => matches!(track.base, Some(NodeState::Present(_))),
                };
                if present {
                    targets.insert(path.to_string());
                }
            }
            if !self.fresh {
                self.shared.with_view(|view| {
                    for path in view.nodes.keys() {
                        if !self.tracks.contains_key(path.as_str()) {
                            targets.insert(path.clone());
                        }
                    }
                });
            }
        }
        for (path, q) in &last {
            if !matches!(q.known, Some(NodeState::Absent)) {
                continue;
            }
            let mut at: &str = path;
            while let Some(up) = parent(at).filter(|up| within(&self.root, up)) {
                if present_at(up) {
                    targets.insert(up.to_string());
                    break;
                }
                at = up;
            }
        }
        let root_gone = (self.fresh || self.hidden() || last.contains_key(&self.root))
            && !present_at(&self.root);
        if root_gone {
            if let Some(up) = parent(&self.root) {
                targets.insert(up.to_string());
            }
        }
        targets
    }

    /// Starts a probe for the whole of what arrived, when that is the prefix waiting for a
    /// zxid.
    pub(super) fn start_probe(&mut self) -> Option<Vec<Request>> {
        let end = self.received_g();
        if self.probe.is_some()
            || self.walking()
            || self.probed.is_some_and(|(s, _)| s == end)
            || self.probe_failed == Some((end, self.generation))
            || end < self.settle_from
            || self.stretch_from.is_some()
            || (end == self.applied_g && !self.fresh && !self.hidden())
        {
            return None;
        }
        // Every node's state at the end must be known.
        if self.states_at(end).len() != self.tracks.len() {
            return None;
        }
        if end > self.applied_g && self.prefix_zxid(self.queue.len() - 1).is_some() {
            return None;
        }
        let targets = self.probe_targets(end);
        if targets.is_empty() {
            return None;
        }
        let mut requests = Vec::new();
        let mut outstanding = HashMap::new();
        for path in targets {
            self.next_ticket += 1;
            outstanding.insert(self.next_ticket, path.clone());
            requests.push(Request::Probe {
                ticket: self.next_ticket,
                path,
            });
        }
        debug!(
            prefix = end,
            probes = requests.len(),
            "probing for a deletion's zxid"
        );
        self.probe = Some(Probe {
            prefix: end,
            generation: self.generation,
            outstanding,
            pzxid: 0,
            failed: false,
            gone: Vec::new(),
        });
        Some(requests)
    }
}
