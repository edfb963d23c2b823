//! The public handle: a cheap clone that queues requests for the session task.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use tokio::sync::{oneshot, watch};
use zookeeper_jute::{encode_request_frame, OpCode, Request};

#[cfg(doc)]
use crate::builder::ClientBuilder;
use crate::error::{Error, ErrorKind, Result};
use crate::home;
use crate::limits;
use crate::metrics::ClientMetrics;
use crate::packet::{Envelope, Packet, PacketKind, RawReply, ReplyRx, WatchRegistration};
use crate::path::{validate_path, Chroot};
use crate::queue::{Admission, Admit, Request as QueuedRequest, RequestQueue};
use crate::span::{request_path, RequestSpan};
use crate::state::SessionInfo;
use crate::state::{SessionId, SessionState, StateChanges, StatePublisher};

/// A ZooKeeper client: one session, shared by every clone.
///
/// Cloning is cheap. The session task is spawned by [`Client::connect`] and closes the session
/// when the last clone is dropped (watchers do not keep it alive), or when [`Client::close`] is
/// called.
///
/// Every operation validates its arguments and queues its request **when it is called**, not
/// when the returned future is first polled: requests reach the server in call order, so
/// `let a = c.create(..); let b = c.get_children(..);` puts the create on the wire first.
/// What is queued goes out when a caller first waits for a reply (polls one of the futures
/// whose reply is not in yet), in one write: a caller's requests made back to back reach the
/// server together.
/// Dropping a returned future does not cancel a request that was already sent; one dropped
/// before its request went out (never awaited, say) withdraws it: it is never sent. Requests are
/// pipelined; at most [`ClientBuilder::max_outstanding`] are queued or in flight at once, and
/// calls beyond that wait (still in call order) for room.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> zookeeper_tokio::Result<()> {
/// use zookeeper_tokio::{Client, CreateOptions, ErrorKind};
///
/// let servers = "127.0.0.1:2181";
/// # let servers = &zookeeper_testkit::shared_server()
/// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_client"));
/// let client = Client::connect(servers).await?;
///
/// // Both requests go out in one write, in call order, when the first is awaited.
/// let other = client.clone();
/// let create = client.create("/jobs", b"", &CreateOptions::persistent());
/// let list = other.get_children("/jobs");
/// let ((path, _stat), (children, _)) = (create.await?, list.await?);
/// assert_eq!(path, "/jobs");
/// assert!(children.is_empty());
///
/// // Versions make a read-modify-write safe against concurrent writers.
/// let (data, stat) = client.get_data("/jobs").await?;
/// assert!(data.is_empty());
/// client.set_data("/jobs", b"paused", Some(stat.version)).await?;
/// let stale = client.set_data("/jobs", b"running", Some(stat.version)).await;
/// assert_eq!(stale.unwrap_err(), ErrorKind::BadVersion);
///
/// println!("{client:?}"); // Client { session_id: 0x..., state: Connected }
/// client.close().await;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
    request_timeout: Option<Duration>,
}

pub(crate) struct Inner {
    pub queue: Arc<RequestQueue>,
    pub info: Arc<SessionInfo>,
    pub state_rx: watch::Receiver<SessionState>,
    pub publisher: StatePublisher,
    pub chroot: Chroot,
    pub max_frame: usize,
    /// Largest reply read: a multi whose reply could exceed it is not sent.
    pub max_incoming_frame: usize,
    /// Events a persistent watch's stream queues before it folds them (see `event_queue`).
    pub max_queued_events: usize,
    /// Handles on the request metrics (nothing without the `metrics` feature).
    pub metrics: ClientMetrics,
    /// Draws for the recipes (see `random`).
    pub random: crate::random::Random,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.queue.push_close(None);
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("session_id", &format_args!("{}", self.session_id()))
            .field("state", &self.state())
            .finish()
    }
}

/// A queued request: waits for admission if the queue was full, then for the reply, within
/// the handle's deadline. A small hand-written future, because every operation's future embeds
/// it and futures are moved on every call.
pub(crate) struct Call {
    /// Present only when the queue was full at call time.
    admit: Option<Box<Admit>>,
    /// The queue, until the first poll that waits, when the session task was not told of
    /// this request (see [`Admission::Deferred`]).
    flush: Option<Arc<RequestQueue>>,
    rx: ReplyRx,
    timeout: Option<Duration>,
    /// The thread (see `home`) on which the session keeps this call's deadline, 0 for none:
    /// polled there, the call needs no timer of its own.
    deadline_kept_on: u64,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    /// The client's metric handles, for the operation's future to take.
    metrics: ClientMetrics,
    /// The request changes the tree: failed by this call itself once it may have been sent,
    /// it may have been applied.
    write: bool,
    /// The request's span (with the feature `tracing-spans`), closed by the operation's future
    /// when the reply is in.
    span: RequestSpan,
}

