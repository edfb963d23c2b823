//! The codec shared by both ends of a connection: the first frame read is the handshake
//! record (which has no header), every later one a headed frame. Only what is read and
//! written differs between the client and the server side.

use std::borrow::Borrow;
use std::marker::PhantomData;

use bytes::{Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use super::frame::{decode_frame, DEFAULT_MAX_FRAME};
use super::{ClientFrame, CodecError, ServerFrame};
use crate::jute::Decode;
use crate::records::{ConnectRequest, ConnectResponse};
use crate::Result;

/// One end of a connection: the frames it reads and the frames it writes.
pub trait Side {
    /// Frames read from the peer.
    type Read;
    /// Frames written to the peer.
    type Write;
    /// Parses the first payload of a connection: the handshake record.
    fn decode_handshake(payload: Bytes) -> Result<Self::Read>;
    /// Parses any later payload.
    fn decode_after_handshake(payload: Bytes) -> Result<Self::Read>;
    /// Appends a whole frame to `dst`.
    fn encode(item: &Self::Write, dst: &mut BytesMut);
}

/// The client end: writes [`ClientFrame`]s, reads [`ServerFrame`]s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientSide {}

/// The server end (for test servers): writes [`ServerFrame`]s, reads [`ClientFrame`]s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerSide {}

impl Side for ClientSide {
    type Read = ServerFrame;
    type Write = ClientFrame;

    fn decode_handshake(mut payload: Bytes) -> Result<ServerFrame> {
        Ok(ServerFrame::Connect(ConnectResponse::decode(&mut payload)?))
    }

    fn decode_after_handshake(payload: Bytes) -> Result<ServerFrame> {
        ServerFrame::decode_after_handshake(payload)
    }

    #[inline]
    fn encode(item: &ClientFrame, dst: &mut BytesMut) {
        item.encode_frame(dst)
    }
}

impl Side for ServerSide {
    type Read = ClientFrame;
    type Write = ServerFrame;

    fn decode_handshake(mut payload: Bytes) -> Result<ClientFrame> {
        Ok(ClientFrame::Connect(ConnectRequest::decode(&mut payload)?))
    }

    fn decode_after_handshake(payload: Bytes) -> Result<ClientFrame> {
        ClientFrame::decode_after_handshake(payload)
    }

    fn encode(item: &ServerFrame, dst: &mut BytesMut) {
        item.encode_frame(dst)
    }
}

/// The codec of one connection, for the end `S`. Use a new codec for every connection: it
/// remembers whether the handshake record has been read.
#[derive(Debug, PartialEq, Eq)]
pub struct ConnectionCodec<S> {
    max_frame: usize,
    handshake_done: bool,
    side: PhantomData<fn() -> S>,
}

/// The codec of a client connection: the first frame read is the `ConnectResponse`, every
/// later one a reply or a notification.
pub type ClientCodec = ConnectionCodec<ClientSide>;

/// The codec of a server connection: the first frame read is the `ConnectRequest`, every later
/// one a request.
pub type ServerCodec = ConnectionCodec<ServerSide>;

impl<S> Clone for ConnectionCodec<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for ConnectionCodec<S> {}

impl<S> ConnectionCodec<S> {
    /// A codec for a fresh connection, accepting frames up to `max_frame` payload bytes
    /// ([`DEFAULT_MAX_FRAME`] matches the server default).
    pub fn new(max_frame: usize) -> Self {
        ConnectionCodec {
            max_frame,
            handshake_done: false,
            side: PhantomData,
        }
    }

    /// The largest accepted payload.
    pub fn max_frame(&self) -> usize {
        self.max_frame
    }

    /// True once the handshake record has been decoded.
    pub fn handshake_done(&self) -> bool {
        self.handshake_done
    }
}

impl<S> Default for ConnectionCodec<S> {
    fn default() -> Self {
        ConnectionCodec::new(DEFAULT_MAX_FRAME)
    }
}

impl<S: Side> Decoder for ConnectionCodec<S> {
    type Item = S::Read;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> std::result::Result<Option<S::Read>, CodecError> {
        let Some(payload) = decode_frame(src, self.max_frame)? else {
            return Ok(None);
        };
        if !self.handshake_done {
            let frame = S::decode_handshake(payload)?;
            self.handshake_done = true;
            return Ok(Some(frame));
        }
        Ok(Some(S::decode_after_handshake(payload)?))
    }
}

// One impl for owned frames and for references: a caller keeping its frames (a scripted
// server replaying canned replies) need not clone them.
impl<S: Side, F: Borrow<S::Write>> Encoder<F> for ConnectionCodec<S> {
    type Error = CodecError;

    fn encode(&mut self, item: F, dst: &mut BytesMut) -> std::result::Result<(), CodecError> {
        S::encode(item.borrow(), dst);
        Ok(())
    }
}
