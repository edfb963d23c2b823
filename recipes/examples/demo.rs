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

/// Prints the demo's lines with the time since it started, and keeps them when asked to
/// (the demo's test reads them back).
#[derive(Clone)]
struct Story {
    start: Instant,
    kept: Option<Arc<std::sync::Mutex<Vec<String>>>>,
}

impl Story {
    fn say(&self, line: impl AsRef<str>) {
        let line = line.as_ref();
        println!("[{:>6.3}s] {line}", self.start.elapsed().as_secs_f64());
        if let Some(kept) = &self.kept {
            kept.lock().unwrap().push(line.to_owned());
        }
    }
}

// Under `cargo test` the example is built as a test harness, which has its own `main`.
#[cfg_attr(test, allow(dead_code))]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let story = Story {
        start: Instant::now(),
        kept: None,
    };
    run(std::env::args().nth(1), &story).await
}

/// The demo against the server of `arg` (a connect string), or one it starts.
async fn run(arg: Option<String>, story: &Story) -> Result<(), Box<dyn std::error::Error>> {
    // The chroot of a given connect string, kept in each participant's connect string.
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
            story.say(format!("server: the ZooKeeper at {addr}"));
            (None, addr)
        }
        None if Installation::locate().is_ok() => {
            let server = ZkServer::start().await?;
            story.say(format!(
                "server: a ZooKeeper started for the demo, at {}",
                server.connect_string()
            ));
            let addr = server.addr();
            (Some(Box::new(server)), addr)
        }
        None => {
            let server = SimServer::new(SimOptions::default());
            let addr = server.listen_tcp().await?;
            story.say(format!(
                "server: the testkit's simulated ZooKeeper, in this process, at {addr} \
                     (no ZooKeeper is installed: scripts/setup installs one)"
            ));
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
        story.say(format!("{name} connected, session {}", client.session_id()));
        people.push(Arc::new(Participant {
            name,
            client,
            proxy,
        }));
    }
    let lock_path = format!("{base}/lock");
    let election = format!("{base}/election");

    // 1. Contenders take turns on the lock; every grant carries a larger fencing token.
    story.say(format!(
        "--- three contenders, two rounds each, on {lock_path}"
    ));
    let mut tasks = Vec::new();
    for p in &people {
        let (p, path, story) = (p.clone(), lock_path.clone(), story.clone());
        tasks.push(tokio::spawn(async move {
            let mutex = Mutex::new(&p.client, &path)?;
            for _ in 0..2 {
                let guard = mutex.acquire().await?;
                story.say(format!(
                    "{:>5} holds the lock, fencing token {}",
                    p.name,
                    guard.fencing_token()
                ));
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
    story.say(format!("--- leader election on {election}"));
    let mut latches = Vec::new();
    for p in &people {
        latches.push(LeaderLatch::start(&p.client, &election, p.name).await?);
    }
    latches[0].await_leadership().await?;
    for part in latches[0].participants().await? {
        story.say(format!(
            "participant {:>5} leader={}",
            part.id, part.is_leader
        ));
    }

    // 3. The leader also takes the lock; the others queue for it.
    let leader = &people[0];
    let mutex = Mutex::new(&leader.client, &lock_path)?;
    let held = mutex.acquire().await?;
    story.say(format!(
        "{} (leader) holds the lock, token {}",
        leader.name,
        held.fencing_token()
    ));
    let mut waiters = Vec::new();
    for p in &people[1..] {
        let (p, path, story) = (p.clone(), lock_path.clone(), story.clone());
        waiters.push(tokio::spawn(async move {
            let mutex = Mutex::new(&p.client, &path)?;
            let guard = mutex.acquire().await?;
            story.say(format!(
                "{:>5} takes over the lock, token {}",
                p.name,
                guard.fencing_token()
            ));
            tokio::time::sleep(Duration::from_millis(100)).await;
            guard.release().await?;
            Ok::<_, zookeeper_recipes::Error>(())
        }));
    }
    let mut follower_changes = latches[1].changes();

    // 4. Cut the leader off: its session expires, its lock and leadership are lost, and the
    //    others take over.
    story.say(format!(
        "--- cutting {} off (session timeout {:?})",
        leader.name, SESSION_TIMEOUT
    ));
    let suspended = held.suspended();
    let lost = held.lost();
    // The leader's latch, watched from now on: suspended at the disconnect, then lost.
    let mut leader_changes = latches[0].changes();
    let leader_story = story.clone();
    let leadership = tokio::spawn(async move {
        while let Some(state) = leader_changes.next().await {
            if state != Holding::Held {
                leader_story.say(format!("{:>5}: leadership {state}", NAMES[0]));
            }
        }
    });
    leader.proxy.black_hole(true);
    // Display, not Debug: "suspended (connection lost)", then "lost: <the reason in words>".
    story.say(format!("{:>5}: lock {}", leader.name, suspended.await));
    story.say(format!("{:>5}: lock {}", leader.name, lost.await));
    leadership.await?;
    while let Some(state) = follower_changes.next().await {
        if state == Holding::Held {
            story.say(format!(
                "{} is the leader now, latch token {} (was {})",
                people[1].name,
                latches[1].fencing_token(),
                latches[0].fencing_token()
            ));
            break;
        }
    }
    for w in waiters {
        w.await??;
    }
    for part in latches[1].participants().await? {
        story.say(format!(
            "participant {:>5} leader={}",
            part.id, part.is_leader
        ));
    }
    drop(held);
    for latch in &latches[1..] {
        latch.resign().await?;
    }
    let cleanup = &people[1].client;
    for path in [&lock_path, &election, &base] {
        let _ = cleanup.delete(path, None).await;
    }
    story.say("done");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The number after `marker` in `line`.
    fn token_after(line: &str, marker: &str) -> u64 {
        let at = line.find(marker).expect("a token in the line") + marker.len();
        line[at..].trim().parse().expect("a number")
    }

    /// The demo, as `scripts/demo` runs it, tells what its README says: grants in order of
    /// their fencing tokens, the cut-off leader's lock and leadership suspended then lost in
    /// words, and the others taking over with larger tokens.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_demo_tells_its_story_in_order() {
        let kept = Arc::new(std::sync::Mutex::new(Vec::new()));
        let story = Story {
            start: Instant::now(),
            kept: Some(kept.clone()),
        };
        tokio::time::timeout(Duration::from_secs(120), run(None, &story))
            .await
            .expect("the demo ends within two minutes")
            .expect("the demo runs to its end");
        let lines = kept.lock().unwrap().clone();
        let text = lines.join("\n");

        let rounds: Vec<u64> = lines
            .iter()
            .filter(|l| l.contains("holds the lock, fencing token"))
            .map(|l| token_after(l, "fencing token"))
            .collect();
        assert_eq!(
            rounds.len(),
            6,
            "three contenders, two rounds each:\n{text}"
        );
        assert!(
            rounds.windows(2).all(|w| w[0] < w[1]),
            "each grant has a larger token than the one before: {rounds:?}"
        );

        let leader_token = lines
            .iter()
            .find(|l| l.starts_with("alice (leader) holds the lock, token"))
            .map(|l| token_after(l, "token"))
            .unwrap_or_else(|| panic!("the leader takes the lock:\n{text}"));
        assert!(leader_token > rounds[5]);
        for expected in [
            "alice: lock suspended (connection lost)",
            "alice: leadership suspended (connection lost)",
        ] {
            assert!(
                lines.iter().any(|l| l == expected),
                "{expected:?} in:\n{text}"
            );
        }
        for lost in ["alice: lock lost: ", "alice: leadership lost: "] {
            let line = lines
                .iter()
                .find(|l| l.starts_with(lost))
                .unwrap_or_else(|| panic!("{lost:?} in:\n{text}"));
            assert!(
                line.contains("the session's lease ran out"),
                "the reason in words: {line}"
            );
        }
        assert!(!text.contains("lost: lost"), "each word once:\n{text}");

        let takeovers: Vec<u64> = lines
            .iter()
            .filter(|l| l.contains("takes over the lock, token"))
            .map(|l| token_after(l, "token"))
            .collect();
        assert_eq!(takeovers.len(), 2, "bob and carol take over:\n{text}");
        assert!(takeovers.iter().all(|&t| t > leader_token), "{takeovers:?}");
        assert!(text.contains("is the leader now"), "{text}");
        assert_eq!(lines.last().map(String::as_str), Some("done"));
    }
}
