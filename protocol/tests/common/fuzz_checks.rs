//! The properties the fuzz targets check, shared with the regression tests so that every input
//! a fuzzer ever crashed on is replayed by `cargo test`.
//!
//! Each function takes arbitrary bytes and panics only if the codec misbehaves: a panic inside
//! the codec, a decoded value that does not survive encode → decode, an `encoded_len` that lies,
//! or a stream whose frames depend on how the bytes were split.
#![allow(dead_code)]

use std::fmt::Debug;

use bytes::{Bytes, BytesMut};
use tokio_util::codec::Decoder;
use zookeeper_jute::*;

/// Opcodes a reply body can be decoded for, plus a few that have none.
pub const REPLY_OPCODES: [OpCode; 28] = [
    OpCode::Create,
    OpCode::Create2,
    OpCode::CreateContainer,
    OpCode::CreateTtl,
    OpCode::Delete,
    OpCode::Exists,
    OpCode::GetData,
    OpCode::SetData,
    OpCode::GetAcl,
    OpCode::SetAcl,
    OpCode::GetChildren,
    OpCode::GetChildren2,
    OpCode::GetAllChildrenNumber,
    OpCode::GetEphemerals,
    OpCode::Sync,
    OpCode::Multi,
    OpCode::MultiRead,
    OpCode::Auth,
    OpCode::SetWatches,
    OpCode::SetWatches2,
    OpCode::AddWatch,
    OpCode::CheckWatches,
    OpCode::RemoveWatches,
    OpCode::Reconfig,
    OpCode::WhoAmI,
    OpCode::Ping,
    OpCode::CloseSession,
    OpCode::Sasl,
];

/// Encodes `value`, checks `encoded_len`, and returns the bytes.
fn encode_checked<T: Encode + Debug>(value: &T) -> Bytes {
    let mut buf = BytesMut::new();
    value.encode(&mut buf);
    assert_eq!(buf.len(), value.encoded_len(), "encoded_len of {value:?}");
    buf.freeze()
}

/// A decoded value must encode to bytes that decode back to the same value, consuming them
/// exactly, and encoding must be a fixed point from then on.
fn check_value<T: Encode + PartialEq + Debug>(value: &T, decode: impl Fn(&mut Bytes) -> Result<T>) {
    let first = encode_checked(value);
    let mut input = first.clone();
    let again = decode(&mut input).unwrap_or_else(|e| panic!("re-decoding {value:?}: {e}"));
    assert_eq!(&again, value);
    assert!(
        input.is_empty(),
        "{} bytes left re-decoding {value:?}",
        input.len()
    );
    assert_eq!(encode_checked(&again), first);
}

fn check_record<T: Encode + Decode + PartialEq + Debug>(data: &[u8]) {
    if let Ok(value) = T::decode(&mut Bytes::copy_from_slice(data)) {
        check_value(&value, T::decode);
    }
}

/// Arbitrary bytes as the body of a successful reply to the opcode picked by the first byte,
/// and as a whole post-handshake server frame payload.
pub fn reply_body(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let opcode = REPLY_OPCODES[usize::from(selector) % REPLY_OPCODES.len()];
    if let Ok(response) = Response::decode(opcode, &mut Bytes::copy_from_slice(body)) {
        check_value(&response, |b| Response::decode(opcode, b));
    }
    if let Ok(frame) = ServerFrame::decode_after_handshake(Bytes::copy_from_slice(body)) {
        let mut buf = BytesMut::new();
        frame.encode_frame(&mut buf);
        let payload = codec::decode_frame(&mut buf, usize::MAX)
            .expect("own frame")
            .expect("whole frame");
        assert!(buf.is_empty());
        let again = ServerFrame::decode_after_handshake(payload).expect("own frame decodes");
        assert_eq!(again, frame);
        if let ServerFrame::Reply { mut body, .. } = frame {
            let _ = Response::decode(opcode, &mut body);
        }
    }
}

/// Everything a codec yields from `stream`, fed in chunks of `chunk` bytes, up to and
/// including the first error (rendered, since I/O errors are not comparable).
fn drain<D>(mut decoder: D, stream: &[u8], chunk: usize) -> (Vec<D::Item>, Option<String>)
where
    D: Decoder<Error = CodecError>,
{
    let mut src = BytesMut::new();
    let mut items = Vec::new();
    for piece in stream.chunks(chunk.max(1)) {
        src.extend_from_slice(piece);
        loop {
            let before = src.len();
            match decoder.decode(&mut src) {
                Ok(Some(item)) => {
                    assert!(
                        src.len() < before,
                        "a frame was yielded without consuming input"
                    );
                    items.push(item);
                }
                Ok(None) => {
                    assert_eq!(src.len(), before, "a partial frame consumed input");
                    break;
                }
                Err(e) => return (items, Some(e.to_string())),
            }
        }
    }
    (items, None)
}

