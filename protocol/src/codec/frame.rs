//! Length-prefixed frames: `[len: i32][payload: len bytes]`, where `len` counts the payload only.

use bytes::{Buf, Bytes, BytesMut};
use tokio_util::codec::Decoder;

use super::CodecError;
use crate::consts::{xid, ErrorCode};
use crate::error::DecodeError;
use crate::jute::Encode;
use crate::records::{ReplyHeader, RequestHeader, WatcherEvent};
use crate::{Request, Response};

/// ZooKeeper's default `jute.maxbuffer`: the largest frame payload servers (and 3.6+ Java
/// clients) accept, 1,048,575 bytes.
pub const DEFAULT_MAX_FRAME: usize = 1_048_575;

/// Bytes of the length prefix.
const LEN_PREFIX: usize = 4;

/// Splits one frame payload off the front of `src`.
///
/// `Ok(None)` when `src` does not yet hold a whole frame (room for the rest is reserved); an
/// error for a negative length or one above `max_frame` (the connection must then be closed,
/// as servers and the Java client do). The payload is a zero-copy slice of `src`.
pub fn decode_frame(src: &mut BytesMut, max_frame: usize) -> Result<Option<Bytes>, DecodeError> {
    if src.len() < LEN_PREFIX {
        return Ok(None);
    }
    let len = i32::from_be_bytes([src[0], src[1], src[2], src[3]]);
    let len = usize::try_from(len).map_err(|_| DecodeError::InvalidLength {
        what: "frame length",
        len: len.into(),
    })?;
    if len > max_frame {
        return Err(DecodeError::FrameTooLarge {
            len,
            max: max_frame,
        });
    }
    let total = LEN_PREFIX + len;
    if src.len() < total {
        src.reserve(total - src.len());
        return Ok(None);
    }
    src.advance(LEN_PREFIX);
    Ok(Some(src.split_to(len).freeze()))
}

/// What [`FrameReader::next`] splits off the front of a stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// A whole frame within the limit: its payload, a zero-copy slice of the buffer.
    Whole(Bytes),
    /// A frame over the limit: the first bytes of its payload (a copy, so that it holds no
    /// part of the buffer) and the payload's length. The rest of the payload is dropped as it
    /// arrives, never buffered.
    Oversized {
        /// The payload's first bytes, as many as were asked for.
        head: Bytes,
        /// The payload's length, as the frame's prefix gave it.
        len: usize,
    },
}

/// Splits a stream into frames with the limit and errors of [`decode_frame`], and can read on
/// past a frame over the limit instead of failing: the caller reads its head, enough to say
/// which request it answers, and the reader drops the rest of it as it arrives. The peer's
/// frames stay in step, so the connection can be kept while memory stays bounded by the limit
/// however long the frame claims to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameReader {
    max_frame: usize,
    /// Bytes of an oversized frame still to drop.
    skipping: usize,
}

impl FrameReader {
    /// A reader accepting payloads up to `max_frame` bytes.
    pub fn new(max_frame: usize) -> FrameReader {
        FrameReader {
            max_frame,
            skipping: 0,
        }
    }

    /// The largest payload read whole.
    pub fn max_frame(&self) -> usize {
        self.max_frame
    }

    /// Bytes of an oversized frame still to be dropped when they arrive.
    pub fn skipping(&self) -> usize {
        self.skipping
    }

    /// Forgets an oversized frame being dropped: the stream starts afresh (a new connection).
    pub fn reset(&mut self) {
        self.skipping = 0;
    }

    /// Drops what arrived of an oversized frame being skipped; true once none is left to
    /// drop, when `src` starts at a frame (so that a caller may look at it before
    /// [`next`](Self::next)).
    pub fn skip(&mut self, src: &mut BytesMut) -> bool {
        let n = self.skipping.min(src.len());
        src.advance(n);
        self.skipping -= n;
        self.skipping == 0
    }

    /// Drops what arrived of an oversized frame being skipped, then splits the next frame off
    /// `src`.
    ///
    /// A frame over the limit is returned as [`Frame::Oversized`] with the first `keep_head`
    /// bytes of its payload once they have arrived. Without `keep_head`, or for a frame shorter
    /// than it, the frame is the error [`decode_frame`] gives ([`DecodeError::FrameTooLarge`],
    /// `src` left as it was). `Ok(None)`: more bytes are needed.
    pub fn next(
        &mut self,
        src: &mut BytesMut,
        keep_head: Option<usize>,
    ) -> Result<Option<Frame>, DecodeError> {
        if !self.skip(src) {
            return Ok(None);
        }
        // One limit, one check: what decode_frame refuses is what may be skipped.
        match decode_frame(src, self.max_frame) {
            Ok(frame) => Ok(frame.map(Frame::Whole)),
            Err(DecodeError::FrameTooLarge { len, max }) => match keep_head {
                Some(head) if head <= len => {
                    if src.len() < LEN_PREFIX + head {
                        return Ok(None);
                    }
                    let kept = Bytes::copy_from_slice(&src[LEN_PREFIX..LEN_PREFIX + head]);
                    src.advance(LEN_PREFIX + head);
                    self.skipping = len - head;
                    Ok(Some(Frame::Oversized { head: kept, len }))
                }
                _ => Err(DecodeError::FrameTooLarge { len, max }),
            },
            Err(e) => Err(e),
        }
    }
}

