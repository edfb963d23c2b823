//! A `TreeCache` used as a service uses one, under what a service meets: a consumer that
//! reads its events slowly, a connection cut, the session expired, a large subtree. The
//! promise (recipes' cache module docs): events come in server order, never twice, nothing
//! missed across reconnects or expiry; applying every event keeps a copy of the view exact,
//! folded or not; once writes stop, the view equals the server's tree.

use std::collections::BTreeMap;
use std::time::Duration;

use zookeeper_recipes::{CacheEvent, CacheEvents, CachedNode, NodeCache, Sessions, TreeCache};
use zookeeper_testkit::{bounded, ended_within, Proxy, ZkServer, HANG_BOUND};
use zookeeper_tokio::{Client, ClientBuilder, CreateOptions, MultiOp, SessionState};

/// What a node's identity and content are, for comparing views: the parent's child counters
/// are left out, a recursive watch reports no child-list changes.
fn key(node: &CachedNode) -> (Vec<u8>, i64, i64, i32) {
    (
        node.data.as_deref().unwrap_or_default().to_vec(),
        node.stat.czxid,
        node.stat.mzxid,
        node.stat.version,
    )
}

/// A copy of the view kept from the events alone, checking each against what came before.
#[derive(Default)]
struct Copy {
    nodes: BTreeMap<String, (Vec<u8>, i64, i64, i32)>,
    zxid: i64,
    initialized: u32,
    events: u64,
}

impl Copy {
    fn apply(&mut self, root: &str, event: CacheEvent) {
        self.events += 1;
        let zxid = event.zxid();
        assert!(
            zxid >= self.zxid,
            "event {event:?} goes back from zxid {}",
            self.zxid
        );
        self.zxid = zxid;
        match event {
            CacheEvent::Created { path, node, .. } => {
                if path != root {
                    let parent = &path[..path.rfind('/').unwrap()];
                    assert!(
                        self.nodes.contains_key(parent),
                        "{path} created before its parent"
                    );
                }
                let old = self.nodes.insert(path.clone(), key(&node));
                assert!(old.is_none(), "{path} created twice (was {old:?})");
            }
            CacheEvent::Changed {
                path, old, node, ..
            } => {
                let mine = self.nodes.get(&path);
                assert_eq!(
                    mine,
                    Some(&key(&old)),
                    "{path} changed from a state not seen"
                );
                assert!(node.stat.mzxid > old.stat.mzxid, "{path} changed backwards");
                self.nodes.insert(path, key(&node));
            }
            CacheEvent::Deleted { path, old, .. } => {
                let mine = self.nodes.remove(&path);
                assert_eq!(
                    mine,
                    Some(key(&old)),
                    "{path} deleted from a state not seen"
                );
                let prefix = format!("{path}/");
                assert!(
                    !self.nodes.keys().any(|p| p.starts_with(&prefix)),
                    "{path} deleted before its children"
                );
            }
            CacheEvent::Initialized { .. } => {
                assert_eq!(self.initialized, 0, "Initialized twice");
                self.initialized += 1;
            }
            other => panic!("unknown event {other:?}"),
        }
    }
}

/// The subtree at `root` as the server holds it, read with a client of its own.
async fn server_tree(c: &Client, root: &str) -> BTreeMap<String, (Vec<u8>, i64, i64, i32)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![root.to_string()];
    while let Some(path) = todo.pop() {
        let Ok((data, stat)) = c.get_data(&path).await else {
            continue;
        };
        out.insert(
            path.clone(),
            (data.to_vec(), stat.czxid, stat.mzxid, stat.version),
        );
        if let Ok((names, _)) = c.get_children(&path).await {
            todo.extend(names.into_iter().map(|n| format!("{path}/{n}")));
        }
    }
    out
}

fn snapshot_of(cache: &TreeCache) -> BTreeMap<String, (Vec<u8>, i64, i64, i32)> {
    cache
        .snapshot()
        .nodes
        .into_iter()
        .map(|(p, n)| (p, key(&n)))
        .collect()
}

