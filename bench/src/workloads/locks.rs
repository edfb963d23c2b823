//! Workload 5: locks. Our recipes (on both runtime shapes), Curator's `InterProcessMutex` /
//! `InterProcessReadWriteLock` and the raw-protocol limits (`raw_lock`) on the same server,
//! alternating round by round: uncontended acquire+release, 8 sessions contending (with
//! release-to-next-holder handoff latency), one holder and 100 waiters (notifications the
//! server sends per release), and a read-write lock with 8 readers and 2 writers.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::try_join_all;
use zookeeper_recipes::{Mutex, ReadWriteLock};
use zookeeper_tokio::Client;

use crate::contestant::{on_shape, Shape};
use crate::curator::Curator;
use crate::raw_lock::{self, Chain};
use crate::report::{Report, Target};
use crate::server_metrics::{notifications_sent, packets_received};
use crate::stats::{median, Percentiles};
use crate::{BenchError, Ctx};

const CONTENDERS: usize = 8;
const WAITERS: usize = 100;
const WAITER_SESSIONS: usize = 10;
const READERS: usize = 8;
const WRITERS: usize = 2;

/// One round's figures, by name, for one contestant.
type Figures = HashMap<&'static str, f64>;

#[derive(Clone, Copy)]
struct Counts {
    uncontended: u64,
    contended: u64,
    rw_millis: u64,
}

pub async fn run(ctx: &Ctx, report: &mut Report) -> Result<(), BenchError> {
    let counts = Counts {
        uncontended: ctx.opts.count(1_000),
        contended: ctx.opts.count(1_000),
        rw_millis: if ctx.opts.quick { 300 } else { 1_000 },
    };
    let connect = ctx.zk.to_string();
    let mut curator = match Curator::start(&connect).await {
        Ok(c) => Some(c),
        Err(e) => {
            report.not_measured("locks.curator", "", &format!("Curator did not start: {e}"));
            None
        }
    };
    // Warm-up: JIT on both sides of the JVM boundary, container parents, connections.
    let warm = Counts {
        uncontended: 200,
        contended: 200,
        rw_millis: 200,
    };
    round(ctx, &mut curator, "warm", &warm).await?;
    let mut rounds: Vec<Round> = Vec::new();
    for r in 0..ctx.opts.rounds {
        let f = round(ctx, &mut curator, &format!("r{r}"), &counts).await?;
        let show = |who: &str, key: &str| {
            f.get(who)
                .and_then(|f| f.get(key))
                .map_or("-".to_string(), |v| format!("{v:.0}/s"))
        };
        println!(
            "# locks round {r}: uncontended raw {} raw_as_ours_released {} ours {} ours_mt {} curator {}; contended raw {} raw_loop {} raw_as_ours {} raw_as_ours_released {} ours {} ours_mt {} curator {}",
            show(RAW, "uncontended.ops_per_s"),
            show(RAW_AS_OURS_RELEASED, "uncontended.ops_per_s"),
            show("ours", "uncontended.ops_per_s"),
            show("ours_mt", "uncontended.ops_per_s"),
            show(CURATOR, "uncontended.ops_per_s"),
            show(RAW, "contended8.acq_per_s"),
            show(RAW_LOOP, "contended8.acq_per_s"),
            show(RAW_AS_OURS, "contended8.acq_per_s"),
            show(RAW_AS_OURS_RELEASED, "contended8.acq_per_s"),
            show("ours", "contended8.acq_per_s"),
            show("ours_mt", "contended8.acq_per_s"),
            show(CURATOR, "contended8.acq_per_s"),
        );
        rounds.push(f);
    }
    if let Some(c) = curator {
        c.quit().await;
    }
    let units = [
        ("uncontended.ops_per_s", "acq+rel/s"),
        ("uncontended.requests_per_cycle", "requests"),
        ("contended8.acq_per_s", "acq/s"),
        ("handoff.p50", "µs"),
        ("handoff.p99", "µs"),
        ("waiters100.notifications_per_release", "notif"),
        ("waiters100.serve_ms", "ms"),
        ("waiters100.handoffs_per_s", "handoffs/s"),
        ("rw.read_per_s", "acq/s"),
        ("rw.write_per_s", "acq/s"),
    ];
    let values = |who: &str, key: &str| -> Vec<f64> {
        rounds
            .iter()
            .filter_map(|r| r.get(who).and_then(|f| f.get(key)).copied())
            .collect()
    };
    let ratios = |who: &str, of: &str, key: &str| -> Vec<f64> {
        rounds
            .iter()
            .filter_map(|r| Some(r.get(who)?.get(key)? / r.get(of)?.get(key)?))
            .collect()
    };
    for (key, unit) in units {
        for who in [
            RAW,
            RAW_LOOP,
            RAW_AS_OURS,
            RAW_AS_OURS_RELEASED,
            "ours",
            "ours_mt",
            CURATOR,
        ] {
            let v = values(who, key);
            if !v.is_empty() {
                report.figure(&format!("locks.{key}.{who}"), median(&v), unit);
            }
        }
    }
    // Every lock figure beside its limit; the recipes beside Curator.
    for (who, of, key, target) in [
        ("ours", RAW, "uncontended.ops_per_s", Some(0.9)),
        ("ours_mt", RAW, "uncontended.ops_per_s", Some(0.9)),
        ("ours", RAW_AS_OURS_RELEASED, "uncontended.ops_per_s", None),
        (
            "ours_mt",
            RAW_AS_OURS_RELEASED,
            "uncontended.ops_per_s",
            None,
        ),
        (RAW_AS_OURS_RELEASED, RAW, "uncontended.ops_per_s", None),
        ("ours", RAW, "contended8.acq_per_s", Some(0.9)),
        ("ours_mt", RAW, "contended8.acq_per_s", Some(0.9)),
        ("ours", RAW, "waiters100.handoffs_per_s", Some(0.9)),
        ("ours_mt", RAW, "waiters100.handoffs_per_s", Some(0.9)),
        ("ours", RAW_LOOP, "contended8.acq_per_s", None),
        ("ours_mt", RAW_LOOP, "contended8.acq_per_s", None),
        ("ours", RAW_AS_OURS, "contended8.acq_per_s", None),
        ("ours_mt", RAW_AS_OURS, "contended8.acq_per_s", None),
        (RAW_AS_OURS, RAW_LOOP, "contended8.acq_per_s", None),
        ("ours", RAW_AS_OURS_RELEASED, "contended8.acq_per_s", None),
        (
            "ours_mt",
            RAW_AS_OURS_RELEASED,
            "contended8.acq_per_s",
            None,
        ),
        (
            RAW_AS_OURS_RELEASED,
            RAW_AS_OURS,
            "contended8.acq_per_s",
            None,
        ),
        ("ours", RAW_AS_OURS, "waiters100.handoffs_per_s", None),
        ("ours_mt", RAW_AS_OURS, "waiters100.handoffs_per_s", None),
        (RAW_AS_OURS, RAW, "waiters100.handoffs_per_s", None),
        ("ours", CURATOR, "uncontended.ops_per_s", Some(2.0)),
        ("ours_mt", CURATOR, "uncontended.ops_per_s", Some(2.0)),
        ("ours", CURATOR, "contended8.acq_per_s", None),
        ("ours_mt", CURATOR, "contended8.acq_per_s", None),
    ] {
        let r = ratios(who, of, key);
        if !r.is_empty() {
            report.figure_with_target(
                &format!("locks.{key}.{who}_vs_{of}"),
                median(&r),
                "x",
                target.map(Target::AtLeast),
            );
        }
    }
    Ok(())
}

