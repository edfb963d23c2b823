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
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tracing::{debug, info, Instrument};
use zookeeper_jute::{encode_request_frame, ConnectResponse, Decode, Request};

use crate::state::SessionId;
use crate::transport::{Reader, Writer};

/// The largest handshake answer read: a `ConnectResponse` is 37 bytes.
const MAX_ANSWER: usize = 1024;

/// Awaits the answer to the handshake sent on a connection the session gave up on, at most
/// `wait`, and closes the session it grants. `buf` holds what was read of it already.
pub(crate) fn spawn(reader: Reader, writer: Writer, buf: BytesMut, wait: Duration) {
    let span = tracing::debug_span!("zk_orphan_handshake");
    tokio::spawn(
        async move {
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