/// The end of one of [`trial`]'s phases, once its writes are done: writes `marker`, reads
/// `events` into `copy` until it equals the server's tree, and checks that the cache's
/// snapshot does too.
async fn end_phase(
    writer: &Client,
    marker: &str,
    copy: &mut Copy,
    events: &mut CacheEvents,
    cache: &TreeCache,
) {
    writer
        .create(marker, b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let tree = server_tree(writer, "/t").await;
    read_until(copy, events, "/t", &tree, cache).await;
    assert_eq!(copy.nodes, snapshot_of(cache));
}

/// Reads `events` into `copy` until it equals `server` (the tree once writes stopped) and the
/// first view was reported complete. Folded changes come as one step with one zxid, in an
/// order of their own, so the copy is compared, not a last event awaited.
async fn read_until(
    copy: &mut Copy,
    events: &mut CacheEvents,
    root: &str,
    server: &BTreeMap<String, (Vec<u8>, i64, i64, i32)>,
    cache: &TreeCache,
) {
    while copy.initialized == 0 || copy.nodes != *server {
        let Some(event) = ended_within(HANG_BOUND, events.next()).await else {
            panic!(
                "the copy did not come to equal the server's tree within {HANG_BOUND:?}: \
                 copy vs server {}; cache vs server {}; cache zxid {}, copy zxid {}",
                diff(&copy.nodes, server),
                diff(&snapshot_of(cache), server),
                cache.zxid(),
                copy.zxid
            )
        };
        copy.apply(root, event.unwrap());
    }
}

type Tree = BTreeMap<String, (Vec<u8>, i64, i64, i32)>;

/// The first few differences of `a` from `b`, and how many there are.
fn diff(a: &Tree, b: &Tree) -> String {
    let mut out = Vec::new();
    for (k, v) in a {
        match b.get(k) {
            None => out.push(format!("{k} extra")),
            Some(w) if w != v => out.push(format!(
                "{k} at mzxid {} (version {}), not {} ({})",
                v.2, v.3, w.2, w.3
            )),
            _ => {}
        }
    }
    for k in b.keys() {
        if !a.contains_key(k) {
            out.push(format!("{k} missing"));
        }
    }
    format!("{} differences: {:?}", out.len(), &out[..out.len().min(8)])
}

/// Expires `sessions`' current session from the server's side while it is cut off behind
/// `proxy`: the session is resumed directly and closed, so its next reconnect is refused.
async fn expire(proxy: &Proxy, direct: &str, sessions: &Sessions) {
    let victim = sessions.client();
    let mut states = victim.state_changes();
    proxy.refuse(true);
    proxy.drop_all();
    bounded(
        "disconnected",
        states.wait_for(|s| s == SessionState::Disconnected),
    )
    .await
    .unwrap();
    let twin = bounded(
        "resume",
        Client::builder(direct)
            .session(victim.session_id(), &victim.session_password())
            .connect(),
    )
    .await
    .unwrap();
    twin.close().await;
    proxy.refuse(false);
    bounded("expired", states.wait_for(|s| s.is_terminal()))
        .await
        .unwrap();
}

/// One round of writes touching every kind of change: data changes, replacements (delete and
/// create again), new nodes, and a whole branch deleted.
async fn churn(w: &Client, round: u32, parents: u32) {
    for p in 0..parents {
        let base = format!("/t/p{p}");
        let mut ops = vec![
            MultiOp::set_data(&format!("{base}/c0"), format!("r{round}").as_bytes(), None),
            MultiOp::delete(&format!("{base}/c1"), None),
            MultiOp::create(
                &format!("{base}/c1"),
                format!("again {round}").as_bytes(),
                &CreateOptions::persistent(),
            ),
            MultiOp::create(
                &format!("{base}/n{round}"),
                b"new",
                &CreateOptions::persistent(),
            ),
        ];
        if round > 0 {
            ops.push(MultiOp::delete(&format!("{base}/n{}", round - 1), None));
        }
        w.multi(ops).await.unwrap();
        // Single writes too, each its own zxid.
        w.set_data(&format!("{base}/c2"), format!("s{round}").as_bytes(), None)
            .await
            .unwrap();
    }
}

async fn populate(w: &Client, parents: u32, children: u32) {
    w.create("/t", b"root", &CreateOptions::persistent())
        .await
        .unwrap();
    for p in 0..parents {
        let base = format!("/t/p{p}");
        let mut ops = vec![MultiOp::create(&base, b"", &CreateOptions::persistent())];
        for c in 0..children {
            ops.push(MultiOp::create(
                &format!("{base}/c{c}"),
                format!("{p}.{c}").as_bytes(),
                &CreateOptions::persistent(),
            ));
        }
        w.multi(ops).await.unwrap();
    }
}

/// A server of its own; the caches' `sessions` reach it through `proxy` (4 s sessions, so
/// that an expiry is quick, set up further by `client`), the `writer` directly at `direct`.
struct Rig {
    _server: ZkServer,
    proxy: Proxy,
    direct: String,
    writer: Client,
    sessions: Sessions,
}

async fn rig(client: impl Fn(ClientBuilder) -> ClientBuilder) -> Rig {
    let server = ZkServer::start().await.unwrap();
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let direct = server.connect_string();
    let writer = bounded("writer", Client::connect(&direct)).await.unwrap();
    let sessions = bounded(
        "sessions",
        Sessions::connect(client(
            Client::builder(&proxy.connect_string()).session_timeout(Duration::from_secs(4)),
        )),
    )
    .await
    .unwrap();
    Rig {
        _server: server,
        proxy,
        direct,
        writer,
        sessions,
    }
}

/// The whole trial: a 5,000-node subtree; a consumer with a queue of 8 events that reads only
/// between rounds; a pending bound of 16 so that the cache folds too; one round across a
/// dropped connection and one across an expired session. After each phase the copy kept from
/// the events, the cache's snapshot and the server's tree must be the same. `client` sets up
/// the cache's sessions.
async fn trial(client: impl Fn(ClientBuilder) -> ClientBuilder) {
    let Rig {
        _server,
        proxy,
        direct,
        writer,
        sessions,
    } = rig(client).await;
    const PARENTS: u32 = 50;
    populate(&writer, PARENTS, 99).await;

    let cache = TreeCache::builder(&sessions, "/t")
        .max_queued_events(8)
        .max_pending(16)
        .spawn()
        .unwrap();
    let mut events = cache.events();
    let mut copy = Copy::default();

    // Phase 1: the initial view, with writes racing it.
    churn(&writer, 0, PARENTS).await;
    end_phase(&writer, "/t/done1", &mut copy, &mut events, &cache).await;
    assert_eq!(copy.initialized, 1, "Initialized once");

    // Phase 2: writes while the consumer does not read; the connection dropped mid-way.
    churn(&writer, 1, PARENTS).await;
    proxy.drop_all();
    churn(&writer, 2, PARENTS).await;
    end_phase(&writer, "/t/done2", &mut copy, &mut events, &cache).await;

    // Phase 3: the session expires while writes go on; the cache moves to a new session.
    let first = sessions.client().session_id();
    churn(&writer, 3, PARENTS).await;
    expire(&proxy, &direct, &sessions).await;
    churn(&writer, 4, PARENTS).await;
    // Deleted while the session was gone: a whole branch.
    writer.delete_recursive("/t/p7").await.unwrap();
    end_phase(&writer, "/t/done3", &mut copy, &mut events, &cache).await;
    assert_ne!(sessions.client().session_id(), first, "a new session");
    assert!(copy.nodes.len() > 4_900, "the subtree is large");
    assert!(events.try_next().is_none(), "nothing after quiet");
    assert!(cache.ended().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_consumer_of_a_large_tree_cache_sees_every_change_once_through_cuts_and_expiry() {
    trial(|b| b).await;
}

/// The same where the client folds the events of its watch stream, which queues only a few
/// for the cache: the cache must still show each change once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_cache_on_a_client_that_folds_its_event_stream_sees_every_change_once() {
    trial(|b| b.max_queued_events(16)).await;
}

/// The same where the client's recursive watch remembers too little of the subtree (past
/// `max_recursive_watch_memory` it keeps only its root and reports a reconnect by zxid, a
/// deleted node as `NodeChildrenChanged` of its parent). The default, 32 MiB, is reached by a
/// subtree of about 90,000 nodes. The cache must read again what is below such a node, and
/// go on after the dropped connection with every change shown once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_cache_past_the_clients_recursive_watch_memory_goes_on_after_a_reconnect() {
    trial(|b| b.max_recursive_watch_memory(64 << 10)).await;
}

/// A `NodeCache` with a queue of one event, read only between phases: the node changed
/// hundreds of times, deleted and created again, across a dropped connection and an expired
/// session. The copy kept from its events equals the server's node each time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_consumer_of_a_node_cache_sees_each_state_once_through_cuts_and_expiry() {
    let Rig {
        _server,
        proxy,
        direct,
        writer,
        sessions,
    } = rig(|b| b).await;
    let cache = NodeCache::builder(&sessions, "/cfg")
        .max_queued_events(1)
        .spawn()
        .unwrap();
    let mut events = cache.events();
    let mut copy = Copy::default();
    let node = |c: &Client| {
        let c = c.clone();
        async move {
            let mut tree = BTreeMap::new();
            if let Ok((data, stat)) = c.get_data("/cfg").await {
                tree.insert(
                    "/cfg".to_string(),
                    (data.to_vec(), stat.czxid, stat.mzxid, stat.version),
                );
            }
            tree
        }
    };
    let changes = |round: u32| {
        let w = writer.clone();
        async move {
            for i in 0..200 {
                w.set_data("/cfg", format!("{round}.{i}").as_bytes(), None)
                    .await
                    .unwrap();
            }
        }
    };
    writer
        .create("/cfg", b"first", &CreateOptions::persistent())
        .await
        .unwrap();
    changes(0).await;
    let want = node(&writer).await;
    read_node_until(&mut copy, &mut events, &want).await;

    changes(1).await;
    proxy.drop_all();
    changes(2).await;
    writer.delete("/cfg", None).await.unwrap();
    writer
        .create("/cfg", b"again", &CreateOptions::persistent())
        .await
        .unwrap();
    let want = node(&writer).await;
    read_node_until(&mut copy, &mut events, &want).await;

    changes(3).await;
    expire(&proxy, &direct, &sessions).await;
    writer.delete("/cfg", None).await.unwrap();
    changes_after_delete(&writer).await;
    let want = node(&writer).await;
    read_node_until(&mut copy, &mut events, &want).await;
    assert!(events.try_next().is_none(), "nothing after quiet");
    assert!(cache.ended().is_none());
}

/// Created once more after a deletion, then changed.
async fn changes_after_delete(w: &Client) {
    w.create("/cfg", b"third", &CreateOptions::persistent())
        .await
        .unwrap();
    for i in 0..50 {
        w.set_data("/cfg", format!("t{i}").as_bytes(), None)
            .await
            .unwrap();
    }
}

async fn read_node_until(copy: &mut Copy, events: &mut CacheEvents, want: &Tree) {
    while copy.initialized == 0 || copy.nodes != *want {
        let Some(event) = ended_within(HANG_BOUND, events.next()).await else {
            panic!(
                "the node cache's copy did not come to equal the server within {HANG_BOUND:?}: {}",
                diff(&copy.nodes, want)
            )
        };
        copy.apply("/cfg", event.unwrap());
    }
}
