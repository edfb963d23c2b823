//! Reads out and in: which reads to make, and where a completed read fits among its node's
//! events.

use std::collections::VecDeque;
use std::sync::Arc;

use tracing::{trace, warn};

use super::{Engine, Outcome, Queued, ReadInFlight, Request, Track, MAX_READS_IN_FLIGHT};
use crate::cache::expect::{same_state, Expect};
use crate::cache::view::NodeState;
use crate::node::path::join;

impl Engine {
    pub(super) fn want_read(&mut self, path: &Arc<str>) {
        let Some(track) = self.tracks.get_mut(path) else {
            return;
        };
        if !track.want_read {
            track.want_read = true;
            if track.read.is_none() {
                self.want.push_back(path.clone());
            }
        }
    }

    /// The reads to make now, in this order (`connected`: requests can be sent).
    pub fn requests(&mut self, connected: bool) -> Vec<Request> {
        let mut out = Vec::new();
        if !connected {
            return out;
        }
        while self.reads.len() < MAX_READS_IN_FLIGHT {
            let Some(path) = self.want.pop_front() else {
                break;
            };
            let Some(track) = self.tracks.get_mut(&path) else {
                continue;
            };
            if !track.want_read || track.read.is_some() {
                continue;
            }
            self.next_ticket += 1;
            let ticket = self.next_ticket;
            track.want_read = false;
            track.read = Some(ticket);
            self.reads.insert(
                ticket,
                ReadInFlight {
                    path: path.clone(),
                    sent_at: track.count(),
                    generation: self.generation,
                    in_stretch: self.stretch_from.is_some(),
                },
            );
            out.push(Request::Read {
                ticket,
                path: path.to_string(),
            });
        }
        while let Some(path) = self.to_list.pop_front() {
            self.next_ticket += 1;
            self.listings.insert(self.next_ticket, path.clone());
            out.push(Request::List {
                ticket: self.next_ticket,
                path: path.to_string(),
            });
        }
        if let Some(probe) = self.start_probe() {
            out.extend(probe);
        }
        out
    }

    /// A read completed (after the events received by then were taken).
    pub fn on_read(&mut self, ticket: u64, outcome: Outcome<NodeState>) {
        let Some(read) = self.reads.remove(&ticket) else {
            return;
        };
        let Some(track) = self.tracks.get_mut(&read.path) else {
            return;
        };
        if track.read != Some(ticket) {
            return;
        }
        track.read = None;
        // Events that arrived while the read was under way call for another one.
        let again = std::mem::take(&mut track.want_read);
        let state = match outcome {
            Outcome::Done(state) => state,
            Outcome::Retry => {
                self.want_read(&read.path);
                return;
            }
        };
        if again {
            self.want_read(&read.path);
        }
        if self.undecided.remove(&read.path) {
            self.decided.insert(read.path.clone());
            if let NodeState::Present(node) = &state {
                if self.recursive
                    && node.stat.num_children > 0
                    && self.listed.insert(read.path.clone())
                {
                    self.to_list.push_back(read.path.clone());
                }
            }
        }
        let restricted = read.in_stretch || read.generation != self.generation;
        self.place(&read.path, read.sent_at, restricted, state);
    }

    /// Places a read among its node's events. A `restricted` read (see `ReadInFlight`) may
    /// show changes whose events have not arrived: it is placed only where it fits after the
    /// stretch began and nowhere else, and never taken for an anomaly.
    pub(super) fn place(
        &mut self,
        path: &Arc<str>,
        sent_at: u64,
        restricted: bool,
        state: NodeState,
    ) {
        self.dirty = true;
        let track = self.tracks.get_mut(path).expect("checked by the caller");
        let from = if sent_at >= track.applied {
            sent_at
        } else {
            // Sent before a step applied some of the node's events: the read may show one of
            // their states, which are gone. Only a state newer than the applied one can be
            // placed (after it).
            match (&track.base, &state) {
                (Some(base), state) if same_state(base, state) => return,
                (Some(NodeState::Present(base)), NodeState::Present(node))
                    if node.stat.czxid > base.stat.czxid
                        || (node.stat.czxid == base.stat.czxid
                            && node.stat.version.wrapping_sub(base.stat.version) > 0) =>
                {
                    track.applied + 1
                }
                _ => {
                    self.want_read(path);
                    return;
                }
            }
        };
        let fits = fits(track, &self.queue, self.applied_g, from, &state);
        trace!(
            path = &**path,
            sent_at,
            applied = track.applied,
            restricted,
            ?fits,
            "read placed"
        );
        match fits.as_slice() {
            // Fits before the stretch: a read after it will tell.
            [j] if restricted && *j <= track.stretch_base => self.read_after_stretch(path),
            [j] if *j == track.applied => {
                if track.base.is_none() {
                    track.base = Some(state);
                }
            }
            [j] => {
                let g = track.events[(j - track.applied - 1) as usize];
                let q = &mut self.queue[(g - self.applied_g) as usize];
                if q.known.is_none() {
                    q.known = Some(state);
                }
            }
            // It may show changes whose events have not arrived yet.
            [] if restricted => self.read_after_stretch(path),
            [] => {
                warn!(
                    path = &**path,
                    "a read fits none of its node's pending events: treating what is pending as unordered"
                );
                self.mark_unordered();
                self.want_read(path);
            }
            _ => self.want_read(path),
        }
    }

    /// A listing of the walk completed.
    pub fn on_listing(&mut self, ticket: u64, outcome: Outcome<Option<Vec<String>>>) {
        self.dirty = true;
        let Some(path) = self.listings.remove(&ticket) else {
            return;
        };
        match outcome {
            Outcome::Retry => self.to_list.push_back(path),
            Outcome::Done(None) => {}
            Outcome::Done(Some(names)) => {
                for name in names {
                    let path: Arc<str> = join(&path, &name).into();
                    if !self.tracks.contains_key(&path) {
                        self.tracks.insert(path.clone(), Track::new(None));
                        self.want_read(&path);
                    }
                    if self.undecided.contains(&path) || self.decided.contains(&path) {
                        continue;
                    }
                    self.undecide(&path);
                    self.want_read(&path);
                }
            }
        }
    }
}

/// The places (`applied..=count` of the node's events) where a read of `state`, sent when the
/// node had `from` events, fits.
fn fits(
    track: &Track,
    queue: &VecDeque<Queued>,
    applied_g: u64,
    from: u64,
    state: &NodeState,
) -> Vec<u64> {
    let mut fits = Vec::new();
    let fit = |known: Option<&NodeState>, expect: Expect| match known {
        Some(known) => same_state(known, state),
        None => expect.admits(state),
    };
    let mut expect = track.base.as_ref().map_or(Expect::Unknown, Expect::of);
    if track.applied >= from && fit(track.base.as_ref(), expect) {
        fits.push(track.applied);
    }
    for (i, g) in track.events.iter().enumerate() {
        let q = &queue[(g - applied_g) as usize];
        expect = match &q.known {
            Some(known) => Expect::of(known),
            None => expect.after(q.kind, q.ordered).unwrap_or(Expect::Unknown),
        };
        let j = track.applied + i as u64 + 1;
        if j >= from && fit(q.known.as_ref(), expect) {
            fits.push(j);
        }
    }
    fits
}
