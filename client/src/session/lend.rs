//! Lending the idle connection to callers.
//!
//! A request made while the session task waits would otherwise cost a turn of that task
//! before it is written: a wake-up, and on a multi-thread runtime often a parked worker woken
//! for it. Instead the driver lends the connection between its turns, with the next xid, and
//! the first caller to wait for a reply writes every request queued since itself, numbered
//! from that xid (see `queue`). The machine stays the one owner of protocol state: it says
//! when a lend is safe and which xid it carries, and takes the requests back as [`Written`]
//! at the start of its next turn, before it reads any reply. Replies may be awaited meanwhile:
//! the requests written under the lend are matched after them, in xid order. (Whether a
//! caller on the session's own threads should use such a lend, or leave its requests to the
//! next turn to write with others', is the driver's call: see `queue::lend`.)

use tracing::debug;

use super::{Phase, Session};
use crate::packet::Written;

impl Session {
    /// The xid a caller may write its request with now, if the connection may be lent: an
    /// established connection with nothing to write and nothing held back.
    pub fn lendable_xid(&self) -> Option<i32> {
        let lendable = self.phase == Phase::Connected
            && !self.sasl_in_progress()
            && self.moving_to.is_none()
            && self.unsent.is_empty()
            && self.out.is_empty();
        lendable.then_some(self.next_xid)
    }

    /// Some request waits for its reply.
    pub fn awaits_replies(&self) -> bool {
        !self.pending.is_empty()
    }

    /// A request written by a caller under the lend that carried `written.xid`, taken before
    /// any reply that may answer it.
    pub fn submit_written(&mut self, written: Written) {
        let Written {
            xid,
            sent,
            rest,
            envelope,
        } = written;
        self.in_flight.taken();
        // Lends are taken back before the machine acts again, and the requests written under
        // one are numbered in order, so the xid is the next one; anything else
        // is a broken invariant, not a server's doing.
        debug_assert_eq!(xid, self.next_xid);
        self.next_xid();
        // Nothing else was queued for the connection when it was lent, and the rest of a lent
        // write comes with the first request it cut.
        self.out.extend_from_slice(&rest);
        debug!(xid, opcode = ?envelope.opcode, "request sent by its caller");
        self.await_reply(xid, envelope, sent);
        self.last_send = self.last_send.max(sent);
    }
}
