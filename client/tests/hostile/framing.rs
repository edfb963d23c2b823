//! Frames that break the protocol: too short, cut short, garbage, replies to requests never
//! made or out of order. The connection is dropped, what was in flight fails with
//! `ConnectionLoss`, and the session goes on over one new connection. A reply whose frame is
//! whole but whose body is cut short fails only its own call.

use bytes::BytesMut;
use zookeeper_jute::{Encode, ErrorCode, ReplyHeader};
use zookeeper_tokio::{Client, ErrorKind, SessionState};

use crate::common::within;
use crate::meter::MemoryWatch;
use crate::server::{FakeServer, Peer, Received, SESSION_ID};

/// The session timeout granted: an hour, so that neither the read timeout (40 min) nor a
/// request deadline (the default 60 s) can end a call within `within`'s 10 s bound. A broken
/// frame must be noticed as it comes, and the session serve again after a pause of the
/// backoff's (at most 50 ms for the first), well within that bound however loaded the machine.
const HOUR_MS: i32 = 3_600_000;

/// On the first connection, answers the first request with `answer(request)`, raw; later
/// connections are served well. Checks that the call fails with `expected`, that one new
/// connection serves the session again (the same one), and what it cost.
async fn broken_answer(answer: fn(&Received) -> Vec<u8>, expected: ErrorKind) {
    let server = FakeServer::start(move |mut peer: Peer| async move {
        let resumed = peer.handshake_granting(HOUR_MS).await;
        if peer.index > 0 {
            let resumed = resumed.map(|r| r.session_id);
            assert_eq!(resumed, Some(SESSION_ID), "the session is resumed");
            return peer.serve_empty().await;
        }
        if let Some(request) = peer.next_request().await {
            peer.write_raw(&answer(&request)).await;
            peer.serve_empty().await;
        }
    });
    let client = within("connect", Client::connect(&server.connect_string()))
        .await
        .unwrap();
    let mut changes = client.state_changes();
    let memory = MemoryWatch::start();
    let err = within("broken answer", client.get_data("/a"))
        .await
        .unwrap_err();
    assert_eq!(
        std::mem::discriminant(err.kind()),
        std::mem::discriminant(&expected),
        "{err}"
    );
    assert_eq!(within("next call", client.exists("/a")).await, Ok(None));
    assert!(memory.peak_growth() < 1 << 20, "{}", memory.peak_growth());
    if err == ErrorKind::ConnectionLoss {
        assert_eq!(
            changes.next().await,
            Some(SessionState::Disconnected),
            "the connection was dropped"
        );
        assert_eq!(server.accepted(), 2, "one new connection");
    } else {
        assert_eq!(server.accepted(), 1, "the connection stayed");
    }
}

fn framed(payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

fn header(xid: i32) -> BytesMut {
    let mut out = BytesMut::new();
    ReplyHeader {
        xid,
        zxid: 3,
        err: ErrorCode::Ok,
    }
    .encode(&mut out);
    out
}

#[tokio::test]
async fn a_frame_shorter_than_a_reply_header() {
    broken_answer(|_| framed(&[0, 0, 0]), ErrorKind::ConnectionLoss).await;
}

#[tokio::test]
async fn a_notification_cut_short() {
    broken_answer(
        |_| {
            let mut payload = header(-1);
            payload.extend_from_slice(&[0, 0, 0, 3, 0, 0]);
            framed(&payload)
        },
        ErrorKind::ConnectionLoss,
    )
    .await;
}

#[tokio::test]
async fn a_reply_with_the_wrong_xid() {
    broken_answer(|r| framed(&header(r.xid + 5)), ErrorKind::ConnectionLoss).await;
}

#[tokio::test]
async fn a_reply_with_an_xid_no_request_has() {
    broken_answer(|_| framed(&header(-7)), ErrorKind::ConnectionLoss).await;
}

#[tokio::test]
async fn garbage_bytes() {
    broken_answer(
        |_| (0..4096u32).map(|i| (i * 7919 % 251) as u8).collect(),
        ErrorKind::ConnectionLoss,
    )
    .await;
}

/// The frame is whole but the `getData` reply in it stops inside the stat: the call fails with
/// a protocol error naming what could not be read; the connection carries on.
#[tokio::test]
async fn a_reply_body_cut_short() {
    broken_answer(
        |r| {
            let mut payload = header(r.xid);
            payload.extend_from_slice(&[0, 0, 0, 2, b'h', b'i', 0, 0, 0]);
            framed(&payload)
        },
        ErrorKind::Protocol(String::new()),
    )
    .await;
}
