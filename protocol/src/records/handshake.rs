//! Handshake records: `ConnectRequest` (first client frame) and `ConnectResponse` (first
//! server frame). Neither has a header.
//!
//! Both end with a `readOnly` boolean that old peers neither send nor expect: a server answers
//! with the byte only if the request carried it. It is therefore an `Option`: `None` means the
//! byte is absent, and a decoder reads it if and only if a byte is left after `passwd`.

use bytes::{Bytes, BytesMut};

use crate::jute::{
    read_bool, read_buffer, read_i32, read_i64, write_bool, write_buffer, write_i32, write_i64,
    Decode, Encode,
};
use crate::Result;

use super::redact::Redacted;

/// Bytes of a session password.
pub const PASSWORD_LEN: usize = 16;

/// The first frame a client sends on a connection. `Debug` leaves the password out.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct ConnectRequest {
    /// Always 0; servers ignore it.
    pub protocol_version: i32,
    /// Highest zxid of an ordinary reply seen by the client; a server behind it refuses the
    /// connection.
    pub last_zxid_seen: i64,
    /// Requested session timeout, ms.
    pub timeout: i32,
    /// 0 for a new session, else the session to resume.
    pub session_id: i64,
    /// The session password (16 zero bytes for a new session). Null reads as empty.
    pub passwd: Bytes,
    /// Whether the client accepts a read-only server; `None` leaves the byte out, as pre-3.4
    /// clients did. Always send `Some`.
    pub read_only: Option<bool>,
}

impl ConnectRequest {
    /// A request for a new session with the given timeout (ms), accepting read-only servers
    /// if `read_only`.
    pub fn new_session(timeout: i32, read_only: bool) -> ConnectRequest {
        ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            timeout,
            session_id: 0,
            passwd: Bytes::from_static(&[0; PASSWORD_LEN]),
            read_only: Some(read_only),
        }
    }
}

impl Encode for ConnectRequest {
    fn encode(&self, buf: &mut BytesMut) {
        buf.reserve(self.encoded_len());
        write_i32(buf, self.protocol_version);
        write_i64(buf, self.last_zxid_seen);
        write_i32(buf, self.timeout);
        write_i64(buf, self.session_id);
        write_buffer(buf, Some(&self.passwd));
        if let Some(read_only) = self.read_only {
            write_bool(buf, read_only);
        }
    }

    fn encoded_len(&self) -> usize {
        4 + 8 + 4 + 8 + 4 + self.passwd.len() + usize::from(self.read_only.is_some())
    }
}

impl Decode for ConnectRequest {
    fn decode(buf: &mut Bytes) -> Result<Self> {
        Ok(ConnectRequest {
            protocol_version: read_i32(buf, "ConnectRequest.protocolVersion")?,
            last_zxid_seen: read_i64(buf, "ConnectRequest.lastZxidSeen")?,
            timeout: read_i32(buf, "ConnectRequest.timeOut")?,
            session_id: read_i64(buf, "ConnectRequest.sessionId")?,
            passwd: read_buffer(buf, "ConnectRequest.passwd")?.unwrap_or_default(),
            read_only: read_trailing_bool(buf, "ConnectRequest.readOnly")?,
        })
    }
}

/// The first frame a server sends on a connection. `Debug` leaves the password out.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct ConnectResponse {
    /// Always 0.
    pub protocol_version: i32,
    /// Negotiated session timeout, ms. **0 or less means the session is expired or the password
    /// was wrong**; the server closes the connection right after.
    pub timeout: i32,
    /// The assigned or resumed session id; 0 when invalid.
    pub session_id: i64,
    /// The session password to send when resuming. Null reads as empty.
    pub passwd: Bytes,
    /// Whether the server is read-only; `None` when the server did not send the byte (it only
    /// does if the request carried one).
    pub read_only: Option<bool>,
}

impl ConnectResponse {
    /// True when the server refused the session as expired or invalid (`timeOut <= 0`).
    pub fn is_expired(&self) -> bool {
        self.timeout <= 0
    }
}

impl Encode for ConnectResponse {
    fn encode(&self, buf: &mut BytesMut) {
        buf.reserve(self.encoded_len());
        write_i32(buf, self.protocol_version);
        write_i32(buf, self.timeout);
        write_i64(buf, self.session_id);
        write_buffer(buf, Some(&self.passwd));
        if let Some(read_only) = self.read_only {
            write_bool(buf, read_only);
        }
    }

    fn encoded_len(&self) -> usize {
        4 + 4 + 8 + 4 + self.passwd.len() + usize::from(self.read_only.is_some())
    }
}

impl Decode for ConnectResponse {
    fn decode(buf: &mut Bytes) -> Result<Self> {
        Ok(ConnectResponse {
            protocol_version: read_i32(buf, "ConnectResponse.protocolVersion")?,
            timeout: read_i32(buf, "ConnectResponse.timeOut")?,
            session_id: read_i64(buf, "ConnectResponse.sessionId")?,
            passwd: read_buffer(buf, "ConnectResponse.passwd")?.unwrap_or_default(),
            read_only: read_trailing_bool(buf, "ConnectResponse.readOnly")?,
        })
    }
}

impl std::fmt::Debug for ConnectRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectRequest")
            .field("protocol_version", &self.protocol_version)
            .field("last_zxid_seen", &self.last_zxid_seen)
            .field("timeout", &self.timeout)
            .field("session_id", &self.session_id)
            .field("passwd", &Redacted)
            .field("read_only", &self.read_only)
            .finish()
    }
}

impl std::fmt::Debug for ConnectResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectResponse")
            .field("protocol_version", &self.protocol_version)
            .field("timeout", &self.timeout)
            .field("session_id", &self.session_id)
            .field("passwd", &Redacted)
            .field("read_only", &self.read_only)
            .finish()
    }
}

/// Reads the optional trailing `readOnly` byte: present if and only if a byte is left.
fn read_trailing_bool(buf: &mut Bytes, what: &'static str) -> Result<Option<bool>> {
    if buf.is_empty() {
        Ok(None)
    } else {
        read_bool(buf, what).map(Some)
    }
}
