//! What the session sends by itself, and what a transaction may get back, kept within the frame
//! limits of a real server.

mod common;

use std::time::Duration;

use common::{within, WAIT};
use zookeeper_testkit::ZkServer;
use zookeeper_tokio::{Client, CreateOptions, ErrorKind, EventType, MultiOp, SessionState};

/// 6,000 watches hold 78 KB of paths. A server that takes frames of 64 KB at most must get them
/// back in several `setWatches` frames after a restart: one frame over its limit makes it close
/// the connection, and it did so again on every reconnect, so the session never carried another
/// request while its watches never fired.
#[tokio::test]
async fn watches_set_again_after_a_restart_fit_the_servers_frame_limit() {
    common::init_tracing();
    let server = ZkServer::builder()
        .system_property("jute.maxbuffer", "65536")
        .start()
        .await
        .unwrap();
    let c = Client::builder(&server.connect_string())
        .max_frame(65536)
        .session_timeout(Duration::from_secs(30))
        .connect_timeout(WAIT)
        .connect()
        .await
        .unwrap();
    c.create("/w", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let calls: Vec<_> = (0..6_000)
        .map(|i| c.exists_and_watch(&format!("/w/{i:07}")))
        .collect();
    let mut watchers = Vec::new();
    for call in calls {
        let (stat, watcher) = within("exists", call).await.unwrap();
        assert!(stat.is_none());
        watchers.push(watcher);
    }

    let mut changes = c.state_changes();
    server.restart().await.unwrap();
    within(
        "the loss of the connection",
        changes.wait_for(|s| s == SessionState::Disconnected),
    )
    .await
    .unwrap();
    within(
        "the session back",
        changes.wait_for(|s| s == SessionState::Connected),
    )
    .await
    .unwrap();
    // Sent behind the watches: it fails if they made the server close the connection.
    within("a read after the restart", c.get_data("/w"))
        .await
        .unwrap();
    for i in [0, 5_999] {
        c.create(&format!("/w/{i:07}"), b"", &CreateOptions::persistent())
            .await
            .unwrap();
    }
    let last = watchers.pop().unwrap();
    let first = watchers.swap_remove(0);
    for watcher in [first, last] {
        let event = within("a watch set again", watcher).await;
        assert_eq!(event.event_type, EventType::NodeCreated);
    }
}

/// A transaction's reply can be far larger than its request (77 bytes per `set_data`): one
/// whose reply could exceed the incoming limit is refused before it is sent, since the server
/// would apply it and the client could not read that it had. It used to be applied and reported
/// as failed with an unknown outcome, which a caller that retries applies twice.
#[tokio::test]
async fn a_transaction_whose_reply_could_exceed_the_limit_is_not_sent() {
    let connect = common::connect_string("multi_reply_limit");
    let c = Client::builder(&connect)
        .max_incoming_frame(64 * 1024)
        .connect_timeout(WAIT)
        .connect()
        .await
        .unwrap();
    c.create("/t", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    // Reply header (16), 77 bytes per result, the end marker (9).
    let fits = (64 * 1024 - 16 - 9) / 77;
    let writes = |n| (0..n).map(|_| MultiOp::set_data("/t", b"", None)).collect();

    let err = c.multi(writes(fits + 1)).await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::ReplyTooLarge { size, max: 65536 } if *size == 16 + 9 + 77 * (fits + 1)),
        "{err}"
    );
    assert!(!err.is_outcome_unknown(), "{err}");
    let (_, stat) = c.get_data("/t").await.unwrap();
    assert_eq!(stat.version, 0, "nothing was applied");

    let results = c.multi(writes(fits)).await.unwrap();
    assert_eq!(results.len(), fits);
    let (_, stat) = c.get_data("/t").await.unwrap();
    assert_eq!(stat.version as usize, fits);
}

/// A watch is set again after every reconnect in a `setWatches` frame, which carries 40 bytes
/// beside the path: a path too long for that frame is refused a watch when the watch is asked
/// for, while a read of it without a watch goes through.
#[tokio::test]
async fn a_path_too_long_to_watch_again_is_refused_a_watch() {
    let connect = common::connect_string("watch_path_limit");
    let c = Client::builder(&connect)
        .max_frame(4096)
        .connect_timeout(WAIT)
        .connect()
        .await
        .unwrap();
    let chroot = c.chroot().unwrap().len();
    let path = format!("/{}", "p".repeat(4096 - 40 - chroot));
    let err = c.exists_and_watch(&path).await.unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::DataTooLarge {
                size: 4097,
                max: 4096
            }
        ),
        "{err}"
    );
    let err = c
        .add_watch(&path, zookeeper_tokio::AddWatchMode::Persistent)
        .await
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::DataTooLarge { .. }),
        "{err}"
    );
    assert_eq!(c.exists(&path).await.unwrap(), None);
    let shorter = &path[..path.len() - 1];
    assert_eq!(c.exists_and_watch(shorter).await.unwrap().0, None);
}
