//! Shared helpers of the integration tests: a client on the shared server, in its own chroot.

#![allow(dead_code)]

pub mod raw;

use std::future::Future;
use std::time::Duration;

use zookeeper_tokio::{Client, EventType, PersistentWatcher, SessionState};

/// How late past a deadline the client promises (a request deadline, the connect timeout, a
/// read timeout) a call may end on a loaded machine and still count as having kept it: the
/// timer's wake-up and the caller's turn to run can take that long on a busy two-core machine,
/// while a call that ignored its deadline would run on to the hang bound ([`WAIT`]) or forever.
pub const SCHEDULING_SLACK: Duration = Duration::from_secs(2);

/// The bound on any single wait in these tests.
pub const WAIT: Duration = Duration::from_secs(10);

/// Prints the client's `tracing` output when `ZK_CLIENT_LOG` is set (for example
/// `ZK_CLIENT_LOG=debug`), to see what a failing test did.
pub fn init_tracing() {
    if let Ok(level) = std::env::var("ZK_CLIENT_LOG") {
        let level = level.parse().unwrap_or(tracing::Level::DEBUG);
        let _ = tracing_subscriber::fmt()
            .with_max_level(level)
            .with_test_writer()
            .try_init();
    }
}

/// A client on the shared server, chrooted to a fresh node unique to `test`.
pub async fn client(test: &str) -> Client {
    init_tracing();
    let connect = connect_string(test);
    Client::builder(&connect)
        .session_timeout(Duration::from_secs(10))
        // Not the default (the session timeout, at most 5 s): the first session of a loaded
        // server may take longer, and no test here is about how fast it comes.
        .connect_timeout(Duration::from_secs(30))
        .connect()
        .await
        .expect("connect to the shared server")
}

/// The connect string (with a fresh chroot) for `test` on the shared server.
pub fn connect_string(test: &str) -> String {
    init_tracing();
    let server = zookeeper_testkit::shared_server();
    let chroot = zookeeper_testkit::chroot_for(test);
    server.connect_string_with_chroot(&chroot)
}

/// A current-thread runtime with I/O and time: one a thread of the test drives itself.
pub fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A 2-worker multi-thread runtime with I/O and time, the shape most services run on.
pub fn multi_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Awaits `f` for at most [`WAIT`], failing the test otherwise.
pub async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
    match tokio::time::timeout(WAIT, f).await {
        Ok(v) => v,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

/// Waits until the client's state satisfies `pred`.
pub async fn wait_state(client: &Client, pred: impl Fn(SessionState) -> bool) -> SessionState {
    let mut rx = client.state_watcher();
    within("session state", async {
        *rx.wait_for(|s| pred(*s)).await.expect("state channel open")
    })
    .await
}

/// The next `n` events of a persistent watch, as (type, path), each awaited within [`WAIT`].
pub async fn next_events(w: &mut PersistentWatcher, n: usize) -> Vec<(EventType, String)> {
    let mut got = Vec::with_capacity(n);
    for _ in 0..n {
        let e = within("watch event", w.next())
            .await
            .expect("watch stream open");
        got.push((e.event_type, e.path));
    }
    got
}

/// Waits for the next transition into a state satisfying `pred` on a change stream taken
/// before the fault, so that short-lived states are not missed.
pub async fn next_state(
    changes: &mut zookeeper_tokio::StateChanges,
    pred: impl Fn(SessionState) -> bool,
) -> SessionState {
    within("state transition", changes.wait_for(pred))
        .await
        .expect("session ended first")
}

/// Black-holes the client's server with `hole` and checks that the client notices before the
/// session could expire. The read timeout promises two thirds of the negotiated session
/// timeout, counted from the last frame, which came before the hole: that leaves a third of it
/// to reconnect before the server expires the session, and that third is the margin allowed
/// here for a loaded machine. A machine can stall longer than that, so the bound also grows by
/// how late a timer of the test's own, due at the read timeout, ran: that is the runtime's
/// lateness, not the client's. Returns the state stream taken before the fault.
pub async fn assert_black_hole_noticed(
    client: &Client,
    hole: impl FnOnce(),
) -> zookeeper_tokio::StateChanges {
    let negotiated = client.session_timeout();
    let read_timeout = negotiated * 2 / 3;
    let margin = negotiated - read_timeout;
    let mut changes = client.state_changes();
    hole();
    let start = tokio::time::Instant::now();
    let due = start + read_timeout;
    let canary = tokio::spawn(async move {
        tokio::time::sleep_until(due).await;
        tokio::time::Instant::now()
    });
    // Only a hang bound: the assertion below checks the time.
    tokio::time::timeout(
        WAIT.max(negotiated * 2),
        changes.wait_for(|s| s == SessionState::Disconnected),
    )
    .await
    .expect("disconnection noticed")
    .unwrap();
    let noticed = start.elapsed();
    let lateness = canary.await.expect("the canary timer") - due;
    assert!(
        noticed < read_timeout + margin + lateness,
        "noticed after {noticed:?}: the session timeout is {negotiated:?}, and a timer due at \
         the read timeout ran {lateness:?} late"
    );
    changes
}

/// The client's reconnect backoff (`BACKOFF_MIN` and `BACKOFF_MAX` in `session/hosts.rs`):
/// after a failed round, or a connection that did not last, the pause is `BACKOFF_MIN`, then
/// twice the previous one up to `BACKOFF_MAX`, each jittered down to half at most.
pub const BACKOFF_MIN: Duration = Duration::from_millis(50);
/// See [`BACKOFF_MIN`].
pub const BACKOFF_MAX: Duration = Duration::from_secs(1);

/// The most connection attempts the backoff lets a client make to one server within `window`
/// when every attempt fails after the server took the connection (or every connection ends at
/// once), the failures whose pauses grow up to `BACKOFF_MAX`: one at the start of the window,
/// one more at once (the first reconnect after a connection that lasted is not paused), then
/// one after each pause, every pause as short as the jitter allows and the pauses starting over
/// from the shortest. A machine that is slow only makes fewer.
pub fn most_attempts_within(window: Duration) -> u64 {
    let (mut attempts, mut spent, mut base) = (2, Duration::ZERO, BACKOFF_MIN);
    loop {
        spent += base / 2;
        if spent > window {
            return attempts;
        }
        attempts += 1;
        base = (base * 2).min(BACKOFF_MAX);
    }
}
