//! Request deadlines, kept by the session rather than by a timer in each call.
//!
//! A call made with a timeout carries its deadline into the session (see `home` for which
//! calls rely on it). The session answers `Timeout` when the deadline passes: a request still
//! unsent is dropped, never to be sent; one on the wire keeps its place in the FIFO, so that
//! its late reply is matched and discarded, and its queue capacity is returned only then, as
//! for every request in flight.
//!
//! Only the earliest deadline is followed, as one more deadline of the machine's own timer.
//! It may be stale (that request was answered since): the timer then fires early, finds
//! nothing due, and follows the earliest deadline still waiting. Requests complete in far less
//! than their timeout, so the whole scan runs about once per timeout, not per request.

use std::collections::VecDeque;
use std::time::Instant;

use crate::error::ErrorKind;

use super::Session;

/// The earlier of a deadline followed so far (if any) and another.
pub(super) fn earlier(followed: Option<Instant>, deadline: Instant) -> Option<Instant> {
    Some(followed.map_or(deadline, |d| d.min(deadline)))
}

impl Session {
    /// Follows the deadline of a request taken from a handle.
    pub(super) fn follow_deadline(&mut self, deadline: Instant) {
        self.earliest_deadline = earlier(self.earliest_deadline, deadline);
    }

    /// Answers every request whose deadline passed, if one may have.
    pub(super) fn expire_requests(&mut self, now: Instant) {
        if !self.earliest_deadline.is_some_and(|d| now >= d) {
            return;
        }
        let mut earliest = self.pending.expire(now);
        let mut kept = VecDeque::with_capacity(self.unsent.len());
        for packet in self.unsent.drain(..) {
            match packet.deadline {
                Some(d) if now >= d => {
                    self.completed += 1;
                    packet.fail(ErrorKind::Timeout.into());
                }
                Some(d) => {
                    earliest = earlier(earliest, d);
                    kept.push_back(packet);
                }
                None => kept.push_back(packet),
            }
        }
        self.unsent = kept;
        self.earliest_deadline = earliest;
    }
}
