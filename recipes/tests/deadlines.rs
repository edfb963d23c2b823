//! Deadlines that are bounds: every recipe call with a timeout returns at it (the recipes
//! promise within 50 ms; checked with the [`SLACK`] a busy machine needs) whatever the
//! connection does — a partition, refused connections, a slow server — whether the fault
//! starts before the call or while it waits, and once the connection is back no node of ours
//! is left under the recipe's path. The `try_` calls return within the session timeout.

mod common;

use std::time::{Duration, Instant};

use common::bounded;
use zookeeper_recipes::{LeaderLatch, Mutex, ReadWriteLock, Semaphore};
use zookeeper_testkit::{chroot_for, shared_server, Proxy};
use zookeeper_tokio::{Client, ErrorKind};

/// The timeout every timed call is given.
const TIMEOUT: Duration = Duration::from_millis(1500);
/// How late a call may return past its bound. The recipes promise 50 ms past a timeout, and
/// the session timeout for a `try_` call; the rest is for a starved machine, which can be
/// that late to run the caller's timer and task. A call that waited on the server instead of
/// its deadline still misses the bound by far: a reply through the [`Fault::Slow`] proxy
/// takes 6 s (3 s each way), a partitioned connection is given up only at the read timeout
/// (2/3 of the 20 s session: 13 s), and refused connections never come back during the
/// fault.
const SLACK: Duration = Duration::from_secs(2);

#[derive(Clone, Copy, Debug)]
enum Fault {
    /// Connected, but nothing passes either way.
    Partition,
    /// Every connection closed, new ones refused.
    Refused,
    /// Every frame delayed longer than the timeout.
    Slow,
}

impl Fault {
    fn apply(self, proxy: &Proxy) {
        match self {
            Fault::Partition => proxy.black_hole(true),
            Fault::Refused => {
                proxy.refuse(true);
                proxy.drop_all();
            }
            Fault::Slow => proxy.set_latency(Duration::from_secs(3)),
        }
    }

    fn heal(self, proxy: &Proxy) {
        proxy.black_hole(false);
        proxy.refuse(false);
        proxy.set_latency(Duration::ZERO);
    }
}

/// What a call came back with, and when.
struct Outcome {
    call: &'static str,
    took: Duration,
    acquired: bool,
}

async fn timed<T: Send + 'static>(
    call: &'static str,
    f: impl std::future::Future<Output = zookeeper_recipes::Result<Option<T>>> + Send + 'static,
) -> Outcome {
    let start = Instant::now();
    let r = f.await;
    Outcome {
        call,
        took: start.elapsed(),
        acquired: matches!(r, Ok(Some(_))),
    }
}

fn check(outcomes: &[Outcome], bound: Duration, fault: Fault) {
    for o in outcomes {
        assert!(!o.acquired, "{}: acquired a held lock ({fault:?})", o.call);
        assert!(
            o.took <= bound + SLACK,
            "{} took {:?}, bound {bound:?} ({fault:?})",
            o.call,
            o.took
        );
    }
}

/// Waits (bounded) until no child of `path` is an ephemeral of `owner`.
async fn wait_none_of(direct: &Client, path: &str, owner: i64) {
    bounded(&format!("our nodes under {path} to go"), async {
        loop {
            let (children, _, changed) = match direct.get_children_and_watch(path).await {
                Ok(listing) => listing,
                Err(e) if e == ErrorKind::NoNode => return,
                Err(e) => panic!("{e}"),
            };
            let mut ours = 0;
            for child in &children {
                if let Ok(Some(stat)) = direct.exists(&format!("{path}/{child}")).await {
                    ours += usize::from(stat.ephemeral_owner == owner);
                }
            }
            if ours == 0 {
                return;
            }
            changed.await;
        }
    })
    .await
}

/// Waits (bounded) until `path` has `n` children.
async fn wait_children(direct: &Client, path: &str, n: usize) {
    bounded(&format!("{n} children under {path}"), async {
        loop {
            let (children, _, changed) = direct.get_children_and_watch(path).await.unwrap();
            if children.len() >= n {
                return;
            }
            changed.await;
        }
    })
    .await
}

async fn connect(connect: &str, timeout: Duration) -> Client {
    bounded(
        "connect",
        Client::builder(connect)
            .session_timeout(timeout)
            // The default (the session timeout, 2 s below) is only for the first session:
            // the servers are up, the wait must only survive a slow machine.
            .connect_timeout(common::CONNECT_TIMEOUT)
            .connect(),
    )
    .await
    .expect("connect")
}

/// Every timed call on `ours`, against locks `direct` holds.
fn start_timed_calls(
    ours: &Client,
    latch: &std::sync::Arc<LeaderLatch>,
) -> Vec<tokio::task::JoinHandle<Outcome>> {
    let mutex = Mutex::new(ours, "/m").unwrap();
    let readers = ReadWriteLock::new(ours, "/rw").unwrap();
    let writers = ReadWriteLock::new(ours, "/rw").unwrap();
    let semaphore = Semaphore::new(ours, "/s", 1).unwrap();
    let latch = latch.clone();
    vec![
        tokio::spawn(timed("Mutex::acquire_timeout", async move {
            mutex.acquire_timeout(TIMEOUT).await
        })),
        tokio::spawn(timed("ReadWriteLock::read_timeout", async move {
            readers.read_timeout(TIMEOUT).await
        })),
        tokio::spawn(timed("ReadWriteLock::write_timeout", async move {
            writers.write_timeout(TIMEOUT).await
        })),
        tokio::spawn(timed("Semaphore::acquire_timeout", async move {
            semaphore.acquire_timeout(TIMEOUT).await
        })),
        tokio::spawn(timed("LeaderLatch::await_leadership_timeout", async move {
            latch
                .await_leadership_timeout(TIMEOUT)
                .await
                .map(|led| led.then_some(()))
        })),
    ]
}

