//! The node and tree caches against real servers: a missing node appearing, changes in order,
//! the view checked against the server, and a node cache carried into a new session after
//! expiry. (The model-checked histories are in `cache_model.rs`.)

mod common;

use std::time::Duration;

use common::{bounded, chroot_connect, client};
use zookeeper_recipes::{CacheEvent, NodeCache, TreeCache};
use zookeeper_tokio::{Client, CreateOptions};

async fn next(events: &mut zookeeper_recipes::CacheEvents) -> CacheEvent {
    bounded("a cache event", events.next()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cache_sees_a_missing_node_appear_change_and_go() {
    let c = client(&chroot_connect("cache_node_lifecycle")).await;
    let cache = bounded("start", NodeCache::start(&c, "/cfg"))
        .await
        .unwrap();
    assert_eq!(cache.get(), None);
    let mut events = cache.events();

    let (_, stat) = c
        .create("/cfg", b"v1", &CreateOptions::persistent())
        .await
        .unwrap();
    let CacheEvent::Created { node, zxid, .. } = next(&mut events).await else {
        panic!()
    };
    assert_eq!(&node.data.unwrap()[..], b"v1");
    assert_eq!(zxid, stat.czxid);

    let stat = c.set_data("/cfg", b"v2", None).await.unwrap();
    let CacheEvent::Changed {
        old, node, zxid, ..
    } = next(&mut events).await
    else {
        panic!()
    };
    assert_eq!(&old.data.unwrap()[..], b"v1");
    assert_eq!(&node.data.unwrap()[..], b"v2");
    assert_eq!(zxid, stat.mzxid);
    assert_eq!(cache.zxid(), stat.mzxid);

    c.delete("/cfg", None).await.unwrap();
    let CacheEvent::Deleted { old, zxid, .. } = next(&mut events).await else {
        panic!()
    };
    assert_eq!(old.stat.version, 1);
    assert!(zxid > stat.mzxid);
    assert_eq!(cache.get(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_cache_reports_the_initial_tree_then_every_change() {
    let c = client(&chroot_connect("cache_tree_initial")).await;
    for p in ["/t", "/t/a", "/t/a/x", "/t/b"] {
        c.create(p, p.as_bytes(), &CreateOptions::persistent())
            .await
            .unwrap();
    }
    let cache = TreeCache::builder(&c, "/t").spawn().unwrap();
    let mut events = cache.events();
    let mut created = Vec::new();
    loop {
        match next(&mut events).await {
            CacheEvent::Created { path, .. } => created.push(path),
            CacheEvent::Initialized { .. } => break,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(created, ["/t", "/t/a", "/t/b", "/t/a/x"]);
    assert_eq!(cache.children("/t").unwrap(), ["a", "b"]);
    assert_eq!(&cache.get("/t/a/x").unwrap().data.unwrap()[..], b"/t/a/x");

    // A burst of changes: the last state of each node arrives, in zxid order.
    let mut last = 0;
    for i in 0..50 {
        let stat = c
            .set_data("/t/a", format!("{i}").as_bytes(), None)
            .await
            .unwrap();
        last = stat.mzxid;
    }
    loop {
        let event = next(&mut events).await;
        if event.zxid() == last {
            assert_eq!(&event.node().unwrap().data.as_ref().unwrap()[..], b"49");
            break;
        }
    }
    check_against_server(&c, &cache).await;
}

/// Reads the whole subtree from the server and compares it with the cache's view, waiting
/// (bounded) for the cache to reach the server's state.
async fn check_against_server(c: &Client, cache: &TreeCache) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let server = read_subtree(c, cache.path()).await;
        let view: Vec<(String, Vec<u8>, i64)> = cache
            .snapshot()
            .nodes
            .into_iter()
            .map(|(p, n)| (p, n.data.unwrap().to_vec(), n.stat.mzxid))
            .collect();
        if server == view {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "view {view:?} != server {server:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn read_subtree(c: &Client, root: &str) -> Vec<(String, Vec<u8>, i64)> {
    let mut out = Vec::new();
    let mut todo = vec![root.to_string()];
    while let Some(path) = todo.pop() {
        let Ok((data, stat)) = c.get_data(&path).await else {
            continue;
        };
        out.push((path.clone(), data.to_vec(), stat.mzxid));
        if let Ok((names, _)) = c.get_children(&path).await {
            for n in names {
                todo.push(format!("{path}/{n}"));
            }
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cache_follows_its_node_into_a_new_session_after_expiry() {
    let common::faults::ExpiryRig {
        proxy,
        direct,
        sessions,
    } = common::faults::expiry_rig("cache_node_expiry").await;
    let writer = client(&direct).await;
    writer
        .create("/cfg", b"v1", &CreateOptions::persistent())
        .await
        .unwrap();
    let cache = bounded("start", NodeCache::start(&sessions, "/cfg"))
        .await
        .unwrap();
    let mut events = cache.events();
    let first = sessions.client().session_id();
    common::faults::expire(&proxy, &direct, &sessions.client()).await;
    // Replaced while the session was gone: deleted, then created, in the new session.
    writer.delete("/cfg", None).await.unwrap();
    let (_, stat) = writer
        .create("/cfg", b"v2", &CreateOptions::persistent())
        .await
        .unwrap();
    assert!(matches!(
        next(&mut events).await,
        CacheEvent::Deleted { .. }
    ));
    let CacheEvent::Created { node, .. } = next(&mut events).await else {
        panic!()
    };
    assert_eq!(
        (node.stat.czxid, &node.data.unwrap()[..]),
        (stat.czxid, &b"v2"[..])
    );
    let stat = writer.set_data("/cfg", b"v3", None).await.unwrap();
    let CacheEvent::Changed { zxid, .. } = next(&mut events).await else {
        panic!()
    };
    assert_eq!(zxid, stat.mzxid);
    assert_ne!(cache.sessions().client().session_id(), first);
}

/// A tree cache and a persistent node on one path and one client, as a service that watches
/// what registers under a node it keeps: the node's `exists` watch, set after the cache's
/// recursive watch, took its place on the server (ZOOKEEPER-4466), and the cache missed every
/// node created under it until the kept node itself changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_cache_beside_a_persistent_node_on_its_root_misses_nothing() {
    let connect = chroot_connect("cache_beside_persistent_node");
    let c = client(&connect).await;
    let other = client(&connect).await;
    let cache = bounded("start", TreeCache::start(&c, "/svc"))
        .await
        .unwrap();
    let node =
        zookeeper_recipes::PersistentNode::start(&c, "/svc", b"", CreateOptions::persistent())
            .unwrap();
    let mut states = node.states();
    bounded(
        "the node created",
        states.wait_for(|s| matches!(s, zookeeper_recipes::PersistentNodeState::Created(_))),
    )
    .await
    .unwrap();
    let mut events = cache.events();
    for name in ["a", "b"] {
        let path = format!("/svc/{name}");
        other
            .create(&path, b"", &CreateOptions::persistent())
            .await
            .unwrap();
        loop {
            match next(&mut events).await {
                CacheEvent::Created { path: p, .. } if p == path => break,
                _ => {}
            }
        }
    }
    assert_eq!(cache.children("/svc").unwrap().len(), 2);
    drop(node);
}
