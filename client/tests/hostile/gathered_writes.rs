//! Callers woken together by one batch of replies have what they ask next written together, on
//! a multi-thread runtime too, where the first of them to ask would otherwise wake the session
//! task ahead of the others (tokio runs the task a worker just woke next) and every request
//! would cost a write of its own. The server is scripted because only it sees how the requests
//! arrive: it answers every caller's first request in one write, then reads once.

use std::sync::mpsc;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use zookeeper_jute::{Encode, ErrorCode, ReplyHeader};
use zookeeper_tokio::Client;

use crate::common::within;
use crate::server::{well_behaved, FakeServer};

const CALLERS: usize = 50;

/// Requests (not pings) framed whole in `bytes`.
fn requests_in(mut bytes: Bytes) -> usize {
    let mut requests = 0;
    while bytes.len() >= 8 {
        let len = bytes.get_i32() as usize;
        if bytes.len() < len {
            break;
        }
        let xid = bytes.slice(..4).get_i32();
        requests += usize::from(xid > 0);
        bytes.advance(len);
    }
    requests
}

#[test]
fn requests_of_callers_woken_by_one_batch_of_replies_are_written_together() {
    let (seen_tx, seen) = mpsc::channel();
    let server = FakeServer::start(move |mut peer| {
        let seen_tx = seen_tx.clone();
        async move {
            if peer.index > 0 {
                return well_behaved(peer).await;
            }
            if peer.handshake().await.is_none() {
                return;
            }
            let mut answers = BytesMut::new();
            for _ in 0..CALLERS {
                let Some(request) = peer.next_request().await else {
                    return;
                };
                let mut reply = BytesMut::new();
                ReplyHeader {
                    xid: request.xid,
                    zxid: 1,
                    err: ErrorCode::NoNode,
                }
                .encode(&mut reply);
                answers.put_i32(reply.len() as i32);
                answers.extend_from_slice(&reply);
            }
            peer.write_raw(&answers).await;
            let _ = seen_tx.send(requests_in(peer.read_available().await));
            // Dropping the connection ends the second calls with a connection loss.
        }
    });

    // One worker, so that which task runs when is the scheduler's rule, not a race.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = within("connect", Client::connect(&server.connect_string()))
            .await
            .unwrap();
        let callers: Vec<_> = (0..CALLERS)
            .map(|_| {
                let client = client.clone();
                tokio::spawn(async move {
                    assert_eq!(client.exists("/a").await.unwrap(), None);
                    let _ = client.exists("/b").await;
                })
            })
            .collect();
        for caller in callers {
            within("a caller", caller).await.unwrap();
        }
    });
    assert_eq!(
        seen.recv().unwrap(),
        CALLERS,
        "the second requests of all callers arrive in one write"
    );
}
