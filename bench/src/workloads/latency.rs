//! Workload 2: latency of sequential getData, raw socket and our client, against the real
//! server and against the instant server; the difference is the client's overhead.

use std::net::SocketAddr;

use super::{ensure_node, NODE, NODE_DATA_LEN};
use crate::contestant::{sequential, Contestant};
use crate::instant_server::InstantServer;
use crate::report::{Report, Target};
use crate::stats::{median, Percentiles};
use crate::{BenchError, Ctx};

pub async fn run(ctx: &Ctx, report: &mut Report) -> Result<(), BenchError> {
    ensure_node(ctx).await?;
    let n = ctx.opts.count(20_000) as usize;
    measure_against("latency.zk", ctx.zk, n, ctx.opts.rounds, None, report).await?;
    let server = InstantServer::start(NODE_DATA_LEN)?;
    measure_against(
        "latency.instant",
        server.addr(),
        n,
        ctx.opts.rounds,
        Some(Target::AtMost(3.0)),
        report,
    )
    .await
}

/// Rounds alternate raw and ours; each round's p50/p99 come from `n` samples, the figures are
/// medians over rounds, and the overhead is the median of per-round differences.
async fn measure_against(
    name: &str,
    addr: SocketAddr,
    n: usize,
    rounds: usize,
    p50_overhead_target: Option<Target>,
    report: &mut Report,
) -> Result<(), BenchError> {
    sequential(Contestant::Limit, addr, NODE, n / 10).await?;
    let mut ours_error = sequential(Contestant::Ours, addr, NODE, n / 10).await.err();
    let (mut raw, mut ours) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        raw.push(Percentiles::of(
            &mut sequential(Contestant::Limit, addr, NODE, n).await?,
        ));
        if ours_error.is_none() {
            match sequential(Contestant::Ours, addr, NODE, n).await {
                Ok(mut s) => ours.push(Percentiles::of(&mut s)),
                Err(e) => ours_error = Some(e),
            }
        }
    }
    let us = |v: u64| v as f64 / 1000.0;
    let med = |ps: &[Percentiles], f: fn(&Percentiles) -> u64| {
        median(&ps.iter().map(|p| us(f(p))).collect::<Vec<_>>())
    };
    report.figure(&format!("{name}.raw.p50"), med(&raw, |p| p.p50_ns), "µs");
    report.figure(&format!("{name}.raw.p99"), med(&raw, |p| p.p99_ns), "µs");
    if let Some(e) = ours_error {
        let why = format!("our client failed: {e}");
        report.not_measured(&format!("{name}.ours.p50"), "µs", &why);
        return Ok(());
    }
    report.figure(&format!("{name}.ours.p50"), med(&ours, |p| p.p50_ns), "µs");
    report.figure(&format!("{name}.ours.p99"), med(&ours, |p| p.p99_ns), "µs");
    let overhead = |f: fn(&Percentiles) -> u64| {
        median(
            &raw.iter()
                .zip(&ours)
                .map(|(r, o)| us(f(o)) - us(f(r)))
                .collect::<Vec<_>>(),
        )
    };
    let p50_name = format!("{name}.overhead.p50");
    match p50_overhead_target {
        Some(t) => report.figure_with_target(&p50_name, overhead(|p| p.p50_ns), "µs", t),
        None => report.figure(&p50_name, overhead(|p| p.p50_ns), "µs"),
    }
    report.figure(
        &format!("{name}.overhead.p99"),
        overhead(|p| p.p99_ns),
        "µs",
    );
    Ok(())
}
