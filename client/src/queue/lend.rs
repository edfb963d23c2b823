//! The lend: between its turns the session task may lend the connection here (see
//! `session::lend`), and a caller's flush then writes every request queued since to the
//! socket itself, under the queue's lock, so that call order stays wire order, numbered from
//! the lend's xid. It leaves an [`Item::Written`] per request for the session to match the
//! replies with. Anything queued that cannot go under the lend, and the session's next turn,
//! take the connection back.
//!
//! Who may use a lend depends on the caller. A caller on the session task's own threads (a
//! worker that ran it, or the thread driving its current-thread runtime) costs that task no
//! cross-thread wake-up to tell, and the task writes the requests of every caller it answered
//! in one go: such a caller writes itself only under an *idle* lend (nothing in flight, a
//! quiet turn before). A caller elsewhere (the body of `#[tokio::main]` on the multi-thread
//! runtime, `Runtime::block_on`, the blocking API) would wake a parked worker or the session's
//! thread for each batch: it writes under any lend, with replies in flight or not.

use std::time::Instant;

use bytes::Bytes;

use super::{Inner, Item, RequestQueue};
use crate::metrics;
use crate::packet::{set_xid, xid_after, PacketKind, Written};
use crate::transport::Wire;

/// The idle connection, lent by the session task until its next turn.
#[derive(Debug)]
pub(crate) struct Lend {
    pub wire: Wire,
    /// The xid of the first request written under this lend; the next ones follow it.
    pub xid: i32,
    /// When the session task wakes next without being told: a request whose deadline comes
    /// sooner tells it, or the deadline would be kept late.
    pub wakes_by: Option<Instant>,
    /// Nothing is in flight and the last turn was quiet: callers on the session task's own
    /// threads may use it too.
    pub idle: bool,
}

impl RequestQueue {
    /// Lends the connection until the session task's next turn, unless something is queued
    /// already (session task). Returns whether it was lent.
    pub fn lend(&self, lend: Lend) -> bool {
        let mut inner = self.lock();
        if inner.closed.is_some() || !inner.items.is_empty() {
            return false;
        }
        inner.lend = Some(lend);
        true
    }

