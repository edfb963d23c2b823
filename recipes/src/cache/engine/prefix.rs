//! Which prefix of the events can be applied, and the zxid it reaches.

use std::collections::HashMap;
use std::sync::Arc;

use super::{Engine, Queued};
use crate::cache::expect::Kind;
use crate::cache::view::NodeState;

impl Engine {
    /// Applies the longest prefix that can be applied.
    pub fn step(&mut self) {
        if self.walking() || !std::mem::take(&mut self.dirty) {
            return;
        }
        let end = self.received_g();
        let limit = self.stretch_from.unwrap_or(u64::MAX).min(end);
        let mut unknown = 0usize;
        for track in self.tracks.values_mut() {
            track.scan_known = track.base.is_some();
            if !track.scan_known {
                unknown += 1;
            }
        }
        // The longest prefix whose zxid is known, and the whole of what arrived if its zxid is
        // not (applied only if it changes nothing visible).
        let mut best: Option<(u64, i64)> = None;
        let mut tail: Option<u64> = None;
        if self.fresh
            && unknown == 0
            && self.applied_g >= self.settle_from
            && self.applied_g <= limit
        {
            let probed = self
                .probed
                .filter(|(p, _)| *p == self.applied_g)
                .map(|(_, zxid)| zxid);
            // The reads' stats date the view only if nothing happened since (no event).
            let told = probed.or_else(|| {
                self.fresh_zxid()
                    .filter(|_| self.queue.is_empty() && !self.hidden())
            });
            match told {
                Some(zxid) => best = Some((self.applied_g, zxid)),
                None => tail = Some(self.applied_g),
            }
        }
        for i in 0..self.queue.len() {
            let s = self.applied_g + i as u64 + 1;
            if s > limit {
                break;
            }
            let q = &self.queue[i];
            let known = q.known.is_some();
            let track = self
                .tracks
                .get_mut(&q.path)
                .expect("queued events have tracks");
            if track.scan_known != known {
                track.scan_known = known;
                if known {
                    unknown -= 1;
                } else {
                    unknown += 1;
                }
            }
            if unknown == 0 && s >= self.settle_from {
                match self.prefix_zxid(i) {
                    Some(zxid) => best = Some((s, zxid)),
                    None if s == end => tail = Some(s),
                    None => {}
                }
            }
        }
        if let Some(s) = tail {
            if best.map_or(true, |(b, _)| s > b) && self.apply_prefix(s, None) {
                return;
            }
        }
        if let Some((s, zxid)) = best {
            self.apply_prefix(s, Some(zxid));
        }
    }

    /// The zxid of the prefix ending with `queue[i]`, when it can be told without a probe.
    pub(super) fn prefix_zxid(&self, i: usize) -> Option<i64> {
        let s = self.applied_g + i as u64 + 1;
        if let Some((prefix, zxid)) = self.probed {
            if prefix == s {
                return Some(zxid);
            }
        }
        let exact = |q: &Queued| match (&q.known, q.kind) {
            (Some(NodeState::Present(node)), Kind::Created | Kind::Changed) if q.ordered => {
                Some(node.stat.mzxid)
            }
            _ => None,
        };
        if let Some(zxid) = exact(&self.queue[i]).or_else(|| {
            self.queue
                .get(i + 1)
                .and_then(exact)
                .map(|z| z.wrapping_sub(1))
        }) {
            return Some(zxid);
        }
        // The whole of what arrived, where no node ends up deleted: every change in it is the
        // last one of a node now present, so the largest mzxid is the last change. (Any change
        // before the reads that showed it would have arrived as an event.)
        if s == self.received_g() && !self.hidden() && self.probe_targets(s).is_empty() {
            return Some(self.batch_mzxid(s));
        }
        None
    }

    /// The zxid of a fresh view with no events: the last change any read shows. Nothing
    /// changed since (no event), so that is when the subtree last changed. `None` when no
    /// node exists (a probe tells when the root went).
    pub(super) fn fresh_zxid(&self) -> Option<i64> {
        self.tracks
            .values()
            .filter_map(|t| t.base.as_ref().and_then(NodeState::present))
            .map(|node| node.stat.mzxid.max(node.stat.pzxid))
            .max()
    }

    /// The largest `mzxid` of the states the prefix `..s` leaves present (and, in a fresh view,
    /// their `pzxid`s: the deletions before the watch).
    pub(super) fn batch_mzxid(&self, s: u64) -> i64 {
        let mut zxid = 0;
        for (_, state) in self.states_at(s) {
            if let NodeState::Present(node) = state {
                zxid = zxid.max(node.stat.mzxid);
                if self.fresh {
                    zxid = zxid.max(node.stat.pzxid);
                }
            }
        }
        zxid
    }

    /// Each tracked node's state after the prefix `..s`, where known.
    pub(super) fn states_at(&self, s: u64) -> Vec<(Arc<str>, NodeState)> {
        let mut last: HashMap<&Arc<str>, usize> = HashMap::new();
        let n = (s - self.applied_g) as usize;
        for (i, q) in self.queue.iter().take(n).enumerate() {
            last.insert(&q.path, i);
        }
        let mut out = Vec::new();
        for (path, track) in &self.tracks {
            let state = match last.get(path) {
                Some(&i) => self.queue[i].known.clone(),
                None => track.base.clone(),
            };
            if let Some(state) = state {
                out.push((path.clone(), state));
            }
        }
        out
    }
}
