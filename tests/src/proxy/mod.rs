//! A fault-injecting TCP proxy between a client and ZooKeeper.
//!
//! The client connects to [`Proxy::addr`]; each connection is forwarded to an upstream
//! server. Faults apply at once to every connection:
//!
//! * [`Proxy::drop_all`]: close every open connection now (both sides see EOF);
//! * [`Proxy::refuse`]: reset new connections as soon as they arrive;
//! * [`Proxy::black_hole`] / [`Proxy::black_hole_for`]: stay connected but forward nothing,
//!   like a network partition. Bytes (and a server's close) are held and delivered when it
//!   ends, as TCP would after a partition heals; but when a client closes its connection
//!   inside the hole, what it sent is dropped, so no stale request reaches the server later;
//! * [`Proxy::set_latency`]: delay every frame in both directions;
//! * [`Proxy::cut_after_next`]: let the next request with a given opcode reach the server,
//!   then close the connection when its reply comes back, so the client never hears it;
//! * [`Proxy::hold_replies`]: forward requests to the server, but hold everything the server
//!   sends until the hold ends (the client cannot have reacted to a reply it never got).
//!
//! For assertions about order rather than time, [`Proxy::record_frames`] logs every frame the
//! proxy passes on, in order ([`FrameEvent`]): read the log with [`Proxy::frame_log`] or
//! [`Proxy::take_frame_log`], or wait on it with [`Proxy::wait_for_frames`]. Events are
//! logged just before the frame is written on, so whatever a frame causes (the server's
//! reply to a request, the client's request after a reply) comes after it in the log.
//!
//! The proxy needs a tokio runtime (any flavour); it stops when dropped.

mod connection;
mod frame_log;
mod frames;

pub use frame_log::FrameEvent;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};

/// The servers a [`Proxy`] forwards to: one address or several (new connections take them
/// in turn, skipping those that refuse).
#[derive(Clone, Debug)]
pub struct Upstreams(Vec<SocketAddr>);

impl From<SocketAddr> for Upstreams {
    fn from(addr: SocketAddr) -> Self {
        Upstreams(vec![addr])
    }
}

impl From<Vec<SocketAddr>> for Upstreams {
    fn from(addrs: Vec<SocketAddr>) -> Self {
        Upstreams(addrs)
    }
}

impl From<&[SocketAddr]> for Upstreams {
    fn from(addrs: &[SocketAddr]) -> Self {
        Upstreams(addrs.to_vec())
    }
}

impl<const N: usize> From<[SocketAddr; N]> for Upstreams {
    fn from(addrs: [SocketAddr; N]) -> Self {
        Upstreams(addrs.to_vec())
    }
}

/// Reports the connection cut armed by [`Proxy::cut_after_next`].
#[derive(Debug)]
pub struct Cut {
    done: oneshot::Receiver<i32>,
}

impl Cut {
    /// Waits until the cut happened and returns the xid of the request whose reply was
    /// withheld; `None` if the proxy stopped or a later `cut_after_next` replaced this one.
    pub async fn wait(self) -> Option<i32> {
        self.done.await.ok()
    }
}

#[derive(Debug)]
struct ArmedCut {
    opcode: i32,
    /// Refuse new connections from the moment the request is forwarded.
    refuse_after: bool,
    done: oneshot::Sender<i32>,
}

/// State shared by the proxy handle, its accept loop and its connections.
#[derive(Debug)]
struct Shared {
    upstreams: Mutex<Vec<SocketAddr>>,
    next_upstream: AtomicUsize,
    refuse: AtomicBool,
    black_hole: watch::Sender<bool>,
    black_hole_generation: AtomicUsize,
    latency: watch::Sender<Duration>,
    hold_replies: watch::Sender<bool>,
    frames: frame_log::FrameLog,
    /// Parent of every open connection's token; replaced by `drop_all`.
    epoch: Mutex<CancellationToken>,
    armed_cut: Mutex<Option<ArmedCut>>,
    accepted: watch::Sender<u64>,
    open: watch::Sender<usize>,
}

