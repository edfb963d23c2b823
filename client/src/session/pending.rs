//! Requests on the wire, waiting for their reply.
//!
//! Servers answer ordinary requests in the order they were received, so replies are matched
//! against the head of a FIFO and a different xid means the connection is broken. `auth`
//! replies (xid −4) can overtake other replies; they have their own FIFO.
//!
//! Each ordered request keeps the time it was sent: its reply proves the server heard the
//! session then (see `lease`).
//!
//! User requests with a deadline are also ordered by it (see `deadlines`): each is found in
//! the FIFO by its number, the count of ordered requests pushed before it.

use std::collections::VecDeque;
use std::time::Instant;

use super::deadlines::Deadlines;

use crate::error::{Error, ErrorKind};
use crate::packet::{Envelope, Packet, ReplyTx, WatchRegistration};
use crate::secret::Secret;

/// What a pending entry is waiting for.
#[derive(Debug)]
pub(crate) enum Pending {
    /// A user request. `reply` is taken when its deadline passes first: the entry stays to
    /// match the late reply.
    User {
        xid: i32,
        reply: Option<ReplyTx>,
        watch: Option<WatchRegistration>,
        deadline: Option<Instant>,
        /// A write (see `packet::is_write`): failed without its reply, it may have been applied.
        write: bool,
        /// See `Envelope::caller_here`.
        caller_here: bool,
    },
    /// A `setWatches`/`setWatches2` batch: of a reconnect's (`reconnect`), or one setting a
    /// persistent watch again that a one-shot one displaced.
    SetWatches { xid: i32, reconnect: bool },
    /// `closeSession`.
    Close { xid: i32 },
    /// One of the session's own reads behind a persistent watch.
    Learn { xid: i32, read: LearnRead },
}

/// What a session's own read is for; `tag` tells it from other reads of the same watch.
#[derive(Debug)]
pub(crate) enum LearnRead {
    /// `exists` on the node of a persistent watch.
    Node { path: String, tag: u64 },
    /// `getChildren2` on `path`, in the walk `tag` of the recursive watch on `root`.
    Listing {
        root: String,
        tag: u64,
        path: String,
    },
    /// `exists` on `path`, created under the recursive watch on `root`.
    Stat { root: String, path: String },
}

impl Pending {
    /// A user request, sent with xid `xid`.
    pub fn user(xid: i32, envelope: Envelope) -> Pending {
        Pending::User {
            xid,
            reply: Some(envelope.reply),
            watch: envelope.watch,
            deadline: envelope.deadline,
            write: crate::packet::is_write(envelope.opcode),
            caller_here: envelope.caller_here,
        }
    }

    pub fn xid(&self) -> i32 {
        match self {
            Pending::User { xid, .. }
            | Pending::SetWatches { xid, .. }
            | Pending::Close { xid }
            | Pending::Learn { xid, .. } => *xid,
        }
    }
}

/// An `auth` packet waiting for its out-of-band reply.
#[derive(Debug)]
pub(crate) struct PendingAuth {
    pub scheme: String,
    pub auth: Secret,
    /// The user's `add_auth` call, or `None` for a replay after reconnect.
    pub reply: Option<ReplyTx>,
}

/// The two FIFOs of one connection.
#[derive(Debug, Default)]
pub(crate) struct PendingQueue {
    /// Ordered requests with their send times.
    requests: VecDeque<(Pending, Instant)>,
    /// The number of the request at the front of `requests`: every ordered request pushed
    /// gets the next number, so request `n` is at `n - head` while it waits.
    head: u64,
    /// The deadlines of the user requests in `requests` that have one, earliest first.
    deadlines: Deadlines,
    pub auths: VecDeque<PendingAuth>,
}

impl PendingQueue {
    /// An ordered request written to the connection at `sent`.
    pub fn push(&mut self, entry: Pending, sent: Instant) {
        if let Pending::User {
            deadline: Some(deadline),
            ..
        } = entry
        {
            let number = self.head + self.requests.len() as u64;
            self.deadlines
                .push(deadline, number, self.head, self.requests.len());
        }
        self.requests.push_back((entry, sent));
    }

    /// Nothing is waiting for a reply, ordered or `auth`.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty() && self.auths.is_empty()
    }

    /// The xid the next ordered reply must carry.
    pub fn front_xid(&self) -> Option<i32> {
        self.requests.front().map(|(entry, _)| entry.xid())
    }

    /// The oldest ordered request and when it was sent.
    pub fn pop_front(&mut self) -> Option<(Pending, Instant)> {
        let front = self.requests.pop_front()?;
        self.head += 1;
        self.deadlines.answered_before(self.head);
        Some(front)
    }

    /// The earliest deadline of a user request still waiting for its reply.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.earliest()
    }

    /// Fails every entry with `err`, a failure of requests sent and not answered; returns how
    /// many user requests that completed.
    pub fn fail_all(&mut self, err: &Error) -> usize {
        let mut completed = 0;
        self.head += self.requests.len() as u64;
        self.deadlines.clear();
        for (entry, _) in self.requests.drain(..) {
            if let Pending::User { reply, write, .. } = entry {
                completed += 1;
                if let Some(reply) = reply {
                    let _ = reply.send(Err(err.clone().unanswered(write)));
                }
            }
        }
        for auth in self.auths.drain(..) {
            if let Some(reply) = auth.reply {
                completed += 1;
                let _ = reply.send(Err(err.clone()));
            }
        }
        completed
    }

    /// Takes the reply channel of every user request whose deadline is not after `now`,
    /// earliest deadline first, into `due` with the error to answer it with. The entries stay,
    /// to match the late replies.
    pub fn take_due(&mut self, now: Instant, due: &mut Vec<(Instant, ReplyTx, Error)>) {
        while let Some((deadline, number)) = self.deadlines.pop_due(now) {
            let Some(index) = number.checked_sub(self.head) else {
                continue;
            };
            let Some((Pending::User { reply, write, .. }, _)) =
                self.requests.get_mut(index as usize)
            else {
                continue;
            };
            if let Some(reply) = reply.take() {
                let timeout = Error::from(ErrorKind::Timeout).unanswered(*write);
                due.push((deadline, reply, timeout));
            }
        }
    }
}

/// Requests accepted while no connection is up, sent once one is.
pub(crate) type Unsent = VecDeque<Packet>;
