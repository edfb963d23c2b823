//! Every record cut short at every byte offset is an error (never a panic, never a success),
//! and every frame cut short is "need more bytes".

mod common;

use bytes::{Bytes, BytesMut};
use tokio_util::codec::Decoder;
use zookeeper_jute::*;

fn encoded(value: &impl Encode) -> Bytes {
    let mut buf = BytesMut::new();
    value.encode(&mut buf);
    buf.freeze()
}

/// Asserts that every strict prefix of `full` fails to decode with `decode`.
fn every_prefix_fails<T: std::fmt::Debug>(
    full: &Bytes,
    name: &str,
    decode: impl Fn(&mut Bytes) -> Result<T>,
) {
    for cut in 0..full.len() {
        let mut prefix = full.slice(..cut);
        let result = decode(&mut prefix);
        assert!(
            result.is_err(),
            "{name} cut at {cut}/{} decoded as {result:?}",
            full.len()
        );
    }
}

#[test]
fn request_bodies() {
    for request in common::requests() {
        let full = encoded(&request);
        every_prefix_fails(&full, &format!("{request:?}"), |b| {
            Request::decode(request.opcode(), b)
        });
    }
}

#[test]
fn response_bodies() {
    for (opcode, response) in common::responses() {
        let full = encoded(&response);
        every_prefix_fails(&full, &format!("{response:?}"), |b| {
            Response::decode(opcode, b)
        });
    }
}

#[test]
fn records() {
    let stat = encoded(&common::stat(1));
    every_prefix_fails(&stat, "Stat", Stat::decode);
    let event = encoded(&common::watcher_event());
    every_prefix_fails(&event, "WatcherEvent", WatcherEvent::decode);
    let header = encoded(&ReplyHeader {
        xid: 1,
        zxid: 2,
        err: ErrorCode::NoNode,
    });
    every_prefix_fails(&header, "ReplyHeader", ReplyHeader::decode);
    let header = encoded(&RequestHeader {
        xid: 1,
        opcode: OpCode::GetData,
    });
    every_prefix_fails(&header, "RequestHeader", RequestHeader::decode);
    for acl in common::acl() {
        every_prefix_fails(&encoded(&acl), "Acl", Acl::decode);
    }
}

#[test]
fn handshake_records_only_lose_the_optional_read_only_byte() {
    // Cutting exactly the trailing readOnly byte leaves a valid pre-3.4-style record; every
    // shorter prefix is an error.
    let request = common::connect_request();
    let full = encoded(&request);
    let mut without = full.slice(..full.len() - 1);
    assert_eq!(
        ConnectRequest::decode(&mut without).unwrap(),
        ConnectRequest {
            read_only: None,
            ..request
        }
    );
    every_prefix_fails(
        &full.slice(..full.len() - 1),
        "ConnectRequest",
        ConnectRequest::decode,
    );

    let response = common::connect_response();
    let full = encoded(&response);
    let mut without = full.slice(..full.len() - 1);
    assert_eq!(
        ConnectResponse::decode(&mut without).unwrap(),
        ConnectResponse {
            read_only: None,
            ..response
        }
    );
    every_prefix_fails(
        &full.slice(..full.len() - 1),
        "ConnectResponse",
        ConnectResponse::decode,
    );
}

#[test]
fn frames_cut_short_need_more_bytes() {
    let mut stream = BytesMut::new();
    for (i, request) in common::requests().iter().enumerate() {
        encode_request_frame(&mut stream, i as i32 + 1, request);
    }
    let stream = stream.freeze();
    let mut expected = Vec::new();
    {
        let mut all = BytesMut::from(&stream[..]);
        let mut decoder = FrameDecoder::default();
        while let Some(frame) = decoder.decode(&mut all).unwrap() {
            expected.push(frame);
        }
        assert!(all.is_empty());
    }
    // Feed the same stream one byte at a time: frames come out whole, in order, and a partial
    // frame is never an error.
    let mut decoder = FrameDecoder::default();
    let mut src = BytesMut::new();
    let mut got = Vec::new();
    for byte in stream.iter() {
        src.extend_from_slice(&[*byte]);
        while let Some(frame) = decoder.decode(&mut src).unwrap() {
            got.push(frame);
        }
    }
    assert_eq!(got, expected);
    assert_eq!(got.len(), common::requests().len());
}

#[test]
fn client_codec_split_anywhere() {
    let mut stream = BytesMut::new();
    codec::encode_record_frame(&mut stream, &common::connect_response());
    for (i, (_, response)) in common::responses().iter().enumerate() {
        let header = ReplyHeader {
            xid: i as i32,
            zxid: 1,
            err: ErrorCode::Ok,
        };
        encode_reply_frame(&mut stream, &header, response);
    }
    codec::encode_notification_frame(&mut stream, -1, &common::watcher_event());
    let reference: Vec<ServerFrame> = {
        let mut codec = ClientCodec::default();
        let mut src = BytesMut::from(&stream[..]);
        std::iter::from_fn(|| codec.decode(&mut src).unwrap()).collect()
    };
    assert_eq!(reference.len(), common::responses().len() + 2);
    for split in 0..stream.len() {
        let mut codec = ClientCodec::default();
        let mut src = BytesMut::from(&stream[..split]);
        let mut got = Vec::new();
        while let Some(frame) = codec.decode(&mut src).unwrap() {
            got.push(frame);
        }
        src.extend_from_slice(&stream[split..]);
        while let Some(frame) = codec.decode(&mut src).unwrap() {
            got.push(frame);
        }
        assert_eq!(got, reference, "split at {split}");
    }
}
