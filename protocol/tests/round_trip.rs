//! encode → decode gives back every record unchanged, `encoded_len` is exact and decoding
//! consumes exactly what encoding wrote.

mod common;

use std::fmt::Debug;

use bytes::{Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};
use zookeeper_jute::*;

fn round_trip<T: Encode + Decode + PartialEq + Debug>(value: &T) {
    let mut buf = BytesMut::new();
    value.encode(&mut buf);
    assert_eq!(buf.len(), value.encoded_len(), "encoded_len of {value:?}");
    let mut bytes = buf.freeze();
    let decoded = T::decode(&mut bytes).unwrap_or_else(|e| panic!("{value:?}: {e}"));
    assert_eq!(&decoded, value);
    assert!(bytes.is_empty(), "{value:?} left {} bytes", bytes.len());
}

#[test]
fn data_records() {
    round_trip(&common::stat(1));
    round_trip(&Stat::default());
    round_trip(&Id::anyone());
    round_trip(&Id::auth());
    for acl in common::acl()
        .into_iter()
        .chain(Acl::read_unsafe())
        .chain(Acl::creator_all())
    {
        round_trip(&acl);
    }
    round_trip(&ClientInfo {
        auth_scheme: "sasl".into(),
        user: "zk/host@REALM ünïcødé".into(),
    });
}

#[test]
fn handshake_records_with_and_without_read_only() {
    for read_only in [None, Some(false), Some(true)] {
        round_trip(&ConnectRequest {
            read_only,
            ..common::connect_request()
        });
        round_trip(&ConnectResponse {
            read_only,
            ..common::connect_response()
        });
    }
    round_trip(&ConnectRequest::new_session(30_000, true));
}

#[test]
fn headers_and_events() {
    round_trip(&RequestHeader {
        xid: i32::MAX,
        opcode: OpCode::WhoAmI,
    });
    round_trip(&RequestHeader {
        xid: 5,
        opcode: OpCode::Unknown(99),
    });
    round_trip(&ReplyHeader {
        xid: -1,
        zxid: -1,
        err: ErrorCode::Ok,
    });
    round_trip(&ReplyHeader {
        xid: 3,
        zxid: 1 << 40,
        err: ErrorCode::Unknown(-126),
    });
    round_trip(&common::watcher_event());
    round_trip(&WatcherEvent {
        event_type: EventType::Unknown(42),
        state: KeeperState::Unknown(-1),
        path: String::new(),
    });
    round_trip(&MultiHeader::TERMINATOR);
    round_trip(&ErrorResponse { err: -110 });
    round_trip(&CheckVersionRequest {
        path: "/c".into(),
        version: 1,
    });
}

#[test]
fn every_request_body() {
    for request in common::requests() {
        let mut buf = BytesMut::new();
        request.encode(&mut buf);
        assert_eq!(buf.len(), request.encoded_len(), "{request:?}");
        let mut body = buf.freeze();
        let decoded = Request::decode(request.opcode(), &mut body).unwrap();
        assert_eq!(decoded, request);
        assert!(body.is_empty());
    }
}

#[test]
fn every_response_body() {
    for (opcode, response) in common::responses() {
        let mut buf = BytesMut::new();
        response.encode(&mut buf);
        assert_eq!(buf.len(), response.encoded_len(), "{response:?}");
        let mut body = buf.freeze();
        let decoded = Response::decode(opcode, &mut body).unwrap();
        assert_eq!(decoded, response, "opcode {opcode}");
        assert!(body.is_empty());
    }
}

#[test]
fn every_request_through_both_codecs() {
    let mut client = ClientCodec::default();
    let mut server = ServerCodec::default();
    let mut wire = BytesMut::new();
    let connect = ClientFrame::Connect(common::connect_request());
    client.encode(&connect, &mut wire).unwrap();
    let frames: Vec<ClientFrame> = common::requests()
        .into_iter()
        .enumerate()
        .map(|(i, request)| ClientFrame::Request {
            xid: i as i32 + 1,
            request,
        })
        .collect();
    for frame in &frames {
        client.encode(frame.clone(), &mut wire).unwrap();
    }
    assert_eq!(server.decode(&mut wire).unwrap(), Some(connect));
    for frame in frames {
        assert_eq!(server.decode(&mut wire).unwrap(), Some(frame));
    }
    assert_eq!(server.decode(&mut wire).unwrap(), None);
    assert!(wire.is_empty());
}

