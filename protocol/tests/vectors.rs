//! The hex vectors of the protocol reference (§6, plus the observed replies quoted in §2),
//! byte for byte in both directions.

mod common;

use bytes::{Bytes, BytesMut};
use common::hex;
use tokio_util::codec::{Decoder, Encoder};
use zookeeper_jute::codec::encode_record_frame;
use zookeeper_jute::*;

/// Feeds a whole frame to a client codec that has already seen the handshake.
fn client_decode(frame: &[u8]) -> ServerFrame {
    let mut codec = ClientCodec::default();
    let mut connect = BytesMut::new();
    encode_record_frame(&mut connect, &common::connect_response());
    codec.decode(&mut connect).unwrap().unwrap();
    let mut src = BytesMut::from(frame);
    let decoded = codec.decode(&mut src).unwrap().expect("a whole frame");
    assert!(src.is_empty(), "the frame was consumed exactly");
    decoded
}

/// Feeds a whole frame to a server codec that has already seen the handshake.
fn server_decode(frame: &[u8]) -> ClientFrame {
    let mut codec = ServerCodec::default();
    let mut connect = BytesMut::new();
    encode_record_frame(&mut connect, &common::connect_request());
    codec.decode(&mut connect).unwrap().unwrap();
    let mut src = BytesMut::from(frame);
    let decoded = codec.decode(&mut src).unwrap().expect("a whole frame");
    assert!(src.is_empty(), "the frame was consumed exactly");
    decoded
}

fn request_frame(xid: i32, request: &Request) -> Vec<u8> {
    let mut buf = BytesMut::new();
    encode_request_frame(&mut buf, xid, request);
    buf.to_vec()
}

fn reply(frame: ServerFrame) -> (ReplyHeader, Bytes) {
    match frame {
        ServerFrame::Reply { header, body } => (header, body),
        other => panic!("expected a reply, got {other:?}"),
    }
}

#[test]
fn vector_a_connect_request() {
    let wire = hex(
        "00 00 00 2d 00 00 00 00 00 00 00 00 00 00 00 00 00 00 75 30 00 00 00 00 00 00 00 00
         00 00 00 10 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00",
    );
    let request = ConnectRequest::new_session(30_000, false);
    let mut buf = BytesMut::new();
    ClientCodec::default()
        .encode(ClientFrame::Connect(request.clone()), &mut buf)
        .unwrap();
    assert_eq!(&buf[..], &wire[..]);
    assert_eq!(wire.len(), 49);

    let mut src = BytesMut::from(&wire[..]);
    let decoded = ServerCodec::default().decode(&mut src).unwrap().unwrap();
    assert_eq!(decoded, ClientFrame::Connect(request));
}

#[test]
fn vector_a_connect_response_observed() {
    let wire = hex(
        "00 00 00 25 00 00 00 00 00 00 75 30 01 00 00 06 79 b3 00 00 00 00 00 10
         0f 8f 82 9b f0 94 87 33 05 d6 ca d5 b9 e6 e3 7b 00",
    );
    let mut src = BytesMut::from(&wire[..]);
    let mut codec = ClientCodec::default();
    let Some(ServerFrame::Connect(response)) = codec.decode(&mut src).unwrap() else {
        panic!("expected the connect response");
    };
    assert!(codec.handshake_done());
    assert_eq!(response.protocol_version, 0);
    assert_eq!(response.timeout, 30_000);
    assert_eq!(response.session_id, 0x0100_0006_79b3_0000);
    assert_eq!(
        &response.passwd[..],
        &hex("0f 8f 82 9b f0 94 87 33 05 d6 ca d5 b9 e6 e3 7b")[..]
    );
    assert_eq!(response.read_only, Some(false));
    assert!(!response.is_expired());

    let mut out = BytesMut::new();
    ServerCodec::default()
        .encode(ServerFrame::Connect(response), &mut out)
        .unwrap();
    assert_eq!(&out[..], &wire[..]);
}

