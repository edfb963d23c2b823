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
//! A client past its recursive watch's memory reports a node deleted while cut off only as a
//! child change of its parent: every node known below that parent gets an unordered `Touched`
//! event and is read again. A probe that finds a node the prefix leaves present gone (a
//! deletion no event told of) does the same for that node; a probe that fails is not made
//! again for the same prefix until something new arrives, so probing never turns into a
//! stream of requests.
//!
//! # Fresh views
//!
//! At start, and after a new session, nothing is known: the subtree is walked (each node read,
//! and listed when it has children), events arrive meanwhile, and the first prefix applied
//! after the walk replaces the whole view.
//!
//! # Where each part lives
//!
//! `input` numbers the events, `stretch` starts fresh views and unordered stretches, `reads`
//! chooses the reads and places their answers, `probe` dates deletions, `prefix` finds what can
//! be applied, and `apply` applies it to the view.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use super::expect::Kind;
use super::shared::Shared;
use crate::cache::view::NodeState;

mod apply;
mod input;
mod prefix;
mod probe;
mod reads;
mod stretch;

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
    /// Nodes below the root thought present at the prefix that the probe found absent.
    gone: Vec<Arc<str>>,
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
    /// A prefix and generation whose probe failed: not probed again, so that nothing can
    /// turn probing into an endless stream of requests; something new must arrive first.
    probe_failed: Option<(u64, u64)>,
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
            probe_failed: None,
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

    /// Whether the next prefix may hide changes no event reported.
    fn hidden(&self) -> bool {
        self.applied_g < self.hidden_until
    }

    /// Position of the next event to be received.
    pub fn position(&self) -> u64 {
        self.received_g()
    }

    /// Pending events (for tests and bounds).
    #[cfg(test)]
    pub fn pending(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests;
