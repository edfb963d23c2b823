//! The recipes' metrics (and the client's) after a known workload, as a Prometheus server
//! would scrape them.
//!
//! ```text
//! cargo run -p zookeeper-recipes --example metrics --features metrics
//! ```
//!
//! It starts its own ZooKeeper (through `zookeeper-testkit`), installs a Prometheus recorder
//! (`metrics-exporter-prometheus`, without its HTTP listener), has three workers share a
//! mutex, one of them giving up after a timeout, runs an election that changes hands, and
//! prints the lock and leadership metrics the recorder holds (the client's are there too:
//! `zookeeper_requests_total` and the rest).

use std::error::Error;
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use zookeeper_recipes::{Client, LeaderLatch, Mutex};
use zookeeper_testkit::ZkServer;

/// Histogram buckets for lock waits and holds, in seconds.
const BUCKETS: [f64; 5] = [0.001, 0.01, 0.1, 0.5, 2.0];

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn Error>> {
    let prometheus = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &BUCKETS)?
        .install_recorder()?;
    zookeeper_recipes::metrics::describe();

    let server = ZkServer::start().await?;
    let mut clients = Vec::new();
    for _ in 0..3 {
        clients.push(Client::connect(&server.connect_string()).await?);
    }

    // Three workers, each holding the lock for 100 ms: the second waits about 100 ms, the
    // third about 200 ms. Meanwhile a fourth caller gives up after 50 ms.
    let mut workers = tokio::task::JoinSet::new();
    for client in &clients {
        let mutex = Mutex::new(client, "/locks/report")?;
        workers.spawn(async move {
            let guard = mutex.acquire().await?;
            tokio::time::sleep(Duration::from_millis(100)).await;
            guard.release().await
        });
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    let impatient = Mutex::new(&clients[0], "/locks/report")?;
    let gave_up = impatient.acquire_timeout(Duration::from_millis(50)).await?;
    assert!(gave_up.is_none());
    while let Some(done) = workers.join_next().await {
        done??;
    }

    // An election: the first leads, resigns, and the second takes over.
    let first = LeaderLatch::start(&clients[0], "/election", "first").await?;
    first.await_leadership().await?;
    let second = LeaderLatch::start(&clients[1], "/election", "second").await?;
    first.resign().await?;
    second.await_leadership().await?;
    second.resign().await?;
    for client in &clients {
        client.close().await;
    }

    println!("# the lock and leadership metrics after the workload:");
    for line in prometheus.render().lines() {
        if line.contains("zookeeper_lock") || line.contains("zookeeper_leadership") {
            println!("{line}");
        }
    }
    Ok(())
}