impl Call {
    /// The client's metric handles (taken once, by the operation's future).
    pub(crate) fn take_metrics(&mut self) -> ClientMetrics {
        std::mem::take(&mut self.metrics)
    }

    /// Records how the operation ended on its span, and closes it.
    pub(crate) fn finish_span<T>(&mut self, outcome: &Result<T>) {
        self.span.finish(outcome);
    }
}

impl Future for Call {
    type Output = Result<RawReply>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<RawReply>> {
        let this = &mut *self;
        if let Some(admit) = this.admit.as_mut() {
            if Pin::new(&mut **admit).poll(cx).is_pending() {
                return this.poll_deadline(cx);
            }
            this.admit = None;
        }
        // The reply first: a call woken by its reply then returns without touching its timer
        // (re-registering the timer's waker on every wake-up is a measurable share of a
        // request's cost on a multi-thread runtime), and one whose reply was already there
        // when first polled never registers a timer at all. The session task never drops a
        // request without answering it; a closed channel means the task itself is gone.
        if let Poll::Ready(r) = Pin::new(&mut this.rx).poll(cx) {
            // Answered: nothing of it is left in the queue to flush or withdraw.
            this.flush = None;
            let gone = || Error::from(ErrorKind::Closed).unanswered(this.write);
            return Poll::Ready(r.unwrap_or_else(|_| Err(gone())));
        }
        // Only a call that waits flushes: one answered already was taken by the session
        // task (or failed), and every request made after it flushes when it waits, or was
        // queued for a session task already told. A caller working through replies that are
        // in (a loop keeping a window in flight) then writes what it asked meanwhile in one
        // go, when it first has to wait, not a write or a wake-up per reply.
        if let Some(queue) = this.flush.take() {
            queue.flush();
        }
        this.poll_deadline(cx)
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        // Dropped before it ever waited: its request may still be queued, not sent. Withdrawn
        // now, it is never sent and its room is free at once (see `withdraw_dropped`); the
        // closed channel is how the queue, and the session for what it took, tell a dropped
        // call.
        if let Some(queue) = self.flush.take() {
            self.rx.close();
            queue.withdraw_dropped();
        }
    }
}

impl Call {
    /// Pending until the call's deadline, armed on the first call unless the session keeps
    /// it; then the timeout error.
    fn poll_deadline(&mut self, cx: &mut Context<'_>) -> Poll<Result<RawReply>> {
        if let Some(timeout) = self.timeout.take() {
            // A future moved to another thread before its first poll may have left the
            // session's runtime: it keeps its own deadline.
            // (No thread has the token 0.)
            if self.deadline_kept_on != home::thread_token() {
                self.sleep = Some(Box::pin(tokio::time::sleep(timeout)));
            }
        }
        match self.sleep.as_mut().map(|sleep| sleep.as_mut().poll(cx)) {
            // Dropping the receiver (with the call) tells the session not to send it if it
            // has not gone out yet; but it may have. Still waiting for room, it was not queued.
            Some(Poll::Ready(())) => {
                let sent = self.admit.is_none() && self.write;
                Poll::Ready(Err(Error::from(ErrorKind::Timeout).unanswered(sent)))
            }
            _ => Poll::Pending,
        }
    }
}

impl Client {
    pub(crate) fn from_inner(inner: Inner, request_timeout: Option<Duration>) -> Client {
        Client {
            inner: Arc::new(inner),
            request_timeout,
        }
    }

    /// The session id (0 before the first handshake).
    pub fn session_id(&self) -> SessionId {
        SessionId(self.inner.info.session_id.load(Ordering::Acquire))
    }

    /// The session password (16 bytes once a server accepted the session). With
    /// [`Client::session_id`] it lets another client resume this session through
    /// [`ClientBuilder::session`]; keep it secret.
    pub fn session_password(&self) -> bytes::Bytes {
        self.inner
            .info
            .password
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .expose()
            .clone()
    }

    /// The session timeout the server granted.
    pub fn session_timeout(&self) -> Duration {
        Duration::from_millis(self.inner.info.timeout_ms.load(Ordering::Acquire))
    }

