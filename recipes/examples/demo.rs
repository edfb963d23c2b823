//! A tour of the recipes: contenders for a lock, a leader election, and a takeover when the
//! holder's session dies.
//!
//! ```text
//! cargo run -p zookeeper-recipes --example demo                  # starts its own ZooKeeper
//! cargo run -p zookeeper-recipes --example demo -- 127.0.0.1:2181
//! ```
//!
//! Without a connect string it starts a ZooKeeper server of its own when one is installed
//! (`scripts/setup`), and otherwise the testkit's simulated server, in this process; its first
//! line says which.
//!
//! Each participant talks to ZooKeeper (the first host of the connect string, with its
//! chroot if any) through its own fault-injection proxy, so the demo can cut one participant
//! off and let its session expire.

use std::sync::Arc;
use std::time::{Duration, Instant};

use zookeeper_recipes::{Holding, LeaderLatch, Mutex};
use zookeeper_testkit::sim::{SimOptions, SimServer};
use zookeeper_testkit::{Installation, Proxy, ZkServer};
use zookeeper_tokio::Client;

const NAMES: [&str; 3] = ["alice", "bob", "carol"];
const SESSION_TIMEOUT: Duration = Duration::from_secs(2);

struct Participant {
    name: &'static str,
    client: Client,
    proxy: Proxy,
}

fn log(start: Instant, line: impl AsRef<str>) {
    println!(
        "[{:>6.3}s] {}",
        start.elapsed().as_secs_f64(),
        line.as_ref()
    );
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let start = Instant::now();
    let arg = std::env::args().nth(1);
    // Keep our own server alive for the whole demo.
    let chroot = arg
        .as_deref()
        .and_then(|c| c.find('/').map(|i| c[i..].to_owned()))
        .unwrap_or_default();
    // Whichever server the demo starts, kept alive for the whole demo.
    let (_server, upstream): (Option<Box<dyn std::any::Any>>, _) = match arg {
        Some(connect) => {
            let first = connect
                .split(['/', ','])
                .next()
                .unwrap_or_default()
                .to_owned();
            let addr = tokio::net::lookup_host(&first)
                .await?
                .next()
                .ok_or("connect string names no host")?;
            log(start, format!("server: the ZooKeeper at {addr}"));
            (None, addr)
        }
        None if Installation::locate().is_ok() => {
            let server = ZkServer::start().await?;
            log(
                start,
                format!(
                    "server: a ZooKeeper started for the demo, at {}",
                    server.connect_string()
                ),
            );
            let addr = server.addr();
            (Some(Box::new(server)), addr)
        }
        None => {
            let server = SimServer::new(SimOptions::default());
            let addr = server.listen_tcp().await?;
            log(
                start,
                format!(
                    "server: the testkit's simulated ZooKeeper, in this process, at {addr} \
                     (no ZooKeeper is installed: scripts/setup installs one)"
                ),
            );
            (Some(Box::new(server)), addr)
        }
    };
    let base = format!("/zk-recipes-demo-{}", std::process::id());

    let mut people = Vec::new();
    for name in NAMES {
        let proxy = Proxy::start(upstream).await?;
        let client = Client::builder(&format!("{}{chroot}", proxy.connect_string()))
            .session_timeout(SESSION_TIMEOUT)
            .connect()
            .await?;
        log(
            start,
            format!("{name} connected, session {}", client.session_id()),
        );
        people.push(Arc::new(Participant {
            name,
            client,
            proxy,
        }));
    }
    let lock_path = format!("{base}/lock");
    let election = format!("{base}/election");

    // 1. Contenders take turns on the lock; every grant carries a larger fencing token.
    log(
        start,
        format!("--- three contenders, two rounds each, on {lock_path}"),
    );
    let mut tasks = Vec::new();
    for p in &people {
        let (p, path) = (p.clone(), lock_path.clone());
        tasks.push(tokio::spawn(async move {
            let mutex = Mutex::new(&p.client, &path)?;
            for _ in 0..2 {
                let guard = mutex.acquire().await?;
                log(
                    start,
                    format!(
                        "{:>5} holds the lock, fencing token {}",
                        p.name,
                        guard.fencing_token()
                    ),
                );
                tokio::time::sleep(Duration::from_millis(150)).await;
                guard.release().await?;
            }
            Ok::<_, zookeeper_recipes::Error>(())
        }));
    }
    for t in tasks {
        t.await??;
    }

    // 2. A leader election.
    log(start, format!("--- leader election on {election}"));
    let mut latches = Vec::new();
    for p in &people {
        latches.push(LeaderLatch::start(&p.client, &election, p.name).await?);
    }
    latches[0].await_leadership().await?;
    for part in latches[0].participants().await? {
        log(
            start,
            format!("participant {:>5} leader={}", part.id, part.is_leader),
        );
    }

    // 3. The leader also takes the lock; the others queue for it.
    let leader = &people[0];
    let mutex = Mutex::new(&leader.client, &lock_path)?;
    let held = mutex.acquire().await?;
    log(
        start,
        format!(
            "{} (leader) holds the lock, token {}",
            leader.name,
            held.fencing_token()
        ),
    );
    let mut waiters = Vec::new();
    for p in &people[1..] {
        let (p, path) = (p.clone(), lock_path.clone());
        waiters.push(tokio::spawn(async move {
            let mutex = Mutex::new(&p.client, &path)?;
            let guard = mutex.acquire().await?;
            log(
                start,
                format!(
                    "{:>5} takes over the lock, token {}",
                    p.name,
                    guard.fencing_token()
                ),
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
            guard.release().await?;
            Ok::<_, zookeeper_recipes::Error>(())
        }));
    }
    let mut follower_changes = latches[1].changes();

    // 4. Cut the leader off: its session expires, its lock and leadership are lost, and the
    //    others take over.
    log(
        start,
        format!(
            "--- cutting {} off (session timeout {:?})",
            leader.name, SESSION_TIMEOUT
        ),
    );
    let suspended = held.suspended();
    let lost = held.lost();
    // The leader's latch, watched from now on: suspended at the disconnect, then lost.
    let mut leader_changes = latches[0].changes();
    let leadership = tokio::spawn(async move {
        while let Some(state) = leader_changes.next().await {
            if state != Holding::Held {
                log(start, format!("{:>5}: leadership {state}", NAMES[0]));
            }
        }
    });
    leader.proxy.black_hole(true);
    // Display, not Debug: "suspended (connection lost)", then "lost: <the reason in words>".
    log(
        start,
        format!("{:>5}: lock {}", leader.name, suspended.await),
    );
    log(
        start,
        format!("{:>5}: lock lost: {}", leader.name, lost.await),
    );
    leadership.await?;
    while let Some(state) = follower_changes.next().await {
        if state == Holding::Held {
            log(
                start,
                format!(
                    "{} is the leader now, latch token {} (was {})",
                    people[1].name,
                    latches[1].fencing_token(),
                    latches[0].fencing_token()
                ),
            );
            break;
        }
    }
    for w in waiters {
        w.await??;
    }
    for part in latches[1].participants().await? {
        log(
            start,
            format!("participant {:>5} leader={}", part.id, part.is_leader),
        );
    }
    drop(held);
    for latch in &latches[1..] {
        latch.resign().await?;
    }
    let cleanup = &people[1].client;
    for path in [&lock_path, &election, &base] {
        let _ = cleanup.delete(path, None).await;
    }
    log(start, "done");
    Ok(())
}
