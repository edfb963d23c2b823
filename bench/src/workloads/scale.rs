//! Workload 6: scale. 10,000 waiters on one lock over 100 sessions (client memory per waiter,
//! time to serve them all), one session holding 100,000 watches (memory, and the time to
//! re-register them after the connection is dropped), and a recursive watch over a 10,101-node
//! subtree (in `subtree`).

use std::time::{Duration, Instant};

use futures_util::future::try_join_all;
use zookeeper_recipes::Mutex;
use zookeeper_testkit::Proxy;
use zookeeper_tokio::{Client, OneshotWatcher, SessionState};

use super::locks::wait_queued;
use crate::heap::live_bytes;
use crate::report::Report;
use crate::{BenchError, Ctx};

const WAITER_SESSIONS: usize = 100;
/// Waiters queued per step.
const WAITER_BATCH: usize = 1_000;
/// Client heap the waiters may take before the workload gives up (the machine is shared).
const HEAP_BUDGET: u64 = 3 << 30;
/// Watches set concurrently while building up the 100,000.
const WATCH_WINDOW: usize = 1_000;

pub async fn run(ctx: &Ctx, report: &mut Report) -> Result<(), BenchError> {
    let waiters = ctx.opts.count(10_000) as usize;
    let name = format!("scale.waiters{waiters}");
    match many_waiters(ctx, waiters).await {
        Ok((per_waiter, serve)) => {
            report.figure(&format!("{name}.memory_per_waiter"), per_waiter, "bytes");
            report.figure(&format!("{name}.serve_all"), serve.as_secs_f64(), "s");
        }
        Err(e) => report.not_measured(&name, "", &e.to_string()),
    }

    let watches = ctx.opts.count(100_000) as usize;
    let name = format!("scale.watches{watches}");
    match many_watches(ctx, watches).await {
        Ok((per_watch, reconnected, reregister)) => {
            report.figure(&format!("{name}.memory_per_watch"), per_watch, "bytes");
            report.figure(
                &format!("{name}.reconnected"),
                reconnected.as_secs_f64() * 1000.0,
                "ms",
            );
            report.figure(
                &format!("{name}.reregister"),
                reregister.as_secs_f64() * 1000.0,
                "ms",
            );
        }
        Err(e) => report.not_measured(&name, "", &e.to_string()),
    }
    super::subtree::report(ctx, report).await;
    Ok(())
}

/// Client heap per queued waiter (the waiting task, its acquire future, its watch), and the
/// time from the holder's release until every waiter has held and released the lock.
async fn many_waiters(ctx: &Ctx, waiters: usize) -> Result<(f64, Duration), BenchError> {
    let path = format!("/zookeeper-bench/scale/lock-{}", std::process::id());
    let connect = ctx.zk.to_string();
    let sessions = WAITER_SESSIONS.min(waiters);
    let clients = try_join_all((0..sessions).map(|_| Client::connect(&connect))).await?;
    let holder = Mutex::new(&clients[0], &path)?.acquire().await?;
    let heap_before = live_bytes();
    let mut tasks = tokio::task::JoinSet::new();
    // Queued in batches so that a recipe whose waiters grow with the queue is stopped before
    // it takes the shared machine's memory.
    for batch_start in (0..waiters).step_by(WAITER_BATCH) {
        let batch_end = (batch_start + WAITER_BATCH).min(waiters);
        for i in batch_start..batch_end {
            let mutex = Mutex::new(&clients[i % sessions], &path)?;
            tasks.spawn(async move { mutex.acquire().await?.release().await });
        }
        wait_queued(&clients[0], &path, batch_end + 1).await?;
        let grown = live_bytes().saturating_sub(heap_before);
        if grown > HEAP_BUDGET && batch_end < waiters {
            // Dropping the tasks cancels their acquisitions, which deletes their nodes.
            drop(tasks);
            drop(holder);
            for c in clients {
                c.close().await;
            }
            return Err(format!(
                "stopped at {batch_end} of {waiters} waiters: client heap grew {} MB \
                 ({} bytes per waiter), over the {} MB budget",
                grown >> 20,
                grown / batch_end as u64,
                HEAP_BUDGET >> 20
            )
            .into());
        }
    }
    let per_waiter = live_bytes().saturating_sub(heap_before) as f64 / waiters as f64;
    let start = Instant::now();
    holder.release().await?;
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    let serve = start.elapsed();
    for c in clients {
        c.close().await;
    }
    Ok((per_waiter, serve))
}

/// Client heap per watch (the watcher handle the application holds included), the time from
/// dropping the connection until the client reports itself connected again, and until a
/// request sent after the reconnect has its reply, which the server sends only after it has
/// processed the re-registration.
async fn many_watches(ctx: &Ctx, watches: usize) -> Result<(f64, Duration, Duration), BenchError> {
    let proxy = Proxy::start(ctx.zk).await?;
    let client = Client::connect(&proxy.connect_string()).await?;
    let base = format!("/zookeeper-bench/watches-{}", std::process::id());
    let server_before = zookeeper_testkit::mntr(ctx.zk)
        .await?
        .watch_count()
        .unwrap_or(0);
    let heap_before = live_bytes();
    let mut tasks = tokio::task::JoinSet::new();
    for t in 0..WATCH_WINDOW {
        let client = client.clone();
        let base = base.clone();
        tasks.spawn(async move {
            let mut held: Vec<OneshotWatcher> = Vec::new();
            for i in (t..watches).step_by(WATCH_WINDOW) {
                // Watches on nodes that do not exist: nothing to create first.
                let (_, watcher) = client.exists_and_watch(&format!("{base}/n{i}")).await?;
                held.push(watcher);
            }
            Ok::<_, zookeeper_tokio::Error>(held)
        });
    }
    let mut held = Vec::with_capacity(watches);
    while let Some(done) = tasks.join_next().await {
        held.extend(done??);
    }
    let per_watch = live_bytes().saturating_sub(heap_before) as f64 / watches as f64;
    let on_server = zookeeper_testkit::mntr(ctx.zk)
        .await?
        .watch_count()
        .unwrap_or(0)
        - server_before;
    if on_server < watches as i64 {
        return Err(format!("server holds {on_server} of our {watches} watches").into());
    }

    let mut changes = client.state_changes();
    let start = Instant::now();
    proxy.drop_all();
    let bound = Duration::from_secs(60);
    tokio::time::timeout(bound, changes.wait_for(|s| s != SessionState::Connected))
        .await
        .map_err(|_| "the client did not notice the dropped connection")?;
    tokio::time::timeout(bound, changes.wait_for(|s| s == SessionState::Connected))
        .await
        .map_err(|_| "the client did not reconnect")?;
    let reconnected = start.elapsed();
    client.exists("/").await?;
    let reregister = start.elapsed();
    let restored = zookeeper_testkit::mntr(ctx.zk)
        .await?
        .watch_count()
        .unwrap_or(0)
        - server_before;
    if restored < watches as i64 {
        return Err(format!("only {restored} of {watches} watches re-registered").into());
    }
    drop(held);
    client.close().await;
    Ok((per_watch, reconnected, reregister))
}