    /// The instant before which no server can have expired this session: the time the most
    /// recent request (or ping, or reconnecting handshake) that a read-write server answered
    /// was *sent*, plus the session timeout (the smallest one granted, should a reconnect
    /// have negotiated another).
    ///
    /// A server expires a session one timeout after it last heard from it, and it heard the
    /// request after it was sent; so until this instant the session, and every ephemeral node
    /// it owns, still exists, whatever the network or this process did since. After it, the
    /// session may be gone and another client may have taken over what its ephemerals
    /// guarded. Reading it costs one atomic load: no round trip, no wait for the session task,
    /// so a process resuming from a long pause sees at once that its lease ran out. Compare
    /// it with [`Instant::now`](std::time::Instant::now).
    ///
    /// `None` while no read-write server has vouched for the session (before the first
    /// handshake, or only read-only servers so far) and once it ended (expired, closed).
    ///
    /// Limits: the deadline is on the monotonic clock, which on Linux stands still while the
    /// whole machine is suspended (a process pause, `SIGSTOP` or a stalled VM with a running
    /// clock, is covered; a machine asleep is not). In an ensemble, a follower passes the
    /// requests it answered on to the leader, which decides expiry; a follower cut off from
    /// the leader keeps answering until it notices (up to `syncLimit` × `tickTime`), and
    /// during such a partition the leader may expire the session up to that much earlier.
    pub fn lease_deadline(&self) -> Option<std::time::Instant> {
        self.inner.info.lease()
    }

    /// A draw from this client's random source. It is seeded from the operating system's
    /// randomness, or by [`ClientBuilder::rng_seed`](crate::ClientBuilder::rng_seed), which
    /// makes every draw of a client built with the same seed the same: the recipes take the
    /// GUIDs of their node names and the jitter of their retries from here, so that under a
    /// simulated network and clock a whole run replays from one seed. Not for secrets.
    pub fn random_u64(&self) -> u64 {
        self.inner().random.next_u64()
    }

    /// The session state, as the session's task last saw it. A task that has not run since
    /// (a paused process, a runtime blocked by a task that never yields) has not seen what
    /// happened meanwhile, and this still reads `Connected`: whether the session may be gone
    /// by now is [`lease_deadline`](Self::lease_deadline)'s to tell, from the clock alone.
    pub fn state(&self) -> SessionState {
        *self.inner.state_rx.borrow()
    }

    /// A receiver that sees every change of the session state.
    pub fn state_watcher(&self) -> watch::Receiver<SessionState> {
        self.inner.state_rx.clone()
    }

    /// Every state transition from now on, in order (the `watch` receiver of
    /// [`Client::state_watcher`] only keeps the latest).
    pub fn state_changes(&self) -> StateChanges {
        self.inner.publisher.changes()
    }

    /// The chroot this client works under, if any.
    pub fn chroot(&self) -> Option<&str> {
        self.inner.chroot.as_str()
    }

    /// A handle to the same session whose requests fail with [`ErrorKind::Timeout`] when no reply
    /// arrived within `timeout` (`None`: wait as long as the session lives; the builder's
    /// [`ClientBuilder::request_timeout`] sets the default). The time counts from the call,
    /// except for a call made on another runtime than the session's (the runtime that ran
    /// [`Client::connect`]; for a current-thread one, also a call made outside any runtime),
    /// or a future first polled on another thread than the call's: those count from the first
    /// poll. A request that was not yet sent when its deadline passed is never sent.
    ///
    /// Fails with [`ErrorKind::InvalidArgument`] for a timeout the builder refuses too: under
    /// 1 ms or over [`MAX_TIMEOUT`](crate::MAX_TIMEOUT).
    pub fn with_request_timeout(&self, timeout: Option<Duration>) -> Result<Client> {
        let request_timeout = timeout
            .map(|t| crate::limits::timeout("request timeout", t))
            .transpose()?;
        Ok(Client {
            inner: self.inner.clone(),
            request_timeout,
        })
    }

    /// Closes the session: requests made before are answered first, then the server deletes
    /// the session's ephemerals. Later requests fail with [`ErrorKind::Closed`]. If no server is
    /// connected at that moment, the client stops at once and the server expires the session
    /// after its timeout.
    pub fn close(&self) -> impl Future<Output = ()> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        self.inner.queue.push_close(Some(tx));
        async move {
            let _ = rx.await;
        }
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    /// A reference to the session that does not keep it alive.
    pub(crate) fn downgrade(&self) -> std::sync::Weak<Inner> {
        Arc::downgrade(&self.inner)
    }

    /// A handle again, if some handle still keeps the session alive.
    pub(crate) fn upgrade(
        weak: &std::sync::Weak<Inner>,
        request_timeout: Option<Duration>,
    ) -> Option<Client> {
        weak.upgrade().map(|inner| Client {
            inner,
            request_timeout,
        })
    }

