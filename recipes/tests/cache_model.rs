//! The caches model-checked against real servers: random histories of creates, sets and
//! deletes from a writer that logs the zxid of every write, while the cache's connection is
//! dropped, its session moves between the members of an ensemble, or expires. After every step
//! of the event stream (the events sharing one zxid), a copy of the view built from the events
//! alone must equal the server's subtree at that zxid, rebuilt from the log; so must every
//! snapshot taken along the way; and the stream must end equal to the server's final tree.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::faults::{expire, move_session};
use common::{bounce_connection, bounded, client};
use tokio::task::JoinHandle;
use zookeeper_recipes::{CacheEvent, CachedNode, Sessions, Snapshot, TreeCache};
use zookeeper_testkit::{chroot_for, shared_server, Ensemble, Proxy};
use zookeeper_tokio::{Client, CreateOptions, ErrorKind};

/// A node as the model knows it: czxid, mzxid, version, data.
type Row = (i64, i64, i32, Vec<u8>);

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

#[derive(Clone, Debug)]
enum Write {
    Create(String, Vec<u8>),
    Set(String, Vec<u8>),
    Delete(String),
}

/// Writes at random under `root`, alone there, and logs each write's zxid.
struct Writer {
    client: Client,
    root: String,
    rng: Rng,
    log: Vec<(i64, Write)>,
    now: BTreeMap<String, Row>,
    seq: u64,
}

impl Writer {
    fn new(client: Client, root: &str, seed: u64) -> Writer {
        Writer {
            client,
            root: root.to_string(),
            rng: Rng(seed | 1),
            log: Vec::new(),
            now: BTreeMap::new(),
            seq: 0,
        }
    }

    fn random_path(&mut self) -> String {
        let mut path = self.root.clone();
        for _ in 0..self.rng.below(4) {
            path = format!("{path}/{}", ["a", "b", "c"][self.rng.below(3)]);
        }
        path
    }

    fn data(&mut self) -> Vec<u8> {
        self.seq += 1;
        format!("w{}", self.seq).into_bytes()
    }

    /// One random write that applies (a create under an existing parent, a set, a delete of a
    /// leaf).
    async fn step(&mut self) {
        loop {
            let path = self.random_path();
            let exists = self.now.contains_key(&path);
            let parent_exists = match path.rfind('/') {
                Some(i) if i > 0 => self.now.contains_key(&path[..i]),
                _ => true,
            };
            let leaf = !self.now.keys().any(|p| p.starts_with(&format!("{path}/")));
            match self.rng.below(3) {
                0 if !exists && parent_exists => {
                    let data = self.data();
                    return self.create(&path, &data).await;
                }
                1 if exists => {
                    let data = self.data();
                    return self.set(&path, &data).await;
                }
                2 if exists && leaf => return self.delete(&path).await,
                _ => {}
            }
        }
    }

    /// Retries across connection losses, finding out whether an attempt applied.
    async fn create(&mut self, path: &str, data: &[u8]) {
        let czxid = loop {
            match self
                .client
                .create(path, data, &CreateOptions::persistent())
                .await
            {
                Ok((_, stat)) => break stat.czxid,
                Err(e) if e == ErrorKind::NodeExists => {
                    let (d, stat) = self.client.get_data(path).await.unwrap();
                    assert_eq!(&d[..], data, "{path} created by someone else");
                    break stat.czxid;
                }
                Err(e) if e.is_retryable() => settle(&self.client).await,
                Err(e) => panic!("create {path}: {e}"),
            }
        };
        self.log
            .push((czxid, Write::Create(path.into(), data.into())));
        self.now
            .insert(path.to_string(), (czxid, czxid, 0, data.to_vec()));
    }