/// A raw frame decoder yielding each payload as `Bytes`, without looking inside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameDecoder {
    /// Largest accepted payload; longer frames are an error.
    pub max_frame: usize,
}

impl FrameDecoder {
    /// A decoder accepting payloads up to `max_frame` bytes.
    pub fn new(max_frame: usize) -> FrameDecoder {
        FrameDecoder { max_frame }
    }
}

impl Default for FrameDecoder {
    fn default() -> Self {
        FrameDecoder::new(DEFAULT_MAX_FRAME)
    }
}

impl Decoder for FrameDecoder {
    type Item = Bytes;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Bytes>, CodecError> {
        Ok(decode_frame(src, self.max_frame)?)
    }
}

/// Writes one frame: reserves once, writes a placeholder length, lets `write` append the
/// payload, then patches the length with what was actually written.
#[inline]
fn write_frame(buf: &mut BytesMut, payload_len: usize, write: impl FnOnce(&mut BytesMut)) {
    buf.reserve(LEN_PREFIX + payload_len);
    let start = buf.len();
    buf.extend_from_slice(&[0; LEN_PREFIX]);
    write(buf);
    patch_len(buf, start);
}

/// Sets the length prefix of the frame that starts at `start` to the bytes after it.
#[inline]
fn patch_len(buf: &mut BytesMut, start: usize) {
    let written = buf.len() - start - LEN_PREFIX;
    // A payload beyond i32::MAX cannot be framed; servers close the connection on anything
    // over their limit anyway, so saturate instead of writing a negative length.
    let len = i32::try_from(written).unwrap_or(i32::MAX);
    buf[start..start + LEN_PREFIX].copy_from_slice(&len.to_be_bytes());
}

/// Appends one frame holding a headerless record (`ConnectRequest`, `ConnectResponse`).
pub fn encode_record_frame(buf: &mut BytesMut, record: &impl Encode) {
    write_frame(buf, record.encoded_len(), |buf| record.encode(buf));
}

/// Appends one request frame: length prefix, `RequestHeader{xid, request.opcode()}`, body.
///
/// Reserves the whole frame once, writes the length placeholder and the header as one
/// 12-byte append, encodes the body in place, then patches the length.
#[inline]
pub fn encode_request_frame(buf: &mut BytesMut, xid: i32, request: &Request) {
    buf.reserve(LEN_PREFIX + RequestHeader::LEN + request.encoded_len());
    let start = buf.len();
    let mut head = [0u8; LEN_PREFIX + RequestHeader::LEN];
    head[4..8].copy_from_slice(&xid.to_be_bytes());
    head[8..12].copy_from_slice(&request.opcode().as_i32().to_be_bytes());
    buf.extend_from_slice(&head);
    request.encode(buf);
    patch_len(buf, start);
}

/// Appends one reply frame: length prefix, `header`, then `response` only if `header.err` is
/// OK (servers send no body with an error).
pub fn encode_reply_frame(buf: &mut BytesMut, header: &ReplyHeader, response: &Response) {
    let with_body = header.err.is_ok();
    let body_len = if with_body { response.encoded_len() } else { 0 };
    write_frame(buf, ReplyHeader::LEN + body_len, |buf| {
        header.encode(buf);
        if with_body {
            response.encode(buf);
        }
    });
}

/// Appends one reply frame whose body is already encoded.
pub fn encode_raw_reply_frame(buf: &mut BytesMut, header: &ReplyHeader, body: &[u8]) {
    write_frame(buf, ReplyHeader::LEN + body.len(), |buf| {
        header.encode(buf);
        buf.extend_from_slice(body);
    });
}

/// Appends one notification frame: `ReplyHeader{xid −1, zxid, err 0}` and the event.
pub fn encode_notification_frame(buf: &mut BytesMut, zxid: i64, event: &WatcherEvent) {
    let header = ReplyHeader {
        xid: xid::NOTIFICATION,
        zxid,
        err: ErrorCode::Ok,
    };
    write_frame(buf, ReplyHeader::LEN + event.encoded_len(), |buf| {
        header.encode(buf);
        event.encode(buf);
    });
}
