//! The frames a client writes ([`ClientFrame`]) and reads ([`ServerFrame`]).

use bytes::{Bytes, BytesMut};

use super::frame::{
    encode_notification_frame, encode_raw_reply_frame, encode_record_frame, encode_request_frame,
};
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
