//! The shared staging buffer: requests admitted at call time are encoded back to back into
//! one buffer, so that they cost no allocation of their own, and the session task takes them
//! all as one slice per turn.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use super::{Admission, Item, RequestQueue};
use crate::packet::{Envelope, Packet, PacketKind};

/// A request whose frame lives in the staging buffer.
#[derive(Debug)]
pub(crate) struct Staged {
    pub len: usize,
    pub kind: PacketKind,
    pub envelope: Envelope,
}

impl Staged {
    pub fn into_packet(self, frame: Bytes) -> Packet {
        Packet {
            frame,
            kind: self.kind,
            envelope: self.envelope,
        }
    }
}

/// A request to queue: how to encode it, and what comes with it.
pub(crate) struct Request<E> {
    /// Exact frame length, length prefix included.
    pub len: usize,
    pub encode: E,
    pub kind: PacketKind,
    pub envelope: Envelope,
}

impl RequestQueue {
    /// Queues a request at call time, encoding it into the staging buffer, or (when the queue
    /// is full) encodes it on its own and hands back a ticket to wait with.
    pub fn submit_request<E: FnOnce(&mut BytesMut)>(
        self: &Arc<Self>,
        request: Request<E>,
    ) -> Admission {
        let mut inner = self.lock();
        if inner.closed.is_none() && inner.tickets.admit_now() {
            let start = inner.staging.len();
            inner.staging.reserve(request.len);
            (request.encode)(&mut inner.staging);
            let len = inner.staging.len() - start;
            debug_assert_eq!(len, request.len);
            let deferred = matches!(request.kind, PacketKind::Request);
            inner.items.push(Item::Staged(Staged {
                len,
                kind: request.kind,
                envelope: request.envelope,
            }));
            if !deferred {
                // An `auth` has no caller waiting on a reply future to flush it.
                self.tell(&mut inner);
                return Admission::Admitted;
            }
            return if self.bell.told() {
                Admission::Admitted
            } else {
                Admission::Deferred
            };
        }
        drop(inner);
        let mut frame = BytesMut::with_capacity(request.len);
        (request.encode)(&mut frame);
        self.submit(Packet {
            frame: frame.freeze(),
            kind: request.kind,
            envelope: request.envelope,
        })
    }

    /// Withdraws the queued requests whose caller dropped its future (a closed reply channel)
    /// before they went out: their frames leave the staging buffer, and their room in the
    /// queue is free at once. Left queued, they would go out with whatever a later call
    /// flushes, at an arbitrary moment and past their deadline, and hold their room until
    /// then. What the session task took, or a caller wrote under a lend, went out already.
    pub fn withdraw_dropped(&self) {
        let mut inner = self.lock();
        let inner = &mut *inner;
        let mut offset = 0;
        let mut withdrawn = 0;
        inner.items.retain(|item| {
            let (len, dropped) = match item {
                Item::Staged(s) => (s.len, s.envelope.reply.is_closed()),
                Item::Packet(p) => (0, p.envelope.reply.is_closed()),
                _ => (0, false),
            };
            if !dropped {
                offset += len;
                return true;
            }
            if len > 0 {
                let end = inner.staging.len();
                inner.staging.copy_within(offset + len..end, offset);
                inner.staging.truncate(end - len);
            }
            withdrawn += 1;
            false
        });
        inner.tickets.release(withdrawn);
    }

