//! Null markers, hostile lengths and counts, oversized frames and opcodes out of place: each
//! gives a typed error naming the field, before any large allocation.

mod common;

use bytes::{Bytes, BytesMut};
use common::hex;
use tokio_util::codec::Decoder;
use zookeeper_jute::*;

fn bytes(text: &str) -> Bytes {
    Bytes::from(hex(text))
}

const STAT_ZEROS: &str = "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00";

#[test]
fn null_buffer_is_none_and_encodes_back_as_minus_one() {
    let wire = bytes(&format!("ff ff ff ff {STAT_ZEROS}"));
    let response = GetDataResponse::decode(&mut wire.clone()).unwrap();
    assert_eq!(response.data, None);
    let mut out = BytesMut::new();
    response.encode(&mut out);
    assert_eq!(&out[..], &wire[..]);

    // Empty is not null.
    let wire = bytes(&format!("00 00 00 00 {STAT_ZEROS}"));
    let response = GetDataResponse::decode(&mut wire.clone()).unwrap();
    assert_eq!(response.data, Some(Bytes::new()));
}

#[test]
fn null_string_and_vector() {
    // Non-nullable fields read null as empty.
    assert_eq!(
        CreateResponse::decode(&mut bytes("ff ff ff ff"))
            .unwrap()
            .path,
        ""
    );
    assert!(GetChildrenResponse::decode(&mut bytes("ff ff ff ff"))
        .unwrap()
        .children
        .is_empty());
    assert!(SetWatches::decode(&mut bytes(
        "00 00 00 00 00 00 00 01 ff ff ff ff ff ff ff ff ff ff ff ff"
    ))
    .unwrap()
    .data_watches
    .is_empty());
    // Nullable strings keep the difference.
    let reconfig = ReconfigRequest::decode(&mut bytes(
        "ff ff ff ff 00 00 00 00 00 00 00 01 61 ff ff ff ff ff ff ff ff",
    ))
    .unwrap();
    assert_eq!(
        reconfig,
        ReconfigRequest {
            joining_servers: None,
            leaving_servers: Some(String::new()),
            new_members: Some("a".into()),
            cur_config_id: -1,
        }
    );
    let mut out = BytesMut::new();
    reconfig.encode(&mut out);
    assert_eq!(&out[..4], &[0xff; 4]);
    // A null SASL token stays null.
    assert_eq!(
        SetSaslResponse::decode(&mut bytes("ff ff ff ff")).unwrap(),
        SetSaslResponse { token: None }
    );
}

#[test]
fn negative_lengths_other_than_null_are_errors() {
    assert_eq!(
        GetDataResponse::decode(&mut bytes(&format!("ff ff ff fe {STAT_ZEROS}"))),
        Err(DecodeError::InvalidLength {
            what: "GetDataResponse.data",
            len: -2
        })
    );
    assert_eq!(
        CreateResponse::decode(&mut bytes("80 00 00 00")),
        Err(DecodeError::InvalidLength {
            what: "CreateResponse.path",
            len: i32::MIN.into()
        })
    );
    assert_eq!(
        GetChildrenResponse::decode(&mut bytes("ff ff ff f0")),
        Err(DecodeError::InvalidLength {
            what: "GetChildrenResponse.children",
            len: -16
        })
    );
}

#[test]
fn huge_vector_count_fails_before_allocating() {
    // 2^31 - 1 strings claimed, 8 bytes left: at most 2 strings could fit.
    assert_eq!(
        GetChildrenResponse::decode(&mut bytes("7f ff ff ff 00 00 00 00 00 00 00 00")),
        Err(DecodeError::LengthTooLarge {
            what: "GetChildrenResponse.children",
            len: i32::MAX as usize,
            max: 2
        })
    );
    // ACLs take at least 12 bytes each.
    assert_eq!(
        GetAclResponse::decode(&mut bytes(
            "00 00 00 02 00 00 00 1f 00 00 00 00 00 00 00 00"
        )),
        Err(DecodeError::LengthTooLarge {
            what: "GetAclResponse.acl",
            len: 2,
            max: 1
        })
    );
}

#[test]
fn length_beyond_input_is_eof_with_sizes() {
    assert_eq!(
        GetDataResponse::decode(&mut bytes("00 10 00 00 61 62")),
        Err(DecodeError::UnexpectedEof {
            what: "GetDataResponse.data",
            needed: 0x10_0000,
            remaining: 2
        })
    );
    assert_eq!(
        Stat::decode(&mut bytes("00 00 00")),
        Err(DecodeError::UnexpectedEof {
            what: "Stat",
            needed: 68,
            remaining: 3
        })
    );
}

#[test]
fn invalid_utf8_names_the_field() {
    assert_eq!(
        GetChildrenResponse::decode(&mut bytes("00 00 00 01 00 00 00 02 c3 28")),
        Err(DecodeError::InvalidUtf8 {
            what: "GetChildrenResponse.children"
        })
    );
}

