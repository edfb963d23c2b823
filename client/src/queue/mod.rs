//! The bounded hand-off from `Client` handles to the session task, in four mechanisms:
//!
//! - [`admission`]: tickets, so that requests leave in call order even when the queue is
//!   full, and a flood of calls waits rather than piles up;
//! - [`staging`]: the shared buffer requests admitted at call time are encoded into;
//! - [`bell`]: how a caller wakes the session task for what it queued;
//! - [`lend`]: the idle connection lent by the session task, through which a caller writes
//!   what is queued to the socket itself.
//!
//! An ordinary request admitted at call time does not wake the session task by itself: its
//! caller does, with [`RequestQueue::flush`], when it first waits for the reply. A caller that
//! makes several requests before it waits (a lock's release and the next acquisition, a create
//! and the listing that follows it) then has them written together, as it would on a
//! current-thread runtime, instead of racing a session task woken on another worker by the
//! first of them. ZooKeeper logs and commits writes that arrive together as one batch. Under a
//! lend, the flush writes them itself instead of waking the session task.

mod admission;
mod bell;
mod lend;
mod staging;

use std::sync::Mutex;

use bytes::BytesMut;
use tokio::sync::oneshot;

use crate::error::Error;
use crate::home::SessionHome;
use crate::packet::{Packet, Written};

pub(crate) use admission::{Admission, Admit};
pub(crate) use lend::Lend;
pub(crate) use staging::{Request, Staged};

use admission::Tickets;
use bell::{Bell, Locked};

/// The capacity a buffer of requests starts with.
pub(crate) const INITIAL_BUFFER: usize = 64 * 1024;

/// A buffer of requests that held more than this at once is given back once empty: a burst
/// of large writes would otherwise keep its size allocated for the life of the session.
const RETAINED_BUFFER: usize = 1 << 20;

/// Replaces the empty `buf`, which held `held` bytes at most since it was made, by a fresh
/// one when that was more than [`RETAINED_BUFFER`]; says whether it did.
pub(crate) fn give_back(buf: &mut BytesMut, held: usize) -> bool {
    debug_assert!(buf.is_empty());
    let burst = held > RETAINED_BUFFER;
    if burst {
        *buf = BytesMut::with_capacity(INITIAL_BUFFER);
    }
    burst
}

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

struct Inner {
    items: Vec<Item>,
    /// Frames of the `Staged` items, back to back (see `staging`).
    staging: BytesMut,
    tickets: Tickets,
    /// Set once the session has ended: every later request fails with this.
    closed: Option<Error>,
    /// The connection, while the session task lends it.
    lend: Option<Lend>,
    /// A telling was made under the lock: the session task is woken once it is released.
    ring_on_release: bool,
}

impl std::fmt::Debug for Inner {
    // The staged frames may hold an `auth` credential: only their length shows.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner")
            .field("items", &self.items)
            .field("staged_bytes", &self.staging.len())
            .field("tickets", &self.tickets)
            .field("closed", &self.closed)
            .field("lent", &self.lend.is_some())
            .finish_non_exhaustive()
    }
}

/// Shared between the handles and the session task.
#[derive(Debug)]
pub(crate) struct RequestQueue {
    inner: Mutex<Inner>,
    /// Where the session task runs: whether a caller may leave its deadline to it.
    pub home: SessionHome,
    /// Whether the session task was told (see `bell`).
    bell: Bell,
}

impl RequestQueue {
    pub fn new(limit: usize) -> std::sync::Arc<RequestQueue> {
        std::sync::Arc::new(RequestQueue {
            inner: Mutex::new(Inner {
                items: Vec::new(),
                staging: BytesMut::with_capacity(INITIAL_BUFFER),
                tickets: Tickets::new(limit),
                closed: None,
                lend: None,
                ring_on_release: false,
            }),
            home: SessionHome::current(),
            bell: Bell::default(),
        })
    }

