//! Shared by the pipelined workloads: the limit and our client measured alternately, round by
//! round, on the same server in the same run.

use std::net::SocketAddr;

use crate::contestant::{pipelined, Contestant};
use crate::measure::Pair;
use crate::report::{Report, Target};
use crate::rusage::ThreadClock;
use crate::BenchError;

pub struct Setup<'a> {
    /// Figure name prefix.
    pub name: &'a str,
    pub addr: SocketAddr,
    pub path: &'a str,
    pub total: u64,
    pub window: usize,
    pub sessions: usize,
    pub rounds: usize,
    /// Threads whose CPU is not ours (the in-process server).
    pub excluded: &'a [ThreadClock],
    /// Targets for ours/limit throughput and CPU per operation ratios, and ours' ops/s.
    pub throughput_ratio: Option<Target>,
    pub cpu_ratio: Option<Target>,
    pub ours_ops: Option<Target>,
}

pub async fn compare(s: Setup<'_>, report: &mut Report) -> Result<(), BenchError> {
    let run = |who: Contestant, total: u64| {
        pipelined(who, s.addr, s.path, total, s.window, s.sessions, s.excluded)
    };
    // Warm-up (JIT of the server, connection pools, page faults), not recorded.
    run(Contestant::Limit, s.total / 10).await?;
    let mut ours_error = run(Contestant::Ours, s.total / 10).await.err();
    let mut pair = Pair::default();
    for _ in 0..s.rounds {
        pair.limit.push(run(Contestant::Limit, s.total).await?);
        if ours_error.is_none() {
            match run(Contestant::Ours, s.total).await {
                Ok(sample) => pair.ours.push(sample),
                Err(e) => ours_error = Some(e),
            }
        }
    }
    let name = s.name;
    report.figure(
        &format!("{name}.raw.ops_per_s"),
        Pair::median_ops(&pair.limit),
        "ops/s",
    );
    report.figure(
        &format!("{name}.raw.cpu_per_op"),
        Pair::median_cpu(&pair.limit),
        "ns",
    );
    if let Some(e) = ours_error {
        let why = format!("our client failed: {e}");
        report.not_measured(&format!("{name}.ours.ops_per_s"), "ops/s", &why);
        return Ok(());
    }
    if !s.excluded.is_empty() {
        report.figure(
            &format!("{name}.ours.server_load"),
            Pair::median_server_load(&pair.ours),
            "cores",
        );
    }
    let ours_ops = Pair::median_ops(&pair.ours);
    match s.ours_ops {
        Some(t) => {
            report.figure_with_target(&format!("{name}.ours.ops_per_s"), ours_ops, "ops/s", t)
        }
        None => report.figure(&format!("{name}.ours.ops_per_s"), ours_ops, "ops/s"),
    }
    report.figure(
        &format!("{name}.ours.cpu_per_op"),
        Pair::median_cpu(&pair.ours),
        "ns",
    );
    let ratio_name = format!("{name}.ours_vs_raw.throughput");
    match s.throughput_ratio {
        Some(t) => report.figure_with_target(&ratio_name, pair.throughput_ratio(), "x", t),
        None => report.figure(&ratio_name, pair.throughput_ratio(), "x"),
    }
    let cpu_name = format!("{name}.ours_vs_raw.cpu_per_op");
    match s.cpu_ratio {
        Some(t) => report.figure_with_target(&cpu_name, pair.cpu_ratio(), "x", t),
        None => report.figure(&cpu_name, pair.cpu_ratio(), "x"),
    }
    Ok(())
}