    /// Takes back the lent connection and moves every queued item into `out` (session task),
    /// and returns the staged frames.
    pub fn take_all(&self, out: &mut Vec<Item>) -> Bytes {
        let mut inner = self.lock();
        inner.lend = None;
        self.untell(&mut inner);
        if out.is_empty() {
            std::mem::swap(&mut inner.items, out);
        } else {
            out.append(&mut inner.items);
        }
        if inner.staging.is_empty() {
            return Bytes::new();
        }
        // No reserve here: the batch just split off still shares the buffer, so reserving now
        // would allocate a new one on every turn. The next request's own reserve reclaims the
        // buffer in place once the session task has dropped this batch.
        let batch = inner.staging.split().freeze();
        // A burst's buffer goes with the batch.
        super::give_back(&mut inner.staging, batch.len());
        batch
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{framed, poll};
    use super::*;
    use tokio::sync::oneshot;
    use zookeeper_jute::OpCode;

    #[test]
    fn staged_requests_share_one_buffer_and_keep_order_with_waiting_ones() {
        let q = RequestQueue::new(2);
        let staged = |tag: u8| {
            let (tx, rx) = oneshot::channel();
            let request = Request {
                len: 3,
                encode: move |buf: &mut BytesMut| buf.extend_from_slice(&[tag; 3]),
                kind: PacketKind::Request,
                envelope: Envelope::new(OpCode::GetData, tx),
            };
            (request, rx)
        };
        let (a, _ra) = staged(1);
        let (b, _rb) = staged(2);
        let (c, _rc) = staged(3);
        assert!(matches!(q.submit_request(a), Admission::Deferred));
        assert!(matches!(q.submit_request(b), Admission::Deferred));
        let Admission::Wait(mut wait) = q.submit_request(c) else {
            panic!("over the limit")
        };
        let mut items = Vec::new();
        let frames = q.take_all(&mut items);
        assert_eq!(&frames[..], &[1, 1, 1, 2, 2, 2]);
        assert!(
            matches!(&items[..], [Item::Staged(x), Item::Staged(y)] if x.len == 3 && y.len == 3)
        );
        q.release(1);
        assert!(poll(&mut wait).is_ready());
        items.clear();
        let frames = q.take_all(&mut items);
        assert!(frames.is_empty());
        assert!(matches!(&items[..], [Item::Packet(p)] if p.frame[..] == [3, 3, 3]));
    }

    /// A dropped caller's request leaves the queue with its frame, the others' frames stay
    /// whole and in order, and its room is free for the next call at once.
    #[test]
    fn a_dropped_callers_request_is_withdrawn_with_its_frame_and_its_room() {
        let q = RequestQueue::new(3);
        let (a, _ra) = framed(12, 1, None);
        let (b, mut rb) = framed(10, 2, None);
        let (c, _rc) = framed(9, 3, None);
        for r in [a, b, c] {
            assert!(matches!(q.submit_request(r), Admission::Deferred));
        }
        let (full, _rd) = framed(8, 4, None);
        let Admission::Wait(mut waiting) = q.submit_request(full) else {
            panic!("over the limit")
        };
        rb.close();
        q.withdraw_dropped();
        assert_eq!(q.outstanding(), 2);
        assert!(
            poll(&mut waiting).is_ready(),
            "the room went to the next call"
        );
        let mut items = Vec::new();
        let frames = q.take_all(&mut items);
        let frame = |len: usize, tag: u8| {
            let mut f = (len as i32 - 4).to_be_bytes().to_vec();
            f.extend([0; 4]);
            f.resize(len, tag);
            f
        };
        assert_eq!(&frames[..], [frame(12, 1), frame(9, 3)].concat());
        assert!(
            matches!(&items[..], [Item::Staged(x), Item::Staged(y), Item::Packet(_)]
            if x.len == 12 && y.len == 9)
        );
    }

    /// Taking a batch must not make the next request's encoding allocate a new buffer: the
    /// batch's frames live only until the session task has copied them to its output.
    #[test]
    fn the_staging_buffer_is_reused_once_the_session_dropped_its_batch() {
        let q = RequestQueue::new(8);
        let mut items = Vec::new();
        let (a, _ra) = framed(64, 1, None);
        q.submit_request(a);
        let first = q.take_all(&mut items);
        let start = first.as_ptr() as usize;
        let buffer = start..start + 64 * 1024;
        drop(first);
        items.clear();
        q.release(1);
        // Past the buffer's end several times over, so that it is also reclaimed in place.
        for round in 0..4096 {
            let (next, _rx) = framed(64, 2, None);
            q.submit_request(next);
            let batch = q.take_all(&mut items);
            items.clear();
            q.release(1);
            assert!(
                buffer.contains(&(batch.as_ptr() as usize)),
                "round {round}: a new buffer was allocated"
            );
        }
    }
}