    fn lock(&self) -> Locked<'_> {
        // A panic while holding this lock cannot leave it inconsistent in a way that matters
        // more than refusing all further work would.
        Locked::new(
            self.inner.lock().unwrap_or_else(|e| e.into_inner()),
            &self.bell,
        )
    }

    /// Has everything queued reach the connection (a caller, when it first waits for a reply
    /// it was admitted for with [`Admission::Deferred`]): written under the lend when there is
    /// one, or else by the session task, woken for it. Nothing to do once the session task
    /// was told, or took the queue.
    pub fn flush(&self) {
        // Most flushes of a busy session find it told by another caller's: no lock for those.
        if self.bell.told() {
            return;
        }
        let mut inner = self.lock();
        if self.bell.told() || inner.items.is_empty() {
            return;
        }
        if let Some(lend) = inner.lend.take() {
            if lend.idle || !self.home.runs_the_session_here() {
                if self.write_lent(&mut inner, lend) {
                    return;
                }
            } else {
                // Left for a caller elsewhere, until the session task takes it back.
                inner.lend = Some(lend);
            }
        }
        self.tell(&mut inner);
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

    /// Ends the queue: queued and waiting requests fail with `err`, and so does every later one.
    pub fn close(&self, err: Error) {
        let mut inner = self.lock();
        inner.closed = Some(err.clone());
        inner.lend = None;
        let items = std::mem::take(&mut inner.items);
        inner.staging.clear();
        let waiters = inner.tickets.take_waiters();
        drop(inner);
        for item in items {
            match item {
                Item::Packet(p) => p.fail(err.clone()),
                Item::Staged(s) => s.envelope.fail(err.clone()),
                // On the wire already: the server may run it.
                Item::Written(w) => {
                    let write = crate::packet::is_write(w.envelope.opcode);
                    w.envelope.fail(err.clone().unanswered(write));
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
        self.lock().tickets.outstanding()
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::packet::{Envelope, PacketKind, ReplyRx};
    use crate::transport::Wire;
    use bytes::Bytes;
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};
    use std::time::Instant;
    use zookeeper_jute::OpCode;

    pub(super) fn packet(tag: u8) -> (Packet, ReplyRx) {
        let (tx, rx) = oneshot::channel();
        let p = Packet {
            frame: Bytes::from(vec![tag]),
            kind: PacketKind::Request,
            envelope: Envelope::new(OpCode::GetData, tx),
        };
        (p, rx)
    }

    struct NoopWake;
    impl Wake for NoopWake {
        fn wake(self: Arc<Self>) {}
    }

    pub(super) fn poll(admit: &mut Admit) -> Poll<()> {
        let waker = Waker::from(Arc::new(NoopWake));
        Pin::new(admit).poll(&mut Context::from_waker(&waker))
    }

    pub(super) fn tags(q: &RequestQueue) -> Vec<u8> {
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

    /// A loopback connection: the client's write half, as the driver lends it, and the
    /// server's end. Both buffers are small, so that what a peer that reads nothing lets the
    /// socket take does not depend on the machine's TCP settings.
    pub(super) async fn wire() -> (Wire, tokio::net::TcpStream) {
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
    pub(super) fn framed(
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
            kind: PacketKind::Request,
            envelope: Envelope {
                deadline,
                ..Envelope::new(OpCode::GetData, tx)
            },
        };
        (request, rx)
    }

    pub(super) fn lend_of(wire: &Wire, xid: i32, wakes_by: Option<Instant>) -> Lend {
        Lend {
            wire: wire.clone(),
            xid,
            wakes_by,
            idle: true,
        }
    }

    /// Whether the session task, waiting now, would find itself told.
    pub(super) fn woken(q: &RequestQueue) -> bool {
        let waker = Waker::from(Arc::new(NoopWake));
        q.poll_told(&mut Context::from_waker(&waker)).is_ready()
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
        // Told already: the next request of the turn owes no flush.
        let (c, _rc) = framed(16, 3, None);
        assert!(matches!(q.submit_request(c), Admission::Admitted));

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
            kind: PacketKind::Auth {
                scheme: "digest".into(),
                auth: crate::secret::Secret::copy_from(b"user:pass"),
            },
            envelope: Envelope::new(OpCode::Auth, tx),
        };
        assert!(matches!(q.submit_request(auth), Admission::Admitted));
        assert!(woken(&q));
    }
}
