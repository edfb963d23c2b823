//! The cache's state machine: events in, reads out, reads in, steps of the view out. No I/O
//! and no clock: the task in `driver` feeds it, in this order for every read that completes:
//! the events the stream holds by then, then the read.
//!
//! # Positions
//!
//! Events are numbered in the order received (`g`). The client delivers an event before the
//! reply of any read that observes its change, so a read sent when `a` of its node's events had
//! arrived, and answered when `b` had, saw the node's state after one of its events
//! `a..=b`. Counting ([`Expect`]) tells which: the read is placed where it fits, if it fits
//! exactly one place. A *prefix* of the events (`g < s`) can be applied when every node's state
//! after its last event in the prefix is known, and the zxid of that point is known:
//!
//! * the last event is a creation or data change whose state is known: its `mzxid`;
//! * the next event is: its `mzxid - 1` (nothing changed in between);
//! * else (a trailing deletion) a *probe*: reads of the nearest existing ancestors, whose
//!   `pzxid` is at least the deletion's zxid, made while no later event arrived.
//!
//! # Unordered stretches
//!
//! Events after a reconnect (the client reports what was missed once per node, in no useful
//! order) or after counting failed (events were folded) do not count changes one by one and
//! do not say when a change happened. Such events only say that their node must be read
//! again; no prefix ending inside the stretch is applied. The driver ends a reconnect stretch
//! once the client has reported everything it missed.
//!
//! # Fresh views
//!
//! At start, and after a new session, nothing is known: the subtree is walked (each node read,
//! and listed when it has children), events arrive meanwhile, and the first prefix applied
//! after the walk replaces the whole view.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use tracing::{debug, trace, warn};

use super::expect::{same_state, Expect, Kind};
use super::shared::Shared;
use super::{child, depth, parent, within, CacheEvent, CachedNode, NodeState};

/// Reads in flight at most; more wait their turn.
const MAX_READS_IN_FLIGHT: usize = 4096;

/// A read the driver must make now, in this order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Request {
    /// The node's data and stat (or stat only), answered with [`Engine::on_read`].
    Read { ticket: u64, path: String },
    /// The node's children, answered with [`Engine::on_listing`].
    List { ticket: u64, path: String },
    /// The node's stat for its `pzxid`, answered with [`Engine::on_probe`].
    Probe { ticket: u64, path: String },
}

/// How a read ended.
#[derive(Debug)]
pub(crate) enum Outcome<T> {
    Done(T),
    /// Failed in a way worth retrying (connection lost, say).
    Retry,
}

/// One event not yet applied.
#[derive(Debug)]
struct Queued {
    path: Arc<str>,
    kind: Kind,
    /// Came live, in the server's order, one per change (see the module docs).
    ordered: bool,
    /// The node's state right after this event, once known.
    known: Option<NodeState>,
}

/// A node with events not yet applied, a read under way, or a state not known yet.
#[derive(Debug)]
struct Track {
    /// The state before its first pending event: the view's, or unknown in a fresh view
    /// until read.
    base: Option<NodeState>,
    /// Positions of its pending events.
    events: VecDeque<u64>,
    /// How many of its events were applied before `events[0]`.
    applied: u64,
    /// The read under way: its ticket.
    read: Option<u64>,
    /// Another read is needed (queued in `want`, or to be once `read` completes).
    want_read: bool,
    /// Scratch for the prefix scan: its state is known at the position scanned.
    scan_known: bool,
    /// Its event count when the current (or last) unordered stretch began.
    stretch_base: u64,
}

impl Track {
    fn new(base: Option<NodeState>) -> Track {
        Track {
            base,
            events: VecDeque::new(),
            applied: 0,
            read: None,
            want_read: false,
            scan_known: false,
            stretch_base: 0,
        }
    }

    fn count(&self) -> u64 {
        self.applied + self.events.len() as u64
    }
}

#[derive(Debug)]
struct ReadInFlight {
    path: Arc<str>,
    /// The node's event count when the read was sent.
    sent_at: u64,
    /// Sent during an unordered stretch, or before one that began since: its reply may show
    /// changes made while cut off whose events have not arrived yet.
    generation: u64,
    in_stretch: bool,
}

/// Reads of the nearest existing ancestors of the nodes deleted by a prefix.
#[derive(Debug)]
struct Probe {
    /// The prefix it is for.
    prefix: u64,
    /// The stretch generation it was made in: a probe across a reconnect is void.
    generation: u64,
    outstanding: HashMap<u64, String>,
    pzxid: i64,
    failed: bool,
}

