//! Part of workload 6 (scale): a persistent-recursive watch over a large subtree. The client
//! lists the whole subtree when the watch is set and again after every reconnect, so that
//! changes made while it was cut off are reported. Measured: how long `add_watch` takes beside
//! the same listings pipelined on a raw socket (the limit), the client memory per node, and the
//! time from the reconnect until every missed change has been reported.

use std::time::{Duration, Instant};

use futures_util::future::try_join_all;
use zookeeper_testkit::Proxy;
use zookeeper_tokio::{AddWatchMode, Client, EventType, SessionState};

use crate::heap::live_bytes;
use crate::raw_socket::RawSession;
use crate::report::Report;
use crate::workloads::wide_tree::WideTree;
use crate::{wire, BenchError, Ctx};

/// Bound on every wait of this workload.
const BOUND: Duration = Duration::from_secs(120);

pub struct SubtreeFigures {
    /// `add_watch` on the root, until it returned (the first walk included).
    pub learn: Duration,
    /// Every node listed with one pipelined burst on a raw socket.
    pub raw_listing: Duration,
    pub bytes_per_node: f64,
    /// From the client reporting itself connected again until the last missed change arrived.
    pub catch_up: Duration,
}

pub async fn report(ctx: &Ctx, report: &mut Report) {
    let dirs = ctx.opts.count(100) as usize;
    let leaves = 100;
    let name = format!("scale.subtree{}", dirs * leaves + dirs + 1);
    match measure(ctx, dirs, leaves).await {
        Ok(f) => {
            let ms = |d: Duration| d.as_secs_f64() * 1000.0;
            report.figure(&format!("{name}.learn"), ms(f.learn), "ms");
            report.figure(&format!("{name}.raw_listing"), ms(f.raw_listing), "ms");
            report.figure(
                &format!("{name}.learn_vs_raw"),
                ms(f.learn) / ms(f.raw_listing),
                "×",
            );
            report.figure(
                &format!("{name}.memory_per_node"),
                f.bytes_per_node,
                "bytes",
            );
            report.figure(&format!("{name}.catch_up"), ms(f.catch_up), "ms");
        }
        Err(e) => report.not_measured(&name, "", &e.to_string()),
    }
}

async fn measure(ctx: &Ctx, dirs: usize, leaves: usize) -> Result<SubtreeFigures, BenchError> {
    let tree = WideTree::create(ctx, "subtree", dirs, leaves, b"").await?;
    let WideTree {
        setup,
        root,
        dirs: dir_paths,
        leaves: leaf_paths,
    } = &tree;
    let all: Vec<&String> = std::iter::once(root)
        .chain(dir_paths)
        .chain(leaf_paths)
        .collect();

    let mut raw = RawSession::connect(ctx.zk).await?;
    let block: Vec<u8> = all
        .iter()
        .enumerate()
        .flat_map(|(i, p)| wire::get_children2_request(i as i32 + 1, p))
        .collect();
    let start = Instant::now();
    raw.burst(&block, all.len() as u64).await?;
    let raw_listing = start.elapsed();
    raw.close().await?;

    let proxy = Proxy::start(ctx.zk).await?;
    let client = Client::connect(&proxy.connect_string()).await?;
    let heap_before = live_bytes();
    let start = Instant::now();
    let mut watch = client
        .add_watch(root, AddWatchMode::PersistentRecursive)
        .await?;
    let learn = start.elapsed();
    let bytes_per_node = live_bytes().saturating_sub(heap_before) as f64 / all.len() as f64;

    // Cut off, one leaf per directory changed, reconnect.
    let mut changes = client.state_changes();
    proxy.refuse(true);
    proxy.drop_all();
    tokio::time::timeout(BOUND, changes.wait_for(|s| s != SessionState::Connected))
        .await
        .map_err(|_| "the client did not notice the dropped connection")?;
    let changed: Vec<&String> = leaf_paths.iter().step_by(leaves).collect();
    try_join_all(changed.iter().map(|p| setup.set_data(p, b"changed", None))).await?;
    proxy.refuse(false);
    tokio::time::timeout(BOUND, changes.wait_for(|s| s == SessionState::Connected))
        .await
        .map_err(|_| "the client did not reconnect")?;
    let start = Instant::now();
    for _ in 0..changed.len() {
        let event = tokio::time::timeout(BOUND, watch.next())
            .await
            .map_err(|_| "a missed change was not reported")?
            .ok_or("the watch ended")?;
        if event.event_type != EventType::NodeDataChanged {
            return Err(format!("unexpected event {event:?}").into());
        }
    }
    let catch_up = start.elapsed();
    drop(watch);
    client.close().await;

    tree.remove().await?;
    Ok(SubtreeFigures {
        learn,
        raw_listing,
        bytes_per_node,
        catch_up,
    })
}
