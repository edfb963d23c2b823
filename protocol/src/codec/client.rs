//! The client side of the connection: writes [`ClientFrame`]s, reads [`ServerFrame`]s.

use bytes::{Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use super::frame::{
    decode_frame, encode_notification_frame, encode_raw_reply_frame, encode_record_frame,
    encode_request_frame, DEFAULT_MAX_FRAME,
};
use super::CodecError;
use crate::consts::xid;
use crate::jute::Decode;
use crate::records::{ConnectRequest, ConnectResponse, ReplyHeader, WatcherEvent};
use crate::{Request, Result};

/// A frame sent by a client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientFrame {
    /// The first frame of a connection.
    Connect(ConnectRequest),
    /// Any later frame.
    Request {
        /// The request id; see [`xid`](crate::xid) for the special values.
        xid: i32,
        /// The request.
        request: Request,
    },
}

/// A frame sent by a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerFrame {
    /// The first frame of a connection.
    Connect(ConnectResponse),
    /// A reply (xid other than −1). `body` is the rest of the frame as a zero-copy slice,
    /// to be decoded with [`Response::decode`](crate::Response::decode) by the opcode of the
    /// matching request; it is meaningless when `header.err` is not OK.
    Reply {
        /// The reply header.
        header: ReplyHeader,
        /// The undecoded response record.
        body: Bytes,
    },
    /// A watch notification (xid −1).
    Notification {
        /// The header's zxid: −1 before 3.9, the triggering zxid from 3.9 on (still −1 for
        /// events caused by `setWatches`).
        zxid: i64,
        /// The event.
        event: WatcherEvent,
    },
}

impl ServerFrame {
    /// Parses a server frame payload that follows the handshake.
    pub fn decode_after_handshake(mut payload: Bytes) -> Result<ServerFrame> {
        let header = ReplyHeader::decode(&mut payload)?;
        if header.xid == xid::NOTIFICATION {
            let event = WatcherEvent::decode(&mut payload)?;
            return Ok(ServerFrame::Notification {
                zxid: header.zxid,
                event,
            });
        }
        Ok(ServerFrame::Reply {
            header,
            body: payload,
        })
    }

    /// Appends the frame to `buf`.
    pub fn encode_frame(&self, buf: &mut BytesMut) {
        match self {
            ServerFrame::Connect(response) => encode_record_frame(buf, response),
            ServerFrame::Reply { header, body } => encode_raw_reply_frame(buf, header, body),
            ServerFrame::Notification { zxid, event } => {
                encode_notification_frame(buf, *zxid, event)
            }
        }
    }
}

impl ClientFrame {
    /// Appends the frame to `buf`.
    #[inline]
    pub fn encode_frame(&self, buf: &mut BytesMut) {
        match self {
            ClientFrame::Connect(request) => encode_record_frame(buf, request),
            ClientFrame::Request { xid, request } => encode_request_frame(buf, *xid, request),
        }
    }
}

/// The codec of a client connection: the first frame read is the `ConnectResponse`, every
/// later one a reply or a notification. Use a new codec for every connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientCodec {
    max_frame: usize,
    handshake_done: bool,
}

impl ClientCodec {
    /// A codec for a fresh connection, accepting frames up to `max_frame` payload bytes
    /// ([`DEFAULT_MAX_FRAME`] matches the server default).
    pub fn new(max_frame: usize) -> ClientCodec {
        ClientCodec {
            max_frame,
            handshake_done: false,
        }
    }

    /// The largest accepted payload.
    pub fn max_frame(&self) -> usize {
        self.max_frame
    }

    /// True once the `ConnectResponse` has been decoded.
    pub fn handshake_done(&self) -> bool {
        self.handshake_done
    }
}

impl Default for ClientCodec {
    fn default() -> Self {
        ClientCodec::new(DEFAULT_MAX_FRAME)
    }
}

impl Decoder for ClientCodec {
    type Item = ServerFrame;
    type Error = CodecError;

    fn decode(
        &mut self,
        src: &mut BytesMut,
    ) -> std::result::Result<Option<ServerFrame>, CodecError> {
        let Some(mut payload) = decode_frame(src, self.max_frame)? else {
            return Ok(None);
        };
        if !self.handshake_done {
            let response = ConnectResponse::decode(&mut payload)?;
            self.handshake_done = true;
            return Ok(Some(ServerFrame::Connect(response)));
        }
        Ok(Some(ServerFrame::decode_after_handshake(payload)?))
    }
}

impl Encoder<ClientFrame> for ClientCodec {
    type Error = CodecError;

    fn encode(
        &mut self,
        item: ClientFrame,
        dst: &mut BytesMut,
    ) -> std::result::Result<(), CodecError> {
        item.encode_frame(dst);
        Ok(())
    }
}

impl Encoder<&ClientFrame> for ClientCodec {
    type Error = CodecError;

    fn encode(
        &mut self,
        item: &ClientFrame,
        dst: &mut BytesMut,
    ) -> std::result::Result<(), CodecError> {
        item.encode_frame(dst);
        Ok(())
    }
}
