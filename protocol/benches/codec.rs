//! Codec cost of the hot path: encoding a getData request frame and decoding a getData reply
//! frame (100 bytes of data and a Stat), each beside a plain copy of the same frame's bytes.
//!
//! Run: `cargo bench -p zookeeper-jute --bench codec`

use std::hint::black_box;

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, Criterion};
use tokio_util::codec::Decoder;
use zookeeper_jute::codec::encode_record_frame;
use zookeeper_jute::*;

fn get_data_request() -> Request {
    Request::GetData(GetDataRequest {
        path: "/benchmark/node-0000000042".into(),
        watch: false,
    })
}

fn get_data_reply_frame() -> Bytes {
    let mut buf = BytesMut::new();
    encode_reply_frame(
        &mut buf,
        &ReplyHeader {
            xid: 42,
            zxid: 0x1_0000_0042,
            err: ErrorCode::Ok,
        },
        &Response::GetData(GetDataResponse {
            data: Some(Bytes::from(vec![0x5A; 100])),
            stat: Stat {
                czxid: 0x1_0000_0002,
                mzxid: 0x1_0000_0040,
                ctime: 1_700_000_000_000,
                mtime: 1_700_000_000_123,
                version: 7,
                cversion: 0,
                aversion: 0,
                ephemeral_owner: 0,
                data_length: 100,
                num_children: 0,
                pzxid: 0x1_0000_0002,
            },
        }),
    );
    buf.freeze()
}

fn encode(c: &mut Criterion) {
    let request = get_data_request();
    let mut frame = BytesMut::new();
    encode_request_frame(&mut frame, 1, &request);
    let frame = frame.freeze();
    let mut group = c.benchmark_group("getData request");
    let mut out = BytesMut::with_capacity(4096);
    group.bench_function("encode_request_frame", |b| {
        let mut xid = 0i32;
        b.iter(|| {
            out.clear();
            xid = xid.wrapping_add(1);
            encode_request_frame(&mut out, xid, black_box(&request));
            black_box(&out);
        })
    });
    group.bench_function(
        format!("plain copy of the {}-byte frame", frame.len()),
        |b| {
            b.iter(|| {
                out.clear();
                out.extend_from_slice(black_box(&frame));
                black_box(&out);
            })
        },
    );
    group.finish();
}

fn decode(c: &mut Criterion) {
    let frame = get_data_reply_frame();
    let payload = frame.slice(4..);
    let mut group = c.benchmark_group("getData reply (100 B data + Stat)");

    group.bench_function("decode header + GetDataResponse from payload", |b| {
        b.iter(|| {
            let mut body = black_box(&payload).clone();
            let header = ReplyHeader::decode(&mut body).unwrap();
            let response = GetDataResponse::decode(&mut body).unwrap();
            black_box((header, response));
        })
    });

    // The full path of a client: bytes arrive in the read buffer, the codec splits the frame
    // off, then the body is decoded. Includes copying the frame into the read buffer.
    let mut codec = ClientCodec::default();
    let mut src = BytesMut::with_capacity(64 * 1024);
    encode_record_frame(&mut src, &ConnectResponse::default());
    codec.decode(&mut src).unwrap();
    group.bench_function(
        "ClientCodec::decode + GetDataResponse (incl. copy-in)",
        |b| {
            b.iter(|| {
                src.extend_from_slice(black_box(&frame));
                let Some(ServerFrame::Reply { header, mut body }) = codec.decode(&mut src).unwrap()
                else {
                    unreachable!("the benchmark frame is a reply")
                };
                let response = GetDataResponse::decode(&mut body).unwrap();
                black_box((header, response));
            })
        },
    );

    let mut out = BytesMut::with_capacity(64 * 1024);
    group.bench_function(
        format!("plain copy of the {}-byte frame", frame.len()),
        |b| {
            b.iter(|| {
                out.clear();
                out.extend_from_slice(black_box(&frame));
                black_box(&out);
            })
        },
    );
    group.finish();
}

criterion_group!(benches, encode, decode);
criterion_main!(benches);
