//! A server that answers a handshake only after the client gave up on it still creates the
//! session: a fleet starting at once against a loaded server left it thousands, each kept for
//! its whole timeout. The client now awaits the answer apart and closes the session it grants.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::sync::{mpsc, Notify};
use zookeeper_jute::{ConnectResponse, Encode, ErrorCode, OpCode};
use zookeeper_tokio::{Client, ErrorKind, SessionId, SessionState};

use crate::common::within;
use crate::server::{well_behaved, FakeServer, Peer, SESSION_ID};

/// The session the late answer grants.
const LATE_SESSION: i64 = 0x5150;

/// Reads the handshake, answers it once `answer` is notified, and reports what the client
/// did with the connection after it: `closeSession`, or gone.
async fn answer_late(mut peer: Peer, answer: Arc<Notify>, outcome: mpsc::UnboundedSender<String>) {
    if peer.read_frame().await.is_none() {
        return;
    }
    answer.notified().await;
    let mut payload = BytesMut::new();
    ConnectResponse {
        protocol_version: 0,
        timeout: 10_000,
        session_id: LATE_SESSION,
        passwd: Bytes::from_static(&[2; 16]),
        read_only: Some(false),
    }
    .encode(&mut payload);
    peer.write_frame(&payload).await;
    let what = match peer.next_request().await {
        Some(request) if request.opcode == OpCode::CloseSession => {
            peer.reply(request.xid, 2, ErrorCode::Ok, &[]).await;
            "closeSession".to_string()
        }
        Some(request) => format!("{:?}", request.opcode),
        None => "gone".to_string(),
    };
    let _ = outcome.send(what);
}

/// The first attempt's handshake is answered once the client has moved on to a second
/// connection, which gets a session at once.
#[tokio::test]
async fn a_session_granted_to_a_handshake_given_up_on_is_closed() {
    let (outcome_tx, mut outcome) = mpsc::unbounded_channel();
    let moved_on = Arc::new(Notify::new());
    let server = FakeServer::start(move |peer| {
        let (moved_on, outcome_tx) = (moved_on.clone(), outcome_tx.clone());
        async move {
            if peer.index == 0 {
                answer_late(peer, moved_on, outcome_tx).await;
            } else {
                moved_on.notify_one();
                well_behaved(peer).await;
            }
        }
    });
    let client = within(
        "connect",
        Client::builder(&server.connect_string())
            .attempt_timeout(Duration::from_millis(500))
            .connect_timeout(Duration::from_secs(30))
            .connect(),
    )
    .await
    .unwrap();
    assert_eq!(client.session_id(), SessionId(SESSION_ID));
    let what = within("the late answer's fate", outcome.recv()).await;
    assert_eq!(what.as_deref(), Some("closeSession"));
    assert_eq!(client.state(), SessionState::Connected);
    client.exists("/a").await.unwrap();
}

/// `connect` gives up while the only handshake is unanswered; the answer comes after.
#[tokio::test]
async fn a_session_granted_after_connect_gave_up_is_closed() {
    let (outcome_tx, mut outcome) = mpsc::unbounded_channel();
    let gave_up = Arc::new(Notify::new());
    let answer = gave_up.clone();
    let server =
        FakeServer::start(move |peer| answer_late(peer, answer.clone(), outcome_tx.clone()));
    let err = within(
        "connect",
        Client::builder(&server.connect_string())
            .attempt_timeout(Duration::from_secs(30))
            .connect_timeout(Duration::from_millis(300))
            .connect(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Connect(_)), "{err}");
    gave_up.notify_one();
    let what = within("the late answer's fate", outcome.recv()).await;
    assert_eq!(what.as_deref(), Some("closeSession"));
    assert_eq!(server.accepted(), 1);
}