/// Feeds `stream` to a [`codec::FrameReader`] in pieces of `chunk` bytes, as [`drain`] does to a
/// decoder, keeping `keep_head` bytes of each frame over the limit.
fn drain_reader(
    max_frame: usize,
    keep_head: Option<usize>,
    stream: &[u8],
    chunk: usize,
) -> (Vec<codec::Frame>, Option<String>) {
    let mut reader = codec::FrameReader::new(max_frame);
    let mut src = BytesMut::new();
    let mut items = Vec::new();
    for piece in stream.chunks(chunk.max(1)) {
        src.extend_from_slice(piece);
        loop {
            let (before, skipping) = (src.len(), reader.skipping());
            match reader.next(&mut src, keep_head) {
                Ok(Some(frame)) => {
                    assert!(
                        src.len() < before,
                        "a frame was yielded without consuming input"
                    );
                    if let codec::Frame::Oversized { head, len } = &frame {
                        assert!(*len > max_frame, "a frame within the limit was skipped");
                        assert_eq!(Some(head.len()), keep_head);
                        assert_eq!(reader.skipping(), len - head.len());
                    }
                    items.push(frame);
                }
                Ok(None) => {
                    assert_eq!(
                        before - src.len(),
                        skipping - reader.skipping(),
                        "only bytes being skipped are consumed without a frame"
                    );
                    assert!(reader.skipping() == 0 || src.is_empty());
                    break;
                }
                Err(e) => {
                    assert_eq!(src.len(), before - (skipping - reader.skipping()));
                    return (items, Some(CodecError::from(e).to_string()));
                }
            }
        }
    }
    (items, None)
}

/// Arbitrary bytes as a stream of frames for every decoder: the first byte picks the maximum
/// frame size and the second a chunk size; the frames yielded (and the error, if any) must be
/// the same whether the stream arrives at once or in chunks.
pub fn frame_stream(data: &[u8]) {
    let [max_sel, chunk_sel, stream @ ..] = data else {
        return;
    };
    // Small limits keep the fuzzer fast (a claimed frame reserves up to the limit) while
    // reaching the same code as the default.
    let max_frame = match max_sel % 4 {
        0 => 4096,
        1 => 64,
        2 => usize::from(*max_sel),
        _ => 0,
    };
    let chunk = usize::from(*chunk_sel % 16) + 1;

    let whole = drain(FrameDecoder::new(max_frame), stream, stream.len());
    assert_eq!(drain(FrameDecoder::new(max_frame), stream, chunk), whole);

    // Asked to skip nothing, the reader is the decoder; asked to skip, it splits the stream
    // the same way however it arrives.
    let (frames, error) = drain_reader(max_frame, None, stream, chunk);
    let payloads: Vec<Bytes> = frames
        .into_iter()
        .map(|frame| match frame {
            codec::Frame::Whole(payload) => payload,
            codec::Frame::Oversized { .. } => panic!("an oversized frame was skipped unasked"),
        })
        .collect();
    assert_eq!((payloads, error), whole);
    let keep_head = Some(usize::from(*chunk_sel >> 4));
    assert_eq!(
        drain_reader(max_frame, keep_head, stream, chunk),
        drain_reader(max_frame, keep_head, stream, stream.len())
    );

    let whole = drain(ClientCodec::new(max_frame), stream, stream.len());
    assert_eq!(drain(ClientCodec::new(max_frame), stream, chunk), whole);
    for frame in &whole.0 {
        let mut buf = BytesMut::new();
        frame.encode_frame(&mut buf);
        let mut payload = codec::decode_frame(&mut buf, usize::MAX)
            .expect("own frame")
            .expect("whole frame");
        assert!(buf.is_empty());
        let again = match frame {
            ServerFrame::Connect(_) => {
                ConnectResponse::decode(&mut payload).map(ServerFrame::Connect)
            }
            _ => ServerFrame::decode_after_handshake(payload),
        };
        assert_eq!(again.as_ref(), Ok(frame));
    }

    let whole = drain(ServerCodec::new(max_frame), stream, stream.len());
    assert_eq!(drain(ServerCodec::new(max_frame), stream, chunk), whole);
}

/// Arbitrary bytes decoded as the record picked by the first byte; whatever decodes must
/// round-trip.
pub fn round_trip(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    match selector % 24 {
        0 => check_record::<ConnectRequest>(body),
        1 => check_record::<ConnectResponse>(body),
        2 => check_record::<RequestHeader>(body),
        3 => check_record::<ReplyHeader>(body),
        4 => check_record::<WatcherEvent>(body),
        5 => check_record::<Stat>(body),
        6 => check_record::<Acl>(body),
        7 => check_record::<CreateRequest>(body),
        8 => check_record::<CreateTtlRequest>(body),
        9 => check_record::<MultiRequest>(body),
        10 => check_record::<MultiResponse>(body),
        11 => check_record::<SetWatches>(body),
        12 => check_record::<SetWatches2>(body),
        13 => check_record::<ReconfigRequest>(body),
        14 => check_record::<GetAclResponse>(body),
        15 => check_record::<GetDataResponse>(body),
        16 => check_record::<GetChildren2Response>(body),
        17 => check_record::<WhoAmIResponse>(body),
        18 => check_record::<AuthPacket>(body),
        19 => check_record::<SetAclRequest>(body),
        20 | 21 => {
            // A request body for the opcode picked by the next byte (server side).
            let Some((&op, body)) = body.split_first() else {
                return;
            };
            let opcode = REPLY_OPCODES[usize::from(op) % REPLY_OPCODES.len()];
            if let Ok(request) = Request::decode(opcode, &mut Bytes::copy_from_slice(body)) {
                check_value(&request, |b| Request::decode(opcode, b));
            }
        }
        _ => {
            // A whole post-handshake client frame payload.
            if let Ok(frame) = ClientFrame::decode_after_handshake(Bytes::copy_from_slice(body)) {
                let mut buf = BytesMut::new();
                frame.encode_frame(&mut buf);
                let payload = codec::decode_frame(&mut buf, usize::MAX)
                    .expect("own frame")
                    .expect("whole frame");
                let again = ClientFrame::decode_after_handshake(payload).expect("own frame");
                assert_eq!(again, frame);
            }
        }
    }
}
