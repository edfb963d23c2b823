//! Workload `cache`: a TreeCache over a 10,101-node subtree (a root, 100 directories of 100
//! leaves, 32 bytes of data each). Measured: the time to the first complete view, the memory
//! per node with data and with stats only (the view plus the client's record of the subtree
//! behind the recursive watch), how long the view takes to show 10,000 pipelined changes, and
//! the time from a reconnect until it shows 100 changes made while cut off.

use std::time::{Duration, Instant};

use futures_util::future::try_join_all;
use zookeeper_recipes::{CacheEvent, TreeCache};
use zookeeper_testkit::Proxy;
use zookeeper_tokio::{Client, SessionState};

use crate::heap::live_bytes;
use crate::report::Report;
use crate::workloads::wide_tree::{WideTree, SETUP_WINDOW};
use crate::{BenchError, Ctx};

/// Bound on every wait of this workload.
const BOUND: Duration = Duration::from_secs(120);
const DATA_LEN: usize = 32;

struct Figures {
    start: Duration,
    bytes_per_node: f64,
    stats_only_bytes_per_node: f64,
    follow: Duration,
    catch_up: Duration,
}

pub async fn run(ctx: &Ctx, report: &mut Report) -> Result<(), BenchError> {
    let dirs = ctx.opts.count(100) as usize;
    let leaves = 100;
    let nodes = dirs * leaves + dirs + 1;
    let name = format!("cache.tree{nodes}");
    let f = measure(ctx, dirs, leaves).await?;
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    report.figure(&format!("{name}.start"), ms(f.start), "ms");
    report.figure(
        &format!("{name}.memory_per_node"),
        f.bytes_per_node,
        "bytes",
    );
    report.figure(
        &format!("{name}.stats_only.memory_per_node"),
        f.stats_only_bytes_per_node,
        "bytes",
    );
    report.figure(
        &format!("{name}.follow{}", dirs * leaves),
        ms(f.follow),
        "ms",
    );
    report.figure(&format!("{name}.catch_up"), ms(f.catch_up), "ms");
    Ok(())
}

async fn measure(ctx: &Ctx, dirs: usize, leaves: usize) -> Result<Figures, BenchError> {
    let tree = WideTree::create(ctx, "cache", dirs, leaves, &[b'x'; DATA_LEN]).await?;
    let WideTree {
        setup,
        root,
        leaves: leaf_paths,
        ..
    } = &tree;
    let nodes = tree.nodes() as f64;

    // Memory: the whole cost of a cache (its client's record of the subtree included), with
    // data, then stats only.
    let mut per_node = Vec::new();
    for stats_only in [false, true] {
        let client = Client::connect(&ctx.zk.to_string()).await?;
        let before = live_bytes();
        let cache = TreeCache::builder(&client, root)
            .stats_only(stats_only)
            .start()
            .await?;
        per_node.push(live_bytes().saturating_sub(before) as f64 / nodes);
        if cache.len() as f64 != nodes {
            return Err(format!("the cache holds {} nodes", cache.len()).into());
        }
        drop(cache);
        client.close().await;
    }

    let proxy = Proxy::start(ctx.zk).await?;
    let client = Client::connect(&proxy.connect_string()).await?;
    let start = Instant::now();
    let cache = TreeCache::start(&client, root).await?;
    let start = start.elapsed();

    // 10,000 changes pipelined by another session: until the view shows the last one.
    let mut events = cache.events();
    let begin = Instant::now();
    let mut last = 0;
    for batch in leaf_paths.chunks(SETUP_WINDOW) {
        for stat in try_join_all(batch.iter().map(|p| setup.set_data(p, b"changed", None))).await? {
            last = last.max(stat.mzxid);
        }
    }
    tokio::time::timeout(BOUND, async {
        while cache.zxid() < last {
            events.next().await?;
        }
        Ok::<(), zookeeper_recipes::Error>(())
    })
    .await
    .map_err(|_| "the cache did not show the changes")??;
    let follow = begin.elapsed();

    // Cut off, one leaf per directory changed, reconnect: until the view shows them all.
    let mut changes = client.state_changes();
    proxy.refuse(true);
    proxy.drop_all();
    tokio::time::timeout(BOUND, changes.wait_for(|s| s != SessionState::Connected))
        .await
        .map_err(|_| "the client did not notice the dropped connection")?;
    let changed: Vec<&String> = leaf_paths.iter().step_by(leaves).collect();
    let mut last = 0;
    for stat in try_join_all(changed.iter().map(|p| setup.set_data(p, b"cut off", None))).await? {
        last = last.max(stat.mzxid);
    }
    proxy.refuse(false);
    tokio::time::timeout(BOUND, changes.wait_for(|s| s == SessionState::Connected))
        .await
        .map_err(|_| "the client did not reconnect")?;
    let begin = Instant::now();
    tokio::time::timeout(BOUND, async {
        while cache.zxid() < last {
            if let CacheEvent::Initialized { .. } = events.next().await? {
                return Err("initialized twice".into());
            }
        }
        Ok::<(), BenchError>(())
    })
    .await
    .map_err(|_| "the cache did not catch up")??;
    let catch_up = begin.elapsed();
    drop(events);
    drop(cache);
    client.close().await;

    tree.remove().await?;
    Ok(Figures {
        start,
        bytes_per_node: per_node[0],
        stats_only_bytes_per_node: per_node[1],
        follow,
        catch_up,
    })
}
