//! Connections whose handshake the session gave up on (see [`Action::Orphan`]).
//!
//! A server that is slow to answer a handshake still creates the session it asked for, and
//! keeps it for its whole timeout once the client has gone: a fleet starting at once against a
//! loaded server left it thousands of sessions nobody used. So the connection is not dropped
//! but set apart: if the answer comes, the session it grants is closed there and then, and
//! the connection after it.
//!
//! [`Action::Orphan`]: crate::session::Action::Orphan

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tracing::{debug, info, Instrument};
use zookeeper_jute::{encode_request_frame, ConnectResponse, Decode, Request};

use crate::state::SessionId;
use crate::transport::{Reader, Writer};

/// The largest handshake answer read: a `ConnectResponse` is 37 bytes.
const MAX_ANSWER: usize = 1024;

/// Connections of one session kept apart at once, at most: with a short attempt timeout and
/// a server that never answers, more would only pile connections on it. Past it a connection
/// is dropped as before.
const MAX_KEPT: usize = 4;

/// The connections of one session kept apart.
#[derive(Debug, Default, Clone)]
pub(crate) struct Orphans {
    kept: Arc<AtomicUsize>,
}

/// Counts one kept connection until dropped.
struct Kept(Arc<AtomicUsize>);

impl Drop for Kept {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Orphans {
    /// Awaits the answer to the handshake sent on a connection the session gave up on, at
    /// most `wait`, and closes the session it grants. `buf` holds what was read of it
    /// already. Drops the connection instead when [`MAX_KEPT`] are kept already.
    pub(crate) fn keep(&self, reader: Reader, writer: Writer, buf: BytesMut, wait: Duration) {
        if self.kept.fetch_add(1, Ordering::Relaxed) >= MAX_KEPT {
            self.kept.fetch_sub(1, Ordering::Relaxed);
            debug!("too many handshakes given up on are awaited: this one is dropped");
            return;
        }
        spawn(Kept(self.kept.clone()), reader, writer, buf, wait);
    }
}

fn spawn(kept: Kept, reader: Reader, writer: Writer, buf: BytesMut, wait: Duration) {
    let span = tracing::debug_span!("zk_orphan_handshake");
    tokio::spawn(
        async move {
            let _kept = kept;
            match tokio::time::timeout(wait, close_granted(reader, writer, buf)).await {
                Ok(Ok(Some(id))) => info!(
                    session_id = %SessionId(id),
                    "closed the session a server granted to a handshake given up on"
                ),
                Ok(Ok(None)) => debug!("no session granted to the handshake given up on"),
                Ok(Err(e)) => debug!(%e, "the connection of a handshake given up on failed"),
                Err(_) => debug!(?wait, "no answer to the handshake given up on"),
            }
        }
        .instrument(span),
    );
}

/// Reads the handshake's answer and closes the session it grants: its id, `None` when the
/// server granted none (it closed, refused or sent something else).
async fn close_granted(
    mut reader: Reader,
    mut writer: Writer,
    mut buf: BytesMut,
) -> io::Result<Option<i64>> {
    let len = loop {
        if buf.len() >= 4 {
            let len = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
            let Some(len) = usize::try_from(len).ok().filter(|&l| l <= MAX_ANSWER) else {
                return Ok(None);
            };
            if buf.len() >= 4 + len {
                break len;
            }
        }
        if reader.read_buf(&mut buf).await? == 0 {
            return Ok(None);
        }
    };
    buf.advance(4);
    let mut frame = buf.split_to(len).freeze();
    let Ok(answer) = ConnectResponse::decode(&mut frame) else {
        return Ok(None);
    };
    if answer.timeout <= 0 || answer.session_id == 0 {
        return Ok(None);
    }
    let mut out = BytesMut::new();
    encode_request_frame(&mut out, 1, &Request::CloseSession);
    while !out.is_empty() || writer.has_unflushed() {
        writer.write_buf(&mut out).await?;
    }
    // The server answers, then closes the connection: either says the request was taken.
    let _ = reader.read_buf(&mut buf).await;
    Ok(Some(answer.session_id))
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    use zookeeper_jute::{Encode, OpCode, RequestHeader};

    use super::*;
    use crate::transport::Stream;

    /// Past [`MAX_KEPT`] connections set apart, further ones are dropped; the ones kept close
    /// the session a late answer grants, and make room again once done.
    #[tokio::test]
    async fn at_most_max_kept_connections_wait_and_each_closes_its_session() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let orphans = Orphans::default();
        let mut servers = vec![];
        for _ in 0..MAX_KEPT + 2 {
            let client = TcpStream::connect(addr).await.unwrap();
            servers.push(listener.accept().await.unwrap().0);
            let (r, w) = Stream::Tcp(client).split();
            orphans.keep(r, w, BytesMut::new(), Duration::from_secs(600));
        }
        assert_eq!(orphans.kept.load(Ordering::Relaxed), MAX_KEPT);
        let mut answer = BytesMut::new();
        ConnectResponse {
            protocol_version: 0,
            timeout: 10_000,
            session_id: 9,
            passwd: Bytes::from_static(&[1; 16]),
            read_only: Some(false),
        }
        .encode(&mut answer);
        for (i, mut server) in servers.into_iter().enumerate() {
            let _ = server.write_i32(answer.len() as i32).await;
            let _ = server.write_all(&answer).await;
            if i < MAX_KEPT {
                let len = server.read_i32().await.unwrap();
                let mut body = vec![0; len as usize];
                server.read_exact(&mut body).await.unwrap();
                let header = RequestHeader::decode(&mut Bytes::from(body)).unwrap();
                assert_eq!(header.opcode, OpCode::CloseSession, "connection {i}");
            } else {
                let mut rest = vec![];
                let _ = server.read_to_end(&mut rest).await;
                assert!(rest.is_empty(), "connection {i} was dropped: {rest:?}");
            }
            // Closed, as a server does after closeSession.
        }
        // Each kept connection ended once closed by the server.
        tokio::time::timeout(Duration::from_secs(10), async {
            while orphans.kept.load(Ordering::Relaxed) > 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("kept connections end when the server closes them");
    }
}
