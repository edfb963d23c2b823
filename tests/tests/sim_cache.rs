//! The tree cache under deterministic simulation: a writer creates (persistent and ephemeral
//! nodes), changes and deletes nodes of a small subtree at random, while a `TreeCache` on
//! renewing sessions follows it; the network partitions, links hold, connections drop,
//! sessions expire (the cache's too: it carries on in a new session), and replies are lost
//! after the server applied them or come late.
//!
//! Invariants, checked against the model server's journal on every run:
//! - after each step of the event stream (the events sharing one zxid), a copy of the view
//!   built from the events alone equals the server's subtree at that zxid: the same nodes,
//!   each with its data and the stat fields of its data (czxid, mzxid, version, owner, length);
//! - events come in zxid order, never twice: a node is created only when absent, changed or
//!   deleted only when present, with the `old` node the view held;
//! - every snapshot equals the server's subtree at the snapshot's zxid;
//! - once the faults and the writer stop, the view catches up with the server's tree.

mod sim_harness;

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use sim_harness::tree_writes::write_while_running;
use sim_harness::{
    assert_replays_exactly, builder, explore, now, run, running, schedule_faults, server_faults,
    Host, Reconnecting, Record, World, RUN_FOR,
};
use zookeeper_recipes::{CacheEvent, CachedNode, Sessions, TreeCache};
use zookeeper_testkit::sim::SimServer;
use zookeeper_tokio::Stat;

const SESSION: Duration = Duration::from_millis(2000);
/// Long enough that some cuts heal within the session (the cache resumes it and reads again
/// what changed), short enough that others expire it (the cache carries on in a new one).
const CACHE_SESSION: Duration = Duration::from_millis(3000);
const ROOT: &str = "/c";
const PATHS: [&str; 6] = ["/c", "/c/a", "/c/b", "/c/a/x", "/c/a/y", "/c/b/z"];
/// How long after the run the view may take to catch up, far past a reconnect and a re-read.
const CATCH_UP: Duration = Duration::from_secs(40);

fn world(seed: u64) -> World<'static> {
    let mut world = World::new(seed, server_faults());
    let mut hosts = world.hosts("w", 1, 8191, writer);
    hosts.extend(world.hosts("k", 1, 8209, follower));
    schedule_faults(&mut world, hosts);
    world
}

/// Random writes to the subtree until the run ends.
async fn writer(host: Host) -> turmoil::Result {
    let Host {
        who,
        server,
        mut rng,
        ..
    } = host;
    let mut session = Reconnecting::new(SESSION);
    write_while_running(&mut session, &server, &who, ROOT, &PATHS, &mut rng).await;
    Ok(())
}

/// Follows the subtree with a cache and checks its events and views.
async fn follower(host: Host) -> turmoil::Result {
    let Host {
        server,
        record,
        mut rng,
        ..
    } = host;
    let seed = rng.next_u64();
    let sessions = loop {
        if let Ok(s) = Sessions::connect(builder(seed, CACHE_SESSION)).await {
            break s;
        }
    };
    let cache = TreeCache::builder(&sessions, ROOT).spawn()?;
    let mut events = cache.events();
    let check = Check {
        server: &server,
        record: &record,
    };
    // The view as the events alone build it, and the zxid it equals.
    let mut copy: BTreeMap<String, CachedNode> = BTreeMap::new();
    let mut at = 0i64;
    loop {
        let next = tokio::time::timeout(Duration::from_millis(500), events.next()).await;
        match next {
            Ok(Ok(first)) => {
                let mut event = Some(first);
                while let Some(e) = event.take() {
                    if e.zxid() != at {
                        check.view(&copy, at, "the events' copy");
                        if e.zxid() < at {
                            check
                                .violated(format!("event at {:#x} after one at {at:#x}", e.zxid()));
                        }
                        at = e.zxid();
                    }
                    check.apply(&mut copy, e);
                    event = events.try_next().and_then(Result::ok);
                }
                check.view(&copy, at, "the events' copy");
                let snapshot = cache.snapshot();
                check.view(&snapshot.nodes, snapshot.zxid, "a snapshot");
            }
            Ok(Err(e)) => {
                check.violated(format!("the cache's events ended: {e}"));
                break;
            }
            Err(_) if running() || now() < RUN_FOR + Duration::from_secs(5) => {}
            Err(_) => {
                // The faults and the writer have stopped: the view must catch up.
                let latest = server.tree_at(ROOT, server.zxid());
                if differs(&copy, &latest).is_none() {
                    server.note("cache: caught up with the server");
                    break;
                }
                if now() > RUN_FOR + CATCH_UP {
                    let why = differs(&copy, &latest).unwrap_or_default();
                    check.violated(format!("the cache never caught up: {why}"));
                    break;
                }
            }
        }
    }
    cache.close();
    sessions.client().close().await;
    Ok(())
}

