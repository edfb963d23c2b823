//! Reading what a workload recorded through the `metrics` facade (with the cargo feature
//! `metrics`).
//!
//! [`recorded`] runs a workload on a current-thread runtime of the calling thread, with a
//! recorder installed on that thread only: everything the workload's tasks record lands there,
//! and tests running in parallel on other threads never see each other's metrics. Code that
//! records from other threads (a multi-thread runtime, `spawn_blocking`) is not seen.
//!
//! ```no_run
//! # async fn connect() {}
//! let m = zookeeper_testkit::metrics::recorded(|| async {
//!     // connect a client, run the workload, close it
//! #   connect().await;
//! });
//! assert_eq!(m.counter("zookeeper_requests_total", &[("operation", "get_data")]), 3);
//! ```

use std::future::Future;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::CompositeKey;

/// Runs `workload` on a new current-thread runtime with a recorder of its own, and returns
/// what the recorder holds once the runtime, and every task of it, is gone.
///
/// Panics if the runtime cannot be built, or with the workload's panic.
pub fn recorded<F: Future<Output = ()>>(workload: impl FnOnce() -> F) -> Recorded {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    {
        let _local = metrics::set_default_local_recorder(&recorder);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread runtime");
        runtime.block_on(workload());
    }
    Recorded(
        snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .map(|(key, _, _, value)| (key, value))
            .collect(),
    )
}

/// What a workload recorded, read by metric name and labels (in any order).
#[derive(Debug)]
pub struct Recorded(Vec<(CompositeKey, DebugValue)>);

impl Recorded {
    fn find(&self, name: &str, labels: &[(&str, &str)]) -> Option<&DebugValue> {
        let mut want = labels.to_vec();
        want.sort_unstable();
        self.0.iter().find_map(|(key, value)| {
            let key = key.key();
            let mut have: Vec<(&str, &str)> = key.labels().map(|l| (l.key(), l.value())).collect();
            have.sort_unstable();
            (key.name() == name && have == want).then_some(value)
        })
    }

    /// A counter's value; 0 when it was never recorded. Panics if it is not a counter.
    pub fn counter(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        match self.find(name, labels) {
            Some(DebugValue::Counter(n)) => *n,
            None => 0,
            Some(other) => panic!("{name} {labels:?} is not a counter: {other:?}"),
        }
    }

    /// A gauge's value. Panics if it was never recorded or is not a gauge.
    pub fn gauge(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        match self.find(name, labels) {
            Some(DebugValue::Gauge(v)) => v.into_inner(),
            other => panic!("{name} {labels:?} is not a recorded gauge: {other:?}"),
        }
    }

    /// A histogram's samples, in the order recorded; empty when it was never recorded.
    /// Panics if it is not a histogram.
    pub fn histogram(&self, name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
        match self.find(name, labels) {
            Some(DebugValue::Histogram(v)) => v.iter().map(|x| x.into_inner()).collect(),
            None => Vec::new(),
            Some(other) => panic!("{name} {labels:?} is not a histogram: {other:?}"),
        }
    }

    /// Every label set recorded under `name`, each sorted by label name.
    pub fn label_sets(&self, name: &str) -> Vec<Vec<(String, String)>> {
        self.0
            .iter()
            .filter(|(key, _)| key.key().name() == name)
            .map(|(key, _)| {
                let mut labels: Vec<(String, String)> = key
                    .key()
                    .labels()
                    .map(|l| (l.key().to_owned(), l.value().to_owned()))
                    .collect();
                labels.sort_unstable();
                labels
            })
            .collect()
    }

    /// The name of every metric recorded.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .0
            .iter()
            .map(|(key, _)| key.key().name().to_owned())
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }
}
