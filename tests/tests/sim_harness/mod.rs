//! What every simulation workload shares: the seed loop with its budget and replay, the
//! simulated world (one model server, clients on hosts of their own, a fault schedule), and
//! the trace printed when an invariant breaks.
//!
//! `ZK_SIM_SEED=<n>` replays one seed and prints its trace; `ZK_SIM_SEEDS=<n>` sets how many
//! seeds a run explores (the ignored `*_long` tests default to many thousands), or
//! `ZK_SIM_SEEDS=<a>..<b>` which.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zookeeper_testkit::sim::{Faults, SimOptions, SimRng, SimServer};
use zookeeper_tokio::{Client, ClientBuilder, TurmoilConnector};

pub mod tree_writes;

/// The model server's host name and port on the simulated network.
pub const SERVER: &str = "zk";
pub const PORT: u16 = 2181;

/// The seeds a test explores: `ZK_SIM_SEED` alone, else `ZK_SIM_SEEDS` (or `default`) seeds
/// from a fixed start, so that every run of the suite explores the same ones.
pub fn seeds(default: u64) -> (Vec<u64>, bool) {
    if let Ok(one) = std::env::var("ZK_SIM_SEED") {
        let seed = one.trim().parse().expect("ZK_SIM_SEED is a number");
        return (vec![seed], true);
    }
    // `N` seeds from 1, or a range `A..B` (B excluded), to explore past the default budget.
    let asked = std::env::var("ZK_SIM_SEEDS").unwrap_or_default();
    if let Some((a, b)) = asked.trim().split_once("..") {
        let (a, b): (u64, u64) = (
            a.parse().expect("ZK_SIM_SEEDS=A..B"),
            b.parse().expect("ZK_SIM_SEEDS=A..B"),
        );
        return ((a..b).collect(), false);
    }
    let n = asked.trim().parse().unwrap_or(default);
    ((1..=n).collect(), false)
}

/// What a run records as it goes: the trace lines of the workload, and the first invariant
/// it broke.
#[derive(Clone, Default)]
pub struct Record {
    inner: Arc<Mutex<RecordInner>>,
}

#[derive(Default)]
struct RecordInner {
    violation: Option<String>,
    steps: u64,
    /// Sessions the schedule expired by force: before their timeout, which the real server
    /// never does on its own, so their holders' leases promise nothing (fencing still does).
    forced: std::collections::BTreeSet<i64>,
}

impl Record {
    pub fn violated(&self, server: &SimServer, what: String) {
        server.note(format!("VIOLATION: {what}"));
        let mut r = self.inner.lock().unwrap();
        r.violation.get_or_insert(what);
    }

    pub fn step(&self) {
        self.inner.lock().unwrap().steps += 1;
    }

    pub fn forced_expiry(&self, session: i64) {
        self.inner.lock().unwrap().forced.insert(session);
    }

    /// Whether `session` was expired by force (see `forced_expiry`).
    pub fn was_forced(&self, session: i64) -> bool {
        self.inner.lock().unwrap().forced.contains(&session)
    }

    pub fn steps(&self) -> u64 {
        self.inner.lock().unwrap().steps
    }

    pub fn violation(&self) -> Option<String> {
        self.inner.lock().unwrap().violation.clone()
    }
}

/// One simulated world: its turmoil simulation, the model server, and the seed's draws.
pub struct World<'a> {
    pub sim: turmoil::Sim<'a>,
    pub server: SimServer,
    pub record: Record,
    pub seed: u64,
}

/// How long a run lasts in simulated time.
pub const RUN_FOR: Duration = Duration::from_secs(12);

/// Whether the run's faulty stretch still goes on (simulated time: every host of the world
/// starts with the simulation).
pub fn running() -> bool {
    now() < RUN_FOR
}

/// Simulated time since the simulation began.
pub fn now() -> Duration {
    turmoil::elapsed()
}

/// Until when, in simulated time, `client` may act without hearing from a server again: the
/// end of its session's lease (`Client::lease_deadline`), before which no server can have
/// expired the session; now if it has none.
pub fn lease_until(client: &Client) -> Duration {
    client.lease_deadline().map_or(now(), |d| {
        now() + d.saturating_duration_since(tokio::time::Instant::now().into_std())
    })
}

/// The faults the model server injects in the recipes' workloads: a write's reply lost
/// after it was applied now and then, and slow replies.
pub fn server_faults() -> Faults {
    Faults {
        lose_reply_after_apply: 0.02,
        slow_reply: 0.05,
        slow_reply_max: Duration::from_millis(300),
    }
}

