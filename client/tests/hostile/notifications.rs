//! Notifications a real server never sends: malformed paths and event types only clients make.
//! They are dropped (and logged at `warn`), never delivered.

use std::sync::Arc;

use zookeeper_jute::{ErrorCode, EventType, OpCode};
use zookeeper_tokio::{AddWatchMode, Client, SessionState};

use crate::common::{next_events, within};
use crate::server::FakeServer;

/// Sets a recursive watch on the chroot `/app`, then has the server send `bad` and one real
/// event: the watcher must get the real event first and nothing else.
async fn only_the_real_event_arrives(bad: Vec<(EventType, &'static str)>) {
    let bad = Arc::new(bad);
    let server = FakeServer::start(move |mut peer| {
        let bad = bad.clone();
        async move {
            if peer.handshake().await.is_none() {
                return;
            }
            while let Some(request) = peer.next_request().await {
                match request.opcode {
                    OpCode::AddWatch => peer.reply(request.xid, 1, ErrorCode::Ok, &[]).await,
                    // The walk of the new watch: the root does not exist yet.
                    OpCode::GetChildren2 => {
                        peer.reply(request.xid, 1, ErrorCode::NoNode, &[]).await;
                        for (event_type, path) in bad.iter() {
                            peer.notify(*event_type, path).await;
                        }
                        peer.notify(EventType::NodeCreated, "/app").await;
                    }
                    _ => peer.reply(request.xid, 1, ErrorCode::NoNode, &[]).await,
                }
            }
        }
    });
    let client = within(
        "connect",
        Client::connect(&format!("{}/app", server.connect_string())),
    )
    .await
    .unwrap();
    let mut watcher = within(
        "add_watch",
        client.add_watch("/", AddWatchMode::PersistentRecursive),
    )
    .await
    .unwrap();
    assert_eq!(
        next_events(&mut watcher, 1).await,
        vec![(EventType::NodeCreated, "/".to_string())],
        "the first event delivered is the only real one"
    );
    assert!(watcher.try_next().is_none());
    assert_eq!(client.state(), SessionState::Connected);
    assert_eq!(server.accepted(), 1);
}

/// Inside the chroot these would reach the watcher stripped as `/x/`, `//x`, `/./x`.
#[tokio::test]
async fn malformed_paths_never_reach_a_watcher() {
    only_the_real_event_arrives(
        [
            "/app/x/",
            "/app//x",
            "/app/./x",
            "/app/../x",
            "/other",
            "/app\u{1}",
        ]
        .into_iter()
        .map(|path| (EventType::NodeDeleted, path))
        .collect(),
    )
    .await;
}

/// `PersistentWatchRemoved` or `None` would tell a consumer that a live watch has ended.
#[tokio::test]
async fn client_only_event_types_never_reach_a_watcher() {
    only_the_real_event_arrives(
        [
            EventType::None,
            EventType::PersistentWatchRemoved,
            EventType::DataWatchRemoved,
            EventType::ChildWatchRemoved,
            EventType::Unknown(42),
        ]
        .into_iter()
        .map(|event_type| (event_type, "/app"))
        .collect(),
    )
    .await;
}