struct Check<'a> {
    server: &'a SimServer,
    record: &'a Record,
}

impl Check<'_> {
    fn violated(&self, what: String) {
        self.record.violated(self.server, format!("cache: {what}"));
    }

    /// Applies one event to the copy, checking it against what the copy held.
    fn apply(&self, copy: &mut BTreeMap<String, CachedNode>, event: CacheEvent) {
        self.record.step();
        if let Some(path) = event.path() {
            if path != ROOT && !path.starts_with(&format!("{ROOT}/")) {
                self.violated(format!("an event outside the subtree: {event:?}"));
            }
        }
        match event {
            CacheEvent::Created { path, node, zxid } => {
                if copy.insert(path.clone(), node).is_some() {
                    self.violated(format!("{path} created at {zxid:#x} while present"));
                }
            }
            CacheEvent::Changed {
                path,
                old,
                node,
                zxid,
            } => match copy.insert(path.clone(), node) {
                Some(was) if was == old => {}
                was => self.violated(format!(
                    "{path} changed at {zxid:#x} from {old:?}, the view held {was:?}"
                )),
            },
            CacheEvent::Deleted { path, old, zxid } => match copy.remove(&path) {
                Some(was) if was == old => {}
                was => self.violated(format!(
                    "{path} deleted at {zxid:#x} as {old:?}, the view held {was:?}"
                )),
            },
            CacheEvent::Initialized { .. } => {}
            other => self.violated(format!("an event of an unknown kind: {other:?}")),
        }
    }

    /// `view` must equal the server's subtree at `zxid`.
    fn view(&self, view: &BTreeMap<String, CachedNode>, zxid: i64, what: &str) {
        if zxid == 0 {
            return;
        }
        if let Some(why) = differs(view, &self.server.tree_at(ROOT, zxid)) {
            self.violated(format!(
                "{what} at {zxid:#x} is not the server's tree then: {why}"
            ));
        }
    }
}

/// How `view` differs from the server's `tree`, in the fields a cache keeps exactly.
fn differs(
    view: &BTreeMap<String, CachedNode>,
    tree: &BTreeMap<String, (Bytes, Stat)>,
) -> Option<String> {
    let paths: Vec<&String> = view.keys().collect();
    let server: Vec<&String> = tree.keys().collect();
    if paths != server {
        return Some(format!("nodes {paths:?}, the server's {server:?}"));
    }
    for (path, node) in view {
        let (data, stat) = &tree[path];
        let same = node.data.as_ref() == Some(data)
            && node.stat.czxid == stat.czxid
            && node.stat.mzxid == stat.mzxid
            && node.stat.version == stat.version
            && node.stat.ephemeral_owner == stat.ephemeral_owner
            && node.stat.data_length == stat.data_length;
        if !same {
            return Some(format!("{path}: {node:?}, the server's {data:?} {stat:?}"));
        }
    }
    None
}

#[test]
fn the_cache_follows_the_server() {
    explore("sim_cache", 200, |seed| run(world(seed)));
}

#[test]
#[ignore = "long mode: ZK_SIM_SEEDS seeds (default 5000)"]
fn the_cache_follows_the_server_long() {
    explore("sim_cache", 5000, |seed| run(world(seed)));
}

/// A run is a function of its seed: seeds replayed after others in one process leave the
/// same traces as when they ran first.
#[test]
fn a_seed_replays_exactly() {
    assert_replays_exactly(&[3, 4, 5], world);
}