/// The raw-protocol limits in figure names: the uncontended cycle and the handoff chain
/// (`raw`), and the chain whose owners queue again (`raw_loop`), the like-for-like limit of
/// 8 contenders looping.
const RAW: &str = "raw";
const RAW_LOOP: &str = "raw_loop";
/// The contention loop and the queued chain with the requests our mutex sends
/// (`raw_lock::Chain::AsOurs`, `Chain::QueuedAsOurs`): what separates them from `raw_loop` and
/// `raw` is the recipe's protocol, what separates ours from them is our client.
const RAW_AS_OURS: &str = "raw_as_ours";
/// The contention loop as ours, each owner queueing again once its delete is answered
/// (`raw_lock::Chain::AsOursReleased`): what our contended workload's loop of `acquire` and
/// `release` can send at best; and the uncontended cycle whose release is answered before
/// the next acquisition, as ours is since `release` returns once the node is gone.
const RAW_AS_OURS_RELEASED: &str = "raw_as_ours_released";
const CURATOR: &str = "curator";

/// One round's figures, by contestant.
type Round = HashMap<&'static str, Figures>;

/// Handoffs per second of a queue of [`WAITERS`] served in `serve_ms`: a waiter's release is
/// the next one's grant, so serving them all is [`WAITERS`] handoffs, the first from the holder.
fn handoffs_per_s(serve_ms: f64) -> f64 {
    WAITERS as f64 / (serve_ms / 1000.0)
}

