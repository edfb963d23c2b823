//! The server side of the connection (for test servers): reads [`ClientFrame`]s, writes
//! [`ServerFrame`]s.

use bytes::{Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use super::frame::{decode_frame, DEFAULT_MAX_FRAME};
use super::{ClientFrame, CodecError, ServerFrame};
use crate::jute::Decode;
use crate::records::{ConnectRequest, RequestHeader};
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

/// The codec of a server connection: the first frame read is the `ConnectRequest`, every later
/// one a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerCodec {
    max_frame: usize,
    handshake_done: bool,
}

impl ServerCodec {
    /// A codec for a fresh connection, accepting frames up to `max_frame` payload bytes.
    pub fn new(max_frame: usize) -> ServerCodec {
        ServerCodec {
            max_frame,
            handshake_done: false,
        }
    }

    /// The largest accepted payload.
    pub fn max_frame(&self) -> usize {
        self.max_frame
    }

    /// True once the `ConnectRequest` has been decoded.
    pub fn handshake_done(&self) -> bool {
        self.handshake_done
    }
}

impl Default for ServerCodec {
    fn default() -> Self {
        ServerCodec::new(DEFAULT_MAX_FRAME)
    }
}

impl Decoder for ServerCodec {
    type Item = ClientFrame;
    type Error = CodecError;

    fn decode(
        &mut self,
        src: &mut BytesMut,
    ) -> std::result::Result<Option<ClientFrame>, CodecError> {
        let Some(mut payload) = decode_frame(src, self.max_frame)? else {
            return Ok(None);
        };
        if !self.handshake_done {
            let request = ConnectRequest::decode(&mut payload)?;
            self.handshake_done = true;
            return Ok(Some(ClientFrame::Connect(request)));
        }
        Ok(Some(ClientFrame::decode_after_handshake(payload)?))
    }
}

impl Encoder<ServerFrame> for ServerCodec {
    type Error = CodecError;

    fn encode(
        &mut self,
        item: ServerFrame,
        dst: &mut BytesMut,
    ) -> std::result::Result<(), CodecError> {
        item.encode_frame(dst);
        Ok(())
    }
}

impl Encoder<&ServerFrame> for ServerCodec {
    type Error = CodecError;

    fn encode(
        &mut self,
        item: &ServerFrame,
        dst: &mut BytesMut,
    ) -> std::result::Result<(), CodecError> {
        item.encode_frame(dst);
        Ok(())
    }
}