#[test]
fn connect_response_without_read_only_byte() {
    // A 3.4-3.9 server answers a request without the readOnly byte with a 36-byte payload.
    let mut wire = hex(
        "00 00 00 24 00 00 00 00 00 00 75 30 01 00 00 06 79 b3 00 00 00 00 00 10
         0f 8f 82 9b f0 94 87 33 05 d6 ca d5 b9 e6 e3 7b",
    );
    let mut src = BytesMut::from(&wire[..]);
    let Some(ServerFrame::Connect(response)) = ClientCodec::default().decode(&mut src).unwrap()
    else {
        panic!("expected the connect response");
    };
    assert_eq!(response.read_only, None);
    assert_eq!(response.session_id, 0x0100_0006_79b3_0000);

    // And a 44-byte request without it decodes as an old client's.
    wire = hex(
        "00 00 00 2c 00 00 00 00 00 00 00 00 00 00 00 00 00 00 75 30 00 00 00 00 00 00 00 00
         00 00 00 10 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00",
    );
    let mut src = BytesMut::from(&wire[..]);
    let Some(ClientFrame::Connect(request)) = ServerCodec::default().decode(&mut src).unwrap()
    else {
        panic!("expected the connect request");
    };
    assert_eq!(request.read_only, None);
    let mut out = BytesMut::new();
    encode_record_frame(&mut out, &request);
    assert_eq!(&out[..], &wire[..]);
}

#[test]
fn vector_b_get_data_request() {
    let wire = hex("00 00 00 11 00 00 00 01 00 00 00 04 00 00 00 04 2f 66 6f 6f 01");
    let request = Request::GetData(GetDataRequest {
        path: "/foo".into(),
        watch: true,
    });
    assert_eq!(request_frame(1, &request), wire);
    assert_eq!(
        server_decode(&wire),
        ClientFrame::Request { xid: 1, request }
    );
}

#[test]
fn vector_b_get_data_reply_observed() {
    let wire = hex(
        "00 00 00 5d 00 00 00 02 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00 05 68 65 6c 6c 6f
         00 00 00 00 00 00 00 02 00 00 00 00 00 00 00 02 00 00 01 a1 fe f4 87 89 00 00 01 a1 fe f4 87 89
         00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 05 00 00 00 00
         00 00 00 00 00 00 00 02",
    );
    let (header, mut body) = reply(client_decode(&wire));
    assert_eq!(
        header,
        ReplyHeader {
            xid: 2,
            zxid: 2,
            err: ErrorCode::Ok
        }
    );
    let Response::GetData(response) = Response::decode(OpCode::GetData, &mut body).unwrap() else {
        panic!("expected getData");
    };
    assert!(body.is_empty());
    assert_eq!(response.data.as_deref(), Some(&b"hello"[..]));
    assert_eq!(
        response.stat,
        Stat {
            czxid: 2,
            mzxid: 2,
            ctime: 0x0000_01a1_fef4_8789,
            mtime: 0x0000_01a1_fef4_8789,
            version: 0,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: 0,
            data_length: 5,
            num_children: 0,
            pzxid: 2,
        }
    );

    let mut out = BytesMut::new();
    encode_reply_frame(&mut out, &header, &Response::GetData(response));
    assert_eq!(&out[..], &wire[..]);
}