    pub(crate) fn request_timeout(&self) -> Option<Duration> {
        self.request_timeout
    }

    pub(crate) fn max_queued_events(&self) -> usize {
        self.inner.max_queued_events
    }

    pub(crate) fn max_incoming_frame(&self) -> usize {
        self.inner.max_incoming_frame
    }

    pub(crate) fn chroot_ref(&self) -> &Chroot {
        &self.inner.chroot
    }

    /// Validates a client path and turns it into the server path.
    pub(crate) fn server_path(&self, path: &str) -> Result<String> {
        self.inner.chroot.to_server(path)
    }

    /// Encodes and queues a request now; the returned call waits for the reply.
    pub(crate) fn call(&self, request: Request, watch: Option<WatchRegistration>) -> Result<Call> {
        self.call_kind(request, watch, PacketKind::Request, 0)
    }

    pub(crate) fn call_kind(
        &self,
        request: Request,
        watch: Option<WatchRegistration>,
        kind: PacketKind,
        xid: i32,
    ) -> Result<Call> {
        let len = Packet::frame_len(&request, self.inner.max_frame)?;
        if let Some(path) = watch.as_ref().and_then(WatchRegistration::restored_path) {
            limits::watch_fits(
                path.len(),
                self.inner.max_frame,
                self.inner.max_incoming_frame,
            )?;
        }
        let opcode = request.opcode();
        let span = RequestSpan::start(opcode, || {
            request_path(&request).map(|p| self.inner.chroot.strip(p))
        });
        Ok(self.submit(
            len,
            move |buf: &mut BytesMut| encode_request_frame(buf, xid, &request),
            opcode,
            kind,
            watch,
            span,
        ))
    }

    /// A request whose record is a path and a watch flag (getData, exists, getChildren2),
    /// encoded straight from the client path: the hottest reads skip building the record.
    /// `watch` makes the registration from the server path.
    pub(crate) fn path_watch_call(
        &self,
        opcode: OpCode,
        path: &str,
        watch: Option<impl FnOnce(String) -> WatchRegistration>,
    ) -> Result<Call> {
        validate_path(path)?;
        let root = self.inner.chroot.as_str().unwrap_or("");
        let tail = if !root.is_empty() && path == "/" {
            ""
        } else {
            path
        };
        let server_len = root.len() + tail.len();
        let payload = 8 + 4 + server_len + 1;
        if payload > self.inner.max_frame {
            return Err(ErrorKind::DataTooLarge {
                size: payload,
                max: self.inner.max_frame,
            }
            .into());
        }
        if watch.is_some() {
            limits::watch_fits(
                server_len,
                self.inner.max_frame,
                self.inner.max_incoming_frame,
            )?;
        }
        let flag = u8::from(watch.is_some());
        let registration = watch.map(|make| make(self.inner.chroot.prefix(path)));
        let encode = move |frame: &mut BytesMut| {
            frame.put_i32(payload as i32);
            frame.put_i32(0);
            frame.put_i32(opcode.as_i32());
            frame.put_i32(server_len as i32);
            frame.put_slice(root.as_bytes());
            frame.put_slice(tail.as_bytes());
            frame.put_u8(flag);
        };
        let span = RequestSpan::start(opcode, || Some(path.to_owned()));
        Ok(self.submit(
            4 + payload,
            encode,
            opcode,
            PacketKind::Request,
            registration,
            span,
        ))
    }