/// Requests the server received per acquire+release since `before` (minus the mntr call that
/// reads it).
async fn requests_per_cycle(zk: SocketAddr, before: i64, cycles: u64) -> Result<f64, BenchError> {
    let after = packets_received(zk).await?;
    Ok((after - before - 1) as f64 / cycles as f64)
}

async fn sessions(zk: SocketAddr, n: usize) -> Result<Vec<Client>, BenchError> {
    let connect = zk.to_string();
    Ok(try_join_all((0..n).map(|_| Client::connect(&connect))).await?)
}

async fn close_all(clients: Vec<Client>) {
    for c in clients {
        c.close().await;
    }
}

/// The parts of a round; each is run by both contestants back to back, so that the two
/// figures of a part are taken minutes apart at most seconds.
#[derive(Clone, Copy)]
enum Part {
    Uncontended,
    Contended,
    Waiters,
    ReadWrite,
}

const PARTS: [Part; 4] = [
    Part::Uncontended,
    Part::Contended,
    Part::Waiters,
    Part::ReadWrite,
];

/// One part of a round for our recipes, on the runtime it is called on.
async fn ours_part(
    zk: SocketAddr,
    part: Part,
    base: String,
    counts: Counts,
) -> Result<Figures, BenchError> {
    let mut f = Figures::new();
    let base = base.as_str();
    let counts = &counts;
    match part {
        Part::Uncontended => {
            let clients = sessions(zk, 1).await?;
            let mutex = Mutex::new(&clients[0], &format!("{base}/uncontended"))?;
            let packets = packets_received(zk).await?;
            let start = Instant::now();
            for _ in 0..counts.uncontended {
                mutex.acquire().await?.release().await?;
            }
            f.insert(
                "uncontended.ops_per_s",
                counts.uncontended as f64 / start.elapsed().as_secs_f64(),
            );
            f.insert(
                "uncontended.requests_per_cycle",
                requests_per_cycle(zk, packets, counts.uncontended).await?,
            );
            close_all(clients).await;
        }
        Part::Contended => {
            let (acq_per_s, handoff) =
                ours_contended(zk, &format!("{base}/contended"), counts).await?;
            f.insert("contended8.acq_per_s", acq_per_s);
            f.insert("handoff.p50", handoff.p50_ns as f64 / 1000.0);
            f.insert("handoff.p99", handoff.p99_ns as f64 / 1000.0);
        }
        Part::Waiters => {
            let (per_release, serve) = ours_waiters(zk, &format!("{base}/waiters")).await?;
            f.insert("waiters100.notifications_per_release", per_release);
            f.insert("waiters100.serve_ms", serve.as_secs_f64() * 1000.0);
            f.insert(
                "waiters100.handoffs_per_s",
                handoffs_per_s(serve.as_secs_f64() * 1000.0),
            );
        }
        Part::ReadWrite => {
            let (reads, writes) = ours_rw(zk, &format!("{base}/rw"), counts.rw_millis).await?;
            f.insert("rw.read_per_s", reads);
            f.insert("rw.write_per_s", writes);
        }
    }
    Ok(f)
}

/// 8 sessions, one task each, acquire+release until `counts.contended` acquisitions in all.
/// Handoff: from the holder calling release to the next holder's acquire returning.
async fn ours_contended(
    zk: SocketAddr,
    path: &str,
    counts: &Counts,
) -> Result<(f64, Percentiles), BenchError> {
    let clients = sessions(zk, CONTENDERS).await?;
    let epoch = Instant::now();
    let released_at = Arc::new(AtomicU64::new(0));
    let remaining = Arc::new(AtomicUsize::new(counts.contended as usize));
    let mut tasks = tokio::task::JoinSet::new();
    let start = Instant::now();
    for client in &clients {
        let mutex = Mutex::new(client, path)?;
        let (released_at, remaining) = (released_at.clone(), remaining.clone());
        tasks.spawn(async move {
            let mut handoffs = Vec::new();
            let mut acquired = 0u64;
            while remaining
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| r.checked_sub(1))
                .is_ok()
            {
                let guard = mutex.acquire().await?;
                let now = epoch.elapsed().as_nanos() as u64;
                let released = released_at.load(Ordering::Acquire);
                if released != 0 {
                    handoffs.push(now - released);
                }
                acquired += 1;
                released_at.store(epoch.elapsed().as_nanos() as u64, Ordering::Release);
                guard.release().await?;
            }
            Ok::<_, BenchError>((acquired, handoffs))
        });
    }
    let mut acquired = 0;
    let mut handoffs = Vec::new();
    while let Some(done) = tasks.join_next().await {
        let (n, h) = done??;
        acquired += n;
        handoffs.extend(h);
    }
    let acq_per_s = acquired as f64 / start.elapsed().as_secs_f64();
    close_all(clients).await;
    Ok((acq_per_s, Percentiles::of(&mut handoffs)))
}