/// What a workload's host is given: its name and number, the server and the record, and a
/// random source of its own drawn from the run's seed.
pub struct Host {
    pub who: String,
    pub index: usize,
    pub server: SimServer,
    pub record: Record,
    pub rng: SimRng,
}

impl World<'_> {
    pub fn new(seed: u64, faults: Faults) -> World<'static> {
        let mut sim = turmoil::Builder::new()
            .simulation_duration(RUN_FOR + Duration::from_secs(60))
            // Coarse ticks keep a run cheap; timers still fire in order within a tick.
            .tick_duration(Duration::from_millis(10))
            .min_message_latency(Duration::from_millis(1))
            .max_message_latency(Duration::from_millis(10))
            .rng_seed(seed)
            .build();
        let server = SimServer::new(SimOptions {
            seed,
            faults,
            ..SimOptions::default()
        });
        let host = server.clone();
        sim.host(SERVER, move || {
            let server = host.clone();
            async move {
                server.listen_turmoil(PORT).await?;
                Ok(())
            }
        });
        World {
            sim,
            server,
            record: Record::default(),
            seed,
        }
    }
}

impl World<'_> {
    /// Puts `n` hosts named `<prefix><i>` in the world, each running `body`; each host's
    /// random source is drawn from the seed, `salt` and its number. Returns their names, for
    /// the fault schedule.
    pub fn hosts<F, Fut>(&mut self, prefix: &str, n: usize, salt: u64, body: F) -> Vec<String>
    where
        F: Fn(Host) -> Fut,
        Fut: Future<Output = turmoil::Result> + 'static,
    {
        let names: Vec<String> = (0..n).map(|i| format!("{prefix}{i}")).collect();
        for (index, who) in names.iter().enumerate() {
            let host = Host {
                who: who.clone(),
                index,
                server: self.server.clone(),
                record: self.record.clone(),
                rng: SimRng::new(self.seed.wrapping_mul(salt).wrapping_add(index as u64)),
            };
            self.sim.client(who.as_str(), body(host));
        }
        names
    }
}

/// A host's session, kept across its rounds while it lives, and opened anew once it ended.
pub struct Reconnecting {
    kept: Option<Client>,
    timeout: Duration,
}

impl Reconnecting {
    pub fn new(session_timeout: Duration) -> Reconnecting {
        Reconnecting {
            kept: None,
            timeout: session_timeout,
        }
    }

    /// The kept client, or a new session (its randomness drawn from `rng`); `None` when
    /// connecting failed (try again).
    pub async fn client(&mut self, rng: &mut SimRng) -> Option<Client> {
        match self.kept.take() {
            Some(c) => Some(c),
            None => connect(rng.next_u64(), self.timeout).await.ok(),
        }
    }

    /// A client whose session has not ended: the kept one if it still lives, else a new
    /// session, connecting until one opens.
    pub async fn live_client(&mut self, rng: &mut SimRng) -> Client {
        loop {
            match self.kept.take() {
                Some(c) if !c.state().is_terminal() => return c,
                _ => {
                    if let Ok(c) = connect(rng.next_u64(), self.timeout).await {
                        return c;
                    }
                }
            }
        }
    }

    /// Keeps `client` for the next round, unless its session has ended.
    pub fn keep(&mut self, client: Client) {
        if !client.state().is_terminal() {
            self.kept = Some(client);
        }
    }
}

/// The holders of a lock-like recipe that can still act, each with its kind (reader or
/// writer, say), its session and until when it may act without looking again.
pub struct Holders<K> {
    inner: Arc<Mutex<HolderTable<K>>>,
}

/// Holder number -> (kind, session, until when).
type HolderTable<K> = BTreeMap<usize, (K, i64, Duration)>;

impl<K> Clone for Holders<K> {
    fn clone(&self) -> Self {
        Holders {
            inner: self.inner.clone(),
        }
    }
}

impl<K> Default for Holders<K> {
    fn default() -> Self {
        Holders {
            inner: Arc::default(),
        }
    }
}

/// A holder that can act: (its number, its kind, its session, until when).
pub type Acting<K> = (usize, K, i64, Duration);