    fn submit(
        &self,
        len: usize,
        encode: impl FnOnce(&mut BytesMut),
        opcode: OpCode,
        kind: PacketKind,
        watch: Option<WatchRegistration>,
        span: RequestSpan,
    ) -> Call {
        let (tx, rx) = oneshot::channel();
        let queue = &self.inner.queue;
        // The session keeps the deadline of an ordinary request wherever its runtime bounds
        // it (see `home`). Not of an `addWatch`, whose reply waits for the watched subtree to be read
        // after the server answered, nor of an `auth`, answered out of order.
        let caller = queue.home.caller();
        let deadline = match (self.request_timeout, &kind, &watch) {
            (_, PacketKind::Auth { .. }, _)
            | (_, _, Some(WatchRegistration::Persistent { .. }))
            | (None, _, _) => None,
            (Some(timeout), PacketKind::Request, _) if caller.keeps_deadline => {
                tokio::time::Instant::now().into_std().checked_add(timeout)
            }
            (Some(_), PacketKind::Request, _) => None,
        };
        let request = QueuedRequest {
            len,
            encode,
            kind,
            envelope: Envelope {
                opcode,
                watch,
                reply: tx,
                deadline,
                span: span.for_session(),
                caller_here: caller.session_here,
            },
        };
        let (admit, flush) = match queue.submit_request(request) {
            Admission::Admitted => (None, None),
            Admission::Deferred => (None, Some(queue.clone())),
            Admission::Wait(admit) => (Some(admit), None),
        };
        // Waiting for room is bounded by the call's own timer.
        let deadline_kept_on = match (&admit, deadline) {
            (None, Some(_)) => home::thread_token(),
            _ => 0,
        };
        Call {
            admit,
            flush,
            rx,
            timeout: self.request_timeout,
            deadline_kept_on,
            sleep: None,
            metrics: self.inner.metrics.clone(),
            write: crate::packet::is_write(opcode),
            span,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MAX_TIMEOUT;
    use zookeeper_jute::GetDataRequest;

    fn offline_client(chroot: Option<&str>) -> (Client, Arc<RequestQueue>) {
        let (publisher, state_rx) = StatePublisher::new();
        let queue = RequestQueue::new(10);
        let client = Client::from_inner(
            Inner {
                queue: queue.clone(),
                info: publisher.info.clone(),
                state_rx,
                publisher,
                chroot: Chroot::new(chroot),
                max_frame: 1 << 20,
                max_incoming_frame: 1 << 20,
                max_queued_events: 16,
                metrics: crate::metrics::ClientMetrics::default(),
                random: crate::random::Random::new(0),
            },
            None,
        );
        (client, queue)
    }

    #[test]
    fn a_handles_request_timeout_takes_the_builders_range() {
        let (client, _queue) = offline_client(None);
        for refused in [Duration::ZERO, Duration::from_micros(999), MAX_TIMEOUT * 2] {
            let e = client.with_request_timeout(Some(refused)).unwrap_err();
            assert!(matches!(e.kind(), ErrorKind::InvalidArgument(_)), "{e}");
        }
        for taken in [None, Some(Duration::from_millis(1)), Some(MAX_TIMEOUT)] {
            assert_eq!(
                client.with_request_timeout(taken).unwrap().request_timeout,
                taken
            );
        }
    }

    fn queued_frame(queue: &RequestQueue) -> bytes::Bytes {
        let mut items = Vec::new();
        let staged = queue.take_all(&mut items);
        match items.pop() {
            Some(crate::queue::Item::Staged(s)) => staged.slice(staged.len() - s.len..),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn direct_path_encoding_matches_the_record_encoding() {
        for (chroot, path, server) in [
            (None, "/a/b", "/a/b"),
            (Some("/app"), "/a", "/app/a"),
            (Some("/app"), "/", "/app"),
            (None, "/", "/"),
        ] {
            for watch in [false, true] {
                let (c, queue) = offline_client(chroot);
                let reg = watch.then_some(|p: String| {
                    WatchRegistration::Data(p, tokio::sync::oneshot::channel().0)
                });
                let _call = c.path_watch_call(OpCode::GetData, path, reg).unwrap();
                let mut expected = BytesMut::new();
                encode_request_frame(
                    &mut expected,
                    0,
                    &Request::GetData(GetDataRequest {
                        path: server.into(),
                        watch,
                    }),
                );
                assert_eq!(
                    &queued_frame(&queue)[..],
                    &expected[..],
                    "{chroot:?} {path}"
                );
            }
        }
    }

    #[test]
    fn debug_shows_the_session_id_in_hex_as_logs_do() {
        let (c, _queue) = offline_client(None);
        c.inner.info.record(
            0x1000008321d000b,
            Duration::from_secs(10),
            &crate::secret::Secret::copy_from(b"0123456789abcdef"),
        );
        let debug = format!("{c:?}");
        assert_eq!(
            debug,
            "Client { session_id: 0x1000008321d000b, state: Connecting }"
        );
        assert!(!debug.contains("0123456789abcdef"), "{debug}");
    }

    #[tokio::test]
    async fn operation_futures_stay_small() {
        // Futures are moved on every call; a large one shows up as memcpy in profiles.
        let (c, _queue) = offline_client(None);
        let get = c.get_data("/");
        assert!(
            std::mem::size_of_val(&get) <= 256,
            "{}",
            std::mem::size_of_val(&get)
        );
        let create = c.create("/x", b"", &crate::CreateOptions::persistent());
        assert!(
            std::mem::size_of_val(&create) <= 256,
            "{}",
            std::mem::size_of_val(&create)
        );
    }
}
