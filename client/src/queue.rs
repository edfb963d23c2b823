//! The bounded hand-off from `Client` handles to the session task.
//!
//! Requests must leave in the order the methods were called, even when the queue is full, and a
//! flood of calls must wait rather than pile up. Each call therefore takes a ticket at call time;
//! tickets are admitted strictly in order while fewer than `limit` requests are outstanding
//! (queued here or in flight on the connection). A call that finds the queue full keeps its
//! encoded request inside its own future until its ticket comes up. Capacity is returned when a
//! request completes, so `limit` bounds the memory held for requests.
//!
//! An ordinary request admitted at call time does not wake the session task by itself: its
//! caller does, with [`RequestQueue::flush`], when it first waits for the reply. A caller that
//! makes several requests before it waits (a lock's release and the next acquisition, a create
//! and the listing that follows it) then has them written together, as it would on a
//! current-thread runtime, instead of racing a session task woken on another worker by the
//! first of them. ZooKeeper logs and commits writes that arrive together as one batch.
//!
//! Between its turns the session task may lend the idle connection here ([`Lend`], see
//! `session::lend`). The flush then writes every request queued since to the socket itself,
//! under this queue's lock, so that call order stays wire order, with the lend's xid and the
//! ones after it, and leaves an [`Item::Written`] per request for the session to match the
//! replies with. Anything queued that cannot go under the lend, and the session's next turn,
//! take it back.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use tokio::sync::{oneshot, Notify};
use zookeeper_jute::OpCode;

use crate::error::Error;
use crate::home::SessionHome;
use crate::metrics;
use crate::packet::{xid_after, Packet, PacketKind, ReplyTx, WatchRegistration, Written};
use crate::span::SentSpan;
use crate::transport::Wire;

/// What the session task takes from the queue.
#[derive(Debug)]
pub(crate) enum Item {
    /// A request that waited for room, with its own frame.
    Packet(Packet),
    /// A request admitted at call time: its frame is the next `len` bytes of the staging
    /// buffer handed out by [`RequestQueue::take_all`].
    Staged(Staged),
    /// Close the session; the sender (if any) is told when it is done.
    Close(Option<oneshot::Sender<()>>),
    /// Replace the server list (and rebalance).
    ServerList(Vec<crate::connect_string::HostPort>),
    /// A request its caller wrote under a lend.
    Written(Written),
}

/// The idle connection, lent by the session task until its next turn.
#[derive(Debug)]
pub(crate) struct Lend {
    pub wire: Wire,
    /// The xid of the first request written under this lend; the next ones follow it.
    pub xid: i32,
    /// When the session task wakes next without being told: a request whose deadline comes
    /// sooner tells it, or the deadline would be kept late.
    pub wakes_by: Option<Instant>,
}

/// A request whose frame lives in the staging buffer.
#[derive(Debug)]
pub(crate) struct Staged {
    pub len: usize,
    pub opcode: OpCode,
    pub kind: PacketKind,
    pub watch: Option<WatchRegistration>,
    pub reply: ReplyTx,
    pub deadline: Option<Instant>,
    pub span: SentSpan,
}

impl Staged {
    pub fn into_packet(self, frame: Bytes) -> Packet {
        Packet {
            frame,
            opcode: self.opcode,
            kind: self.kind,
            watch: self.watch,
            reply: self.reply,
            deadline: self.deadline,
            span: self.span,
        }
    }
}

/// A request to queue: how to encode it, and what comes with it.
pub(crate) struct Request<E> {
    /// Exact frame length, length prefix included.
    pub len: usize,
    pub encode: E,
    pub opcode: OpCode,
    pub kind: PacketKind,
    pub watch: Option<WatchRegistration>,
    pub reply: ReplyTx,
    /// See [`Packet::deadline`].
    pub deadline: Option<Instant>,
    /// See [`Packet::span`].
    pub span: SentSpan,
}