impl Shared {
    fn take_cut(&self, opcode: i32) -> Option<oneshot::Sender<i32>> {
        let mut armed = self.armed_cut.lock().unwrap_or_else(|e| e.into_inner());
        if armed.as_ref().is_some_and(|cut| cut.opcode == opcode) {
            let cut = armed.take()?;
            if cut.refuse_after {
                self.refuse.store(true, Ordering::SeqCst);
            }
            Some(cut.done)
        } else {
            None
        }
    }

    async fn connect_upstream(&self) -> Option<TcpStream> {
        let upstreams = self
            .upstreams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let first = self.next_upstream.fetch_add(1, Ordering::Relaxed);
        for i in 0..upstreams.len() {
            let addr = upstreams[(first + i) % upstreams.len()];
            if let Ok(stream) = TcpStream::connect(addr).await {
                let _ = stream.set_nodelay(true);
                return Some(stream);
            }
        }
        None
    }
}

/// A fault-injecting TCP proxy on `127.0.0.1:<ephemeral port>`; see the [module
/// docs](self).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> zookeeper_testkit::Result<()> {
/// use std::time::Duration;
/// let server = zookeeper_testkit::ZkServer::start().await?;
/// let proxy = zookeeper_testkit::Proxy::start(server.addr()).await?;
/// // connect the client under test to proxy.connect_string(), then:
/// proxy.black_hole_for(Duration::from_secs(2));
/// let cut = proxy.cut_after_next(1); // the next create
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: CancellationToken,
    /// The runtime the proxy runs on, so that its methods work from any thread.
    runtime: tokio::runtime::Handle,
}

