//! A ZooKeeper model server for deterministic simulation (feature `sim`).
//!
//! [`SimServer`] speaks ZooKeeper's wire protocol (through `zookeeper-jute`) over any byte
//! stream: turmoil's simulated TCP ([`SimServer::listen_turmoil`]), real TCP
//! ([`SimServer::listen_tcp`], for the conformance suite), or anything else
//! ([`SimServer::serve`]). Its sessions expire on tokio's clock, which turmoil drives, and
//! every draw it makes comes from its seed, so a simulation run is a function of its seed.
//!
//! What the model has: znodes with their full `Stat`, per-parent sequence numbers (settable,
//! for wrap-around), ephemerals removed when their session ends,
//! one-shot, persistent and persistent recursive watches with the server's rules,
//! `setWatches`/`setWatches2`, `multi` with `check`, `multiRead`, `sync`, `getChildren2`,
//! `getAllChildrenNumber`, `getEphemerals`, `removeWatches`, `checkWatches`, containers and
//! TTL nodes with their cleanup, `whoAmI`, ACLs enforced as the server enforces them (`world`,
//! `digest` with `addAuth`, `ip`, `auth`; `NoAuth`, `InvalidACL`). Beside the protocol, a
//! journal of every change ([`SimServer::journal`], [`SimServer::tree_at`]) for workloads to
//! check what clients saw against what the server did.
//!
//! What it does not have: a superuser, SASL and reconfiguration are refused (so are
//! `addAuth` schemes other than `digest`), every connection comes from 127.0.0.1, there is one server (no ensemble, no read-only mode, no `SessionMoved`), and
//! children come back sorted where the real server gives no order.

mod acl;
mod faults;
mod rng;
mod state;
mod tree;
mod watches;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use zookeeper_jute::{codec::decode_frame, ClientFrame, ConnectRequest, Decode, EventType, Stat};

pub use faults::Faults;
pub use rng::SimRng;
pub use state::{Change, SimOptions};

use state::{Out, State};

/// The largest frame the model reads (the server's default `jute.maxbuffer`).
const MAX_FRAME: usize = 0xfffff;

/// A model ZooKeeper server. Clones share one server.
#[derive(Clone, Debug)]
pub struct SimServer {
    state: Arc<Mutex<State>>,
}