    /// Writes every queued request to the lent connection, numbered from the lend's xid, and
    /// leaves them to the session as written, lending the connection on when the socket took
    /// them all; whatever the socket did not take goes to the session with them. Returns false, writing nothing, when something queued cannot go
    /// under a lend, or the socket took nothing or failed (the session meets that failure on
    /// its own): the requests then stay queued.
    pub(super) fn write_lent(&self, inner: &mut Inner, lend: Lend) -> bool {
        // Requests written under this lend already wait in front for the session to take
        // them; only the staged ones behind them are written now.
        let lendable = |item: &Item| match item {
            Item::Written(_) => true,
            Item::Staged(s) => matches!(s.kind, PacketKind::Request),
            _ => false,
        };
        if !inner.items.iter().all(lendable) {
            return false;
        }
        let mut offset = 0;
        let mut xid = lend.xid;
        for item in &inner.items {
            if let Item::Staged(staged) = item {
                set_xid(&mut inner.staging[offset..], xid);
                offset += staged.len;
                xid = xid_after(xid);
            }
        }
        debug_assert_eq!(offset, inner.staging.len());
        let sent = tokio::time::Instant::now().into_std();
        let written = match lend.wire.try_write(&inner.staging) {
            Ok(n) if n > 0 => n,
            _ => return false,
        };
        metrics::bytes_sent(written);
        // The session writes it before anything else; the frames it ends stay in order.
        let mut rest = if written == inner.staging.len() {
            Bytes::new()
        } else {
            Bytes::copy_from_slice(&inner.staging[written..])
        };
        let held = inner.staging.len();
        inner.staging.clear();
        super::give_back(&mut inner.staging, held);
        let complete = rest.is_empty();
        let mut tell = !complete;
        let mut xid = lend.xid;
        // In place: the session task swaps this vector with its own, so both keep their
        // capacity.
        for slot in inner.items.iter_mut() {
            if matches!(slot, Item::Written(_)) {
                continue;
            }
            let Item::Staged(request) = std::mem::replace(slot, Item::Close(None)) else {
                unreachable!("checked lendable above")
            };
            tell |= request
                .envelope
                .deadline
                .is_some_and(|d| lend.wakes_by.map_or(true, |w| d < w));
            *slot = Item::Written(Written {
                xid,
                sent,
                rest: std::mem::take(&mut rest),
                envelope: request.envelope,
            });
            xid = xid_after(xid);
        }
        if complete {
            // Lent on with the xid after them: a caller that writes batch after batch while
            // replies arrive never needs the session task's turn to write, which would cost
            // it a cross-thread wake-up per batch. Something is in flight now, so the lend is
            // no longer idle.
            inner.lend = Some(Lend {
                xid,
                idle: false,
                ..lend
            });
        }
        if tell {
            self.tell(inner);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{framed, lend_of, wire, woken};
    use super::super::Admission;
    use super::*;
    use crate::error::ErrorKind;

    /// Requests queued under a lend write themselves at the first flush, in one write, with
    /// the lend's xid and the ones after it, and wake nobody; the lend goes on, but busy now,
    /// so the next request of a caller on the session's own thread wakes the session, which
    /// finds them all in call order.
    #[tokio::test]
    async fn a_flush_under_a_lend_writes_every_queued_request_with_the_xids_that_follow() {
        use tokio::io::AsyncReadExt;
        let (wire, mut server) = wire().await;
        let q = RequestQueue::new(8);
        // The session task runs on this thread.
        q.home.record_thread(crate::home::thread_token());
        assert!(q.lend(lend_of(&wire, i32::MAX, None)));
        let (a, _ra) = framed(16, 1, None);
        assert!(matches!(q.submit_request(a), Admission::Deferred));
        let (b, _rb) = framed(16, 2, None);
        assert!(matches!(q.submit_request(b), Admission::Deferred));
        q.flush();
        assert!(!woken(&q), "written requests need no turn of the session");
        let (c, _rc) = framed(16, 3, None);
        assert!(matches!(q.submit_request(c), Admission::Deferred));
        q.flush();
        assert!(woken(&q), "a queued one does, even behind written ones");

        let mut frames = [0; 32];
        server.read_exact(&mut frames).await.unwrap();
        for (frame, (xid, tag)) in frames.chunks(16).zip([(i32::MAX, 1), (1, 2)]) {
            assert_eq!(frame[..4], 12i32.to_be_bytes());
            assert_eq!(frame[4..8], xid.to_be_bytes());
            assert_eq!(frame[8..], [tag; 8]);
        }

        let mut items = Vec::new();
        let staged = q.take_all(&mut items);
        assert!(matches!(
            &items[..],
            [Item::Written(w1), Item::Written(w2), Item::Staged(s)]
                if w1.xid == i32::MAX && w2.xid == 1
                    && w1.rest.is_empty() && w2.rest.is_empty() && s.len == 16
        ));
        assert_eq!(staged[8..], [3; 8]);
        assert_eq!(q.outstanding(), 3);

        // Nothing is lent over queued work, and a closed queue fails what was written.
        items.clear();
        q.push_server_list(Vec::new());
        assert!(!q.lend(lend_of(&wire, 8, None)));
        q.take_all(&mut items);
        assert!(q.lend(lend_of(&wire, 8, None)));
        let (d, mut rd) = framed(16, 4, None);
        assert!(matches!(q.submit_request(d), Admission::Deferred));
        q.flush();
        q.close(ErrorKind::SessionExpired.into());
        assert_eq!(
            rd.try_recv().unwrap().unwrap_err(),
            ErrorKind::SessionExpired
        );
    }

    /// What the socket does not take of a lent batch goes to the session, in order, and wakes
    /// it to write it; a full socket makes the next lent requests queue instead.
    #[tokio::test]
    async fn what_the_socket_does_not_take_goes_to_the_session() {
        let (wire, _server) = wire().await;
        let q = RequestQueue::new(8);
        let len = 32 << 20;
        assert!(q.lend(lend_of(&wire, 3, None)));
        let (big, _rbig) = framed(len, 9, None);
        q.submit_request(big);
        let (after, _rafter) = framed(16, 7, None);
        q.submit_request(after);
        q.flush();
        assert!(woken(&q));
        let mut items = Vec::new();
        q.take_all(&mut items);
        let [Item::Written(w), Item::Written(next)] = &items[..] else {
            panic!("{items:?}")
        };
        assert_eq!((w.xid, next.xid), (3, 4));
        // The big frame's end, then the whole of the next one: the session writes them in turn.
        let rest = &w.rest[..];
        assert!(
            rest.len() > 16 && rest.len() < len + 16 - 8,
            "{}",
            rest.len()
        );
        assert!(rest[..rest.len() - 16].iter().all(|&b| b == 9));
        assert_eq!(rest[rest.len() - 12..rest.len() - 8], 4i32.to_be_bytes());
        assert_eq!(rest[rest.len() - 8..], [7; 8]);
        assert!(next.rest.is_empty());

        // The peer reads nothing: once full, the socket takes no byte of the next request.
        while wire.try_write(&[0; 64 * 1024]).is_ok() {}
        items.clear();
        assert!(q.lend(lend_of(&wire, 5, None)));
        let (small, _rsmall) = framed(16, 5, None);
        q.submit_request(small);
        q.flush();
        assert!(woken(&q));
        let staged = q.take_all(&mut items);
        assert!(matches!(&items[..], [Item::Staged(s)] if s.len == 16));
        assert_eq!(staged[8..], [5; 8]);
    }

    /// The session keeps the deadlines of requests made on its runtime: a written request
    /// whose deadline comes before the session would wake on its own wakes it.
    #[tokio::test]
    async fn a_deadline_before_the_sessions_next_wake_wakes_it() {
        let (wire, _server) = wire().await;
        let q = RequestQueue::new(8);
        let now = Instant::now();
        let wakes_by = now + std::time::Duration::from_secs(10);
        let mut items = Vec::new();
        for (deadline, wakes) in [
            (None, false),
            (Some(wakes_by + std::time::Duration::from_secs(1)), false),
            (Some(now), true),
        ] {
            assert!(q.lend(lend_of(&wire, 1, Some(wakes_by))));
            let (r, _rx) = framed(16, 1, deadline);
            assert!(matches!(q.submit_request(r), Admission::Deferred));
            q.flush();
            assert_eq!(woken(&q), wakes, "deadline {deadline:?}");
            q.take_all(&mut items);
            items.clear();
        }
    }

    /// A lend made while replies are awaited is left by a caller on the session task's own
    /// thread, which tells the task instead (the task then writes its callers' requests
    /// together), and used by a caller elsewhere, which would otherwise wake that thread.
    #[test]
    fn a_busy_lend_is_used_only_by_callers_off_the_sessions_threads() {
        let home = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (wire, _server) = home.block_on(wire());
        let q = home.block_on(async { RequestQueue::new(8) });
        // The session task runs on the thread driving its runtime: this one.
        q.home.record_thread(crate::home::thread_token());
        let busy = |xid| Lend {
            idle: false,
            ..lend_of(&wire, xid, None)
        };
        let mut items = Vec::new();

        assert!(q.lend(busy(5)));
        home.block_on(async {
            let (a, _ra) = framed(16, 1, None);
            assert!(matches!(q.submit_request(a), Admission::Deferred));
            q.flush();
            assert!(woken(&q), "on the session's thread: told");
        });
        q.take_all(&mut items);
        assert!(matches!(&items[..], [Item::Staged(_)]), "{items:?}");
        items.clear();

        // In the runtime's context without driving it (a blocking caller, a blocking-pool
        // thread): elsewhere, as the next caller outside the runtime is.
        assert!(q.lend(busy(5)));
        let handle = home.handle().clone();
        std::thread::scope(|s| {
            s.spawn(|| {
                let _entered = handle.enter();
                let (a, _ra) = framed(16, 1, None);
                assert!(matches!(q.submit_request(a), Admission::Deferred));
                q.flush();
                assert!(!woken(&q), "entered, not driving: written, nobody woken");
            });
        });
        q.take_all(&mut items);
        assert!(
            matches!(&items[..], [Item::Written(w)] if w.xid == 5),
            "{items:?}"
        );
        items.clear();

        assert!(q.lend(busy(6)));
        let (b, _rb) = framed(16, 2, None);
        assert!(matches!(q.submit_request(b), Admission::Deferred));
        q.flush();
        assert!(!woken(&q), "elsewhere: written, nobody woken");
        // The lend goes on until the session takes it back: the caller's next batch writes
        // itself too, numbered after the first.
        let (c, _rc) = framed(16, 3, None);
        assert!(matches!(q.submit_request(c), Admission::Deferred));
        let (d, _rd) = framed(16, 4, None);
        assert!(matches!(q.submit_request(d), Admission::Deferred));
        q.flush();
        assert!(!woken(&q), "the next batch: written, nobody woken");
        q.take_all(&mut items);
        assert!(
            matches!(&items[..], [Item::Written(w), Item::Written(x), Item::Written(y)]
                if (w.xid, x.xid, y.xid) == (6, 7, 8)),
            "{items:?}"
        );

        // Taken back, it is gone: the next request waits for the session.
        items.clear();
        let (e, _re) = framed(16, 5, None);
        assert!(matches!(q.submit_request(e), Admission::Deferred));
        q.flush();
        assert!(woken(&q), "after the session took the lend back: told");
    }
}