async fn join(calls: Vec<tokio::task::JoinHandle<Outcome>>) -> Vec<Outcome> {
    let mut out = Vec::new();
    for call in calls {
        out.push(bounded("call", call).await.unwrap());
    }
    out
}

async fn timed_calls_are_bounded(fault: Fault, test: &str) {
    let chroot = chroot_for(test);
    let direct = connect(
        &shared_server().connect_string_with_chroot(&chroot),
        Duration::from_secs(10),
    )
    .await;
    let proxy = Proxy::start(shared_server().addr()).await.unwrap();
    let ours = connect(
        &format!("{}{chroot}", proxy.connect_string()),
        Duration::from_secs(20),
    )
    .await;
    let owner = ours.session_id().0;

    // Someone else holds everything, so every call would wait.
    let _m = Mutex::new(&direct, "/m").unwrap().acquire().await.unwrap();
    let _w = ReadWriteLock::new(&direct, "/rw")
        .unwrap()
        .write()
        .await
        .unwrap();
    let _s = Semaphore::new(&direct, "/s", 1)
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let leader = LeaderLatch::start(&direct, "/l", "leader").await.unwrap();
    leader.await_leadership().await.unwrap();
    let latch = std::sync::Arc::new(LeaderLatch::start(&ours, "/l", "ours").await.unwrap());

    // The fault strikes while the calls wait.
    let calls = start_timed_calls(&ours, &latch);
    wait_children(&direct, "/m", 2).await;
    wait_children(&direct, "/rw", 3).await;
    wait_children(&direct, "/s/leases", 2).await;
    fault.apply(&proxy);
    check(&join(calls).await, TIMEOUT, fault);
    fault.heal(&proxy);
    for path in ["/m", "/rw", "/s/locks", "/s/leases"] {
        wait_none_of(&direct, path, owner).await;
    }

    // The fault is there before the calls start.
    fault.apply(&proxy);
    let calls = start_timed_calls(&ours, &latch);
    check(&join(calls).await, TIMEOUT, fault);
    fault.heal(&proxy);
    for path in ["/m", "/rw", "/s/locks", "/s/leases"] {
        wait_none_of(&direct, path, owner).await;
    }
}

/// The `try_` calls, made during the fault: they return within the session timeout.
async fn try_calls_are_bounded(fault: Fault, test: &str) {
    let chroot = chroot_for(test);
    let direct = connect(
        &shared_server().connect_string_with_chroot(&chroot),
        Duration::from_secs(10),
    )
    .await;
    let proxy = Proxy::start(shared_server().addr()).await.unwrap();
    let session_timeout = Duration::from_secs(2);
    let ours = connect(
        &format!("{}{chroot}", proxy.connect_string()),
        session_timeout,
    )
    .await;
    let owner = ours.session_id().0;
    // The promise: within the session timeout (checked with `SLACK` on top).
    let bound = ours.session_timeout();

    fault.apply(&proxy);
    let mutex = Mutex::new(&ours, "/m").unwrap();
    let readers = ReadWriteLock::new(&ours, "/rw").unwrap();
    let writers = ReadWriteLock::new(&ours, "/rw").unwrap();
    let semaphore = Semaphore::new(&ours, "/s", 1).unwrap();
    let calls = vec![
        tokio::spawn(timed("Mutex::try_acquire", async move {
            mutex.try_acquire().await
        })),
        tokio::spawn(timed("ReadWriteLock::try_read", async move {
            readers.try_read().await
        })),
        tokio::spawn(timed("ReadWriteLock::try_write", async move {
            writers.try_write().await
        })),
        tokio::spawn(timed("Semaphore::try_acquire", async move {
            semaphore.try_acquire().await
        })),
    ];
    check(&join(calls).await, bound, fault);
    fault.heal(&proxy);
    for path in ["/m", "/rw", "/s/locks", "/s/leases"] {
        wait_none_of(&direct, path, owner).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timed_calls_return_on_time_through_a_partition() {
    timed_calls_are_bounded(Fault::Partition, "deadline_partition").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timed_calls_return_on_time_with_connections_refused() {
    timed_calls_are_bounded(Fault::Refused, "deadline_refused").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timed_calls_return_on_time_with_a_slow_server() {
    timed_calls_are_bounded(Fault::Slow, "deadline_slow").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_calls_return_within_the_session_timeout_through_a_partition() {
    try_calls_are_bounded(Fault::Partition, "deadline_try_partition").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_calls_return_within_the_session_timeout_with_connections_refused() {
    try_calls_are_bounded(Fault::Refused, "deadline_try_refused").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_calls_return_within_the_session_timeout_with_a_slow_server() {
    try_calls_are_bounded(Fault::Slow, "deadline_try_slow").await;
}
