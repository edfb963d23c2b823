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
        inner.staging.split().freeze()
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
