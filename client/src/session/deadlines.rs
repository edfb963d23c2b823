//! Request deadlines, kept by the session rather than by a timer in each call.
//!
//! A call made with a timeout carries its deadline into the session (see `home` for which
//! calls rely on it). The session answers `Timeout` when the deadline passes, earliest
//! deadline first: a request still unsent is dropped, never to be sent; one on the wire keeps
//! its place in the FIFO, so that its late reply is matched and discarded, and its queue
//! capacity is returned only then, as for every request in flight.
//!
//! The requests on the wire are ordered by deadline beside their FIFO (see [`Deadlines`]), so the
//! machine's one timer follows the earliest deadline of a request still waiting, and passing
//! it touches only the requests due. An answered request's entry leaves the heap when it comes
//! to the top; entries buried under a later request's earlier deadline are swept once they
//! outnumber the requests in flight, so memory follows what is in flight, not the request
//! rate times the timeout. Requests held back for a connection (few, and only while there is
//! none) are scanned when the earliest of their deadlines passes.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Instant;

use crate::error::{Error, ErrorKind};
use crate::packet::ReplyTx;

use super::Session;

/// Deadlines of requests in flight, earliest first, each with its request's number in the
/// pending FIFO (see `pending`).
///
/// Calls made with one timeout get their deadlines in call order, so most entries go to a
/// queue kept in deadline order, where following and dropping one costs O(1); only a deadline
/// earlier than the last one queued (a call with a shorter timeout of its own) goes to the
/// heap. Requests are answered in call order, so the queue's answered entries are always at
/// its front, and it never holds more than what is in flight.
#[derive(Debug, Default)]
pub(crate) struct Deadlines {
    in_order: VecDeque<(Instant, u64)>,
    heap: BinaryHeap<Reverse<(Instant, u64)>>,
}

/// Entries swept at the least: sweeping fewer would cost more often than it saves.
const SWEEP_MIN: usize = 64;

impl Deadlines {
    /// Follows the deadline of request `number`; `head` is the number of the oldest request
    /// still waiting and `waiting` how many are.
    pub fn push(&mut self, deadline: Instant, number: u64, head: u64, waiting: usize) {
        if self
            .in_order
            .back()
            .map_or(true, |(last, _)| deadline >= *last)
        {
            self.in_order.push_back((deadline, number));
            return;
        }
        if self.heap.len() >= 2 * waiting + SWEEP_MIN {
            self.heap.retain(|Reverse((_, n))| *n >= head);
        }
        self.heap.push(Reverse((deadline, number)));
    }

    /// Every request numbered below `head` was answered: drops their entries from the fronts.
    pub fn answered_before(&mut self, head: u64) {
        while self.in_order.front().is_some_and(|(_, n)| *n < head) {
            self.in_order.pop_front();
        }
        while self.heap.peek().is_some_and(|Reverse((_, n))| *n < head) {
            self.heap.pop();
        }
    }

    /// The earliest deadline followed.
    pub fn earliest(&self) -> Option<Instant> {
        let queued = self.in_order.front().map(|(d, _)| *d);
        let heaped = self.heap.peek().map(|Reverse((d, _))| *d);
        match (queued, heaped) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The earliest deadline followed and its request's number, if it is not after `now`.
    pub fn pop_due(&mut self, now: Instant) -> Option<(Instant, u64)> {
        let queued = self.in_order.front().map(|(d, _)| *d);
        let heaped = self.heap.peek().map(|Reverse((d, _))| *d);
        match (queued, heaped) {
            (Some(q), h) if now >= q && h.map_or(true, |h| q <= h) => self.in_order.pop_front(),
            (_, Some(h)) if now >= h => self.heap.pop().map(|Reverse(e)| e),
            _ => None,
        }
    }

    pub fn clear(&mut self) {
        self.in_order.clear();
        self.heap.clear();
    }
}

/// The earlier of a deadline followed so far (if any) and another.
fn earlier(followed: Option<Instant>, deadline: Instant) -> Option<Instant> {
    Some(followed.map_or(deadline, |d| d.min(deadline)))
}

impl Session {
    /// Follows the deadline of a request held back for a connection.
    pub(super) fn follow_unsent_deadline(&mut self, deadline: Instant) {
        self.unsent_deadline = earlier(self.unsent_deadline, deadline);
    }

