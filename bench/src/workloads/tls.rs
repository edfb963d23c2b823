//! Workloads `pipeline-tls` and `latency-tls`: our client over TLS beside our client over plain
//! TCP, on one ZooKeeper serving both (Netty, a secure client port with a test certificate):
//! the difference is TLS alone. The plain figures here are not those of `pipeline` and
//! `latency`, whose server runs the default (NIO) connection factory and the C1 compiler only.

use std::time::{Duration, Instant};

use zookeeper_testkit::{TlsOptions, ZkServer};
use zookeeper_tokio::{Client, TlsConfig};

use super::{ensure_node_at, NODE};
use crate::measure::{self, Pair};
use crate::ours;
use crate::report::Report;
use crate::stats::{median, Percentiles};
use crate::{BenchError, Ctx};

/// The same turn length as the plain latency workload.
const TURN: usize = 500;

/// A server with TLS, and how our client reaches it each way.
struct Endpoints {
    _server: ZkServer,
    plain: String,
    secure: String,
    tls: TlsConfig,
}

impl Endpoints {
    async fn start(ctx: &Ctx) -> Result<Endpoints, BenchError> {
        // The testkit starts JVMs with the C1 compiler only, to start fast; Java's TLS then
        // bounds pipelined getData to about 32 k ops/s, a figure of the server rather than of
        // the client. The full JIT lifts it to about 100 k.
        let server = ctx
            .opts
            .server()
            .tls(TlsOptions::new())
            .jvm_arg("-XX:TieredStopAtLevel=4")
            .start()
            .await?;
        ensure_node_at(server.addr()).await?;
        let tls = TlsConfig::with_ca_pem(server.tls().ok_or("no TLS material")?.ca_pem());
        Ok(Endpoints {
            plain: server.connect_string(),
            secure: server.secure_connect_string().ok_or("no secure port")?,
            tls,
            _server: server,
        })
    }

    async fn connect(&self, over_tls: bool) -> Result<Client, BenchError> {
        let builder = if over_tls {
            Client::builder(&self.secure).tls(self.tls.clone())
        } else {
            Client::builder(&self.plain)
        };
        Ok(builder
            .connect_timeout(Duration::from_secs(30))
            .connect()
            .await?)
    }
}

/// 1,000 getData in flight on one session, plain and TLS taking turns round by round.
pub async fn pipeline(ctx: &Ctx, report: &mut Report) -> Result<(), BenchError> {
    let endpoints = Endpoints::start(ctx).await?;
    let total = ctx.opts.count(200_000);
    let window = 1_000;
    let run = |over_tls: bool, total: u64| {
        let endpoints = &endpoints;
        async move {
            let client = endpoints.connect(over_tls).await?;
            let sample = measure::throughput(total, &[], async {
                ours::pipelined_get_data(&client, NODE, total, window).await
            })
            .await?;
            ours::close(client).await;
            Ok::<_, BenchError>(sample)
        }
    };
    // Warm-up: the server's JIT (TLS included), page faults.
    run(false, total / 10).await?;
    run(true, total / 10).await?;
    // `limit` holds plain TCP, `ours` TLS: the ratios are TLS over plain.
    let mut pair = Pair::default();
    for _ in 0..ctx.opts.heavy_rounds() {
        pair.limit.push(run(false, total).await?);
        pair.ours.push(run(true, total).await?);
    }
    let name = "pipeline.tls";
    for (who, samples) in [("plain", &pair.limit), ("tls", &pair.ours)] {
        report.figure(
            &format!("{name}.ours_{who}.ops_per_s"),
            Pair::median_ops(samples),
            "ops/s",
        );
        report.figure(
            &format!("{name}.ours_{who}.cpu_per_op"),
            Pair::median_cpu(samples),
            "ns",
        );
    }
    report.figure(
        &format!("{name}.tls_vs_plain.throughput"),
        pair.throughput_ratio(),
        "x",
    );
    report.figure(
        &format!("{name}.tls_vs_plain.cpu_per_op"),
        pair.cpu_ratio(),
        "x",
    );
    Ok(())
}

/// Sequential getData on two sessions open side by side, plain and TLS, taking turns of
/// `TURN` requests; p50/p99 per round, medians over rounds.
pub async fn latency(ctx: &Ctx, report: &mut Report) -> Result<(), BenchError> {
    let endpoints = Endpoints::start(ctx).await?;
    let n = ctx.opts.count(20_000) as usize;
    let clients = [
        endpoints.connect(false).await?,
        endpoints.connect(true).await?,
    ];
    let mut rounds: [Vec<Percentiles>; 2] = [Vec::new(), Vec::new()];
    // Round 0 is the warm-up.
    for round in 0..=ctx.opts.rounds {
        let mut samples = [Vec::with_capacity(n), Vec::with_capacity(n)];
        while samples[0].len() < n {
            for (client, ns) in clients.iter().zip(samples.iter_mut()) {
                for _ in 0..TURN.min(n - ns.len()) {
                    let start = Instant::now();
                    ours::get_data(client, NODE).await?;
                    ns.push(start.elapsed().as_nanos() as u64);
                }
            }
        }
        if round > 0 {
            for (per_round, ns) in rounds.iter_mut().zip(samples.iter_mut()) {
                per_round.push(Percentiles::of(ns));
            }
        }
    }
    for client in clients {
        ours::close(client).await;
    }
    let us = |v: u64| v as f64 / 1000.0;
    let med = |ps: &[Percentiles], f: fn(&Percentiles) -> u64| {
        median(&ps.iter().map(|p| us(f(p))).collect::<Vec<_>>())
    };
    let name = "latency.tls";
    for (who, per_round) in [("plain", &rounds[0]), ("tls", &rounds[1])] {
        report.figure(
            &format!("{name}.ours_{who}.p50"),
            med(per_round, |p| p.p50_ns),
            "µs",
        );
        report.figure(
            &format!("{name}.ours_{who}.p99"),
            med(per_round, |p| p.p99_ns),
            "µs",
        );
    }
    // Per-round differences, medians over rounds: drifting load cancels out.
    let overhead = |f: fn(&Percentiles) -> u64| {
        median(
            &rounds[0]
                .iter()
                .zip(&rounds[1])
                .map(|(plain, tls)| us(f(tls)) - us(f(plain)))
                .collect::<Vec<_>>(),
        )
    };
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
