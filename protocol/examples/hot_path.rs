//! Runs one hot-path codec operation N times, for profilers and instruction counters
//! (`valgrind --tool=callgrind`), whose counts stay meaningful on a busy machine where
//! wall-clock benchmarks do not.
//!
//! Usage: `cargo run --release -p zookeeper-jute --example hot_path -- <encode|decode|client-codec|copy-request|copy-reply> <N>`
//!
//! Instructions per operation = (count at N = 11000 − count at N = 1000) / 10000, which removes
//! the fixed start-up cost.

use std::hint::black_box;

use bytes::{Bytes, BytesMut};
use zookeeper_jute::*;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(which), Some(n)) = (args.next(), args.next().and_then(|n| n.parse::<u32>().ok()))
    else {
        eprintln!(
            "usage: hot_path <encode|decode|client-codec|copy-request|copy-reply> <iterations>"
        );
        std::process::exit(2);
    };

    let request = Request::GetData(GetDataRequest {
        path: "/benchmark/node-0000000042".into(),
        watch: false,
    });
    let mut request_frame = BytesMut::new();
    encode_request_frame(&mut request_frame, 1, &request);
    let mut reply_frame = BytesMut::new();
    encode_reply_frame(
        &mut reply_frame,
        &ReplyHeader {
            xid: 42,
            zxid: 0x1_0000_0042,
            err: ErrorCode::Ok,
        },
        &Response::GetData(GetDataResponse {
            data: Some(Bytes::from(vec![0x5A; 100])),
            stat: Stat::default(),
        }),
    );
    let reply_frame = reply_frame.freeze();
    let reply_payload = reply_frame.slice(4..);
    let mut out = BytesMut::with_capacity(4096);

    match which.as_str() {
        "encode" => {
            for xid in 0..n {
                out.clear();
                encode_request_frame(&mut out, xid as i32, black_box(&request));
                black_box(&out);
            }
        }
        "decode" => {
            for _ in 0..n {
                let mut body = black_box(&reply_payload).clone();
                let header = ReplyHeader::decode(&mut body).expect("valid frame");
                let response = GetDataResponse::decode(&mut body).expect("valid frame");
                black_box((header, response));
            }
        }
        "client-codec" => {
            use tokio_util::codec::Decoder;
            let mut codec = ClientCodec::default();
            let mut src = BytesMut::with_capacity(64 * 1024);
            codec::encode_record_frame(&mut src, &ConnectResponse::default());
            codec.decode(&mut src).expect("valid frame");
            for _ in 0..n {
                src.extend_from_slice(black_box(&reply_frame));
                let Ok(Some(ServerFrame::Reply { header, mut body })) = codec.decode(&mut src)
                else {
                    panic!("the frame is a reply");
                };
                let response = GetDataResponse::decode(&mut body).expect("valid frame");
                black_box((header, response));
            }
        }
        "copy-request" => {
            for _ in 0..n {
                out.clear();
                out.extend_from_slice(black_box(&request_frame));
                black_box(&out);
            }
        }
        "copy-reply" => {
            for _ in 0..n {
                out.clear();
                out.extend_from_slice(black_box(&reply_frame));
                black_box(&out);
            }
        }
        other => {
            eprintln!("unknown operation {other}");
            std::process::exit(2);
        }
    }
}
