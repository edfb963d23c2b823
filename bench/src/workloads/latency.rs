//! Workload 2: latency of sequential getData, raw socket and our client called from every
//! place (tasks of either runtime shape, a thread outside the multi-thread runtime's workers
//! as `#[tokio::main]`'s body is, the blocking API), against the real server and against the
//! instant server; the difference is the client's overhead. One session each, open side by
//! side, taking turns.

use std::net::SocketAddr;
use std::time::Instant;

use super::{ensure_node, NODE, NODE_DATA_LEN};
use crate::contestant::{on_plain_thread, Caller, Ours};
use crate::instant_server::InstantServer;
use crate::raw_socket::RawSession;
use crate::report::{Report, Target};
use crate::stats::{median, Percentiles};
use crate::{ours, wire};
use crate::{BenchError, Ctx};

pub async fn run(ctx: &Ctx, report: &mut Report) -> Result<(), BenchError> {
    ensure_node(ctx).await?;
    let n = ctx.opts.count(20_000) as usize;
    measure_against(
        "latency.zk",
        ctx,
        ctx.zk,
        n,
        [Some(Target::AtMost(5.0)); 4],
        report,
    )
    .await?;
    let server = InstantServer::start(NODE_DATA_LEN)?;
    measure_against(
        "latency.instant",
        ctx,
        server.addr(),
        n,
        [Some(Target::AtMost(3.0)), None, None, None],
        report,
    )
    .await
}

/// `n` sequential getData of our client, each timed, made from where `caller` says; the
/// blocking API's through its own `get_data`.
async fn timed_turn(
    client: &Ours,
    caller: Caller,
    mt: &tokio::runtime::Handle,
    n: usize,
) -> Result<Vec<u64>, BenchError> {
    if let Ours::Blocking(client) = client {
        let client = client.clone();
        return on_plain_thread(move || {
            let mut ns = Vec::with_capacity(n);
            for _ in 0..n {
                let start = Instant::now();
                client.get_data(NODE)?;
                ns.push(start.elapsed().as_nanos() as u64);
            }
            Ok(ns)
        })
        .await?;
    }
    client
        .call_from(caller, mt, move |client| async move {
            let mut ns = Vec::with_capacity(n);
            for _ in 0..n {
                let start = Instant::now();
                ours::get_data(&client, NODE).await?;
                ns.push(start.elapsed().as_nanos() as u64);
            }
            Ok(ns)
        })
        .await
}

/// Samples per turn: the contestants take turns this often within a round, so that both see
/// the same moments of a noisy machine.
const TURN: usize = 500;

/// Both sessions stay open for the whole measurement; in each round they take turns of
/// `TURN` sequential getData until each has `n` samples. Each round gives a p50/p99 per
/// contestant; the figures are medians over rounds, the overhead the median of per-round
/// differences.
///
/// Figures are named by the caller (see [`Caller::name`]): the current-thread shape keeps
/// the names of earlier runs (`ours`, `overhead`), the others add their suffix to both
/// (`ours_mt` and `overhead_mt`, ...). `p50_overhead_targets` are per caller, in the order of
/// [`Caller::ALL`].
pub(super) async fn measure_against(
    name: &str,
    ctx: &Ctx,
    addr: SocketAddr,
    n: usize,
    p50_overhead_targets: [Option<Target>; 4],
    report: &mut Report,
) -> Result<(), BenchError> {
    let mut raw_session = RawSession::connect(addr).await?;
    let frame = wire::get_data_request(1, NODE);
    let mut clients = Vec::new();
    for caller in Caller::ALL {
        match Ours::connect(caller, addr, &ctx.mt).await {
            Ok(c) => clients.push((caller, c)),
            Err(e) => {
                let who = caller.name();
                report.not_measured(&format!("{name}.{who}.p50"), "µs", &e.to_string());
            }
        }
    }
    let mut raw = Vec::new();
    let mut ours: Vec<Vec<Percentiles>> = clients.iter().map(|_| Vec::new()).collect();
    // Round 0 is the warm-up.
    for round in 0..=ctx.opts.rounds {
        let mut raw_ns = Vec::with_capacity(n);
        let mut ours_ns: Vec<Vec<u64>> = clients.iter().map(|_| Vec::with_capacity(n)).collect();
        while raw_ns.len() < n {
            let turn = TURN.min(n - raw_ns.len());
            for _ in 0..turn {
                let start = Instant::now();
                raw_session.round_trip(&frame).await?;
                raw_ns.push(start.elapsed().as_nanos() as u64);
            }
            for ((caller, client), ns) in clients.iter().zip(&mut ours_ns) {
                ns.extend(timed_turn(client, *caller, &ctx.mt, turn).await?);
            }
        }
        if round > 0 {
            raw.push(Percentiles::of(&mut raw_ns));
            for (ps, ns) in ours.iter_mut().zip(&mut ours_ns) {
                ps.push(Percentiles::of(ns));
            }
        }
    }
    raw_session.close().await?;
    let us = |v: u64| v as f64 / 1000.0;
    let med = |ps: &[Percentiles], f: fn(&Percentiles) -> u64| {
        median(&ps.iter().map(|p| us(f(p))).collect::<Vec<_>>())
    };
    report.figure(&format!("{name}.raw.p50"), med(&raw, |p| p.p50_ns), "µs");
    report.figure(&format!("{name}.raw.p99"), med(&raw, |p| p.p99_ns), "µs");
    for ((caller, client), ours) in clients.into_iter().zip(&ours) {
        client.close(caller, &ctx.mt).await?;
        let who = caller.name();
        let overhead_name = who.replacen("ours", "overhead", 1);
        let target = p50_overhead_targets[caller.index()];
        report.figure(&format!("{name}.{who}.p50"), med(ours, |p| p.p50_ns), "µs");
        report.figure(&format!("{name}.{who}.p99"), med(ours, |p| p.p99_ns), "µs");
        let overhead = |f: fn(&Percentiles) -> u64| {
            median(
                &raw.iter()
                    .zip(ours)
                    .map(|(r, o)| us(f(o)) - us(f(r)))
                    .collect::<Vec<_>>(),
            )
        };
        report.figure_with_target(
            &format!("{name}.{overhead_name}.p50"),
            overhead(|p| p.p50_ns),
            "µs",
            target,
        );
        report.figure(
            &format!("{name}.{overhead_name}.p99"),
            overhead(|p| p.p99_ns),
            "µs",
        );
    }
    Ok(())
}
