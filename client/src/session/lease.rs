//! The session's lease: an instant before which no server can have expired the session.
//!
//! A server touches a session whenever it takes a request of it (a ping, an ordinary request,
//! the handshake that resumes it) and expires it one negotiated timeout after the last touch,
//! rounded up to its next tick. A request is received after it was sent, so once a server
//! answers a request the session lives at least until that request's *send* time plus the
//! timeout. Counting from the reply's arrival instead would overstate the lease by the reply's
//! delay; counting from the last frame received, by everything since the last send.
//!
//! Not every frame counts: `auth` and SASL packets are answered without touching the session,
//! and a read-only server serves a local session the ensemble does not hear about. On a
//! reconnect the new server may negotiate another timeout; the server applies each touch with
//! the timeout of the connection it came through, so the lease uses the smallest timeout this
//! session was granted.

use std::time::{Duration, Instant};

/// The lease arithmetic, with no clock of its own: times are arguments.
#[derive(Debug, Default, Clone)]
pub(crate) struct Lease {
    /// The session the lease is about; another id starts a new lease.
    session_id: i64,
    /// The smallest timeout granted to `session_id`.
    timeout: Option<Duration>,
    /// Latest send time of a request a read-write server acknowledged.
    acknowledged_send: Option<Instant>,
    /// The current connection is to a read-write server: its answers count.
    counting: bool,
}

impl Lease {
    /// A handshake succeeded: `session_id` with `timeout`. Acknowledgements only count on a
    /// read-write server (`read_only` false).
    pub fn negotiated(&mut self, session_id: i64, timeout: Duration, read_only: bool) {
        if session_id != self.session_id {
            *self = Lease {
                session_id,
                ..Lease::default()
            };
        }
        self.counting = !read_only;
        if read_only {
            return;
        }
        self.timeout = Some(self.timeout.map_or(timeout, |t| t.min(timeout)));
    }

    /// A read-write server answered a request of the session that was sent at `sent`.
    pub fn acknowledged(&mut self, sent: Instant) {
        if !self.counting || self.timeout.is_none() {
            return;
        }
        if self.acknowledged_send.map_or(true, |last| sent > last) {
            self.acknowledged_send = Some(sent);
        }
    }

    /// The session ended: nothing vouches for it any more.
    pub fn end(&mut self) {
        self.acknowledged_send = None;
        self.timeout = None;
        self.counting = false;
    }

    /// The instant before which no server can have expired the session, if any server of
    /// the ensemble has vouched for it.
    pub fn deadline(&self) -> Option<Instant> {
        Some(self.acknowledged_send? + self.timeout?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(6);

    #[test]
    fn counts_from_the_send_of_the_latest_acknowledged_request() {
        let t0 = Instant::now();
        let mut lease = Lease::default();
        assert_eq!(lease.deadline(), None);
        lease.negotiated(1, T, false);
        assert_eq!(lease.deadline(), None, "nothing acknowledged yet");
        lease.acknowledged(t0);
        assert_eq!(lease.deadline(), Some(t0 + T));
        // A reply to an older request (answered later) does not move it back.
        lease.acknowledged(t0 + Duration::from_secs(2));
        lease.acknowledged(t0 + Duration::from_secs(1));
        assert_eq!(lease.deadline(), Some(t0 + Duration::from_secs(2) + T));
    }

    #[test]
    fn uses_the_smallest_timeout_of_the_session() {
        let t0 = Instant::now();
        let mut lease = Lease::default();
        lease.negotiated(1, T, false);
        lease.negotiated(1, Duration::from_secs(4), false);
        lease.negotiated(1, Duration::from_secs(8), false);
        lease.acknowledged(t0);
        assert_eq!(lease.deadline(), Some(t0 + Duration::from_secs(4)));
    }

    #[test]
    fn read_only_servers_vouch_for_nothing_and_a_new_session_starts_over() {
        let t0 = Instant::now();
        let mut lease = Lease::default();
        lease.negotiated(1, T, true);
        lease.acknowledged(t0);
        assert_eq!(lease.deadline(), None);
        lease.negotiated(2, T, false);
        assert_eq!(lease.deadline(), None);
        lease.acknowledged(t0);
        assert_eq!(lease.deadline(), Some(t0 + T));
        // The same session on a read-only member: its answers do not extend the lease.
        lease.negotiated(2, T, true);
        lease.acknowledged(t0 + T);
        assert_eq!(lease.deadline(), Some(t0 + T));
        lease.end();
        lease.acknowledged(t0 + T);
        assert_eq!(lease.deadline(), None, "an ended session has no lease");
    }
}
