//! Workload 2: latency of sequential getData, raw socket and our client, against the real
//! server and against the instant server; the difference is the client's overhead.
//! One session each, open side by side, taking turns.

use std::net::SocketAddr;
use std::time::Instant;

use super::{ensure_node, NODE, NODE_DATA_LEN};
use crate::instant_server::InstantServer;
use crate::raw_socket::RawSession;
use crate::report::{Report, Target};
use crate::stats::{median, Percentiles};
use crate::{ours, wire};
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

/// Samples per turn: the contestants take turns this often within a round, so that both see
/// the same moments of a noisy machine.
const TURN: usize = 500;

/// Both sessions stay open for the whole measurement; in each round they take turns of
/// `TURN` sequential getData until each has `n` samples. Each round gives a p50/p99 per
/// contestant; the figures are medians over rounds, the overhead the median of per-round
/// differences.
async fn measure_against(
    name: &str,
    addr: SocketAddr,
    n: usize,
    rounds: usize,
    p50_overhead_target: Option<Target>,
    report: &mut Report,
) -> Result<(), BenchError> {
    let mut raw_session = RawSession::connect(addr).await?;
    let frame = wire::get_data_request(1, NODE);
    let client = match ours::connect(addr).await {
        Ok(c) => Some(c),
        Err(e) => {
            report.not_measured(&format!("{name}.ours.p50"), "µs", &e.to_string());
            None
        }
    };
    let (mut raw, mut ours) = (Vec::new(), Vec::new());
    // Round 0 is the warm-up.
    for round in 0..=rounds {
        let (mut raw_ns, mut ours_ns) = (Vec::with_capacity(n), Vec::with_capacity(n));
        while raw_ns.len() < n {
            for _ in 0..TURN.min(n - raw_ns.len()) {
                let start = Instant::now();
                raw_session.round_trip(&frame).await?;
                raw_ns.push(start.elapsed().as_nanos() as u64);
            }
            if let Some(client) = &client {
                for _ in 0..TURN.min(n - ours_ns.len()) {
                    let start = Instant::now();
                    ours::get_data(client, NODE).await?;
                    ours_ns.push(start.elapsed().as_nanos() as u64);
                }
            }
        }
        if round > 0 {
            raw.push(Percentiles::of(&mut raw_ns));
            ours.push(Percentiles::of(&mut ours_ns));
        }
    }
    raw_session.close().await?;
    let us = |v: u64| v as f64 / 1000.0;
    let med = |ps: &[Percentiles], f: fn(&Percentiles) -> u64| {
        median(&ps.iter().map(|p| us(f(p))).collect::<Vec<_>>())
    };
    report.figure(&format!("{name}.raw.p50"), med(&raw, |p| p.p50_ns), "µs");
    report.figure(&format!("{name}.raw.p99"), med(&raw, |p| p.p99_ns), "µs");
    let Some(client) = client else {
        return Ok(());
    };
    ours::close(client).await;
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