pub(crate) struct Engine {
    root: Arc<str>,
    recursive: bool,
    shared: Arc<Shared>,
    queue: VecDeque<Queued>,
    /// Position of `queue[0]`.
    applied_g: u64,
    tracks: HashMap<Arc<str>, Track>,
    /// Nodes waiting for a read slot.
    want: VecDeque<Arc<str>>,
    /// Nodes to read once the stretch under way ends.
    after_stretch: Vec<Arc<str>>,
    reads: HashMap<u64, ReadInFlight>,
    listings: HashMap<u64, Arc<str>>,
    next_ticket: u64,
    /// No prefix shorter than this is applied (the end of the last unordered stretch).
    settle_from: u64,
    /// An unordered stretch under way since this position.
    stretch_from: Option<u64>,
    /// Counts the stretches begun (and fresh starts): reads and probes sent before the
    /// current one are answered in a world the events do not yet show.
    generation: u64,
    /// Counting failed while events were being taken: the rest of them are unordered too.
    anomaly: bool,
    /// Prefixes starting before this may hide changes no event reported (a node created and
    /// deleted while cut off): their zxid comes only from a later live event, or from the
    /// stats of every node (see `probe_targets`).
    hidden_until: u64,
    /// The next step replaces the whole view.
    fresh: bool,
    /// The walk of a fresh view: nodes whose first read decides whether to list them, and
    /// listings to make (again).
    undecided: HashSet<Arc<str>>,
    decided: HashSet<Arc<str>>,
    listed: HashSet<Arc<str>>,
    to_list: VecDeque<Arc<str>>,
    probe: Option<Probe>,
    /// A prefix whose zxid a probe established.
    probed: Option<(u64, i64)>,
    initialized: bool,
    /// Something changed since the last step (events, a placed read, a stretch's end).
    dirty: bool,
    /// Past this many pending events, they are folded (see `fold_pending`).
    max_pending: usize,
    fold_at: usize,
}

impl Engine {
    pub fn new(root: &str, recursive: bool, shared: Arc<Shared>, max_pending: usize) -> Engine {
        let max_pending = max_pending.max(16);
        Engine {
            root: root.into(),
            recursive,
            shared,
            queue: VecDeque::new(),
            applied_g: 0,
            tracks: HashMap::new(),
            want: VecDeque::new(),
            after_stretch: Vec::new(),
            reads: HashMap::new(),
            listings: HashMap::new(),
            next_ticket: 0,
            settle_from: 0,
            stretch_from: None,
            generation: 0,
            anomaly: false,
            hidden_until: 0,
            fresh: true,
            undecided: HashSet::new(),
            decided: HashSet::new(),
            listed: HashSet::new(),
            to_list: VecDeque::new(),
            probe: None,
            probed: None,
            initialized: false,
            dirty: true,
            max_pending,
            fold_at: max_pending,
        }
    }

    fn received_g(&self) -> u64 {
        self.applied_g + self.queue.len() as u64
    }

    fn walking(&self) -> bool {
        !self.undecided.is_empty() || !self.listings.is_empty() || !self.to_list.is_empty()
    }

    /// Starts a fresh view on a new watch: everything pending belongs to the old one.
    pub fn start_fresh(&mut self) {
        self.dirty = true;
        self.applied_g = self.received_g();
        self.queue.clear();
        self.tracks.clear();
        self.want.clear();
        self.after_stretch.clear();
        self.reads.clear();
        self.listings.clear();
        self.listed.clear();
        self.to_list.clear();
        self.undecided.clear();
        self.decided.clear();
        self.probe = None;
        self.probed = None;
        self.stretch_from = None;
        self.generation += 1;
        self.settle_from = self.applied_g;
        self.hidden_until = self.applied_g;
        self.fresh = true;
        let root = self.root.clone();
        self.tracks.insert(root.clone(), Track::new(None));
        self.undecide(&root);
        self.want_read(&root);
    }

    /// In a fresh view, every node learned of must be read once, to know whether to list it.
    fn undecide(&mut self, path: &Arc<str>) {
        if self.fresh && !self.decided.contains(path) {
            self.undecided.insert(path.clone());
        }
    }

    /// The connection was lost (seen before the events from position `from` were taken):
    /// events from there on are unordered until [`Engine::end_stretch`].
    pub fn begin_stretch(&mut self, from: u64) {
        let from = from.clamp(self.applied_g, self.received_g());
        self.generation += 1;
        // Nothing counted from before the stretch can date a step any more.
        self.probe = None;
        if self.stretch_from.is_none() {
            for track in self.tracks.values_mut() {
                track.stretch_base = track.applied;
                for g in &track.events {
                    if *g < from {
                        track.stretch_base += 1;
                    }
                }
            }
        }
        self.stretch_from = Some(self.stretch_from.map_or(from, |f| f.min(from)));
        let start = (from - self.applied_g) as usize;
        for q in self.queue.iter_mut().skip(start) {
            q.ordered = false;
        }
    }

    /// The client has reported everything missed while cut off.
    pub fn end_stretch(&mut self) {
        self.dirty = true;
        if self.stretch_from.take().is_some() {
            self.settle_from = self.settle_from.max(self.received_g());
            self.hidden_until = self.settle_from;
        }
        for path in std::mem::take(&mut self.after_stretch) {
            self.want_read(&path);
        }
    }