    async fn set(&mut self, path: &str, data: &[u8]) {
        let version = self.now[path].2;
        let stat = loop {
            match self.client.set_data(path, data, Some(version)).await {
                Ok(stat) => break stat,
                Err(e) if e == ErrorKind::BadVersion => {
                    let (d, stat) = self.client.get_data(path).await.unwrap();
                    assert_eq!(&d[..], data, "{path} set by someone else");
                    break stat;
                }
                Err(e) if e.is_retryable() => settle(&self.client).await,
                Err(e) => panic!("set {path}: {e}"),
            }
        };
        self.log
            .push((stat.mzxid, Write::Set(path.into(), data.into())));
        let row = self.now.get_mut(path).unwrap();
        *row = (row.0, stat.mzxid, stat.version, data.to_vec());
    }

    async fn delete(&mut self, path: &str) {
        let version = self.now[path].2;
        loop {
            match self.client.delete(path, Some(version)).await {
                Ok(()) => break,
                Err(e) if e == ErrorKind::NoNode => break,
                Err(e) if e.is_retryable() => settle(&self.client).await,
                Err(e) => panic!("delete {path}: {e}"),
            }
        }
        // Alone under the root, the parent's pzxid is the deletion's zxid.
        let parent = match path.rfind('/') {
            Some(0) | None => "/",
            Some(i) => &path[..i],
        };
        let zxid = loop {
            match self.client.exists(parent).await {
                Ok(Some(stat)) => break stat.pzxid,
                Ok(None) => panic!("{parent} is gone"),
                Err(e) if e.is_retryable() => settle(&self.client).await,
                Err(e) => panic!("exists {parent}: {e}"),
            }
        };
        self.log.push((zxid, Write::Delete(path.into())));
        self.now.remove(path);
    }

    /// The subtree at `zxid`, from the log.
    fn tree_at(&self, zxid: i64) -> BTreeMap<String, Row> {
        let mut tree = BTreeMap::new();
        for (z, write) in &self.log {
            if *z > zxid {
                break;
            }
            match write {
                Write::Create(p, d) => {
                    tree.insert(p.clone(), (*z, *z, 0, d.clone()));
                }
                Write::Set(p, d) => {
                    let row: &mut Row = tree.get_mut(p).unwrap();
                    *row = (row.0, *z, row.2 + 1, d.clone());
                }
                Write::Delete(p) => {
                    tree.remove(p);
                }
            }
        }
        tree
    }
}

/// Waits (bounded) until the client is connected again.
async fn settle(c: &Client) {
    let mut states = c.state_watcher();
    bounded("writer reconnected", states.wait_for(|s| s.is_connected()))
        .await
        .expect("writer session alive");
}

fn row(node: &CachedNode) -> Row {
    (
        node.stat.czxid,
        node.stat.mzxid,
        node.stat.version,
        node.data.as_ref().expect("data kept").to_vec(),
    )
}

fn rows(nodes: &BTreeMap<String, CachedNode>) -> BTreeMap<String, Row> {
    nodes.iter().map(|(p, n)| (p.clone(), row(n))).collect()
}

/// Every event of a cache, collected by a task of its own, with the snapshot it started from.
struct Recorder {
    start: Snapshot,
    task: JoinHandle<Vec<CacheEvent>>,
    stop: tokio::sync::watch::Sender<Option<BTreeMap<String, Row>>>,
}

impl Recorder {
    fn start(cache: &TreeCache) -> Recorder {
        let mut events = cache.events();
        let start = cache.snapshot();
        let (stop, mut until) = tokio::sync::watch::channel(None::<BTreeMap<String, Row>>);
        let mut replica = start.nodes.clone();
        let task = tokio::spawn(async move {
            let mut seen = Vec::new();
            loop {
                // Once told the final tree, stop when the events have rebuilt it.
                if let Some(last) = until.borrow().as_ref() {
                    if &rows(&replica) == last {
                        return seen;
                    }
                }
                tokio::select! {
                    event = events.next() => {
                        let event = event.expect("the cache runs");
                        apply(&mut replica, &event);
                        seen.push(event);
                    }
                    _ = until.changed() => {}
                }
            }
        });
        Recorder { start, task, stop }
    }

