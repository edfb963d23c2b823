//! Parsing of client frames, for the server end of a connection (test servers).

use bytes::Bytes;

use super::ClientFrame;
use crate::jute::Decode;
use crate::records::RequestHeader;
use crate::{Request, Result};

impl ClientFrame {
    /// Parses a client frame payload that follows the handshake.
    pub fn decode_after_handshake(mut payload: Bytes) -> Result<ClientFrame> {
        let header = RequestHeader::decode(&mut payload)?;
        let request = Request::decode(header.opcode, &mut payload)?;
        Ok(ClientFrame::Request {
            xid: header.xid,
            request,
        })
    }
}
