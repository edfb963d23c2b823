//! The limit: a raw socket that does nothing a client could skip. After the handshake it only
//! writes pre-encoded getData frames and counts reply frames by their length prefix, without
//! matching xids, decoding bodies or waking anyone. Whatever a real client adds is overhead.

use std::io;
use std::net::SocketAddr;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::wire;

/// One ZooKeeper session over a bare TCP stream.
pub struct RawSession {
    stream: TcpStream,
    inbuf: BytesMut,
}

impl RawSession {
    /// Opens a session (handshake only; the ConnectResponse is skipped, not decoded).
    pub async fn connect(addr: SocketAddr) -> io::Result<RawSession> {
        let mut stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        stream.write_all(&wire::connect_request(30_000)).await?;
        let mut session = RawSession {
            stream,
            inbuf: BytesMut::with_capacity(256 * 1024),
        };
        session.read_frames(1).await?;
        Ok(session)
    }

    /// Reads until `n` complete frames have arrived and drops them.
    async fn read_frames(&mut self, n: u64) -> io::Result<()> {
        let mut seen = 0;
        while seen < n {
            seen += drop_complete_frames(&mut self.inbuf, n - seen);
            if seen < n {
                self.fill().await?;
            }
        }
        Ok(())
    }

    async fn fill(&mut self) -> io::Result<()> {
        if self.stream.read_buf(&mut self.inbuf).await? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "server closed the connection",
            ));
        }
        Ok(())
    }

    /// `total` getData of `path`, keeping `window` requests in flight.
    pub async fn pipelined_get_data(
        &mut self,
        path: &str,
        total: u64,
        window: usize,
    ) -> io::Result<()> {
        // One pre-encoded block of `window` frames; a burst writes a prefix of it. Xids repeat
        // between bursts, which the server does not care about and we do not look at.
        let frame_len = wire::get_data_request(1, path).len();
        let block: Vec<u8> = (1..=window as i32)
            .flat_map(|xid| wire::get_data_request(xid, path))
            .collect();
        let (mut sent, mut received) = (0u64, 0u64);
        while received < total {
            let room = (window as u64 - (sent - received)).min(total - sent) as usize;
            if room > 0 {
                self.stream.write_all(&block[..room * frame_len]).await?;
                sent += room as u64;
            }
            // Something is in flight here, so a read always makes progress. Frames left in
            // the buffer after a read are partial, so there is nothing to count before it.
            self.fill().await?;
            received += drop_complete_frames(&mut self.inbuf, sent - received);
        }
        Ok(())
    }

    /// Writes a block of pre-encoded requests at once while reading, until `replies` reply
    /// frames have arrived.
    pub async fn burst(&mut self, block: &[u8], replies: u64) -> io::Result<()> {
        let (mut rd, mut wr) = self.stream.split();
        let inbuf = &mut self.inbuf;
        let read = async move {
            let mut seen = 0;
            loop {
                seen += drop_complete_frames(inbuf, replies - seen);
                if seen == replies {
                    return Ok(());
                }
                if rd.read_buf(inbuf).await? == 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "server closed the connection",
                    ));
                }
            }
        };
        tokio::try_join!(wr.write_all(block), read)?;
        Ok(())
    }

    /// Writes pre-encoded frames.
    pub async fn send(&mut self, frames: &[u8]) -> io::Result<()> {
        self.stream.write_all(frames).await
    }

    /// The next complete frame from the server (prefix included).
    pub async fn next_frame(&mut self) -> io::Result<BytesMut> {
        loop {
            if let Some(len) = wire::complete_frame_len(&self.inbuf) {
                return Ok(self.inbuf.split_to(len));
            }
            self.fill().await?;
        }
    }

    /// One getData round trip with a pre-encoded frame.
    pub async fn round_trip(&mut self, frame: &[u8]) -> io::Result<()> {
        self.stream.write_all(frame).await?;
        self.read_frames(1).await
    }

    /// Sends one request and returns the `err` of its reply (setup only, not measured).
    pub async fn request(&mut self, frame: &[u8]) -> io::Result<i32> {
        self.stream.write_all(frame).await?;
        loop {
            if let Some(len) = wire::complete_frame_len(&self.inbuf) {
                let reply = self.inbuf.split_to(len);
                return wire::reply_err(&reply)
                    .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "short reply"));
            }
            self.fill().await?;
        }
    }

    /// Creates a persistent node unless it exists (setup only).
    pub async fn ensure_node(&mut self, path: &str, data: &[u8]) -> io::Result<()> {
        match self.request(&wire::create_request(1, path, data)).await? {
            0 | wire::ERR_NODE_EXISTS => Ok(()),
            err => Err(io::Error::other(format!(
                "create {path} failed: error {err}"
            ))),
        }
    }

    /// Creates every missing persistent node along `path` (setup only).
    pub async fn ensure_path(&mut self, path: &str) -> io::Result<()> {
        for (i, _) in path.match_indices('/').skip(1) {
            self.ensure_node(&path[..i], b"").await?;
        }
        self.ensure_node(path, b"").await
    }

    /// Ends the session so that the server frees it at once.
    pub async fn close(mut self) -> io::Result<()> {
        let close = wire::header_request(1, wire::OP_CLOSE_SESSION);
        self.stream.write_all(&close).await?;
        // The server answers and closes; either outcome ends the session.
        let _ = self.read_frames(1).await;
        Ok(())
    }
}

/// Drops up to `max` complete frames from `buf`; returns how many.
fn drop_complete_frames(buf: &mut BytesMut, max: u64) -> u64 {
    let mut n = 0;
    while n < max {
        match wire::complete_frame_len(buf) {
            Some(len) => {
                buf.advance(len);
                n += 1;
            }
            None => break,
        }
    }
    n
}
