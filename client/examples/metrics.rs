//! The client's metrics after a known workload, as a Prometheus server would scrape them.
//!
//! ```text
//! cargo run -p zookeeper-tokio --example metrics --features metrics
//! ```
//!
//! It starts its own ZooKeeper (through `zookeeper-testkit`), installs a Prometheus recorder
//! (`metrics-exporter-prometheus`, here without its HTTP listener: a service would let the
//! exporter serve `/metrics`, or serve `handle.render()` itself), runs the workload below, and
//! prints what the recorder holds. Any other recorder of the `metrics` facade works the same.

use std::error::Error;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use zookeeper_testkit::ZkServer;
use zookeeper_tokio::{Client, CreateOptions, MultiOp};

/// Histogram buckets for request latencies, in seconds.
const BUCKETS: [f64; 5] = [0.0005, 0.001, 0.005, 0.05, 1.0];

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn Error>> {
    // Install the recorder before the first client connects.
    let prometheus = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &BUCKETS)?
        .install_recorder()?;
    zookeeper_tokio::metrics::describe();

    let server = ZkServer::start().await?;
    let client = Client::connect(&server.connect_string()).await?;

    // 1 + 20 creates, 1 listing, 100 pipelined reads, 5 reads of missing nodes (NoNode), a
    // write with a stale version (BadVersion), a data watch that fires, a multi.
    let persistent = CreateOptions::persistent();
    client.create("/jobs", b"", &persistent).await?;
    for i in 0..20 {
        client
            .create(&format!("/jobs/job-{i:02}"), b"queued", &persistent)
            .await?;
    }
    let (jobs, _) = client.get_children("/jobs").await?;
    let reads: Vec<_> = jobs
        .iter()
        .cycle()
        .take(100)
        .map(|job| client.get_data(&format!("/jobs/{job}")))
        .collect();
    for read in reads {
        read.await?;
    }
    for i in 0..5 {
        let missing = client.get_data(&format!("/jobs/missing-{i}")).await;
        assert!(missing.is_err());
    }
    let stale = client.set_data("/jobs/job-00", b"done", Some(41)).await;
    assert!(stale.is_err());
    let (_, _, changed) = client.get_data_and_watch("/jobs/job-01").await?;
    client.set_data("/jobs/job-01", b"running", None).await?;
    changed.await;
    client
        .multi(vec![
            MultiOp::check("/jobs", 0),
            MultiOp::delete("/jobs/job-02", None),
            MultiOp::delete("/jobs/job-03", None),
        ])
        .await?;
    client.close().await;

    println!("# what the recorder holds after the workload:");
    print!("{}", prometheus.render());
    Ok(())
}
