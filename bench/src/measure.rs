//! Timing one measured run: wall time and the CPU time charged to the client side.

use std::future::Future;
use std::time::Instant;

use crate::rusage::{CpuMeter, ThreadClock};
use crate::stats::median;

/// Throughput and CPU cost of one run.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub ops_per_s: f64,
    pub cpu_ns_per_op: f64,
    /// CPU per operation of the excluded threads (the in-process server), to tell whether
    /// the server rather than the client was the bottleneck.
    pub server_cpu_ns_per_op: f64,
}

/// Runs `work` (which performs `ops` operations), charging CPU to everything in this process
/// except the `excluded` threads.
pub async fn throughput<F, E>(ops: u64, excluded: &[ThreadClock], work: F) -> Result<Sample, E>
where
    F: Future<Output = Result<(), E>>,
{
    let cpu = CpuMeter::start(excluded);
    let start = Instant::now();
    work.await?;
    let wall = start.elapsed();
    let cpu = cpu.stop();
    Ok(Sample {
        ops_per_s: ops as f64 / wall.as_secs_f64(),
        cpu_ns_per_op: cpu.ours.as_nanos() as f64 / ops as f64,
        server_cpu_ns_per_op: cpu.excluded.as_nanos() as f64 / ops as f64,
    })
}

/// Per-round samples of two contestants measured alternately in the same run.
#[derive(Clone, Default)]
pub struct Pair {
    pub limit: Vec<Sample>,
    pub ours: Vec<Sample>,
}

impl Pair {
    pub fn median_ops(samples: &[Sample]) -> f64 {
        median(&samples.iter().map(|s| s.ops_per_s).collect::<Vec<_>>())
    }

    /// Median share of one core the excluded (server) threads used.
    pub fn median_server_load(samples: &[Sample]) -> f64 {
        median(
            &samples
                .iter()
                .map(|s| s.server_cpu_ns_per_op * s.ops_per_s / 1e9)
                .collect::<Vec<_>>(),
        )
    }

    pub fn median_cpu(samples: &[Sample]) -> f64 {
        median(&samples.iter().map(|s| s.cpu_ns_per_op).collect::<Vec<_>>())
    }

    /// Median over rounds of ours/limit throughput, each ratio taken within one round so that
    /// drifting load on the machine cancels out.
    pub fn throughput_ratio(&self) -> f64 {
        median(
            &self
                .limit
                .iter()
                .zip(&self.ours)
                .map(|(l, o)| o.ops_per_s / l.ops_per_s)
                .collect::<Vec<_>>(),
        )
    }

    /// Median over rounds of ours/limit CPU per operation.
    pub fn cpu_ratio(&self) -> f64 {
        median(
            &self
                .limit
                .iter()
                .zip(&self.ours)
                .map(|(l, o)| o.cpu_ns_per_op / l.cpu_ns_per_op)
                .collect::<Vec<_>>(),
        )
    }
}