impl<K: Copy> Holders<K> {
    /// Holder `i` acts now through `client`: records until when it may, and returns every
    /// holder that can act at this instant. Sessions the schedule expired by force are left
    /// out: they promised nothing (their holders find out late, and only fencing could refuse
    /// them).
    pub fn acting(&self, i: usize, kind: K, client: &Client, record: &Record) -> Vec<Acting<K>> {
        let until = lease_until(client);
        let mut h = self.inner.lock().unwrap();
        h.insert(i, (kind, client.session_id().0, until));
        let t = now();
        h.iter()
            .filter(|(_, &(_, s, u))| u > t && !record.was_forced(s))
            .map(|(&i, &(k, s, u))| (i, k, s, u))
            .collect()
    }

    /// Holder `i` released: it can no longer act.
    pub fn released(&self, i: usize) {
        self.inner.lock().unwrap().remove(&i);
    }
}

/// A client of the model server on the current host, its randomness from `seed`.
pub async fn connect(seed: u64, session_timeout: Duration) -> zookeeper_tokio::Result<Client> {
    builder(seed, session_timeout).connect().await
}

/// The settings of every workload's sessions: the model server over turmoil's network, the
/// client's randomness from `seed`.
pub fn builder(seed: u64, session_timeout: Duration) -> ClientBuilder {
    Client::builder(&format!("{SERVER}:{PORT}"))
        .connector(TurmoilConnector)
        .rng_seed(seed)
        .session_timeout(session_timeout)
        .connect_timeout(Duration::from_secs(5))
        .request_timeout(Duration::from_secs(5))
}

/// Draws a fault schedule over `hosts` from `seed` and plays it on the `chaos` host:
/// partitions, held links, dropped connections, forced expiries, until the run ends.
pub fn schedule_faults(world: &mut World<'_>, hosts: Vec<String>) {
    schedule(world, hosts, false);
}

/// `schedule_faults`, with server restarts besides: the server down for a while (every
/// connection dropped, none accepted, no session expiring), then back with a fresh timeout
/// for every session, as a real server restores them.
pub fn schedule_faults_with_restarts(world: &mut World<'_>, hosts: Vec<String>) {
    schedule(world, hosts, true);
}

fn schedule(world: &mut World<'_>, hosts: Vec<String>, restarts: bool) {
    let server = world.server.clone();
    let record = world.record.clone();
    let mut rng = SimRng::new(world.seed ^ 0xfa17);
    world.sim.client("chaos", async move {
        let start = tokio::time::Instant::now();
        while start.elapsed() < RUN_FOR {
            tokio::time::sleep(Duration::from_millis(200 + rng.below(1500))).await;
            let host = hosts[rng.below(hosts.len() as u64) as usize].clone();
            let lasts = Duration::from_millis(100 + rng.below(4000));
            match rng.below(10) {
                0..=2 => {
                    server.note(format!("fault: partition {host} for {lasts:?}"));
                    turmoil::partition(host.as_str(), SERVER);
                    tokio::time::sleep(lasts).await;
                    turmoil::repair(host.as_str(), SERVER);
                    server.note(format!("fault: repair {host}"));
                }
                3..=4 => {
                    // A pause as the server sees it: nothing from the host arrives for a while,
                    // then everything at once.
                    server.note(format!("fault: hold {host} for {lasts:?}"));
                    turmoil::hold(host.as_str(), SERVER);
                    tokio::time::sleep(lasts).await;
                    turmoil::release(host.as_str(), SERVER);
                    server.note(format!("fault: release {host}"));
                }
                5 => server.drop_connections(),
                6 => {
                    let sessions = server.sessions();
                    if !sessions.is_empty() {
                        let s = sessions[rng.below(sessions.len() as u64) as usize];
                        record.forced_expiry(s);
                        server.expire_session(s);
                    }
                }
                7 if restarts => {
                    // Down: no connection, no expiry; back: every session's timer anew.
                    server.note(format!("fault: server restarts, down for {lasts:?}"));
                    server.stop();
                    for h in &hosts {
                        turmoil::partition(h.as_str(), SERVER);
                    }
                    tokio::time::sleep(lasts).await;
                    server.start();
                    for h in &hosts {
                        turmoil::repair(h.as_str(), SERVER);
                    }
                    server.note("fault: server back");
                }
                _ => {}
            }
        }
        Ok(())
    });
}