/// A holder and 100 waiters over 10 sessions; once all are queued the holder releases and each
/// waiter takes and releases the lock in turn. Returns notifications the server sent per
/// release that had a waiter behind it, and the time to serve every waiter.
async fn ours_waiters(zk: SocketAddr, path: &str) -> Result<(f64, Duration), BenchError> {
    let clients = sessions(zk, WAITER_SESSIONS).await?;
    let holder = Mutex::new(&clients[0], path)?.acquire().await?;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..WAITERS {
        let mutex = Mutex::new(&clients[i % WAITER_SESSIONS], path)?;
        tasks.spawn(async move { mutex.acquire().await?.release().await });
    }
    wait_queued(&clients[0], path, WAITERS + 1).await?;
    let before = notifications_sent(zk).await?;
    let start = Instant::now();
    holder.release().await?;
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    let serve = start.elapsed();
    let after = notifications_sent(zk).await?;
    close_all(clients).await;
    Ok(((after - before) as f64 / WAITERS as f64, serve))
}

/// Waits (bounded) until `n` contenders have their node under `path`.
pub async fn wait_queued(client: &Client, path: &str, n: usize) -> Result<(), BenchError> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (children, _) = client.get_children(path).await?;
        if children.len() >= n {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(
                format!("only {} of {n} contenders queued on {path}", children.len()).into(),
            );
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// 8 readers and 2 writers, one session each, looping acquire+release for `millis`.
async fn ours_rw(zk: SocketAddr, path: &str, millis: u64) -> Result<(f64, f64), BenchError> {
    let clients = sessions(zk, READERS + WRITERS).await?;
    let deadline = Instant::now() + Duration::from_millis(millis);
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for (i, client) in clients.iter().enumerate() {
        let lock = ReadWriteLock::new(client, path)?;
        let reader = i < READERS;
        tasks.spawn(async move {
            let mut n = 0u64;
            while Instant::now() < deadline {
                let guard = if reader {
                    lock.read().await?
                } else {
                    lock.write().await?
                };
                n += 1;
                guard.release().await?;
            }
            Ok::<_, BenchError>((reader, n))
        });
    }
    let (mut reads, mut writes) = (0, 0);
    while let Some(done) = tasks.join_next().await {
        match done?? {
            (true, n) => reads += n,
            (false, n) => writes += n,
        }
    }
    let secs = start.elapsed().as_secs_f64();
    close_all(clients).await;
    Ok((reads as f64 / secs, writes as f64 / secs))
}

async fn curator_part(
    ctx: &Ctx,
    curator: &mut Curator,
    part: Part,
    base: &str,
    counts: &Counts,
    f: &mut Figures,
) -> Result<(), BenchError> {
    match part {
        Part::Uncontended => {
            let packets = packets_received(ctx.zk).await?;
            let r = curator
                .run(&format!(
                    "uncontended {base}/uncontended {}",
                    counts.uncontended
                ))
                .await?;
            f.insert("uncontended.ops_per_s", r["ops_per_s"]);
            // Includes the handshake and close of the command's one session: noise over the
            // cycles.
            f.insert(
                "uncontended.requests_per_cycle",
                requests_per_cycle(ctx.zk, packets, counts.uncontended).await?,
            );
        }
        Part::Contended => {
            let r = curator
                .run(&format!(
                    "contended {base}/contended {CONTENDERS} {}",
                    counts.contended
                ))
                .await?;
            f.insert("contended8.acq_per_s", r["acq_per_s"]);
            f.insert("handoff.p50", r["handoff_p50_us"]);
            f.insert("handoff.p99", r["handoff_p99_us"]);
        }
        Part::Waiters => {
            let queued = curator
                .waiters(&format!("{base}/waiters"), WAITERS, WAITER_SESSIONS)
                .await?;
            let before = notifications_sent(ctx.zk).await?;
            let r = queued.release().await?;
            let after = notifications_sent(ctx.zk).await?;
            f.insert(
                "waiters100.notifications_per_release",
                (after - before) as f64 / WAITERS as f64,
            );
            f.insert("waiters100.serve_ms", r["serve_ms"]);
            f.insert("waiters100.handoffs_per_s", handoffs_per_s(r["serve_ms"]));
        }
        Part::ReadWrite => {
            let r = curator
                .run(&format!(
                    "rw {base}/rw {READERS} {WRITERS} {}",
                    counts.rw_millis
                ))
                .await?;
            f.insert("rw.read_per_s", r["read_per_s"]);
            f.insert("rw.write_per_s", r["write_per_s"]);
        }
    }
    Ok(())
}

/// One round: every part, by the raw-protocol limit (where it has one), our recipes on both
/// runtime shapes, then Curator.
async fn round(
    ctx: &Ctx,
    curator: &mut Option<Curator>,
    tag: &str,
    counts: &Counts,
) -> Result<Round, BenchError> {
    let mut figures = Round::new();
    for part in PARTS {
        let raw = figures.entry(RAW).or_default();
        let raw_base = format!("/zookeeper-bench/locks/raw-{tag}");
        match part {
            Part::Uncontended => {
                // The pipelined cycle, then the one that awaits each release, as ours does.
                for (who, released, sub) in [
                    (RAW, false, "uncontended"),
                    (RAW_AS_OURS_RELEASED, true, "uncontended-released"),
                ] {
                    let per_s = raw_lock::uncontended(
                        ctx.zk,
                        &format!("{raw_base}/{sub}"),
                        counts.uncontended,
                        released,
                    )
                    .await
                    .map_err(|e| format!("raw uncontended cycle ({sub}): {e}"))?;
                    figures
                        .entry(who)
                        .or_default()
                        .insert("uncontended.ops_per_s", per_s);
                }
            }
            Part::Contended => {
                let (per_s, handoff) = raw_lock::handoff_chain(
                    ctx.zk,
                    &format!("{raw_base}/chain"),
                    counts.contended as usize,
                    Chain::Queued,
                )
                .await
                .map_err(|e| format!("raw handoff chain: {e}"))?;
                raw.insert("contended8.acq_per_s", per_s);
                raw.insert("handoff.p50", handoff.p50_ns as f64 / 1000.0);
                raw.insert("handoff.p99", handoff.p99_ns as f64 / 1000.0);
                for (who, chain, sub) in [
                    (RAW_LOOP, Chain::Loop, "loop"),
                    (RAW_AS_OURS, Chain::AsOurs, "as-ours"),
                    (
                        RAW_AS_OURS_RELEASED,
                        Chain::AsOursReleased,
                        "as-ours-released",
                    ),
                ] {
                    let (per_s, handoff) = raw_lock::handoff_chain(
                        ctx.zk,
                        &format!("{raw_base}/{sub}"),
                        counts.contended as usize,
                        chain,
                    )
                    .await
                    .map_err(|e| format!("raw contention loop ({sub}): {e}"))?;
                    let f = figures.entry(who).or_default();
                    f.insert("contended8.acq_per_s", per_s);
                    f.insert("handoff.p50", handoff.p50_ns as f64 / 1000.0);
                    f.insert("handoff.p99", handoff.p99_ns as f64 / 1000.0);
                }
            }
            Part::Waiters => {
                // The same chain as our waiters': every node queued first, each owner
                // releasing as soon as it is granted; then with our waiters' requests.
                for (who, chain, sub) in [
                    (RAW, Chain::Queued, "waiters"),
                    (RAW_AS_OURS, Chain::QueuedAsOurs, "waiters-as-ours"),
                ] {
                    let (per_s, _) = raw_lock::handoff_chain(
                        ctx.zk,
                        &format!("{raw_base}/{sub}"),
                        WAITERS,
                        chain,
                    )
                    .await
                    .map_err(|e| format!("raw handoff chain of the waiters ({sub}): {e}"))?;
                    figures
                        .entry(who)
                        .or_default()
                        .insert("waiters100.handoffs_per_s", per_s);
                }
            }
            Part::ReadWrite => {}
        }
        for shape in Shape::BOTH {
            let base = format!("/zookeeper-bench/locks/{}-{tag}", shape.name());
            let f = on_shape(shape, &ctx.mt, ours_part(ctx.zk, part, base, *counts)).await?;
            figures.entry(shape.name()).or_default().extend(f);
        }
        if let Some(c) = curator.as_mut() {
            let f = figures.entry(CURATOR).or_default();
            curator_part(
                ctx,
                c,
                part,
                &format!("/zookeeper-bench/locks/curator-{tag}"),
                counts,
                f,
            )
            .await?;
        }
    }
    Ok(figures)
}
