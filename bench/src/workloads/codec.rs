//! Workload 4: the codec alone. ns per getData request encoded into a reused buffer, and ns
//! per getData reply decoded from a read buffer holding many replies (frame split, reply
//! header, GetDataResponse), the way the client meets them.

use std::hint::black_box;
use std::time::Instant;

use bytes::BytesMut;
use tokio_util::codec::Decoder;
use zookeeper_jute::{
    encode_request_frame, ClientCodec, Decode, GetDataRequest, GetDataResponse, Request,
    ServerFrame,
};

use super::{NODE, NODE_DATA_LEN};
use crate::report::Report;
use crate::stats::median;
use crate::{wire, BenchError, Ctx};

/// Replies per decode batch (about 2 MB of read buffer).
const BATCH: usize = 10_000;

pub async fn run(ctx: &Ctx, report: &mut Report) -> Result<(), BenchError> {
    let n = ctx.opts.count(2_000_000);
    let (mut encode, mut decode) = (Vec::new(), Vec::new());
    encode_ns(n / 10);
    decode_ns(n / 10)?;
    for _ in 0..ctx.opts.rounds {
        encode.push(encode_ns(n));
        decode.push(decode_ns(n)?);
    }
    report.figure("codec.encode_get_data_request", median(&encode), "ns");
    report.figure("codec.decode_get_data_reply", median(&decode), "ns");
    Ok(())
}

fn encode_ns(n: u64) -> f64 {
    let request = Request::GetData(GetDataRequest {
        path: NODE.to_string(),
        watch: false,
    });
    let mut buf = BytesMut::with_capacity(256);
    let start = Instant::now();
    for xid in 0..n {
        buf.clear();
        encode_request_frame(&mut buf, xid as i32, black_box(&request));
        black_box(&buf);
    }
    start.elapsed().as_nanos() as f64 / n as f64
}

fn decode_ns(n: u64) -> Result<f64, BenchError> {
    // Replies are hand-encoded (see `wire`): the codec is checked against an independent
    // encoder while it is timed.
    let reply = wire::get_data_reply(1, 2, &[b'x'; NODE_DATA_LEN]);
    let mut batch = Vec::with_capacity(BATCH * reply.len());
    for _ in 0..BATCH {
        batch.extend_from_slice(&reply);
    }
    let handshake = wire::connect_response(30_000, 1);
    let batches = n.div_ceil(BATCH as u64);
    let mut total = std::time::Duration::ZERO;
    for _ in 0..batches {
        let mut codec = ClientCodec::default();
        let mut src = BytesMut::from(&handshake[..]);
        codec
            .decode(&mut src)?
            .ok_or("handshake frame not decoded")?;
        src.extend_from_slice(&batch);
        let start = Instant::now();
        for _ in 0..BATCH {
            match codec.decode(&mut src)? {
                Some(ServerFrame::Reply { header, mut body }) => {
                    black_box(header);
                    black_box(GetDataResponse::decode(&mut body)?);
                }
                other => return Err(format!("expected a reply, decoded {other:?}").into()),
            }
        }
        total += start.elapsed();
    }
    Ok(total.as_nanos() as f64 / (batches * BATCH as u64) as f64)
}
