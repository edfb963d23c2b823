//! A million notifications for a consumer that does not read: they grew the client by 72 MB
//! and more, without limit. The stream now holds its bound and folds the rest, per node.

use std::time::Duration;

use bytes::BytesMut;
use zookeeper_jute::{Encode, ErrorCode, EventType, OpCode, Stat};
use zookeeper_tokio::{AddWatchMode, Client, SessionState, DEFAULT_MAX_QUEUED_EVENTS};

use crate::common::within;
use crate::meter::MemoryWatch;
use crate::server::{notification, FakeServer};

const FLOOD: usize = 1_000_000;

/// How long a debug build on a loaded machine may take to read the flood: it is a bound on
/// the wait, not a figure under test.
const FLOOD_WAIT: Duration = Duration::from_secs(180);

/// The session timeout granted, so that the pings the server answers only after the flood
/// cannot end the session however slowly the flood is read.
const FLOOD_SESSION_MS: i32 = 600_000;

#[tokio::test]
async fn a_million_unread_notifications_stay_within_the_bound() {
    let server = FakeServer::start(|mut peer| async move {
        if peer.handshake_granting(FLOOD_SESSION_MS).await.is_none() {
            return;
        }
        while let Some(request) = peer.next_request().await {
            match request.opcode {
                OpCode::AddWatch => peer.reply(request.xid, 1, ErrorCode::Ok, &[]).await,
                // The watched node exists, as the changes reported on it say: a change to a
                // node the client read as absent is reported as its creation first.
                OpCode::Exists if request.body.ends_with(b"/w\0") => {
                    let mut stat = BytesMut::new();
                    Stat::default().encode(&mut stat);
                    peer.reply(request.xid, 1, ErrorCode::Ok, &stat).await
                }
                // The flood goes out before the answer to this request, so the client has
                // handled all of it when the answer comes.
                OpCode::Exists if request.body.ends_with(b"/sync\0") => {
                    let mut frames = Vec::with_capacity(64 << 20);
                    let payload = notification(EventType::NodeDataChanged, "/w");
                    for _ in 0..FLOOD {
                        frames.extend_from_slice(&(payload.len() as i32).to_be_bytes());
                        frames.extend_from_slice(&payload);
                    }
                    peer.write_raw(&frames).await;
                    peer.reply(request.xid, 2, ErrorCode::NoNode, &[]).await;
                }
                _ => peer.reply(request.xid, 1, ErrorCode::NoNode, &[]).await,
            }
        }
    });
    let client = within(
        "connect",
        Client::builder(&server.connect_string())
            .request_timeout(None)
            .connect(),
    )
    .await
    .unwrap();
    let mut watcher = within(
        "add_watch",
        client.add_watch("/w", AddWatchMode::Persistent),
    )
    .await
    .unwrap();
    let memory = MemoryWatch::start();
    tokio::time::timeout(FLOOD_WAIT, client.exists("/sync"))
        .await
        .expect("the flood was not read within FLOOD_WAIT")
        .unwrap();
    let peak = memory.peak_growth();
    // About 100 bytes per queued event, and the read buffer.
    assert!(
        peak < 4 << 20,
        "the client grew by {peak} bytes for {FLOOD} unread events"
    );

    // What the consumer sees: the bound's worth of events as they came, then one event for
    // all the changes it was behind on.
    let mut seen = vec![];
    while let Some(event) = watcher.try_next() {
        seen.push(event.event_type);
    }
    assert_eq!(seen.len(), DEFAULT_MAX_QUEUED_EVENTS + 1);
    assert!(seen.iter().all(|t| *t == EventType::NodeDataChanged));
    assert_eq!(client.state(), SessionState::Connected);
    assert_eq!(server.accepted(), 1);
}