#[test]
fn every_response_through_both_codecs() {
    let mut client = ClientCodec::default();
    let mut server = ServerCodec::default();
    let mut wire = BytesMut::new();
    let connect = ServerFrame::Connect(common::connect_response());
    server.encode(&connect, &mut wire).unwrap();
    let notification = ServerFrame::Notification {
        zxid: 0x1_0000_0004,
        event: common::watcher_event(),
    };
    server.encode(&notification, &mut wire).unwrap();
    let responses = common::responses();
    for (i, (_, response)) in responses.iter().enumerate() {
        let header = ReplyHeader {
            xid: i as i32 + 1,
            zxid: 100 + i as i64,
            err: ErrorCode::Ok,
        };
        encode_reply_frame(&mut wire, &header, response);
    }
    assert_eq!(client.decode(&mut wire).unwrap(), Some(connect));
    assert_eq!(client.decode(&mut wire).unwrap(), Some(notification));
    for (i, (opcode, response)) in responses.into_iter().enumerate() {
        let Some(ServerFrame::Reply { header, mut body }) = client.decode(&mut wire).unwrap()
        else {
            panic!("expected reply {i}");
        };
        assert_eq!(header.xid, i as i32 + 1);
        assert_eq!(header.zxid, 100 + i as i64);
        assert_eq!(Response::decode(opcode, &mut body).unwrap(), response);
        assert!(body.is_empty());
    }
    assert!(wire.is_empty());
}

#[test]
fn encode_appends_after_existing_bytes() {
    // Frames are appended: the length back-patch must land on this frame, not offset 0.
    let mut buf = BytesMut::from(&b"prefix"[..]);
    let request = Request::GetData(GetDataRequest {
        path: "/foo".into(),
        watch: true,
    });
    encode_request_frame(&mut buf, 1, &request);
    assert_eq!(&buf[..6], b"prefix");
    assert_eq!(&buf[6..10], &[0, 0, 0, 17]);
    assert_eq!(buf.len(), 6 + 21);
}

#[test]
fn decoded_data_is_a_slice_of_the_frame() {
    let mut wire = BytesMut::new();
    let data = Bytes::from(vec![0x5A; 100]);
    encode_reply_frame(
        &mut wire,
        &ReplyHeader {
            xid: 1,
            zxid: 1,
            err: ErrorCode::Ok,
        },
        &Response::GetData(GetDataResponse {
            data: Some(data),
            stat: common::stat(1),
        }),
    );
    let frame_range = wire.as_ptr() as usize..wire.as_ptr() as usize + wire.len();
    let mut payload = codec::decode_frame(&mut wire, DEFAULT_MAX_FRAME)
        .unwrap()
        .unwrap();
    ReplyHeader::decode(&mut payload).unwrap();
    let response = GetDataResponse::decode(&mut payload).unwrap();
    let data = response.data.unwrap();
    assert_eq!(data.len(), 100);
    assert!(frame_range.contains(&(data.as_ptr() as usize)));
    assert!(frame_range.contains(&(data.as_ptr() as usize + 99)));
}

#[test]
fn get_data_reply_decodes_the_same_with_or_without_trailing_bytes() {
    // An exact body takes the in-place path; one with trailing bytes the general path.
    for data in [Some(Bytes::from(vec![1; 100])), Some(Bytes::new()), None] {
        let response = GetDataResponse {
            data,
            stat: common::stat(3),
        };
        let mut buf = BytesMut::new();
        response.encode(&mut buf);
        let mut exact = buf.clone().freeze();
        assert_eq!(GetDataResponse::decode(&mut exact).unwrap(), response);
        assert!(exact.is_empty());
        buf.extend_from_slice(b"xyz");
        let mut longer = buf.freeze();
        assert_eq!(GetDataResponse::decode(&mut longer).unwrap(), response);
        assert_eq!(&longer[..], b"xyz");
    }
}