    /// The events, once they have rebuilt `last`.
    async fn finish(self, last: BTreeMap<String, Row>) -> (Snapshot, Vec<CacheEvent>) {
        self.stop.send(Some(last)).unwrap();
        let events = bounded("the cache catches up", self.task).await.unwrap();
        (self.start, events)
    }
}

fn apply(replica: &mut BTreeMap<String, CachedNode>, event: &CacheEvent) {
    match event {
        CacheEvent::Created { path, node, .. } => {
            assert!(
                replica.insert(path.clone(), node.clone()).is_none(),
                "{path} created twice"
            );
        }
        CacheEvent::Changed {
            path, old, node, ..
        } => {
            let was = replica.insert(path.clone(), node.clone());
            assert_eq!(was.as_ref(), Some(old), "{path} changed from another state");
            assert!(node.stat.mzxid > old.stat.mzxid, "{path} went back");
        }
        CacheEvent::Deleted { path, old, .. } => {
            assert_eq!(
                replica.remove(path).as_ref(),
                Some(old),
                "{path} deleted twice"
            );
        }
        CacheEvent::Initialized { .. } => {}
        other => panic!("unexpected {other:?}"),
    }
}

/// Replays the events step by step: each step (the events of one zxid) leaves the copy equal
/// to the server's subtree at that zxid, and zxids only grow. Returns how many steps.
fn check_history(
    writer: &Writer,
    start: &Snapshot,
    events: &[CacheEvent],
    snapshots: &[Snapshot],
) -> usize {
    assert_eq!(rows(&start.nodes), writer.tree_at(start.zxid), "the start");
    let mut replica = start.nodes.clone();
    let mut last = start.zxid;
    let mut steps = 0;
    for (i, event) in events.iter().enumerate() {
        apply(&mut replica, event);
        let zxid = event.zxid();
        let step_ends = events.get(i + 1).map_or(true, |next| next.zxid() != zxid);
        if matches!(event, CacheEvent::Initialized { .. }) || !step_ends {
            continue;
        }
        assert!(zxid > last, "zxid {zxid} after {last}");
        if rows(&replica) != writer.tree_at(zxid) {
            let step: Vec<String> = events
                .iter()
                .filter(|e| e.zxid() == zxid)
                .map(|e| format!("{e:?}"))
                .collect();
            let log: Vec<String> = writer
                .log
                .iter()
                .filter(|(z, _)| *z > last - 10 && *z <= zxid + 3)
                .map(|(z, w)| format!("{z}: {w:?}"))
                .collect();
            panic!(
                "after the events of zxid {zxid} (previous step {last}):\n step: {step:#?}\n log: {log:#?}\n view {:?}\n model {:?}",
                rows(&replica),
                writer.tree_at(zxid)
            );
        }
        last = zxid;
        steps += 1;
    }
    for snapshot in snapshots {
        assert_eq!(
            rows(&snapshot.nodes),
            writer.tree_at(snapshot.zxid),
            "the snapshot at zxid {}",
            snapshot.zxid
        );
    }
    steps
}

/// What goes wrong during a history.
enum Fault<'a> {
    /// The cache's connection is dropped; the writer waits until it is back, so that the
    /// history has steps between drops whatever the client's reconnect pacing.
    Drop(&'a Proxy, &'a Client),
    /// The member serving the cache's session is killed (the one killed before restarted).
    Move {
        ensemble: &'a Ensemble,
        client: &'a Client,
        killed: Option<usize>,
    },
    /// The cache's session expires.
    Expire {
        proxy: &'a Proxy,
        connect: &'a str,
        sessions: &'a Sessions,
    },
}