struct Inner {
    items: Vec<Item>,
    /// Frames of the `Staged` items, back to back: requests admitted at call time are encoded
    /// here, so that they cost no allocation of their own.
    staging: BytesMut,
    /// Admitted requests not yet completed (queued here or in flight).
    outstanding: usize,
    limit: usize,
    next_ticket: u64,
    next_admit: u64,
    /// Tickets whose future was dropped before admission: skipped.
    abandoned: BTreeSet<u64>,
    waiters: BTreeMap<u64, Waker>,
    /// Set once the session has ended: every later request fails with this.
    closed: Option<Error>,
    /// The connection, while the session task lends it.
    lend: Option<Lend>,
}

impl std::fmt::Debug for Inner {
    // The staged frames may hold an `auth` credential: only their length shows.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner")
            .field("items", &self.items)
            .field("staged_bytes", &self.staging.len())
            .field("outstanding", &self.outstanding)
            .field("limit", &self.limit)
            .field("closed", &self.closed)
            .field("lent", &self.lend.is_some())
            .finish_non_exhaustive()
    }
}

/// Shared between the handles and the session task.
#[derive(Debug)]
pub(crate) struct RequestQueue {
    inner: Mutex<Inner>,
    /// Wakes the session task when `items` becomes non-empty.
    pub notify: Notify,
    /// Where the session task runs: whether a caller may leave its deadline to it.
    pub home: SessionHome,
    /// The session task was woken for what is queued and has not taken it yet. Written under
    /// the lock only; read without it by [`RequestQueue::flush`], where a `true` can only be
    /// newer than the flushing caller's own request (it was `false` when that was queued).
    told: AtomicBool,
}

/// The outcome of [`RequestQueue::submit`].
pub(crate) enum Admission {
    /// Queued, and the session task knows (or is told with something queued before).
    Admitted,
    /// Queued, and nobody told the session task yet: the caller owes a
    /// [`RequestQueue::flush`] when it first waits for the reply.
    Deferred,
    /// The queue was full: wait with [`Admit`] (boxed: it holds the whole request, and the
    /// caller's future keeps it only in this case).
    Wait(Box<Admit>),
}

