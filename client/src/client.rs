//! The public handle: a cheap clone that queues requests for the session task.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, watch};
use zk_protocol::Request;

use crate::builder::ClientBuilder;
use crate::error::{Error, Result};
use crate::packet::{Packet, PacketKind, RawReply, ReplyRx, WatchRegistration};
use crate::path::Chroot;
use crate::queue::{Admission, Admit, RequestQueue};
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
/// Dropping a returned future does not cancel a request that was already sent. Requests are
/// pipelined; at most [`ClientBuilder::max_outstanding`] are queued or in flight at once, and
/// calls beyond that wait (still in call order) for room.
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
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.queue.push_close(None);
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("session_id", &self.session_id())
            .field("state", &self.state())
            .finish()
    }
}

/// A queued request: waits for admission if the queue was full, then for the reply.
pub(crate) struct Call {
    admit: Option<Admit>,
    rx: ReplyRx,
    timeout: Option<Duration>,
}

impl Call {
    pub async fn reply(self) -> Result<RawReply> {
        let Call { admit, rx, timeout } = self;
        let wait = async move {
            if let Some(admit) = admit {
                admit.await;
            }
            // The session task never drops a request without answering it; a closed channel
            // means the task itself is gone.
            rx.await.unwrap_or(Err(Error::Closed))
        };
        match timeout {
            Some(t) => tokio::time::timeout(t, wait)
                .await
                .unwrap_or(Err(Error::Timeout)),
            None => wait.await,
        }
    }
}

impl Client {
    /// Connects with default settings; see [`Client::builder`].
    ///
    /// `connect_string` is `host:port[,host:port...][/chroot]`.
    pub async fn connect(connect_string: &str) -> Result<Client> {
        Client::builder(connect_string).connect().await
    }

    /// A builder for the session timeout, chroot, authentication and the rest.
    pub fn builder(connect_string: &str) -> ClientBuilder {
        ClientBuilder::new(connect_string)
    }

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
            .clone()
    }

    /// The session timeout the server granted.
    pub fn session_timeout(&self) -> Duration {
        Duration::from_millis(self.inner.info.timeout_ms.load(Ordering::Acquire))
    }

    /// The session state now.
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

    /// A handle to the same session whose requests fail with [`Error::Timeout`] when no reply
    /// arrived within `timeout` (`None`: wait as long as the session lives). A request that
    /// was not yet sent when its deadline passed is never sent.
    pub fn with_request_timeout(&self, timeout: Option<Duration>) -> Client {
        Client {
            inner: self.inner.clone(),
            request_timeout: timeout,
        }
    }

    /// Closes the session: requests made before are answered first, then the server deletes
    /// the session's ephemerals. Later requests fail with [`Error::Closed`]. If no server is
    /// connected at that moment, the client stops at once and the server expires the session
    /// after its timeout.
    pub fn close(&self) -> impl Future<Output = ()> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        self.inner.queue.push_close(Some(tx));
        async move {
            let _ = rx.await;
        }
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
        let (frame, opcode) = Packet::encode(&request, xid, self.inner.max_frame)?;
        let (tx, rx) = oneshot::channel();
        let packet = Packet {
            frame: frame.freeze(),
            opcode,
            kind,
            watch,
            reply: tx,
        };
        let admit = match self.inner.queue.submit(packet) {
            Admission::Admitted => None,
            Admission::Wait(admit) => Some(admit),
        };
        Ok(Call {
            admit,
            rx,
            timeout: self.request_timeout,
        })
    }
}
