//! Replies larger than the client reads: a listing of very many children, a length that lies.
//! Only the request such a reply answers fails, with a typed error that says it will not get
//! better by retrying; the body is skipped as it streams in, never held.

use std::time::Duration;

use tokio::time::Instant;
use zookeeper_jute::{Encode, ErrorCode, ReplyHeader};
use zookeeper_tokio::{
    Client, ErrorKind, SessionState, DEFAULT_MAX_INCOMING_FRAME, DEFAULT_REQUEST_TIMEOUT,
};

use crate::common::{within, SCHEDULING_SLACK};
use crate::meter::MemoryWatch;
use crate::server::FakeServer;

/// The start of a frame of `len` payload bytes answering `xid`.
fn frame_start(len: i32, xid: i32) -> Vec<u8> {
    let mut buf = bytes::BytesMut::new();
    buf.extend_from_slice(&len.to_be_bytes());
    ReplyHeader {
        xid,
        zxid: 5,
        err: ErrorCode::Ok,
    }
    .encode(&mut buf);
    buf.to_vec()
}

/// A 64 MiB reply between two ordinary ones, on a pipelined connection.
#[tokio::test]
async fn an_oversized_reply_fails_only_its_request_and_is_never_held() {
    const BIG: usize = 64 << 20;
    let server = FakeServer::start(|mut peer| async move {
        if peer.handshake().await.is_none() {
            return;
        }
        let mut xids = vec![];
        for _ in 0..3 {
            match peer.next_request().await {
                Some(request) => xids.push(request.xid),
                None => return,
            }
        }
        peer.reply(xids[0], 1, ErrorCode::NoNode, &[]).await;
        peer.write_raw(&frame_start(BIG as i32, xids[1])).await;
        let chunk = vec![0x5a; 1 << 20];
        // The payload counts the 16 bytes of header already sent.
        for _ in 0..BIG / chunk.len() - 1 {
            peer.write_raw(&chunk).await;
        }
        peer.write_raw(&chunk[..chunk.len() - 16]).await;
        peer.reply(xids[2], 6, ErrorCode::NoNode, &[]).await;
        peer.serve_empty().await;
    });
    let client = within("connect", Client::connect(&server.connect_string()))
        .await
        .unwrap();
    let memory = MemoryWatch::start();
    // A hang bound only: how fast a debug build on a loaded machine skips 64 MiB is not under
    // test (the calls' own deadline, the default 60 s, would end them first).
    let (before, big, after) = tokio::time::timeout(DEFAULT_REQUEST_TIMEOUT * 2, async {
        tokio::join!(
            client.exists("/before"),
            client.get_children("/big"),
            client.exists("/after")
        )
    })
    .await
    .expect("the three calls ended");
    assert_eq!(before, Ok(None));
    let err = big.unwrap_err();
    assert_eq!(
        *err.kind(),
        ErrorKind::ReplyTooLarge {
            size: BIG,
            max: DEFAULT_MAX_INCOMING_FRAME
        }
    );
    assert!(!err.is_retryable());
    assert_eq!(
        err.to_string(),
        format!("get_children /big: reply of {BIG} bytes exceeds the incoming frame limit of {DEFAULT_MAX_INCOMING_FRAME} bytes")
    );
    assert_eq!(after, Ok(None));
    // The read buffer, never the reply.
    let peak = memory.peak_growth();
    assert!(peak < 1 << 20, "the client held {peak} bytes at once");
    assert_eq!(client.state(), SessionState::Connected);
    assert_eq!(server.accepted(), 1, "the connection stayed");
    assert_eq!(within("later", client.exists("/later")).await, Ok(None));
}

/// The limit is the client's to set: a smaller one makes a smaller reply too large.
#[tokio::test]
async fn the_incoming_limit_is_configurable() {
    let server = FakeServer::start(|mut peer| async move {
        if peer.handshake().await.is_none() {
            return;
        }
        while let Some(request) = peer.next_request().await {
            let mut frame = frame_start(4096, request.xid);
            frame.resize(4 + 4096, 0);
            peer.write_raw(&frame).await;
        }
    });
    let client = within(
        "connect",
        Client::builder(&server.connect_string())
            .max_incoming_frame(4000)
            .connect(),
    )
    .await
    .unwrap();
    let err = within("read", client.get_data("/a")).await.unwrap_err();
    assert_eq!(
        *err.kind(),
        ErrorKind::ReplyTooLarge {
            size: 4096,
            max: 4000
        }
    );
}

/// A length that announces 2 GiB and then nothing: the request it claims to answer fails at
/// once; the connection, stuck behind bytes that never come, is given up by the read timeout.
#[tokio::test]
async fn a_lying_huge_length_fails_its_request_and_the_read_timeout_ends_the_connection() {
    const TIMEOUT_MS: i32 = 1_500;
    let server = FakeServer::start(|mut peer| async move {
        if peer.handshake_granting(TIMEOUT_MS).await.is_none() {
            return;
        }
        if peer.index > 0 {
            return peer.serve_empty().await;
        }
        let Some(request) = peer.next_request().await else {
            return;
        };
        peer.write_raw(&frame_start(i32::MAX, request.xid)).await;
        peer.swallow().await;
    });
    let client = within("connect", Client::connect(&server.connect_string()))
        .await
        .unwrap();
    let memory = MemoryWatch::start();
    let err = within("lied-about reply", client.get_data("/a"))
        .await
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::ReplyTooLarge { size, .. } if *size == i32::MAX as usize),
        "{err}"
    );
    // The read timeout counts from the last bytes read, the lying header, which came before
    // `started`: the connection is left within the read timeout of it, plus what a loaded
    // machine may add.
    let started = Instant::now();
    let next = within("the call behind it", client.exists("/b")).await;
    assert_eq!(next.unwrap_err(), ErrorKind::ConnectionLoss);
    let read_timeout = Duration::from_millis(TIMEOUT_MS as u64 * 2 / 3);
    assert!(
        started.elapsed() <= read_timeout + SCHEDULING_SLACK,
        "{:?}",
        started.elapsed()
    );
    assert!(memory.peak_growth() < 1 << 20);
    // Another connection serves the session again.
    assert_eq!(within("after", client.exists("/c")).await, Ok(None));
    assert_eq!(server.accepted(), 2);
}

/// A negative length breaks the framing: the connection is dropped, what was in flight fails
/// with `ConnectionLoss`, and the session goes on over a new connection.
#[tokio::test]
async fn a_negative_length_drops_the_connection() {
    let server = FakeServer::start(|mut peer| async move {
        if peer.handshake().await.is_none() {
            return;
        }
        if peer.index > 0 {
            return peer.serve_empty().await;
        }
        if peer.next_request().await.is_some() {
            peer.write_raw(&(-5i32).to_be_bytes()).await;
            peer.swallow().await;
        }
    });
    let client = within("connect", Client::connect(&server.connect_string()))
        .await
        .unwrap();
    assert_eq!(
        within("call", client.exists("/a")).await.unwrap_err(),
        ErrorKind::ConnectionLoss
    );
    assert_eq!(within("after", client.exists("/a")).await, Ok(None));
    assert_eq!(server.accepted(), 2);
}