    /// Whether the next prefix may hide changes no event reported.
    fn hidden(&self) -> bool {
        self.applied_g < self.hidden_until
    }

    /// Position of the next event to be received.
    pub fn position(&self) -> u64 {
        self.received_g()
    }

    /// Takes events from the watch, in the order received.
    pub fn on_events(&mut self, events: impl IntoIterator<Item = (Kind, String)>) {
        self.dirty = true;
        for (kind, path) in events {
            if !within(&self.root, &path) || (!self.recursive && *path != *self.root) {
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

    fn push_event(&mut self, kind: Kind, path: Arc<str>) {
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
    fn cover_ancestors(&mut self, path: &str) {
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
            let g = self.received_g();
            let base = self.base_for_new_track(&ancestor);
            let track = self
                .tracks
                .entry(ancestor.clone())
                .or_insert_with(|| Track::new(base));
            track.events.push_back(g);
            self.queue.push_back(Queued {
                path: ancestor.clone(),
                kind: Kind::Touched,
                ordered: false,
                known: None,
            });
            self.undecide(&ancestor);
            self.want_read(&ancestor);
            self.mark_unordered();
            self.anomaly = true;
        }
    }

    /// The state a node had before its first pending event, when it has no track yet.
    fn base_for_new_track(&self, path: &str) -> Option<NodeState> {
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
    fn mark_unordered(&mut self) {
        for q in self.queue.iter_mut() {
            q.ordered = false;
        }
        self.settle_from = self.settle_from.max(self.received_g());
        // Events folded by the client forget nodes that came and went.
        self.hidden_until = self.settle_from;
        let paths: Vec<Arc<str>> = self.tracks.keys().cloned().collect();
        for path in paths {
            if self.tracks[&path].events.is_empty() {
                continue;
            }
            self.want_read(&path);
        }
    }

    /// Too many pending events: fold them into one unordered `Touched` per node, to be read
    /// again. Reads under way no longer fit the counts and are ignored.
    fn fold_pending(&mut self) {
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

    fn want_read(&mut self, path: &Arc<str>) {
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
    fn place(&mut self, path: &Arc<str>, sent_at: u64, restricted: bool, state: NodeState) {
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

    /// Reads made during a stretch may show changes whose events have not arrived: a read
    /// that can only be placed after its end is made then.
    fn read_after_stretch(&mut self, path: &Arc<str>) {
        if self.stretch_from.is_some() {
            self.after_stretch.push(path.clone());
        } else {
            self.want_read(path);
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
                    let path: Arc<str> = child(&path, &name).into();
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
            Outcome::Done(None) | Outcome::Retry => probe.failed = true,
        }
        if probe.outstanding.is_empty() {
            let probe = self.probe.take().expect("checked above");
            // Valid only if nothing happened after the prefix while the probe was made.
            if !probe.failed
                && probe.prefix == self.received_g()
                && probe.generation == self.generation
                && self.stretch_from.is_none()
            {
                let zxid = probe.pzxid.max(self.batch_mzxid(probe.prefix));
                self.probed = Some((probe.prefix, zxid));
            }
        }
        next
    }

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
    fn prefix_zxid(&self, i: usize) -> Option<i64> {
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
    fn fresh_zxid(&self) -> Option<i64> {
        self.tracks
            .values()
            .filter_map(|t| t.base.as_ref().and_then(NodeState::present))
            .map(|node| node.stat.mzxid.max(node.stat.pzxid))
            .max()
    }

    /// The largest `mzxid` of the states the prefix `..s` leaves present (and, in a fresh view,
    /// their `pzxid`s: the deletions before the watch).
    fn batch_mzxid(&self, s: u64) -> i64 {
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
    fn states_at(&self, s: u64) -> Vec<(Arc<str>, NodeState)> {
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

    /// The nodes whose stats bound the changes in the prefix `..s` that its events do not
    /// date: for each node the prefix leaves deleted, its nearest ancestor it leaves present
    /// (whose `pzxid` is at least the deletion's); when changes may be hidden, every node it
    /// leaves present (a node created and deleted unseen moved its parent's `pzxid`); and
    /// above the cache when the root is gone (walking up from its parent as far as needed).
    fn probe_targets(&self, s: u64) -> HashSet<String> {
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
        let mut targets = HashSet::new();
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
    fn start_probe(&mut self) -> Option<Vec<Request>> {
        let end = self.received_g();
        if self.probe.is_some()
            || self.walking()
            || self.probed.is_some_and(|(s, _)| s == end)
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
        });
        Some(requests)
    }

    /// Applies the prefix `..s` to the view (`zxid`: the point it reaches, if known; without
    /// it, only a prefix that changes nothing visible is applied).
    fn apply_prefix(&mut self, s: u64, zxid: Option<i64>) -> bool {
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
    fn release_memory(&mut self) {
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

    /// Pending events (for tests and bounds).
    #[cfg(test)]
    pub fn pending(&self) -> usize {
        self.queue.len()
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

#[cfg(test)]
mod tests;
