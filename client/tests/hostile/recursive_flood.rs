//! A server that reports nodes under a recursive watch without end: each was remembered for
//! the catch-up after a reconnect, without limit. The watch now folds past its bound.

use std::time::Duration;

use zookeeper_jute::{Encode, ErrorCode, EventType, GetChildren2Response, OpCode, Stat};
use zookeeper_tokio::{AddWatchMode, Client, SessionState};

use crate::common::within;
use crate::meter::MemoryWatch;
use crate::server::{notification, FakeServer};

/// Bursts of new nodes, each read by the consumer before the next, so that the stream never
/// falls behind and what grows is what the watch remembers.
const BURSTS: usize = 40;
const BURST: usize = 5_000;

/// The bound set on the watch.
const BOUND: usize = 1 << 20;

/// How long a debug build on a loaded machine may take to read the flood: a bound on the
/// wait, not a figure under test.
const FLOOD_WAIT: Duration = Duration::from_secs(180);

#[tokio::test]
async fn nodes_reported_without_end_under_a_recursive_watch_stay_within_its_bound() {
    let server = FakeServer::start(|mut peer| async move {
        if peer.handshake_granting(600_000).await.is_none() {
            return;
        }
        let mut burst = 0;
        while let Some(request) = peer.next_request().await {
            match request.opcode {
                OpCode::AddWatch => peer.reply(request.xid, 1, ErrorCode::Ok, &[]).await,
                OpCode::GetChildren2 => {
                    let mut body = bytes::BytesMut::new();
                    GetChildren2Response {
                        children: vec![],
                        stat: Stat::default(),
                    }
                    .encode(&mut body);
                    peer.reply(request.xid, 1, ErrorCode::Ok, &body).await;
                }
                // The burst goes out before the answer to this request, so the client has
                // handled all of it when the answer comes.
                OpCode::Exists if request.body.ends_with(b"/sync\0") => {
                    let mut frames = Vec::with_capacity(BURST * 48);
                    for i in 0..BURST {
                        let path = format!("/r/n{burst}-{i}");
                        let payload = notification(EventType::NodeCreated, &path);
                        frames.extend_from_slice(&(payload.len() as i32).to_be_bytes());
                        frames.extend_from_slice(&payload);
                    }
                    burst += 1;
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
            .max_recursive_watch_memory(BOUND)
            .connect(),
    )
    .await
    .unwrap();
    let mut watcher = within(
        "add_watch",
        client.add_watch("/r", AddWatchMode::PersistentRecursive),
    )
    .await
    .unwrap();
    let memory = MemoryWatch::start();
    let mut seen = 0;
    tokio::time::timeout(FLOOD_WAIT, async {
        for _ in 0..BURSTS {
            client.exists("/sync").await.unwrap();
            while let Some(event) = watcher.try_next() {
                assert_eq!(event.event_type, EventType::NodeCreated);
                seen += 1;
            }
        }
    })
    .await
    .expect("the flood was not read within FLOOD_WAIT");
    let peak = memory.peak_growth();
    // The bound, one burst's events and the read buffer; without the bound the watch
    // remembered the 200,000 nodes, over 40 MB.
    assert!(
        peak < 4 << 20,
        "the client grew by {peak} bytes for {} nodes",
        BURSTS * BURST
    );
    assert_eq!(seen, BURSTS * BURST, "every event delivered");
    assert_eq!(client.state(), SessionState::Connected);
    assert_eq!(server.accepted(), 1);
}