#[test]
fn frame_limits() {
    let mut decoder = FrameDecoder::new(16);
    // Exactly the limit is accepted (and waits for its body).
    let mut src = BytesMut::from(&hex("00 00 00 10 01 02")[..]);
    assert!(decoder.decode(&mut src).unwrap().is_none());
    assert_eq!(src.len(), 6, "a partial frame consumes nothing");
    // One more is refused at once, without waiting for the body.
    let mut src = BytesMut::from(&hex("00 00 00 11")[..]);
    assert!(matches!(
        decoder.decode(&mut src),
        Err(CodecError::Decode(DecodeError::FrameTooLarge {
            len: 17,
            max: 16
        }))
    ));
    // A negative length is refused.
    let mut src = BytesMut::from(&hex("ff ff ff fb")[..]);
    assert!(matches!(
        decoder.decode(&mut src),
        Err(CodecError::Decode(DecodeError::InvalidLength {
            what: "frame length",
            len: -5
        }))
    ));
    // The default is jute.maxbuffer.
    assert_eq!(DEFAULT_MAX_FRAME, 1_048_575);
    let mut src = BytesMut::from(&hex("00 10 00 00")[..]);
    assert!(matches!(
        ClientCodec::default().decode(&mut src),
        Err(CodecError::Decode(DecodeError::FrameTooLarge {
            len: 1_048_576,
            max: 1_048_575
        }))
    ));
    // Fewer than four bytes is never an error.
    for len in 0..4 {
        let mut src = BytesMut::from(&[0xffu8; 4][..len]);
        assert!(decoder.decode(&mut src).unwrap().is_none());
    }
}

#[test]
fn opcodes_out_of_place() {
    for opcode in [
        OpCode::Check,
        OpCode::DeleteContainer,
        OpCode::Notification,
        OpCode::CreateSession,
        OpCode::Error,
        OpCode::Unknown(99),
    ] {
        assert_eq!(
            Request::decode(opcode, &mut Bytes::new()),
            Err(DecodeError::UnexpectedOpCode {
                what: "request",
                opcode: opcode.as_i32()
            })
        );
        assert_eq!(
            Response::decode(opcode, &mut Bytes::new()),
            Err(DecodeError::UnexpectedOpCode {
                what: "response",
                opcode: opcode.as_i32()
            })
        );
    }
    // A server codec reports an unknown opcode instead of guessing.
    let mut codec = ServerCodec::default();
    let mut src = BytesMut::new();
    codec::encode_record_frame(&mut src, &common::connect_request());
    src.extend_from_slice(&hex("00 00 00 08 00 00 00 01 00 00 00 63"));
    assert!(matches!(
        codec.decode(&mut src),
        Ok(Some(ClientFrame::Connect(_)))
    ));
    assert!(matches!(
        codec.decode(&mut src),
        Err(CodecError::Decode(DecodeError::UnexpectedOpCode {
            opcode: 99,
            ..
        }))
    ));
}

#[test]
fn multi_ops_out_of_place() {
    // A getACL op inside a multi request.
    assert_eq!(
        MultiRequest::decode(&mut bytes("00 00 00 06 00 ff ff ff ff 00 00 00 01 2f")),
        Err(DecodeError::InvalidMultiOp {
            what: "MultiRequest",
            opcode: 6
        })
    );
    // A result of type 99 inside a multi response.
    assert_eq!(
        MultiResponse::decode(&mut bytes("00 00 00 63 00 00 00 00 00")),
        Err(DecodeError::InvalidMultiOp {
            what: "MultiResponse",
            opcode: 99
        })
    );
    // An unterminated multi is an error, not a loop.
    assert!(MultiResponse::decode(&mut bytes("00 00 00 02 00 00 00 00 00")).is_err());
    // The empty multi is just the terminator.
    assert_eq!(
        MultiResponse::decode(&mut bytes("ff ff ff ff 01 ff ff ff ff")).unwrap(),
        MultiResponse::default()
    );
}

#[test]
fn booleans_are_true_when_non_zero() {
    let request = GetDataRequest::decode(&mut bytes("00 00 00 01 2f 02")).unwrap();
    assert!(request.watch);
    let mut out = BytesMut::new();
    request.encode(&mut out);
    assert_eq!(out[5], 1, "written back as 1");
}

#[test]
fn trailing_bytes_after_a_record_are_left_alone() {
    // createContainer answered to a 3-argument create: path then 68 more bytes; a reader of
    // CreateResponse takes the path and leaves the rest.
    let mut body = bytes(&format!("00 00 00 02 2f 61 {STAT_ZEROS}"));
    let response = CreateResponse::decode(&mut body).unwrap();
    assert_eq!(response.path, "/a");
    assert_eq!(body.len(), 68);
}
