//! With the `metrics` feature: the client and the recipes record into a Prometheus recorder
//! installed here, as a service exporting its metrics would have them do, so that the
//! figures include what recording costs.
//!
//! The recorder is metrics-exporter-prometheus's (the exporter most services use), with
//! histogram buckets and a thread running its upkeep every 5 s, as its own `install` does;
//! that thread's CPU counts in the client's CPU per operation. Nothing is served: rendering
//! for a scrape is not part of the measured cost.
//!
//! With `ZOOKEEPER_BENCH_RECORDER=none` no recorder is installed: the hooks run and hand
//! their records to the facade's no-op recorder, which measures the crates' own part of the
//! cost apart from the recorder's.

use std::time::Duration;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

/// The exporter's default interval between upkeeps.
const UPKEEP: Duration = Duration::from_secs(5);

/// Latency buckets, in seconds.
const BUCKETS: [f64; 10] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.1, 1.0,
];

/// Installs the recorder for the whole process and starts its upkeep; `None` when the
/// environment asks for no recorder.
pub fn install() -> Option<PrometheusHandle> {
    if std::env::var("ZOOKEEPER_BENCH_RECORDER").as_deref() == Ok("none") {
        return None;
    }
    let handle = PrometheusBuilder::new()
        .set_buckets(&BUCKETS)
        .expect("buckets")
        .install_recorder()
        .expect("no other recorder is installed");
    zookeeper_recipes::metrics::describe();
    let upkeep = handle.clone();
    std::thread::Builder::new()
        .name("metrics-upkeep".into())
        .spawn(move || loop {
            std::thread::sleep(UPKEEP);
            upkeep.run_upkeep();
        })
        .expect("the upkeep thread");
    Some(handle)
}

/// What the run recorded, for its last line: the requests the client recorded, from the
/// recorder's own rendering (proof that the run recorded what it measured).
pub fn summary(handle: Option<&PrometheusHandle>) -> String {
    match handle {
        Some(handle) => format!("{} requests recorded", requests_recorded(handle)),
        None => "no recorder installed (ZOOKEEPER_BENCH_RECORDER=none)".to_string(),
    }
}

fn requests_recorded(handle: &PrometheusHandle) -> u64 {
    handle
        .render()
        .lines()
        .filter(|line| line.starts_with("zookeeper_requests_total"))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}
