//! Notifications a real server never sends: malformed paths and event types only clients make.
//! They are dropped (and logged at `warn`), never delivered.

use zookeeper_jute::{ErrorCode, EventType, OpCode};
use zookeeper_tokio::{AddWatchMode, Client, SessionState};

use crate::common::{next_events, within};
use crate::server::FakeServer;

#[tokio::test]
async fn malformed_paths_and_client_only_types_never_reach_a_watcher() {
    let server = FakeServer::start(|mut peer| async move {
        if peer.handshake().await.is_none() {
            return;
        }
        while let Some(request) = peer.next_request().await {
            match request.opcode {
                OpCode::AddWatch => peer.reply(request.xid, 1, ErrorCode::Ok, &[]).await,
                // The walk of the new watch: the root does not exist yet.
                OpCode::GetChildren2 => {
                    peer.reply(request.xid, 1, ErrorCode::NoNode, &[]).await;
                    for path in ["/app/x/", "/app//x", "/app/./x", "/other", "/app\u{1}"] {
                        peer.notify(EventType::NodeCreated, path).await;
                    }
                    for event_type in [
                        EventType::None,
                        EventType::PersistentWatchRemoved,
                        EventType::DataWatchRemoved,
                        EventType::Unknown(42),
                    ] {
                        peer.notify(event_type, "/app").await;
                    }
                    peer.notify(EventType::NodeCreated, "/app").await;
                }
                _ => peer.reply(request.xid, 1, ErrorCode::NoNode, &[]).await,
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
