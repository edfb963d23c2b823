//! The blocking client beside the async one, on the real server: what a call costs when it
//! is made from a plain thread (the request queued from that thread, the reply waking it)
//! rather than from a task of the session's runtime.
//!
//! - Sequential latency: one caller, getData back to back; the async client from a task of
//!   the bench's current-thread runtime (its session on that runtime), the blocking client
//!   from a plain thread (its session on its own thread). The two take turns within each
//!   round; the overhead is the median of per-round differences of their p50 and p99.
//! - Pipelined throughput: `CALLERS` callers sharing one session, each making its share of
//!   the getData back to back: tasks of the current-thread runtime for the async client,
//!   plain threads for the blocking one. Ratios are blocking over async, per round.

use std::time::Instant;

use super::{ensure_node, NODE};
use crate::measure::{self, Pair};
use crate::ours;
use crate::report::Report;
use crate::stats::{median, Percentiles};
use crate::{BenchError, Ctx};

/// Sequential getData per turn: the contestants alternate this often within a round.
const TURN: usize = 500;
/// Callers sharing the session in the throughput runs.
const CALLERS: usize = 32;

pub async fn run(ctx: &Ctx, report: &mut Report) -> Result<(), BenchError> {
    ensure_node(ctx).await?;
    latency(ctx, report).await?;
    throughput(ctx, report).await
}

fn connect_blocking(ctx: &Ctx) -> Result<zookeeper_tokio::blocking::Client, BenchError> {
    Ok(zookeeper_tokio::blocking::Client::connect(
        &ctx.zk.to_string(),
    )?)
}

/// Runs `f` on a plain thread (outside every runtime) and awaits its result, so that the
/// bench's runtime, and the async client's session on it, keep running meanwhile.
async fn on_plain_thread<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, BenchError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    Ok(rx.await?)
}

async fn latency(ctx: &Ctx, report: &mut Report) -> Result<(), BenchError> {
    let n = ctx.opts.count(20_000) as usize;
    let asynchronous = ours::connect(ctx.zk).await?;
    let blocking = connect_blocking(ctx)?;
    let mut async_rounds = Vec::new();
    let mut blocking_rounds = Vec::new();
    // Round 0 is the warm-up.
    for round in 0..=ctx.opts.rounds {
        let mut async_ns = Vec::with_capacity(n);
        let mut blocking_ns = Vec::with_capacity(n);
        while async_ns.len() < n {
            let turn = TURN.min(n - async_ns.len());
            for _ in 0..turn {
                let start = Instant::now();
                asynchronous.get_data(NODE).await?;
                async_ns.push(start.elapsed().as_nanos() as u64);
            }
            let client = blocking.clone();
            let ns = on_plain_thread(move || {
                let mut ns = Vec::with_capacity(turn);
                for _ in 0..turn {
                    let start = Instant::now();
                    client.get_data(NODE)?;
                    ns.push(start.elapsed().as_nanos() as u64);
                }
                Ok::<_, zookeeper_tokio::Error>(ns)
            })
            .await??;
            blocking_ns.extend(ns);
        }
        if round > 0 {
            async_rounds.push(Percentiles::of(&mut async_ns));
            blocking_rounds.push(Percentiles::of(&mut blocking_ns));
        }
    }
    ours::close(asynchronous).await;
    on_plain_thread(move || blocking.close()).await?;

    let us = |v: u64| v as f64 / 1000.0;
    let med = |ps: &[Percentiles], f: fn(&Percentiles) -> u64| {
        median(&ps.iter().map(|p| us(f(p))).collect::<Vec<_>>())
    };
    let overhead = |f: fn(&Percentiles) -> u64| {
        median(
            &async_rounds
                .iter()
                .zip(&blocking_rounds)
                .map(|(a, b)| us(f(b)) - us(f(a)))
                .collect::<Vec<_>>(),
        )
    };
    let name = "blocking.latency";
    report.figure(
        &format!("{name}.async.p50"),
        med(&async_rounds, |p| p.p50_ns),
        "µs",
    );
    report.figure(
        &format!("{name}.async.p99"),
        med(&async_rounds, |p| p.p99_ns),
        "µs",
    );
    report.figure(
        &format!("{name}.blocking.p50"),
        med(&blocking_rounds, |p| p.p50_ns),
        "µs",
    );
    report.figure(
        &format!("{name}.blocking.p99"),
        med(&blocking_rounds, |p| p.p99_ns),
        "µs",
    );
    report.figure(
        &format!("{name}.overhead.p50"),
        overhead(|p| p.p50_ns),
        "µs",
    );
    report.figure(
        &format!("{name}.overhead.p99"),
        overhead(|p| p.p99_ns),
        "µs",
    );
    Ok(())
}

async fn throughput(ctx: &Ctx, report: &mut Report) -> Result<(), BenchError> {
    let total = ctx.opts.count(200_000);
    let asynchronous = ours::connect(ctx.zk).await?;
    let blocking = connect_blocking(ctx)?;
    // `limit` holds the async client's samples, `ours` the blocking one's.
    let mut pair = Pair::default();
    for round in 0..=ctx.opts.heavy_rounds() {
        let a = measure::throughput(
            total,
            &[],
            ours::pipelined_get_data(&asynchronous, NODE, total, CALLERS),
        )
        .await?;
        let client = blocking.clone();
        let b = measure::throughput(total, &[], async move {
            on_plain_thread(move || threads_get_data(&client, total, CALLERS)).await?
        })
        .await?;
        if round > 0 {
            pair.limit.push(a);
            pair.ours.push(b);
        }
    }
    ours::close(asynchronous).await;
    on_plain_thread(move || blocking.close()).await?;

    let name = format!("blocking.pipeline.callers{CALLERS}");
    report.figure(
        &format!("{name}.async.ops"),
        Pair::median_ops(&pair.limit),
        "ops/s",
    );
    report.figure(
        &format!("{name}.blocking.ops"),
        Pair::median_ops(&pair.ours),
        "ops/s",
    );
    report.figure(
        &format!("{name}.async.cpu_per_op"),
        Pair::median_cpu(&pair.limit) / 1000.0,
        "µs",
    );
    report.figure(
        &format!("{name}.blocking.cpu_per_op"),
        Pair::median_cpu(&pair.ours) / 1000.0,
        "µs",
    );
    report.figure(
        &format!("{name}.throughput_ratio"),
        pair.throughput_ratio(),
        "x",
    );
    report.figure(&format!("{name}.cpu_ratio"), pair.cpu_ratio(), "x");
    Ok(())
}

/// `total` getData on one blocking client from `callers` threads, each making its share back
/// to back.
fn threads_get_data(
    client: &zookeeper_tokio::blocking::Client,
    total: u64,
    callers: usize,
) -> Result<(), BenchError> {
    let callers = callers.min(total as usize).max(1);
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..callers as u64)
            .map(|i| {
                // Spread the remainder so that exactly `total` requests are made.
                let share = total / callers as u64 + u64::from(i < total % callers as u64);
                scope.spawn(move || {
                    for _ in 0..share {
                        client.get_data(NODE)?;
                    }
                    Ok::<(), zookeeper_tokio::Error>(())
                })
            })
            .collect();
        for thread in threads {
            thread.join().map_err(|_| "a caller thread panicked")??;
        }
        Ok(())
    })
}