impl Proxy {
    /// Starts a proxy forwarding to `upstreams` (a `SocketAddr`, a slice, an array or a vec).
    pub async fn start(upstreams: impl Into<Upstreams>) -> Result<Proxy> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(|e| Error::io("binding the proxy", e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::io("binding the proxy", e))?;
        let stop = CancellationToken::new();
        let shared = Arc::new(Shared {
            upstreams: Mutex::new(upstreams.into().0),
            next_upstream: AtomicUsize::new(0),
            refuse: AtomicBool::new(false),
            black_hole: watch::Sender::new(false),
            black_hole_generation: AtomicUsize::new(0),
            latency: watch::Sender::new(Duration::ZERO),
            hold_replies: watch::Sender::new(false),
            frames: frame_log::FrameLog::default(),
            epoch: Mutex::new(stop.child_token()),
            armed_cut: Mutex::new(None),
            accepted: watch::Sender::new(0),
            open: watch::Sender::new(0),
        });
        let runtime = tokio::runtime::Handle::current();
        runtime.spawn(accept_loop(listener, shared.clone(), stop.clone()));
        Ok(Proxy {
            addr,
            shared,
            stop,
            runtime,
        })
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `127.0.0.1:PORT` of the proxy.
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// Forwards new connections to other servers from now on (open ones stay where they are).
    pub fn set_upstreams(&self, upstreams: impl Into<Upstreams>) {
        *self
            .shared
            .upstreams
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = upstreams.into().0;
    }

    /// Closes every open connection now; new connections are accepted as usual.
    pub fn drop_all(&self) {
        let mut epoch = self.shared.epoch.lock().unwrap_or_else(|e| e.into_inner());
        epoch.cancel();
        *epoch = self.stop.child_token();
    }

    /// While `true`, new connections are reset as soon as they are accepted.
    pub fn refuse(&self, refuse: bool) {
        self.shared.refuse.store(refuse, Ordering::SeqCst);
    }

    /// While `true`, connections (open and new) stay up but nothing is forwarded either way.
    pub fn black_hole(&self, on: bool) {
        self.shared
            .black_hole_generation
            .fetch_add(1, Ordering::SeqCst);
        self.shared.black_hole.send_replace(on);
    }

    /// Black-holes for `duration`, then forwards again (unless changed meanwhile).
    pub fn black_hole_for(&self, duration: Duration) {
        let generation = self
            .shared
            .black_hole_generation
            .fetch_add(1, Ordering::SeqCst)
            + 1;
        self.shared.black_hole.send_replace(true);
        let shared = self.shared.clone();
        let stop = self.stop.clone();
        self.runtime.spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep(duration) => {}
                _ = stop.cancelled() => return,
            }
            if shared.black_hole_generation.load(Ordering::SeqCst) == generation {
                shared.black_hole.send_replace(false);
            }
        });
    }

    /// Delays every frame (each direction) by `latency`; zero turns it off.
    pub fn set_latency(&self, latency: Duration) {
        self.shared.latency.send_replace(latency);
    }

    /// Arms a one-shot cut: the next request with `opcode` (on any connection) is forwarded
    /// to the server; when the server's reply to it arrives, the proxy withholds it and
    /// closes that connection. The request took effect, but the client never hears so.
    /// Replaces a cut armed earlier and not yet fired.
    pub fn cut_after_next(&self, opcode: i32) -> Cut {
        self.arm_cut(opcode, false)
    }

    /// Like [`cut_after_next`](Self::cut_after_next), and the proxy refuses new connections
    /// (as [`refuse`](Self::refuse)`(true)`) from the moment that request is forwarded: the
    /// client cannot reconnect until the test lets it, so what happens to its session in
    /// between (an expiry, say) is the test's to arrange.
    pub fn cut_after_next_and_refuse(&self, opcode: i32) -> Cut {
        self.arm_cut(opcode, true)
    }

    fn arm_cut(&self, opcode: i32, refuse_after: bool) -> Cut {
        let (done, rx) = oneshot::channel();
        *self
            .shared
            .armed_cut
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(ArmedCut {
            opcode,
            refuse_after,
            done,
        });
        Cut { done: rx }
    }

    /// While `true`, nothing the server sends (replies, notifications, handshake answers,
    /// its closing the connection) is delivered to clients; it is held, in order, and
    /// delivered when the hold ends. Requests still reach the server. Lets a test see what
    /// a client sends before it has heard any answer.
    pub fn hold_replies(&self, on: bool) {
        self.shared.hold_replies.send_replace(on);
    }

    /// Starts (`true`) or stops recording the frames passed on, as [`FrameEvent`]s. Off by
    /// default, and then costs nothing but a flag check per frame. Frames withheld by a cut
    /// or dropped with a connection are not recorded: only what was actually passed on.
    pub fn record_frames(&self, on: bool) {
        self.shared.frames.set_recording(on);
    }

    /// The frames recorded so far (since the last [`take_frame_log`](Self::take_frame_log)),
    /// in the order they were passed on.
    pub fn frame_log(&self) -> Vec<FrameEvent> {
        self.shared.frames.snapshot()
    }

    /// Like [`frame_log`](Self::frame_log), and empties the log.
    pub fn take_frame_log(&self) -> Vec<FrameEvent> {
        self.shared.frames.take()
    }

    /// Waits until the frame log (since the last take) satisfies `pred`; checked now and after
    /// every recorded frame. Bound it with a timeout: it waits as long as it takes.
    pub async fn wait_for_frames(&self, pred: impl FnMut(&[FrameEvent]) -> bool) {
        self.shared.frames.wait_for(pred).await;
    }

    /// Connections accepted so far (including refused ones).
    pub fn accepted(&self) -> u64 {
        *self.shared.accepted.borrow()
    }

    /// Connections open right now.
    pub fn open_connections(&self) -> usize {
        *self.shared.open.borrow()
    }

    /// Waits until at least `count` connections have been accepted since the proxy started.
    pub async fn wait_accepted(&self, count: u64) {
        let mut rx = self.shared.accepted.subscribe();
        let _ = rx.wait_for(|n| *n >= count).await;
    }

    /// Waits until exactly `count` connections are open.
    pub async fn wait_open(&self, count: usize) {
        let mut rx = self.shared.open.subscribe();
        let _ = rx.wait_for(|n| *n == count).await;
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, stop: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((client, _)) = accepted else {
            // Out of descriptors or similar: keep serving the connections we have.
            continue;
        };
        let mut conn = 0;
        shared.accepted.send_modify(|n| {
            *n += 1;
            conn = *n;
        });
        if shared.refuse.load(Ordering::SeqCst) {
            connection::reset(client);
            continue;
        }
        let _ = client.set_nodelay(true);
        let token = shared
            .epoch
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .child_token();
        tokio::spawn(connection::serve(client, conn, shared.clone(), token));
    }
}