impl RequestQueue {
    pub fn new(limit: usize) -> Arc<RequestQueue> {
        Arc::new(RequestQueue {
            inner: Mutex::new(Inner {
                items: Vec::new(),
                staging: BytesMut::with_capacity(64 * 1024),
                outstanding: 0,
                limit: limit.max(1),
                next_ticket: 0,
                next_admit: 0,
                abandoned: BTreeSet::new(),
                waiters: BTreeMap::new(),
                closed: None,
                lend: None,
            }),
            notify: Notify::new(),
            home: SessionHome::current(),
            told: AtomicBool::new(false),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding this lock cannot leave it inconsistent in a way that matters
        // more than refusing all further work would.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a request at call time, encoding it into the staging buffer, or (when the queue
    /// is full) encodes it on its own and hands back a ticket to wait with.
    pub fn submit_request<E: FnOnce(&mut BytesMut)>(
        self: &Arc<Self>,
        request: Request<E>,
    ) -> Admission {
        let mut inner = self.lock();
        if inner.closed.is_none()
            && inner.next_ticket == inner.next_admit
            && inner.outstanding < inner.limit
        {
            inner.next_ticket += 1;
            inner.next_admit += 1;
            inner.outstanding += 1;
            let start = inner.staging.len();
            inner.staging.reserve(request.len);
            (request.encode)(&mut inner.staging);
            let len = inner.staging.len() - start;
            debug_assert_eq!(len, request.len);
            let deferred = matches!(request.kind, PacketKind::Request);
            inner.items.push(Item::Staged(Staged {
                len,
                opcode: request.opcode,
                kind: request.kind,
                watch: request.watch,
                reply: request.reply,
                deadline: request.deadline,
                span: request.span,
            }));
            if !deferred {
                // An `auth` has no caller waiting on a reply future to flush it.
                self.tell(&mut inner);
                return Admission::Admitted;
            }
            return if self.told.load(Ordering::Relaxed) {
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
            opcode: request.opcode,
            kind: request.kind,
            watch: request.watch,
            reply: request.reply,
            deadline: request.deadline,
            span: request.span,
        })
    }

    /// Has everything queued reach the connection (a caller, when it first waits for a reply
    /// it was admitted for with [`Admission::Deferred`]): written under the lend when there is
    /// one, or else by the session task, woken for it. Nothing to do once the session task
    /// was told, or took the queue.
    pub fn flush(&self) {
        // Most flushes of a busy session find it told by another caller's: no lock for those.
        if self.told.load(Ordering::Acquire) {
            return;
        }
        let mut inner = self.lock();
        if self.told.load(Ordering::Relaxed) || inner.items.is_empty() {
            return;
        }
        if let Some(lend) = inner.lend.take() {
            if self.write_lent(&mut inner, lend) {
                return;
            }
        }
        self.tell(&mut inner);
    }

    /// Writes every queued request to the lent connection, numbered from the lend's xid, and
    /// leaves them to the session as written; whatever the socket did not take goes to the
    /// session with them. Returns false, writing nothing, when something queued cannot go
    /// under a lend, or the socket took nothing or failed (the session meets that failure on
    /// its own): the requests then stay queued.
    fn write_lent(&self, inner: &mut Inner, lend: Lend) -> bool {
        let lendable =
            |item: &Item| matches!(item, Item::Staged(s) if matches!(s.kind, PacketKind::Request));
        if !inner.items.iter().all(lendable) {
            return false;
        }
        let mut offset = 0;
        let mut xid = lend.xid;
        for item in &inner.items {
            if let Item::Staged(staged) = item {
                inner.staging[offset + 4..offset + 8].copy_from_slice(&xid.to_be_bytes());
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
        let mut rest = Bytes::copy_from_slice(&inner.staging[written..]);
        inner.staging.clear();
        let mut tell = !rest.is_empty();
        let mut xid = lend.xid;
        // In place: the session task swaps this vector with its own, so both keep their
        // capacity.
        for slot in inner.items.iter_mut() {
            let Item::Staged(request) = std::mem::replace(slot, Item::Close(None)) else {
                unreachable!("checked lendable above")
            };
            tell |= request
                .deadline
                .is_some_and(|d| lend.wakes_by.map_or(true, |w| d < w));
            *slot = Item::Written(Written {
                xid,
                opcode: request.opcode,
                watch: request.watch,
                reply: request.reply,
                deadline: request.deadline,
                sent,
                rest: std::mem::take(&mut rest),
                span: request.span,
            });
            xid = xid_after(xid);
        }
        if tell {
            self.tell(inner);
        }
        true
    }

    /// Wakes the session task for what was just queued, unless it was woken since it last
    /// took the queue. (Requests written under a lend may be queued without waking it.) Only
    /// under the lock, which `_locked` stands for.
    fn tell(&self, _locked: &mut Inner) {
        if !self.told.load(Ordering::Relaxed) {
            self.told.store(true, Ordering::Release);
            self.notify.notify_one();
        }
    }

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

    /// Queues an encoded request at call time, or hands back a ticket to wait with.
    pub fn submit(self: &Arc<Self>, packet: Packet) -> Admission {
        let mut inner = self.lock();
        if let Some(err) = &inner.closed {
            let err = err.clone();
            drop(inner);
            packet.fail(err);
            return Admission::Admitted;
        }
        let ticket = inner.next_ticket;
        inner.next_ticket += 1;
        if ticket == inner.next_admit && inner.outstanding < inner.limit {
            inner.next_admit += 1;
            self.admit(&mut inner, packet);
            return Admission::Admitted;
        }
        Admission::Wait(Box::new(Admit {
            queue: self.clone(),
            ticket,
            packet: Some(packet),
        }))
    }

    fn admit(&self, inner: &mut Inner, packet: Packet) {
        inner.outstanding += 1;
        inner.items.push(Item::Packet(packet));
        self.tell(inner);
    }

    /// Queues a close request; it is not subject to the limit.
    pub fn push_close(&self, done: Option<oneshot::Sender<()>>) {
        let mut inner = self.lock();
        if inner.closed.is_some() {
            if let Some(done) = done {
                let _ = done.send(());
            }
            return;
        }
        inner.items.push(Item::Close(done));
        self.tell(&mut inner);
    }

    /// Asks the session to replace its server list.
    pub fn push_server_list(&self, hosts: Vec<crate::connect_string::HostPort>) {
        let mut inner = self.lock();
        if inner.closed.is_some() {
            return;
        }
        inner.items.push(Item::ServerList(hosts));
        self.tell(&mut inner);
    }

    /// Takes back the lent connection and moves every queued item into `out` (session task),
    /// and returns the staged frames.
    pub fn take_all(&self, out: &mut Vec<Item>) -> Bytes {
        let mut inner = self.lock();
        inner.lend = None;
        self.told.store(false, Ordering::Relaxed);
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

    /// Returns capacity for `n` completed requests (session task).
    pub fn release(&self, n: usize) {
        if n == 0 {
            return;
        }
        let mut inner = self.lock();
        inner.outstanding = inner.outstanding.saturating_sub(n);
        inner.wake_next();
    }

    /// Ends the queue: queued and waiting requests fail with `err`, and so does every later one.
    pub fn close(&self, err: Error) {
        let mut inner = self.lock();
        inner.closed = Some(err.clone());
        inner.lend = None;
        let items = std::mem::take(&mut inner.items);
        inner.staging.clear();
        let waiters = std::mem::take(&mut inner.waiters);
        drop(inner);
        for item in items {
            match item {
                Item::Packet(p) => p.fail(err.clone()),
                Item::Staged(Staged { reply, .. }) => {
                    let _ = reply.send(Err(err.clone()));
                }
                // On the wire already: the server may run it.
                Item::Written(Written { reply, opcode, .. }) => {
                    let err = err.clone().unanswered(crate::packet::is_write(opcode));
                    let _ = reply.send(Err(err));
                }
                Item::Close(Some(done)) => {
                    let _ = done.send(());
                }
                Item::Close(None) | Item::ServerList(_) => {}
            }
        }
        for (_, w) in waiters {
            w.wake();
        }
    }

    #[cfg(test)]
    pub fn outstanding(&self) -> usize {
        self.lock().outstanding
    }
}

impl Inner {
    /// Skips abandoned tickets and wakes the one whose turn it is, if there is room.
    fn wake_next(&mut self) {
        while self.abandoned.remove(&self.next_admit) {
            self.next_admit += 1;
        }
        if self.outstanding < self.limit {
            if let Some(w) = self.waiters.remove(&self.next_admit) {
                w.wake();
            }
        }
    }
}

/// Waits for a ticket's turn, then queues its request.
pub(crate) struct Admit {
    queue: Arc<RequestQueue>,
    ticket: u64,
    packet: Option<Packet>,
}

impl Future for Admit {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        let Some(packet) = this.packet.take() else {
            return Poll::Ready(());
        };
        let mut inner = this.queue.lock();
        if let Some(err) = &inner.closed {
            let err = err.clone();
            drop(inner);
            packet.fail(err);
            return Poll::Ready(());
        }
        if this.ticket == inner.next_admit && inner.outstanding < inner.limit {
            inner.next_admit += 1;
            this.queue.admit(&mut inner, packet);
            inner.wake_next();
            return Poll::Ready(());
        }
        inner.waiters.insert(this.ticket, cx.waker().clone());
        drop(inner);
        this.packet = Some(packet);
        Poll::Pending
    }
}

impl Drop for Admit {
    fn drop(&mut self) {
        if self.packet.is_some() {
            let mut inner = self.queue.lock();
            inner.waiters.remove(&self.ticket);
            inner.abandoned.insert(self.ticket);
            inner.wake_next();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::packet::ReplyRx;
    use std::task::Wake;

    fn packet(tag: u8) -> (Packet, ReplyRx) {
        let (tx, rx) = oneshot::channel();
        let p = Packet {
            frame: Bytes::from(vec![tag]),
            opcode: OpCode::GetData,
            kind: PacketKind::Request,
            watch: None,
            reply: tx,
            deadline: None,
            span: Default::default(),
        };
        (p, rx)
    }

    struct NoopWake;
    impl Wake for NoopWake {
        fn wake(self: Arc<Self>) {}
    }

    fn poll(admit: &mut Admit) -> Poll<()> {
        let waker = Waker::from(Arc::new(NoopWake));
        Pin::new(admit).poll(&mut Context::from_waker(&waker))
    }

    fn tags(q: &RequestQueue) -> Vec<u8> {
        let mut items = Vec::new();
        q.take_all(&mut items);
        items
            .into_iter()
            .map(|i| match i {
                Item::Packet(p) => p.frame[0],
                Item::Staged(_) => 255,
                Item::Close(_) | Item::ServerList(_) | Item::Written(_) => 0,
            })
            .collect()
    }

    #[test]
    fn full_queue_keeps_call_order() {
        let q = RequestQueue::new(2);
        let mut rxs = Vec::new();
        for t in 1..=2 {
            let (p, rx) = packet(t);
            rxs.push(rx);
            assert!(matches!(q.submit(p), Admission::Admitted));
        }
        let (p3, _r3) = packet(3);
        let Admission::Wait(mut a3) = q.submit(p3) else {
            panic!("3 admitted over the limit")
        };
        assert_eq!(tags(&q), vec![1, 2]);
        // Capacity frees up before call 3's future is polled; call 4 must still queue behind 3.
        q.release(1);
        let (p4, _r4) = packet(4);
        let Admission::Wait(mut a4) = q.submit(p4) else {
            panic!("4 overtook 3")
        };
        assert!(poll(&mut a4).is_pending());
        assert!(poll(&mut a3).is_ready());
        assert!(poll(&mut a4).is_pending(), "limit reached again");
        q.release(1);
        assert!(poll(&mut a4).is_ready());
        assert_eq!(tags(&q), vec![3, 4]);
        assert_eq!(q.outstanding(), 2);
    }

    #[test]
    fn abandoned_ticket_does_not_block_the_next() {
        let q = RequestQueue::new(1);
        let (p1, _r1) = packet(1);
        assert!(matches!(q.submit(p1), Admission::Admitted));
        let (p2, _r2) = packet(2);
        let Admission::Wait(a2) = q.submit(p2) else {
            panic!()
        };
        let (p3, _r3) = packet(3);
        let Admission::Wait(mut a3) = q.submit(p3) else {
            panic!()
        };
        drop(a2);
        q.release(1);
        assert!(poll(&mut a3).is_ready());
        assert_eq!(tags(&q), vec![1, 3]);
    }

    #[test]
    fn close_fails_queued_waiting_and_later_requests() {
        let q = RequestQueue::new(1);
        let (p1, mut r1) = packet(1);
        assert!(matches!(q.submit(p1), Admission::Admitted));
        let (p2, mut r2) = packet(2);
        let Admission::Wait(mut a2) = q.submit(p2) else {
            panic!()
        };
        q.close(ErrorKind::SessionExpired.into());
        assert_eq!(
            r1.try_recv().unwrap().unwrap_err(),
            ErrorKind::SessionExpired
        );
        assert!(poll(&mut a2).is_ready());
        assert_eq!(
            r2.try_recv().unwrap().unwrap_err(),
            ErrorKind::SessionExpired
        );
        let (p3, mut r3) = packet(3);
        assert!(matches!(q.submit(p3), Admission::Admitted));
        assert_eq!(
            r3.try_recv().unwrap().unwrap_err(),
            ErrorKind::SessionExpired
        );
    }

    #[test]
    fn staged_requests_share_one_buffer_and_keep_order_with_waiting_ones() {
        let q = RequestQueue::new(2);
        let staged = |tag: u8| {
            let (tx, rx) = oneshot::channel();
            let request = Request {
                len: 3,
                encode: move |buf: &mut BytesMut| buf.extend_from_slice(&[tag; 3]),
                opcode: OpCode::GetData,
                kind: PacketKind::Request,
                watch: None,
                reply: tx,
                deadline: None,
                span: Default::default(),
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

    /// A loopback connection: the client's write half, as the driver lends it, and the
    /// server's end. Both buffers are small, so that what a peer that reads nothing lets the
    /// socket take does not depend on the machine's TCP settings.
    async fn wire() -> (Wire, tokio::net::TcpStream) {
        let small = 64 * 1024;
        let listening = tokio::net::TcpSocket::new_v4().unwrap();
        listening.set_recv_buffer_size(small).unwrap();
        listening.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let listener = listening.listen(1).unwrap();
        let connecting = tokio::net::TcpSocket::new_v4().unwrap();
        connecting.set_send_buffer_size(small).unwrap();
        let client = connecting
            .connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let (_, write) = client.into_split();
        (Arc::new(write), server)
    }

    /// A request whose frame is `len` bytes: the length prefix, a zero xid, then `tag`s.
    fn framed(
        len: usize,
        tag: u8,
        deadline: Option<Instant>,
    ) -> (Request<impl FnOnce(&mut BytesMut)>, ReplyRx) {
        let (tx, rx) = oneshot::channel();
        let encode = move |buf: &mut BytesMut| {
            buf.extend_from_slice(&(len as i32 - 4).to_be_bytes());
            buf.extend_from_slice(&[0; 4]);
            buf.resize(buf.len() + len - 8, tag);
        };
        let request = Request {
            len,
            encode,
            opcode: OpCode::GetData,
            kind: PacketKind::Request,
            watch: None,
            reply: tx,
            deadline,
            span: Default::default(),
        };
        (request, rx)
    }

    fn lend_of(wire: &Wire, xid: i32, wakes_by: Option<Instant>) -> Lend {
        Lend {
            wire: wire.clone(),
            xid,
            wakes_by,
        }
    }

    /// Whether the session task would wake now (taking the wake-up).
    fn woken(q: &RequestQueue) -> bool {
        let notified = std::pin::pin!(q.notify.notified());
        let waker = Waker::from(Arc::new(NoopWake));
        notified.poll(&mut Context::from_waker(&waker)).is_ready()
    }

    /// An ordinary request leaves waking the session to its caller's first wait; one queued
    /// while the session was told already, and an `auth` (which nobody flushes), do not.
    #[test]
    fn a_request_wakes_the_session_when_its_caller_flushes() {
        let q = RequestQueue::new(8);
        let (a, _ra) = framed(16, 1, None);
        assert!(matches!(q.submit_request(a), Admission::Deferred));
        let (b, _rb) = framed(16, 2, None);
        assert!(matches!(q.submit_request(b), Admission::Deferred));
        assert!(!woken(&q), "told before its caller waits");
        q.flush();
        assert!(woken(&q));
        let (c, _rc) = framed(16, 3, None);
        assert!(matches!(q.submit_request(c), Admission::Admitted));
        q.flush();
        assert!(!woken(&q), "told twice for one turn");

        let mut items = Vec::new();
        let staged = q.take_all(&mut items);
        assert_eq!(staged.len(), 48);
        assert_eq!(items.len(), 3);
        q.flush();
        assert!(!woken(&q), "nothing left to flush");

        let (tx, _rx) = oneshot::channel();
        let auth = Request {
            len: 16,
            encode: |buf: &mut BytesMut| buf.extend_from_slice(&[0; 16]),
            opcode: OpCode::Auth,
            kind: PacketKind::Auth {
                scheme: "digest".into(),
                auth: crate::secret::Secret::copy_from(b"user:pass"),
            },
            watch: None,
            reply: tx,
            deadline: None,
            span: Default::default(),
        };
        assert!(matches!(q.submit_request(auth), Admission::Admitted));
        assert!(woken(&q));
    }

    /// Requests queued under a lend write themselves at the first flush, in one write, with
    /// the lend's xid and the ones after it, and wake nobody; once the lend is used, the next
    /// request wakes the session, which finds them all in call order.
    #[tokio::test]
    async fn a_flush_under_a_lend_writes_every_queued_request_with_the_xids_that_follow() {
        use tokio::io::AsyncReadExt;
        let (wire, mut server) = wire().await;
        let q = RequestQueue::new(8);
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
}