#[test]
fn vector_c_notification() {
    let wire = hex("00 00 00 20 ff ff ff ff ff ff ff ff ff ff ff ff 00 00 00 00
         00 00 00 03 00 00 00 03 00 00 00 04 2f 66 6f 6f");
    let frame = client_decode(&wire);
    let expected = ServerFrame::Notification {
        zxid: -1,
        event: common::watcher_event(),
    };
    assert_eq!(frame, expected);
    let mut out = BytesMut::new();
    ServerCodec::default().encode(&expected, &mut out).unwrap();
    assert_eq!(&out[..], &wire[..]);
}

#[test]
fn vector_c_notification_3_9_carries_zxid() {
    let wire = hex("00 00 00 20 ff ff ff ff 00 00 00 01 00 00 00 04 00 00 00 00
         00 00 00 03 00 00 00 03 00 00 00 04 2f 66 6f 6f");
    let ServerFrame::Notification { zxid, event } = client_decode(&wire) else {
        panic!("expected a notification");
    };
    assert_eq!(zxid, 0x0000_0001_0000_0004);
    assert_eq!(event.path, "/foo");
}

#[test]
fn vector_d_ping() {
    let request = hex("00 00 00 08 ff ff ff fe 00 00 00 0b");
    assert_eq!(request_frame(xid::PING, &Request::Ping), request);
    assert_eq!(
        server_decode(&request),
        ClientFrame::Request {
            xid: -2,
            request: Request::Ping
        }
    );

    let wire = hex("00 00 00 10 ff ff ff fe 00 00 00 00 00 00 00 04 00 00 00 00");
    let (header, body) = reply(client_decode(&wire));
    assert_eq!(
        header,
        ReplyHeader {
            xid: -2,
            zxid: 4,
            err: ErrorCode::Ok
        }
    );
    assert!(body.is_empty());
}

#[test]
fn vector_e_failed_multi() {
    let request_wire = hex("00 00 00 72 00 00 00 11 00 00 00 0e
         00 00 00 02 00 ff ff ff ff 00 00 00 04 2f 6d 2f 61 ff ff ff ff
         00 00 00 01 00 ff ff ff ff 00 00 00 04 2f 6d 2f 62 00 00 00 00 00 00 00 01 00 00 00 1f
            00 00 00 05 77 6f 72 6c 64 00 00 00 06 61 6e 79 6f 6e 65 00 00 00 00
         00 00 00 05 00 ff ff ff ff 00 00 00 02 2f 6d 00 00 00 01 79 ff ff ff ff
         ff ff ff ff 01 ff ff ff ff");
    let request = Request::Multi(MultiRequest {
        ops: vec![
            MultiOp::Delete(DeleteRequest {
                path: "/m/a".into(),
                version: -1,
            }),
            MultiOp::Create(CreateRequest {
                path: "/m/b".into(),
                data: Some(Bytes::new()),
                acl: Acl::open_unsafe(),
                flags: 0,
            }),
            MultiOp::SetData(SetDataRequest {
                path: "/m".into(),
                data: Some(Bytes::from_static(b"y")),
                version: -1,
            }),
        ],
    });
    assert_eq!(request_frame(17, &request), request_wire);
    assert_eq!(
        server_decode(&request_wire),
        ClientFrame::Request { xid: 17, request }
    );

    let reply_wire = hex("00 00 00 40 00 00 00 11 00 00 00 00 00 00 00 2a 00 00 00 00
         ff ff ff ff 00 00 00 00 00 00 00 00 00
         ff ff ff ff 00 ff ff ff 92 ff ff ff 92
         ff ff ff ff 00 ff ff ff fe ff ff ff fe
         ff ff ff ff 01 ff ff ff ff");
    let (header, mut body) = reply(client_decode(&reply_wire));
    assert_eq!(
        header,
        ReplyHeader {
            xid: 17,
            zxid: 0x2a,
            err: ErrorCode::Ok
        }
    );
    let response = Response::decode(OpCode::Multi, &mut body).unwrap();
    let Response::Multi(multi) = &response else {
        panic!("expected multi");
    };
    assert_eq!(
        multi.results,
        vec![
            MultiOpResult::Error { err: ErrorCode::Ok },
            MultiOpResult::Error {
                err: ErrorCode::NodeExists
            },
            MultiOpResult::Error {
                err: ErrorCode::RuntimeInconsistency
            },
        ]
    );
    assert_eq!(multi.first_error(), Some((1, ErrorCode::NodeExists)));
    let mut out = BytesMut::new();
    encode_reply_frame(&mut out, &header, &response);
    assert_eq!(&out[..], &reply_wire[..]);
}

#[test]
fn vector_f_error_reply_and_expired_handshake() {
    let wire = hex("00 00 00 10 00 00 00 03 00 00 00 00 00 00 00 04 ff ff ff 9b");
    let (header, body) = reply(client_decode(&wire));
    assert_eq!(header.xid, 3);
    assert_eq!(header.zxid, 4);
    assert_eq!(header.err, ErrorCode::NoNode);
    assert!(body.is_empty());
    let mut out = BytesMut::new();
    // An error reply has no body even if a response is passed.
    encode_reply_frame(
        &mut out,
        &header,
        &Response::Exists(ExistsResponse::default()),
    );
    assert_eq!(&out[..], &wire[..]);

    let mut expired =
        hex("00 00 00 25 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 10");
    expired.extend([0; 17]);
    let mut src = BytesMut::from(&expired[..]);
    let Some(ServerFrame::Connect(response)) = ClientCodec::default().decode(&mut src).unwrap()
    else {
        panic!("expected the connect response");
    };
    assert!(response.is_expired());
    assert_eq!(response.session_id, 0);
    assert_eq!(&response.passwd[..], &[0; 16]);
    assert_eq!(response.read_only, Some(false));
}

#[test]
fn vector_g_auth() {
    let wire = hex(
        "00 00 00 20 ff ff ff fc 00 00 00 64 00 00 00 00 00 00 00 06 64 69 67 65 73 74
         00 00 00 06 62 6f 62 3a 70 77",
    );
    let request = Request::Auth(AuthPacket {
        auth_type: 0,
        scheme: "digest".into(),
        auth: Bytes::from_static(b"bob:pw"),
    });
    assert_eq!(request_frame(xid::AUTH, &request), wire);
    assert_eq!(
        server_decode(&wire),
        ClientFrame::Request {
            xid: xid::AUTH,
            request
        }
    );

    let ok = hex("00 00 00 10 ff ff ff fc 00 00 00 00 00 00 00 00 00 00 00 00");
    let (header, _) = reply(client_decode(&ok));
    assert_eq!(
        (header.xid, header.zxid, header.err),
        (-4, 0, ErrorCode::Ok)
    );
    let failed = hex("00 00 00 10 ff ff ff fc 00 00 00 00 00 00 00 00 ff ff ff 8d");
    let (header, _) = reply(client_decode(&failed));
    assert_eq!(header.err, ErrorCode::AuthFailed);
}

#[test]
fn vector_h_set_watches() {
    let wire = hex("00 00 00 47 ff ff ff f8 00 00 00 65 00 00 00 00 00 00 00 41
         00 00 00 02 00 00 00 02 2f 77 00 00 00 04 2f 77 2f 78
         00 00 00 02 00 00 00 04 2f 77 2f 78 00 00 00 08 2f 6e 6f 74 68 65 72 65
         00 00 00 01 00 00 00 05 2f 67 6f 6e 65");
    let request = Request::SetWatches(SetWatches {
        relative_zxid: 0x41,
        data_watches: vec!["/w".into(), "/w/x".into()],
        exist_watches: vec!["/w/x".into(), "/nothere".into()],
        child_watches: vec!["/gone".into()],
    });
    assert_eq!(request_frame(xid::SET_WATCHES, &request), wire);
    assert_eq!(
        server_decode(&wire),
        ClientFrame::Request {
            xid: xid::SET_WATCHES,
            request
        }
    );
}

#[test]
fn vector_i_add_watch_reply() {
    let wire = hex("00 00 00 14 00 00 00 05 00 00 00 00 00 00 00 09 00 00 00 00 00 00 00 00");
    let (header, mut body) = reply(client_decode(&wire));
    assert_eq!(header.err, ErrorCode::Ok);
    assert_eq!(
        Response::decode(OpCode::AddWatch, &mut body).unwrap(),
        Response::AddWatch(ErrorResponse { err: 0 })
    );
}

#[test]
fn unimplemented_opcode_reply_observed() {
    let wire = hex("00 00 00 10 00 00 00 01 ff ff ff ff ff ff ff ff ff ff ff fa");
    let (header, _) = reply(client_decode(&wire));
    assert_eq!(
        header,
        ReplyHeader {
            xid: 1,
            zxid: -1,
            err: ErrorCode::Unimplemented
        }
    );
}

#[test]
fn close_session_observed() {
    let wire = hex("00 00 00 10 00 00 00 06 00 00 00 00 00 00 00 05 00 00 00 00");
    let (header, mut body) = reply(client_decode(&wire));
    assert_eq!((header.xid, header.zxid), (6, 5));
    assert_eq!(
        Response::decode(OpCode::CloseSession, &mut body).unwrap(),
        Response::Empty
    );
    assert_eq!(
        request_frame(6, &Request::CloseSession),
        hex("00 00 00 08 00 00 00 06 ff ff ff f5")
    );
}

#[test]
fn open_acl_unsafe_wire_form() {
    // §3.8: OPEN_ACL_UNSAFE as a vector<ACL>.
    let request = Request::SetAcl(SetAclRequest {
        path: String::new(),
        acl: Acl::open_unsafe(),
        version: 0,
    });
    let mut body = BytesMut::new();
    request.encode(&mut body);
    assert_eq!(
        &body[4..body.len() - 4],
        &hex("00 00 00 01 00 00 00 1f 00 00 00 05 77 6f 72 6c 64 00 00 00 06 61 6e 79 6f 6e 65")[..]
    );
}

#[test]
fn java_surrogate_pairs_decode() {
    // §1.3: jute writes U+1F600 as two 3-byte surrogates.
    let mut body = Bytes::from(hex(
        "00 00 00 01 00 00 00 03 00 00 00 0a 2f 61 ed a0 bd ed b8 80 2f 62",
    ));
    let event = WatcherEvent::decode(&mut body).unwrap();
    assert_eq!(event.path, "/a\u{1F600}/b");
    // A lone surrogate is still invalid.
    let mut body = Bytes::from(hex("00 00 00 01 00 00 00 03 00 00 00 03 ed a0 bd"));
    assert_eq!(
        WatcherEvent::decode(&mut body),
        Err(DecodeError::InvalidUtf8 {
            what: "WatcherEvent.path"
        })
    );
}
