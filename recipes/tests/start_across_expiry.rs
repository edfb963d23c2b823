//! Recipes started on renewing `Sessions` while the ensemble is out of reach: their first read
//! carries on in the next session once a server answers again, as everything after it does,
//! whichever recipe it is. None returns the expiry of the session it began on.

mod common;

use std::time::Duration;

use common::{bounded, client, CONNECT_TIMEOUT};
use zookeeper_recipes::{ElectionLayout, LeaderObserver, NodeCache, SharedCount, TreeCache};
use zookeeper_recipes::{SessionState, Sessions};
use zookeeper_testkit::{chroot_for, shared_server, Proxy};
use zookeeper_tokio::{Client, ClientBuilder, CreateOptions};

/// A chroot for `test` holding `/config` ("v1") and `/config/a`, and a 2 s session's builder
/// through a proxy of its own onto it.
async fn rig(test: &str) -> (Proxy, ClientBuilder) {
    let chroot = chroot_for(test);
    let direct = client(&shared_server().connect_string_with_chroot(&chroot)).await;
    for (path, data) in [("/config", &b"v1"[..]), ("/config/a", b"")] {
        direct
            .create(path, data, &CreateOptions::persistent())
            .await
            .unwrap();
    }
    let proxy = Proxy::start(shared_server().addr()).await.unwrap();
    let builder = Client::builder(&format!("{}{chroot}", proxy.connect_string()))
        .session_timeout(Duration::from_secs(2))
        .connect_timeout(CONNECT_TIMEOUT);
    (proxy, builder)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_started_during_an_outage_start_on_the_next_session() {
    let (proxy, builder) = rig("start_across_expiry").await;
    let sessions = bounded("connect", Sessions::connect(builder))
        .await
        .unwrap();
    let first = sessions.client();

    // Cut off with the session alive: each start's first request is lost with it.
    proxy.black_hole(true);
    let observer = tokio::spawn({
        let sessions = sessions.clone();
        async move { LeaderObserver::start(&sessions, "/election", ElectionLayout::Latch).await }
    });
    let count = tokio::spawn({
        let sessions = sessions.clone();
        async move { SharedCount::start(&sessions, "/count", 7).await }
    });
    let tree = tokio::spawn({
        let sessions = sessions.clone();
        async move { TreeCache::start(&sessions, "/config").await }
    });
    let node = tokio::spawn({
        let sessions = sessions.clone();
        async move { NodeCache::start(&sessions, "/config").await }
    });

    // The session they began on ends while they wait.
    let mut states = first.state_watcher();
    bounded("the first session to expire", async {
        while *states.borrow_and_update() != SessionState::Expired {
            states.changed().await.unwrap();
        }
    })
    .await;
    proxy.black_hole(false);

    let observer = bounded("the observer", observer).await.unwrap();
    let observer = observer.expect("the observer starts on the next session");
    assert_eq!(observer.leader(), None);
    let count = bounded("the shared count", count).await.unwrap();
    assert_eq!(
        count.expect("the count starts on the next session").count(),
        7
    );
    let tree = bounded("the tree cache", tree).await.unwrap();
    let tree = tree.expect("the tree cache starts on the next session");
    assert!(
        tree.get("/config/a").is_some(),
        "the tree cache holds the subtree"
    );
    let node = bounded("the node cache", node).await.unwrap();
    let node = node.expect("the node cache starts on the next session");
    let data = node.get().and_then(|n| n.data).map(|d| d.to_vec());
    assert_eq!(data, Some(b"v1".to_vec()));
    assert_ne!(sessions.client().session_id(), first.session_id());
}

/// On one fixed session the same starts fail when it ends, and say which call it ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starts_ended_by_the_session_name_their_call() {
    let (proxy, builder) = rig("start_ended_by_expiry").await;
    let fixed = builder.connect().await.unwrap();

    proxy.black_hole(true);
    let observer = LeaderObserver::start(&fixed, "/election", ElectionLayout::Latch);
    let count = SharedCount::start(&fixed, "/count", 7);
    let tree = TreeCache::start(&fixed, "/config");
    let (observer, count, tree) = bounded("the starts to fail", async {
        tokio::join!(observer, count, tree)
    })
    .await;
    for (what, path, err) in [
        ("observer", "/election", observer.err()),
        ("shared count", "/count", count.err()),
        ("tree cache", "/config", tree.err()),
    ] {
        let err = err.unwrap_or_else(|| panic!("the {what} started on a dead session"));
        assert!(err.is_session_terminal(), "{what}: {err}");
        let message = err.to_string();
        assert!(
            message.contains(path) && message.contains("session expired"),
            "the {what}'s error does not say which call the session's end cut: {message}"
        );
    }
}
