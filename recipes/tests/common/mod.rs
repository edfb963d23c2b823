//! Helpers shared by the integration tests: clients on the shared server, bounded waits.
#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use zookeeper_testkit::{chroot_for, shared_server};
use zookeeper_tokio::{Client, ErrorKind, SessionState};

/// The bound on any single wait in these tests: generous, so that a slow CI machine does not
/// fail them, but a hang fails instead of blocking the suite.
pub const BOUND: Duration = Duration::from_secs(30);

/// Awaits `f`, failing the test if it takes longer than [`BOUND`].
pub async fn bounded<F: Future>(what: &str, f: F) -> F::Output {
    zookeeper_testkit::bounded_by(BOUND, what, f).await
}

/// The steps of a long run (a grant, an increment), for [`join_making_progress`]. Cloned
/// into the tasks, which [`Progress::step`] as they go.
#[derive(Clone, Default)]
pub struct Progress(std::sync::Arc<tokio::sync::Notify>);

impl Progress {
    pub fn step(&self) {
        // Stores a permit when nobody waits: a step is never missed.
        self.0.notify_one();
    }
}

/// Awaits every task of a run whose length depends on the machine's speed (hundreds of
/// handoffs, say): the test fails only when no task made a step for [`BOUND`], a stall,
/// however long the whole run takes. Panics in the tasks are passed on.
pub async fn join_making_progress<T>(
    what: &str,
    progress: &Progress,
    tasks: Vec<tokio::task::JoinHandle<T>>,
) -> Vec<T> {
    let all = async {
        let mut out = Vec::with_capacity(tasks.len());
        for t in tasks {
            out.push(t.await.unwrap());
        }
        out
    };
    tokio::pin!(all);
    loop {
        tokio::select! {
            out = &mut all => return out,
            stepped = tokio::time::timeout(BOUND, progress.0.notified()) => {
                if stepped.is_err() {
                    panic!("{what}: no progress for {BOUND:?}");
                }
            }
        }
    }
}

/// Prints `tracing` output when `ZK_RECIPES_LOG` is set (for example `ZK_RECIPES_LOG=trace`),
/// to see what a failing test did.
pub fn init_tracing() {
    if let Ok(level) = std::env::var("ZK_RECIPES_LOG") {
        let level = level.parse().unwrap_or(tracing::Level::DEBUG);
        let _ = tracing_subscriber::fmt()
            .with_max_level(level)
            .with_test_writer()
            .try_init();
    }
}

/// A connect string to a fresh chroot on the shared server.
pub fn chroot_connect(test: &str) -> String {
    let chroot = chroot_for(test);
    shared_server().connect_string_with_chroot(&chroot)
}

/// How long a test's client waits for its first session. The builder's default, the session
/// timeout up to 5 s, is for reporting a dead ensemble quickly; here the servers are up, and
/// a short session (only there to make an expiry quick) must not turn a starved machine's
/// slow first connect into a failure. The bound stays below [`BOUND`], which callers wrap
/// around the connect.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(25);

/// The session timeout of [`client`] and [`clients`]: short, so that an expiry is quick.
const SHORT_SESSION: Duration = Duration::from_secs(4);

/// A client on `connect` with a short session timeout.
pub async fn client(connect: &str) -> Client {
    client_with_session(connect, SHORT_SESSION).await
}

/// A client on `connect` with a session timeout of `session`, and a patient connect.
pub async fn client_with_session(connect: &str, session: Duration) -> Client {
    init_tracing();
    bounded(
        "connect",
        Client::builder(connect)
            .session_timeout(session)
            .connect_timeout(CONNECT_TIMEOUT)
            .connect(),
    )
    .await
    .expect("connect")
}

/// `n` clients (separate sessions) on `connect`, with a short session timeout.
pub async fn clients(connect: &str, n: usize) -> Vec<Client> {
    clients_with_session(connect, n, SHORT_SESSION).await
}

/// `n` clients (separate sessions) on `connect`, with a session timeout of `session`.
pub async fn clients_with_session(connect: &str, n: usize, session: Duration) -> Vec<Client> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(client_with_session(connect, session).await);
    }
    out
}

/// The children of `path`, or empty if it does not exist.
pub async fn children(client: &Client, path: &str) -> Vec<String> {
    match client.get_children(path).await {
        Ok((c, _)) => c,
        Err(e) if e == ErrorKind::NoNode => Vec::new(),
        Err(e) => panic!("listing {path}: {e}"),
    }
}