impl SimServer {
    /// A server with `options`; call inside the runtime (or turmoil host) that will run it.
    pub fn new(options: SimOptions) -> SimServer {
        SimServer {
            state: Arc::new(Mutex::new(State::new(options))),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs the server's clock: session expiry every tick, container and TTL cleanup at its
    /// interval. Runs until the runtime ends; the `listen_*` functions start it.
    pub async fn run_clock(&self) {
        let (tick, every) = {
            let s = self.lock();
            let tick = s.options.tick;
            let every = (s.options.container_check.as_millis() / tick.as_millis().max(1)).max(1);
            (tick, every)
        };
        let mut n: u128 = 0;
        loop {
            tokio::time::sleep(tick).await;
            n += 1;
            self.lock().tick(n % every == 0);
        }
    }

    /// Serves on turmoil's simulated network at `port` of the current host, until the
    /// simulation ends. Call from a turmoil host.
    pub async fn listen_turmoil(&self, port: u16) -> std::io::Result<()> {
        let listener = turmoil::net::TcpListener::bind(("0.0.0.0", port)).await?;
        let clock = self.clone();
        tokio::spawn(async move { clock.run_clock().await });
        loop {
            let (stream, _) = listener.accept().await?;
            let server = self.clone();
            tokio::spawn(async move { server.serve(stream).await });
        }
    }

    /// Serves on a free port of 127.0.0.1 over real TCP, on the current runtime (real time,
    /// unless the runtime's clock is paused). Returns the address.
    pub async fn listen_tcp(&self) -> std::io::Result<SocketAddr> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let clock = self.clone();
        tokio::spawn(async move { clock.run_clock().await });
        let server = self.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                let server = server.clone();
                tokio::spawn(async move { server.serve(stream).await });
            }
        });
        Ok(addr)
    }

    /// Serves one connection until either side closes it. Requests are handled in order, and
    /// replies and events leave in the order the server produced them.
    pub async fn serve<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(&self, stream: S) {
        let (mut rd, wr) = tokio::io::split(stream);
        let mut buf = BytesMut::with_capacity(4096);
        let Some(payload) = read_frame(&mut rd, &mut buf).await else {
            return;
        };
        let Ok(connect) = ConnectRequest::decode(&mut payload.clone()) else {
            return;
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let (closed_tx, mut closed_rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(write_loop(wr, rx, closed_tx));
        let Some(conn) = self.lock().open(&connect, tx) else {
            return;
        };
        loop {
            let frame = tokio::select! {
                biased;
                _ = &mut closed_rx => break,
                frame = read_frame(&mut rd, &mut buf) => frame,
            };
            let Some(payload) = frame else { break };
            let Ok(ClientFrame::Request { xid, request }) =
                ClientFrame::decode_after_handshake(payload)
            else {
                break;
            };
            if !self.lock().handle(conn, xid, request) {
                break;
            }
        }
        self.lock().close_conn(conn);
    }

    /// Ends a session now, as if it had expired: its ephemerals go and its connection
    /// closes. False if there was no such session.
    pub fn expire_session(&self, session_id: i64) -> bool {
        let mut s = self.lock();
        let known = s.sessions.contains_key(&session_id);
        s.end_session(session_id, "expired by a fault");
        known
    }

    /// Closes every connection (sessions live on): a server restart as the clients see it.
    pub fn drop_connections(&self) {
        let mut s = self.lock();
        let conns: Vec<_> = s.conns.keys().copied().collect();
        s.note("fault: every connection dropped");
        for c in conns {
            s.close_conn(c);
        }
    }

    /// The server goes down: every connection closes, and none is accepted until
    /// [`start`](SimServer::start). Its clock stops with it: no session expires while it is
    /// down. Clients see a server restart as `stop`, a while, then `start`.
    pub fn stop(&self) {
        self.lock().stop();
    }

    /// The server comes back up with the state it held (the tree, the sessions), as a real
    /// server does from its snapshot and log: every session gets a fresh full timeout from
    /// now, as the real server gives the sessions it restores.
    pub fn start(&self) {
        self.lock().start();
    }

    /// The live sessions.
    pub fn sessions(&self) -> Vec<i64> {
        self.lock().sessions.keys().copied().collect()
    }

    /// Replaces the faults the server injects.
    pub fn set_faults(&self, faults: Faults) {
        self.lock().options.faults = faults;
    }

    /// Sets the number the next sequential child of `path` gets (and its `cversion`): to test
    /// sequence wrap-around. False if there is no such node.
    pub fn set_next_sequence(&self, path: &str, sequence: i32) -> bool {
        match self.lock().tree.nodes.get_mut(path) {
            Some(n) => {
                n.next_sequence = sequence;
                n.stat.cversion = sequence;
                true
            }
            None => false,
        }
    }

    /// The children of `path`, sorted; `None` if it does not exist.
    pub fn children(&self, path: &str) -> Option<Vec<String>> {
        self.lock()
            .tree
            .get(path)
            .map(|n| n.children.iter().cloned().collect())
    }

    /// The data and stat of `path`.
    pub fn node(&self, path: &str) -> Option<(Bytes, Stat)> {
        self.lock().tree.get(path).map(|n| (n.data.clone(), n.stat))
    }

    /// Every change the server made to its tree, in zxid order (several may share one: the
    /// changes of one transaction). What a workload checks its observations against.
    pub fn journal(&self) -> Vec<Change> {
        self.lock().journal.clone()
    }

    /// The changes with a zxid above `zxid`, in order.
    pub fn journal_after(&self, zxid: i64) -> Vec<Change> {
        let s = self.lock();
        let from = s.journal.partition_point(|c| c.zxid <= zxid);
        s.journal[from..].to_vec()
    }

    /// The subtree at `root` (the node and every descendant) as the server held it at `zxid`:
    /// each node's data and its stat as of its last create or data change up to `zxid` (the
    /// fields a child's change moves, `cversion`, `pzxid` and `numChildren`, may be older).
    pub fn tree_at(&self, root: &str, zxid: i64) -> BTreeMap<String, (Bytes, Stat)> {
        let s = self.lock();
        let mut tree = BTreeMap::new();
        let below = if root == "/" {
            "/".to_owned()
        } else {
            format!("{root}/")
        };
        for change in s.journal.iter().take_while(|c| c.zxid <= zxid) {
            if change.path != root && !change.path.starts_with(&below) {
                continue;
            }
            match change.event {
                EventType::NodeCreated | EventType::NodeDataChanged => match &change.node {
                    Some(node) => {
                        tree.insert(change.path.clone(), node.clone());
                    }
                    None => {
                        tree.remove(&change.path);
                    }
                },
                EventType::NodeDeleted => {
                    tree.remove(&change.path);
                }
                _ => {}
            }
        }
        tree
    }

    /// The last zxid.
    pub fn zxid(&self) -> i64 {
        self.lock().zxid
    }

    /// Adds a line to the trace (a workload's own events, among the server's).
    pub fn note(&self, line: impl std::fmt::Display) {
        self.lock().note(line);
    }

    /// The trace: what the server did, with simulated times, the last lines of a long run.
    pub fn trace(&self) -> Vec<String> {
        self.lock().trace.iter().cloned().collect()
    }
}

/// Reads one frame's payload; `None` at the end of the stream or on a bad frame.
async fn read_frame<R: AsyncRead + Unpin>(rd: &mut R, buf: &mut BytesMut) -> Option<Bytes> {
    loop {
        match decode_frame(buf, MAX_FRAME) {
            Ok(Some(payload)) => return Some(payload),
            Ok(None) => {}
            Err(_) => return None,
        }
        match rd.read_buf(buf).await {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut wr: W,
    mut rx: mpsc::UnboundedReceiver<Out>,
    closed: tokio::sync::oneshot::Sender<()>,
) {
    while let Some(out) = rx.recv().await {
        match out {
            Out::Frame(bytes, delay) => {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                if wr.write_all(&bytes).await.is_err() || wr.flush().await.is_err() {
                    break;
                }
            }
            Out::Close => break,
        }
    }
    let _ = wr.shutdown().await;
    let _ = closed.send(());
}
