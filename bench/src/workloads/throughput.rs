//! Shared by the pipelined workloads: the limit and our client called from every place (see
//! [`Caller`]), measured in turn, round by round, on the same server in the same run.

use std::net::SocketAddr;

use tokio::runtime::Handle;

use crate::contestant::{pipelined, Caller, Contestant, Run};
use crate::measure::Pair;
use crate::report::{Report, Target};
use crate::rusage::ThreadClock;
use crate::BenchError;

/// Targets for one calling shape.
#[derive(Clone, Copy, Default)]
pub struct Targets {
    /// ours/limit throughput.
    pub throughput_ratio: Option<Target>,
    /// ours/limit CPU per operation.
    pub cpu_ratio: Option<Target>,
    /// ours' ops/s.
    pub ours_ops: Option<Target>,
}

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
    /// Targets of each calling shape, in the order of [`Caller::ALL`].
    pub targets: [Targets; 4],
    /// The multi-thread runtime.
    pub mt: &'a Handle,
}

pub async fn compare(s: Setup<'_>, report: &mut Report) -> Result<(), BenchError> {
    let run = |who: Contestant, total: u64| {
        let run = Run {
            addr: s.addr,
            path: s.path.to_string(),
            total,
            window: s.window,
            sessions: s.sessions,
            excluded: s.excluded.to_vec(),
        };
        pipelined(who, run, s.mt)
    };
    // Warm-up (JIT of the server, connection pools, page faults), not recorded.
    run(Contestant::Limit, s.total / 10).await?;
    let mut errors: [Option<BenchError>; 4] = Default::default();
    for (i, caller) in Caller::ALL.into_iter().enumerate() {
        errors[i] = run(Contestant::Ours(caller), s.total / 10).await.err();
    }
    let mut limit = Vec::new();
    let mut ours: [Vec<_>; 4] = Default::default();
    for _ in 0..s.rounds {
        limit.push(run(Contestant::Limit, s.total).await?);
        for (i, caller) in Caller::ALL.into_iter().enumerate() {
            if errors[i].is_none() {
                match run(Contestant::Ours(caller), s.total).await {
                    Ok(sample) => ours[i].push(sample),
                    Err(e) => errors[i] = Some(e),
                }
            }
        }
    }
    let name = s.name;
    report.figure(
        &format!("{name}.raw.ops_per_s"),
        Pair::median_ops(&limit),
        "ops/s",
    );
    report.figure(
        &format!("{name}.raw.cpu_per_op"),
        Pair::median_cpu(&limit),
        "ns",
    );
    for (((caller, samples), error), targets) in
        Caller::ALL.into_iter().zip(ours).zip(errors).zip(s.targets)
    {
        let who = caller.name();
        if let Some(e) = error {
            let why = format!("our client failed: {e}");
            report.not_measured(&format!("{name}.{who}.ops_per_s"), "ops/s", &why);
            continue;
        }
        let pair = Pair {
            limit: limit.clone(),
            ours: samples,
        };
        if !s.excluded.is_empty() {
            report.figure(
                &format!("{name}.{who}.server_load"),
                Pair::median_server_load(&pair.ours),
                "cores",
            );
        }
        report.figure_with_target(
            &format!("{name}.{who}.ops_per_s"),
            Pair::median_ops(&pair.ours),
            "ops/s",
            targets.ours_ops,
        );
        report.figure(
            &format!("{name}.{who}.cpu_per_op"),
            Pair::median_cpu(&pair.ours),
            "ns",
        );
        report.figure_with_target(
            &format!("{name}.{who}_vs_raw.throughput"),
            pair.throughput_ratio(),
            "x",
            targets.throughput_ratio,
        );
        report.figure_with_target(
            &format!("{name}.{who}_vs_raw.cpu_per_op"),
            pair.cpu_ratio(),
            "x",
            targets.cpu_ratio,
        );
    }
    Ok(())
}