    /// The earliest deadline of a user request, or a little earlier (a request held back and
    /// sent since).
    pub(super) fn requests_deadline(&self) -> Option<Instant> {
        match (self.pending.next_deadline(), self.unsent_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Answers `Timeout` to every request whose deadline passed, earliest deadline first.
    pub(super) fn expire_requests(&mut self, now: Instant) {
        if !self.requests_deadline().is_some_and(|d| now >= d) {
            return;
        }
        let mut due: Vec<(Instant, ReplyTx, Error)> = Vec::new();
        self.pending.take_due(now, &mut due);
        if self.unsent_deadline.is_some_and(|d| now >= d) {
            let mut earliest = None;
            let mut kept = VecDeque::with_capacity(self.unsent.len());
            for packet in self.unsent.drain(..) {
                match packet.envelope.deadline {
                    Some(d) if now >= d => {
                        self.completed += 1;
                        due.push((d, packet.envelope.reply, ErrorKind::Timeout.into()));
                    }
                    Some(d) => {
                        earliest = earlier(earliest, d);
                        kept.push_back(packet);
                    }
                    None => kept.push_back(packet),
                }
            }
            self.unsent = kept;
            self.unsent_deadline = earliest;
        }
        // Stable: requests with one deadline fail in call order.
        due.sort_by_key(|(deadline, _, _)| *deadline);
        for (_, reply, err) in due {
            let _ = reply.send(Err(err));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Deadlines in call order are queued, and dropped as soon as their requests are
    /// answered; an earlier deadline than the last queued goes to the heap, still earliest
    /// first.
    #[test]
    fn deadlines_in_call_order_are_queued_and_earlier_ones_come_first() {
        let now = Instant::now();
        let later = now + Duration::from_secs(1);
        let mut deadlines = Deadlines::default();
        for n in 0..1000 {
            deadlines.push(later, n, 0, n as usize);
        }
        assert!(deadlines.heap.is_empty());
        deadlines.push(now, 1000, 0, 1000);
        assert_eq!(deadlines.heap.len(), 1);
        assert_eq!(deadlines.earliest(), Some(now));
        deadlines.answered_before(999);
        assert_eq!(deadlines.in_order.len(), 1);
        assert_eq!(deadlines.pop_due(later), Some((now, 1000)));
        assert_eq!(deadlines.pop_due(now), None);
        assert_eq!(deadlines.pop_due(later), Some((later, 999)));
        assert_eq!(deadlines.earliest(), None);
    }

    /// Entries of answered requests buried in the heap under a waiting request's earlier
    /// deadline are swept once they outnumber the requests in flight: the heap holds about
    /// what is in flight, whatever the rate and the timeouts.
    #[test]
    fn buried_entries_of_answered_requests_are_swept() {
        let now = Instant::now();
        let mid = now + Duration::from_secs(60);
        let far = now + Duration::from_secs(3600);
        let mut deadlines = Deadlines::default();
        // Request 0 with a far deadline, then 1..1000 with earlier ones and 1000 with the
        // earliest: the heap's. 0..1000 are answered, 1..1000's entries beneath 1000's.
        deadlines.push(far, 0, 0, 0);
        for n in 1..1000 {
            deadlines.push(mid, n, 0, n as usize);
        }
        deadlines.push(now, 1000, 0, 1000);
        deadlines.answered_before(1000);
        assert!(deadlines.in_order.is_empty());
        assert_eq!(deadlines.heap.len(), 1000, "buried, not at the top");
        assert_eq!(deadlines.earliest(), Some(now));
        deadlines.push(far, 1001, 1000, 2);
        deadlines.push(mid, 1002, 1000, 3);
        assert_eq!(deadlines.heap.len(), 2, "swept");
        assert_eq!(deadlines.pop_due(far), Some((now, 1000)));
        assert_eq!(deadlines.pop_due(far), Some((mid, 1002)));
        assert_eq!(deadlines.pop_due(now), None);
        assert_eq!(deadlines.earliest(), Some(far));
    }
}
