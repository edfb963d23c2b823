//! A scripted ZooKeeper server: each accepted connection is handed to a script that decides,
//! frame by frame, what the client gets. It runs on a thread and a runtime of its own, so that
//! what it allocates and how busy it is never count against the client under test.
#![allow(dead_code)]

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use zookeeper_jute::{
    ConnectRequest, ConnectResponse, Decode, Encode, ErrorCode, EventType, KeeperState, OpCode,
    ReplyHeader, RequestHeader, WatcherEvent,
};

type Script = Arc<dyn Fn(Peer) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// The session the scripted server hands out.
pub const SESSION_ID: i64 = 0x77;
/// The session timeout it grants.
pub const TIMEOUT_MS: i32 = 10_000;

pub struct FakeServer {
    addr: SocketAddr,
    accepted: Arc<AtomicU64>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeServer {
    /// Serves every connection with `script`, each on its own task.
    pub fn start<F, Fut>(script: F) -> FakeServer
    where
        F: Fn(Peer) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let script: Script = Arc::new(move |peer| Box::pin(script(peer)));
        let accepted = Arc::new(AtomicU64::new(0));
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let count = accepted.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                loop {
                    tokio::select! {
                        _ = &mut stopped => break,
                        accepted = listener.accept() => {
                            let Ok((stream, _)) = accepted else { continue };
                            let _ = stream.set_nodelay(true);
                            let index = count.fetch_add(1, Ordering::SeqCst);
                            tokio::spawn(script(Peer { stream, index }));
                        }
                    }
                }
            });
            // Dropping the runtime drops every connection still open.
        });
        FakeServer {
            addr: addr_rx.recv().unwrap(),
            accepted,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One accepted connection.
pub struct Peer {
    stream: TcpStream,
    /// Which connection this is, from 0.
    pub index: u64,
}

/// A request the client sent.
#[derive(Debug)]
pub struct Received {
    pub xid: i32,
    pub opcode: OpCode,
    pub body: Bytes,
}

impl Peer {
    /// The next frame's payload; `None` once the client closed or reset the connection.
    pub async fn read_frame(&mut self) -> Option<Bytes> {
        let len = self.stream.read_i32().await.ok()?;
        let mut payload = vec![0; usize::try_from(len).ok()?];
        self.stream.read_exact(&mut payload).await.ok()?;
        Some(payload.into())
    }

    /// Reads the connect request and grants the session (a new one, or the one asked to
    /// resume); `None` if the client went away.
    pub async fn handshake(&mut self) -> Option<ConnectRequest> {
        self.handshake_granting(TIMEOUT_MS).await
    }

    /// [`Peer::handshake`], granting a session timeout of `timeout_ms`.
    pub async fn handshake_granting(&mut self, timeout_ms: i32) -> Option<ConnectRequest> {
        let mut frame = self.read_frame().await?;
        let request = ConnectRequest::decode(&mut frame).ok()?;
        let session_id = match request.session_id {
            0 => SESSION_ID,
            resumed => resumed,
        };
        let mut payload = BytesMut::new();
        ConnectResponse {
            protocol_version: 0,
            timeout: timeout_ms,
            session_id,
            passwd: Bytes::from_static(&[1; 16]),
            read_only: Some(false),
        }
        .encode(&mut payload);
        self.write_frame(&payload).await;
        Some(request)
    }

    /// The next request; pings are answered on the way. `None` once the client went away.
    pub async fn next_request(&mut self) -> Option<Received> {
        loop {
            let mut frame = self.read_frame().await?;
            let header = RequestHeader::decode(&mut frame).ok()?;
            if header.opcode == OpCode::Ping {
                self.reply(header.xid, 0, ErrorCode::Ok, &[]).await;
                continue;
            }
            return Some(Received {
                xid: header.xid,
                opcode: header.opcode,
                body: frame,
            });
        }
    }

    /// What one read returns: whatever the client has written that was not read yet, as the
    /// client's writes delivered it (empty once the client went away).
    pub async fn read_available(&mut self) -> Bytes {
        let mut buf = vec![0; 64 * 1024];
        let n = self.stream.read(&mut buf).await.unwrap_or(0);
        buf.truncate(n);
        buf.into()
    }

    pub async fn write_frame(&mut self, payload: &[u8]) {
        let mut buf = BytesMut::with_capacity(4 + payload.len());
        buf.put_i32(payload.len() as i32);
        buf.extend_from_slice(payload);
        self.write_raw(&buf).await;
    }

    /// Bytes as they are, framed or not. A client that went away is not an error here.
    pub async fn write_raw(&mut self, bytes: &[u8]) {
        let _ = self.stream.write_all(bytes).await;
    }

    pub async fn reply(&mut self, xid: i32, zxid: i64, err: ErrorCode, body: &[u8]) {
        let mut payload = BytesMut::new();
        ReplyHeader { xid, zxid, err }.encode(&mut payload);
        payload.extend_from_slice(body);
        self.write_frame(&payload).await;
    }

    pub async fn notify(&mut self, event_type: EventType, path: &str) {
        self.write_frame(&notification(event_type, path)).await;
    }

    /// Answers requests the way a server without nodes would (`NONODE`; `closeSession` and
    /// `auth` succeed) until the client goes away.
    pub async fn serve_empty(&mut self) {
        while let Some(request) = self.next_request().await {
            let err = match request.opcode {
                OpCode::CloseSession
                | OpCode::Auth
                | OpCode::SetWatches
                | OpCode::SetWatches2
                | OpCode::AddWatch => ErrorCode::Ok,
                _ => ErrorCode::NoNode,
            };
            self.reply(request.xid, 1, err, &[]).await;
            if request.opcode == OpCode::CloseSession {
                return;
            }
        }
    }

    /// Keeps the connection open and reads (and drops) whatever comes, answering nothing.
    pub async fn swallow(&mut self) {
        while self.read_frame().await.is_some() {}
    }
}

/// The payload of a notification frame.
pub fn notification(event_type: EventType, path: &str) -> BytesMut {
    let mut payload = BytesMut::new();
    ReplyHeader {
        xid: -1,
        zxid: -1,
        err: ErrorCode::Ok,
    }
    .encode(&mut payload);
    WatcherEvent {
        event_type,
        state: KeeperState::SyncConnected,
        path: path.into(),
    }
    .encode(&mut payload);
    payload
}

/// Grants the session and serves it as an empty server: the script for a well-behaved peer.
pub async fn well_behaved(mut peer: Peer) {
    if peer.handshake().await.is_some() {
        peer.serve_empty().await;
    }
}
