//! Callers woken together by one batch of replies have what they ask next written together, on
//! a multi-thread runtime too, where the first of them to ask would otherwise wake the session
//! task ahead of the others (tokio runs the task a worker just woke next) and every request
//! would cost a write of its own. The server is scripted because only it sees how the requests
//! arrive: it answers every caller's first request in one write, then reads once.

use std::sync::mpsc;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use zookeeper_jute::{Encode, ErrorCode, ReplyHeader};
use zookeeper_tokio::Client;

use crate::common::{current_thread, multi_thread, within};
use crate::server::{well_behaved, FakeServer, Peer};

const CALLERS: usize = 50;

/// The xids of the requests (not pings) framed whole in `bytes`.
fn xids_in(mut bytes: Bytes) -> Vec<i32> {
    let mut xids = Vec::new();
    while bytes.len() >= 8 {
        let len = bytes.get_i32() as usize;
        if bytes.len() < len {
            break;
        }
        let xid = bytes.slice(..4).get_i32();
        if xid > 0 {
            xids.push(xid);
        }
        bytes.advance(len);
    }
    xids
}

/// Reads `n` requests and answers them all (`NONODE`) in one write; false once the client
/// went away.
async fn answer_in_one_write(peer: &mut Peer, n: usize) -> bool {
    let mut answers = BytesMut::new();
    for _ in 0..n {
        let Some(request) = peer.next_request().await else {
            return false;
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
    true
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
            if !answer_in_one_write(&mut peer, CALLERS).await {
                return;
            }
            let _ = seen_tx.send(xids_in(peer.read_available().await).len());
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

/// How many replies the turn before the caller's two requests answers: one leaves the
/// connection idle and lent to callers, two (the way a lock's create and listing are
/// answered) wake the caller with nothing lent.
const ANSWERED: [usize; 2] = [1, 2];

/// A caller that makes two requests before it waits for either (a lock's release and its next
/// acquisition, say) has them written together, whatever the caller does between the two
/// calls: written apart, ZooKeeper may log and commit the first as a batch of its own. The
/// caller here blocks its thread between the calls, as computation does; before, the first
/// request was written at once, by the caller under a lend. The server is scripted because
/// only it sees how the requests arrive.
#[test]
fn requests_a_caller_makes_before_it_waits_are_written_together() {
    for shape in ["current-thread", "multi-thread"] {
        for answered in ANSWERED {
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
                    if !answer_in_one_write(&mut peer, answered).await {
                        return;
                    }
                    let arrived = xids_in(peer.read_available().await);
                    let _ = seen_tx.send(arrived.len());
                    for xid in arrived {
                        peer.reply(xid, 1, ErrorCode::NoNode, &[]).await;
                    }
                    peer.serve_empty().await;
                }
            });
            let runtime = match shape {
                "current-thread" => current_thread(),
                _ => multi_thread(),
            };
            runtime.block_on(async {
                let client = within("connect", Client::connect(&server.connect_string()))
                    .await
                    .unwrap();
                let caller = tokio::spawn(async move {
                    let first: Vec<_> = (0..answered).map(|_| client.exists("/a")).collect();
                    for answer in first {
                        assert_eq!(answer.await.unwrap(), None);
                    }
                    let c = client.exists("/c");
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    let d = client.exists("/d");
                    let (c, d) = tokio::join!(c, d);
                    assert_eq!((c.unwrap(), d.unwrap()), (None, None));
                    client.close().await;
                });
                within("the caller", caller).await.unwrap();
            });
            assert_eq!(
                seen.recv().unwrap(),
                2,
                "{shape} runtime, {answered} answered before: both requests in one write"
            );
        }
    }
}