/// Polls `path` until it has no children (background deletes are asynchronous by design),
/// bounded by [`BOUND`]. Returns the last listing.
pub async fn wait_empty(client: &Client, path: &str) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        let c = children(client, path).await;
        if c.is_empty() || tokio::time::Instant::now() > deadline {
            return c;
        }
        // Wait for the next change of the listing rather than sleeping.
        match client.get_children_and_watch(path).await {
            Ok((c, _, w)) if !c.is_empty() => {
                let _ = tokio::time::timeout_at(deadline, w).await;
            }
            _ => {}
        }
    }
}

/// The opcode of every child listing the client sends (getChildren2), with or without a watch.
pub const GET_CHILDREN2: i32 = 12;

/// Waits until the client behind `proxy` has the reply to a lease listing that set a watch:
/// from then on the server holds the watch, and any release wakes the waiter.
///
/// The frame log does not show a request's watch flag, but the waiter's order of requests
/// does: the listing sent with our lease's create finds too many leases, and the watching
/// listing goes out next, with the next xid. The gate's listing is followed by the lease's
/// create instead, so two child listings with consecutive xids only occur here. Take the log
/// (`Proxy::take_frame_log`) before a step to see the waiter watch again after it.
pub async fn until_watching_the_leases(proxy: &zookeeper_testkit::Proxy) {
    bounded(
        "the waiter watching the leases",
        proxy.wait_for_frames(|log| {
            let listings: Vec<(u64, i32)> = log
                .iter()
                .filter_map(|e| match *e {
                    zookeeper_testkit::FrameEvent::ClientToServer {
                        conn,
                        xid,
                        opcode: GET_CHILDREN2,
                    } => Some((conn, xid)),
                    _ => None,
                })
                .collect();
            listings.iter().any(|&(conn, xid)| {
                listings.contains(&(conn, xid - 1))
                    && log.contains(&zookeeper_testkit::FrameEvent::ServerToClient { conn, xid })
            })
        }),
    )
    .await;
}

/// Waits, bounded, until `path` has exactly `n` children; returns them.
pub async fn until_children(client: &Client, path: &str, n: usize) -> Vec<String> {
    bounded(&format!("{n} children of {path}"), async {
        loop {
            match client.get_children_and_watch(path).await {
                Ok((c, _, _)) if c.len() == n => return c,
                Ok((_, _, w)) => {
                    w.await;
                }
                // Not there yet: look again once it is.
                Err(e) if e == ErrorKind::NoNode => {
                    let (stat, w) = client.exists_and_watch(path).await.unwrap();
                    if stat.is_none() {
                        w.await;
                    }
                }
                Err(e) => panic!("listing {path}: {e}"),
            }
        }
    })
    .await
}

/// Drops the client's connection at the proxy and waits, bounded, until the client has seen
/// the disconnect and is connected again (the same session, since it comes back at once).
pub async fn bounce_connection(client: &Client, proxy: &zookeeper_testkit::Proxy) {
    let mut states = client.state_changes();
    proxy.drop_all();
    bounded(
        "disconnected",
        states.wait_for(|s| s == SessionState::Disconnected),
    )
    .await
    .expect("session alive");
    bounded(
        "reconnected",
        states.wait_for(|s| s == SessionState::Connected),
    )
    .await
    .expect("session alive");
}

/// The rig of the healed-disconnect tests: a client behind a proxy on the shared server, driven
/// by a multi-thread runtime (`net`), and a current-thread runtime (`app`) for the recipe under
/// test, which stands still whenever the test is not blocked on it: like an application whose
/// runtime is busy while the connection drops and comes back.
pub struct BlipRig {
    pub net: tokio::runtime::Runtime,
    pub app: tokio::runtime::Runtime,
    pub proxy: zookeeper_testkit::Proxy,
    pub client: Client,
}

pub fn blip_rig(test: &str) -> BlipRig {
    let net = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let app = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let chroot = chroot_for(test);
    let (proxy, client) = net.block_on(async {
        let proxy = zookeeper_testkit::Proxy::start(shared_server().addr())
            .await
            .unwrap();
        let c = client(&format!("{}{}", proxy.connect_string(), chroot)).await;
        (proxy, c)
    });
    BlipRig {
        net,
        app,
        proxy,
        client,
    }
}

pub mod faults;
pub mod peers;
pub mod resource;
pub mod stale;