impl Fault<'_> {
    async fn inject(&mut self) {
        match self {
            Fault::Drop(proxy, client) => bounce_connection(client, proxy).await,
            Fault::Move {
                ensemble,
                client,
                killed,
            } => {
                if let Some(member) = killed.take() {
                    bounded("restart", ensemble.restart(member)).await.unwrap();
                }
                *killed = move_session(ensemble, client).await;
            }
            Fault::Expire {
                proxy,
                connect,
                sessions,
            } => expire(proxy, connect, &sessions.client()).await,
        }
    }
}

/// Waits (bounded) until the cache's view equals the writer's tree.
async fn catch_up(cache: &TreeCache, writer: &Writer) {
    let mut events = cache.events();
    bounded("the cache catches up with the writer", async {
        while rows(&cache.snapshot().nodes) != writer.now {
            events.next().await.expect("the cache runs");
        }
    })
    .await;
}

/// Runs `ops` random writes with a fault every `every` writes, snapshotting the cache in
/// between; then checks the whole history. Returns how many steps were checked and how many
/// stretches (the writes between two faults) there were.
///
/// Each stretch ends with the writer waiting until the cache has caught up, so every stretch
/// contributes at least one step however the events were paced: the writes of a stretch
/// always leave the tree changed (each create and set writes data no earlier write wrote),
/// and the view reaches that tree before the next fault. How many steps a stretch has beyond
/// that depends on how the cache's reads interleave with the writes (a slow cache folds
/// several writes into one read), so no test counts on more. The writes right after a fault
/// still race the cache's recovery, which is the point of the history.
async fn run_history(
    writer: &mut Writer,
    cache: &TreeCache,
    ops: usize,
    every: usize,
    mut fault: Fault<'_>,
) -> (usize, usize) {
    let recorder = Recorder::start(cache);
    let mut snapshots = Vec::new();
    let mut stretches = 0;
    for i in 0..ops {
        writer.step().await;
        if i % every == every - 1 {
            catch_up(cache, writer).await;
            stretches += 1;
            fault.inject().await;
        }
        if i % 7 == 0 {
            snapshots.push(cache.snapshot());
        }
    }
    let (start, events) = recorder.finish(writer.now.clone()).await;
    let steps = check_history(writer, &start, &events, &snapshots);
    assert_eq!(rows(&cache.snapshot().nodes), writer.now, "the end");
    (steps, stretches)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_histories_through_connection_drops() {
    let chroot = chroot_for("cache_model_drops");
    let server = shared_server();
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let cache_client = client(&format!("{}{}", proxy.connect_string(), chroot)).await;
    let writer_client = client(&server.connect_string_with_chroot(&chroot)).await;
    let mut writer = Writer::new(writer_client, "/drops", 7);
    // The root does not exist yet: its appearance is part of the history.
    let cache = bounded("start", TreeCache::start(&cache_client, "/drops"))
        .await
        .unwrap();
    let (steps, stretches) = run_history(
        &mut writer,
        &cache,
        600,
        40,
        Fault::Drop(&proxy, &cache_client),
    )
    .await;
    assert!(
        steps >= stretches,
        "{steps} steps checked over {stretches} stretches"
    );
    assert!(proxy.accepted() > 10, "the connection was dropped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_histories_through_session_moves_between_members() {
    let ensemble = Ensemble::start(3).await.unwrap();
    bounded("ensemble serving", ensemble.wait_serving())
        .await
        .unwrap();
    let connect = ensemble.connect_string();
    let setup = client(&connect).await;
    setup
        .create("/moves", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let cache_client = bounded(
        "connect",
        Client::builder(&format!("{connect}/moves"))
            .session_timeout(Duration::from_secs(8))
            .connect(),
    )
    .await
    .unwrap();
    let writer_client = bounded(
        "connect",
        Client::builder(&format!("{connect}/moves"))
            .session_timeout(Duration::from_secs(8))
            .connect(),
    )
    .await
    .unwrap();
    let mut writer = Writer::new(writer_client, "/moved", 11);
    writer.create("/moved", b"root").await;
    let cache = bounded("start", TreeCache::start(&cache_client, "/moved"))
        .await
        .unwrap();
    let session = cache_client.session_id().0;
    let fault = Fault::Move {
        ensemble: &ensemble,
        client: &cache_client,
        killed: None,
    };
    let (steps, stretches) = run_history(&mut writer, &cache, 300, 60, fault).await;
    assert!(
        steps >= stretches,
        "{steps} steps checked over {stretches} stretches"
    );
    assert_eq!(cache_client.session_id().0, session, "the same session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_histories_through_session_expiry() {
    let common::faults::ExpiryRig {
        proxy,
        direct,
        sessions,
    } = common::faults::expiry_rig("cache_model_expiry").await;
    let writer_client = client(&direct).await;
    let mut writer = Writer::new(writer_client, "/expiry", 23);
    let cache = bounded("start", TreeCache::start(&sessions, "/expiry"))
        .await
        .unwrap();
    let first = sessions.client().session_id();
    let fault = Fault::Expire {
        proxy: &proxy,
        connect: &direct,
        sessions: &sessions,
    };
    let (steps, stretches) = run_history(&mut writer, &cache, 300, 75, fault).await;
    assert!(
        steps >= stretches,
        "{steps} steps checked over {stretches} stretches"
    );
    assert_ne!(
        cache.sessions().client().session_id(),
        first,
        "a new session"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ten_thousand_node_subtree_through_drops() {
    let chroot = chroot_for("cache_model_big");
    let server = shared_server();
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let cache_client = client(&format!("{}{}", proxy.connect_string(), chroot)).await;
    let writer_client = client(&server.connect_string_with_chroot(&chroot)).await;
    let mut writer = Writer::new(writer_client.clone(), "/m", 31);
    // 99 directories of 100 leaves, and the root: 10,000 nodes, created pipelined.
    writer.create("/m", b"root").await;
    let dirs: Vec<String> = (0..99).map(|d| format!("/m/d{d}")).collect();
    let leaves: Vec<String> = dirs
        .iter()
        .flat_map(|d| (0..100).map(move |l| format!("{d}/l{l}")))
        .collect();
    for batch in [&dirs, &leaves] {
        for chunk in batch.chunks(1000) {
            let calls: Vec<_> = chunk
                .iter()
                .map(|p| writer_client.create(p, p.as_bytes(), &CreateOptions::persistent()))
                .collect();
            for (path, call) in chunk.iter().zip(calls) {
                let (_, stat) = call.await.unwrap();
                writer.log.push((
                    stat.czxid,
                    Write::Create(path.clone(), path.clone().into_bytes()),
                ));
                writer.now.insert(
                    path.clone(),
                    (stat.czxid, stat.czxid, 0, path.clone().into_bytes()),
                );
            }
        }
    }
    writer.log.sort_by_key(|(z, _)| *z);
    assert_eq!(writer.now.len(), 10_000);
    let cache = bounded("start", TreeCache::start(&cache_client, "/m"))
        .await
        .unwrap();
    assert_eq!(cache.len(), 10_000);
    assert_eq!(rows(&cache.snapshot().nodes), writer.tree_at(cache.zxid()));
    // Random writes in the big tree's top levels, through drops.
    let (steps, stretches) = run_history(
        &mut writer,
        &cache,
        200,
        50,
        Fault::Drop(&proxy, &cache_client),
    )
    .await;
    assert!(
        steps >= stretches,
        "{steps} steps checked over {stretches} stretches"
    );
    assert_eq!(cache.len(), writer.now.len());
    // And the whole subtree deleted, leaves first, while the cache watches.
    let calls: Vec<_> = leaves
        .iter()
        .map(|p| writer_client.delete(p, None))
        .collect();
    for call in calls {
        call.await.unwrap();
    }
    let mut events = cache.events();
    bounded("the leaves gone from the view", async {
        while cache.len() > writer.now.len() - leaves.len() {
            events.next().await.unwrap();
        }
    })
    .await;
}