/// Runs the world; returns the violation with the trace, if any.
pub fn run(mut world: World<'_>) -> Result<u64, String> {
    let outcome = world.sim.run();
    let record = world.record.clone();
    if std::env::var("ZK_SIM_SEED").is_ok() {
        eprintln!(
            "the server's changes in seed {}: zxid, change, node, (czxid, mzxid, owner)",
            world.seed
        );
        for c in world.server.journal() {
            let stat = c
                .node
                .as_ref()
                .map(|(_, s)| (s.czxid, s.mzxid, s.ephemeral_owner));
            eprintln!("  {:#x} {:?} {} {stat:?}", c.zxid, c.event, c.path);
        }
        eprintln!("trace of seed {} (simulated time):", world.seed);
        for line in world.server.trace() {
            eprintln!("{line}");
        }
    }
    if let Some(v) = record.violation() {
        return Err(format!("{v}\n{}", world.server.trace().join("\n")));
    }
    if let Err(e) = outcome {
        return Err(format!(
            "simulation failed: {e}\n{}",
            world.server.trace().join("\n")
        ));
    }
    Ok(record.steps())
}

/// Asserts that a run is a function of its seed alone, whatever ran before it on the same
/// thread: each of `seeds` is run in turn, then each again after all of them, and must leave
/// the same trace (every line, server and workload events with their simulated times) both
/// times; different seeds must leave different traces. Thread-local state that earlier runs
/// leave behind (tokio's and the standard library's per-thread random sources) is what this
/// catches: seeds where the order of simultaneous wake-ups shows in the trace.
pub fn assert_replays_exactly(seeds: &[u64], world: impl Fn(u64) -> World<'static>) {
    let trace = |seed| {
        let world = world(seed);
        let server = world.server.clone();
        if let Err(e) = run(world) {
            panic!("seed {seed}: {e}");
        }
        server.trace()
    };
    let first: Vec<Vec<String>> = seeds.iter().map(|&s| trace(s)).collect();
    for (t, &seed) in first.iter().zip(seeds) {
        assert!(t.len() > 50, "seed {seed} left a short trace: {t:?}");
    }
    if let [a, b, ..] = &first[..] {
        assert_ne!(a, b, "two seeds left the same trace");
    }
    for (alone, &seed) in first.iter().zip(seeds) {
        let again = trace(seed);
        if let Some(at) = (0..alone.len().max(again.len())).find(|&i| alone.get(i) != again.get(i))
        {
            let from = at.saturating_sub(5);
            panic!(
                "seed {seed} replayed differently after seeds {seeds:?}, from line {at}:\n\
                 first:\n{}\nagain:\n{}",
                alone[from..alone.len().min(at + 10)].join("\n"),
                again[from..again.len().min(at + 10)].join("\n")
            );
        }
    }
}

/// Runs `workload` for every seed of the budget, on as many threads as there are cores (each
/// simulation is single-threaded and keeps to its thread); fails with the lowest failing
/// seed, its replay command and its trace. Prints seeds per second.
pub fn explore(
    name: &str,
    default_seeds: u64,
    workload: impl Fn(u64) -> Result<u64, String> + Sync,
) {
    let (seeds, replay) = seeds(default_seeds);
    let started = std::time::Instant::now();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4)
        .min(seeds.len().max(1));
    let failures = Mutex::new(Vec::new());
    let steps = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|scope| {
        for t in 0..threads {
            let (seeds, workload, failures, steps) = (&seeds, &workload, &failures, &steps);
            scope.spawn(move || {
                for &seed in seeds.iter().skip(t).step_by(threads) {
                    match workload(seed) {
                        Ok(n) => {
                            steps.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
                        }
                        Err(trace) => {
                            failures.lock().unwrap().push((seed, trace));
                            return;
                        }
                    }
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap();
    failures.sort_by_key(|(seed, _)| *seed);
    if let Some((seed, trace)) = failures.into_iter().next() {
        let lines: Vec<&str> = trace.lines().collect();
        let shown = if replay {
            &lines[..]
        } else {
            &lines[lines.len().saturating_sub(60)..]
        };
        panic!(
            "{name}: seed {seed} broke an invariant: {}\n\
             replay with ZK_SIM_SEED={seed} cargo test -p zookeeper-testkit --test {name}\n\
             trace (simulated time):\n{}",
            lines.first().unwrap_or(&""),
            shown.join("\n")
        );
    }
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "{name}: {} seeds on {threads} threads, {} protected steps, {:.1} s, {:.1} seeds/s",
        seeds.len(),
        steps.into_inner(),
        secs,
        seeds.len() as f64 / secs.max(1e-9)
    );
}
