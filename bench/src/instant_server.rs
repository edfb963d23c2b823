//! A scripted, in-process stand-in for a ZooKeeper server that answers every getData at once
//! from a pre-encoded reply. A scripted server is used here because no real server can take
//! itself out of the measurement: the client-bound workloads need a peer that costs next to
//! nothing, so that what is measured is the client. It speaks just enough of the protocol for
//! that: the handshake, getData (always the same node), ping, setWatches and closeSession;
//! anything else gets ZUNIMPLEMENTED.
//!
//! It runs on its own thread with its own single-threaded runtime, and exposes that thread's
//! CPU clock so that CPU per operation can be charged to the client only.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use crate::rusage::ThreadClock;
use crate::wire;

const ZXID: i64 = 2;

/// A running instant server; dropping it stops the thread.
pub struct InstantServer {
    addr: SocketAddr,
    clock: ThreadClock,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl InstantServer {
    /// Starts the server on an ephemeral loopback port; every getData is answered with
    /// `data_len` bytes of data.
    pub fn start(data_len: usize) -> io::Result<InstantServer> {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let (stop_tx, stop_rx) = oneshot::channel();
        let (clock_tx, clock_rx) = std::sync::mpsc::channel();
        let reply = Arc::new(wire::get_data_reply(0, ZXID, &vec![b'x'; data_len]));
        let thread = std::thread::Builder::new()
            .name("instant-server".into())
            .spawn(move || {
                let _ = clock_tx.send(ThreadClock::current());
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime for the instant server");
                runtime.block_on(async move {
                    let listener = TcpListener::from_std(std_listener).expect("listener");
                    let sessions = Arc::new(AtomicI64::new(0x1000));
                    let accept = async {
                        while let Ok((stream, _)) = listener.accept().await {
                            let id = sessions.fetch_add(1, Ordering::Relaxed);
                            tokio::spawn(serve(stream, id, reply.clone()));
                        }
                    };
                    tokio::select! {
                        _ = accept => {}
                        _ = stop_rx => {}
                    }
                });
            })?;
        let clock = clock_rx
            .recv()
            .map_err(|_| io::Error::other("instant server thread died"))?;
        Ok(InstantServer {
            addr,
            clock,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// CPU clock of the server thread, to exclude it from the client's CPU time.
    pub fn clock(&self) -> ThreadClock {
        self.clock
    }
}

impl Drop for InstantServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(stream: TcpStream, session_id: i64, reply: Arc<Vec<u8>>) {
    let _ = serve_session(stream, session_id, &reply).await;
}

async fn serve_session(mut stream: TcpStream, session_id: i64, reply: &[u8]) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut inbuf = BytesMut::with_capacity(256 * 1024);
    let mut out = Vec::with_capacity(1024 * 1024);
    // Handshake: the first frame is the ConnectRequest; grant whatever timeout was asked for.
    let connect = loop {
        if let Some(len) = wire::complete_frame_len(&inbuf) {
            break inbuf.split_to(len);
        }
        if stream.read_buf(&mut inbuf).await? == 0 {
            return Ok(());
        }
    };
    let timeout = connect
        .get(16..20)
        .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        .unwrap_or(30_000);
    stream
        .write_all(&wire::connect_response(timeout, session_id))
        .await?;
    loop {
        if stream.read_buf(&mut inbuf).await? == 0 {
            return Ok(());
        }
        let mut closing = false;
        out.clear();
        while let Some(len) = wire::complete_frame_len(&inbuf) {
            let (xid, opcode) = wire::request_header(&inbuf[..len]).unwrap_or((0, 0));
            match opcode {
                wire::OP_GET_DATA => {
                    let at = out.len();
                    out.extend_from_slice(reply);
                    out[at + 4..at + 8].copy_from_slice(&xid.to_be_bytes());
                }
                wire::OP_PING | wire::OP_SET_WATCHES | wire::OP_SET_WATCHES2 => {
                    out.extend_from_slice(&wire::header_reply(xid, ZXID, 0));
                }
                wire::OP_CLOSE_SESSION => {
                    out.extend_from_slice(&wire::header_reply(xid, ZXID, 0));
                    closing = true;
                }
                _ => out.extend_from_slice(&wire::header_reply(xid, ZXID, wire::ERR_UNIMPLEMENTED)),
            }
            inbuf.advance(len);
        }
        if !out.is_empty() {
            stream.write_all(&out).await?;
        }
        if closing {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw_socket::RawSession;

    /// The scripted server is only useful if a real client accepts its replies as getData
    /// answers: our client must see exactly the scripted data, on one and on many requests.
    /// Bound on each test: a miscount in the harness shows up as a wait that never ends.
    const BOUND: std::time::Duration = std::time::Duration::from_secs(30);

    #[tokio::test]
    async fn our_client_reads_the_scripted_reply() {
        tokio::time::timeout(BOUND, client_reads_scripted_reply())
            .await
            .expect("bounded");
    }

    async fn client_reads_scripted_reply() {
        let server = InstantServer::start(100).unwrap();
        let client = zookeeper_tokio::Client::connect(&server.addr().to_string())
            .await
            .unwrap();
        let (data, stat) = client.get_data("/any").await.unwrap();
        assert_eq!(&data[..], &[b'x'; 100][..]);
        assert_eq!(stat.data_length, 100);
        crate::ours::pipelined_get_data(&client, "/any", 5_000, 100)
            .await
            .unwrap();
        client.close().await;
    }

    /// The limit counts replies by length prefix only; a run must end with every reply
    /// counted, including when the count is not a multiple of the window.
    #[tokio::test]
    async fn raw_socket_counts_every_reply() {
        tokio::time::timeout(BOUND, raw_counts_every_reply())
            .await
            .expect("bounded");
    }

    async fn raw_counts_every_reply() {
        let server = InstantServer::start(100).unwrap();
        let mut raw = RawSession::connect(server.addr()).await.unwrap();
        raw.pipelined_get_data("/any", 10_007, 1_000).await.unwrap();
        raw.round_trip(&wire::get_data_request(1, "/any"))
            .await
            .unwrap();
        raw.close().await.unwrap();
    }
}
