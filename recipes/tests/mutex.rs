//! The mutex against a real server: layouts, try/timeout/cancellation leaving nothing
//! behind, reentrancy, mutual exclusion with fencing tokens, at most two notifications per
//! release, a thousand contenders, a refused request named in the error, and the state a waiter
//! keeps inline.

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use common::{bounded, children, chroot_connect, client, clients, wait_empty};
use zookeeper_recipes::{Layout, Mutex};
use zookeeper_testkit::{FrameEvent, Proxy};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uncontended_acquire_names_the_node_and_release_deletes_it() {
    let c = client(&chroot_connect("mutex_uncontended")).await;
    let m = Mutex::new(&c, "/app/lock").unwrap();
    let g = bounded("acquire", m.acquire()).await.unwrap();
    let name = g.path().rsplit('/').next().unwrap().to_owned();
    assert!(name.starts_with("_c_") && name.contains("-lock-"), "{name}");
    assert_eq!(name.len(), 3 + 36 + 1 + 5 + 10, "{name}");
    let stat = c.exists(g.path()).await.unwrap().expect("node exists");
    assert_eq!(g.fencing_token().0, stat.czxid);
    assert_eq!(stat.ephemeral_owner, c.session_id().0);
    assert_eq!(g.wakeups(), 0);
    // Curator creates the lock path as a container.
    let parent = c.exists("/app/lock").await.unwrap().unwrap();
    assert_eq!(parent.ephemeral_owner, 0);
    bounded("release", g.release()).await.unwrap();
    assert!(children(&c, "/app/lock").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_layout_names_the_node_as_kazoo_does() {
    let c = client(&chroot_connect("mutex_kazoo_layout")).await;
    let m = Mutex::with_layout(&c, "/lock", Layout::Kazoo).unwrap();
    let g = bounded("acquire", m.acquire()).await.unwrap();
    let name = g.path().rsplit('/').next().unwrap();
    let (hex, seq) = name.split_once("__lock__").unwrap();
    assert_eq!(hex.len(), 32);
    assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(seq.len(), 10);
    g.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_timeout_and_cancellation_leave_no_child_behind() {
    let connect = chroot_connect("mutex_no_leftovers");
    let (a, b) = (client(&connect).await, client(&connect).await);
    let held = Mutex::new(&a, "/lock").unwrap();
    let g = bounded("acquire", held.acquire()).await.unwrap();

    let other = Mutex::new(&b, "/lock").unwrap();
    assert!(other.try_acquire().await.unwrap().is_none());
    assert_eq!(wait_empty_but(&b, "/lock", 1).await.len(), 1);

    let timed = bounded(
        "timed acquire",
        other.acquire_timeout(Duration::from_millis(200)),
    )
    .await
    .unwrap();
    assert!(timed.is_none());
    assert_eq!(wait_empty_but(&b, "/lock", 1).await.len(), 1);

    // Cancel acquisitions at every stage: before the create's reply (zero timeout polls the
    // future once), between create and listing, and while waiting for the watch.
    for i in 0..30u64 {
        let m = Mutex::new(&b, "/lock").unwrap();
        let r = tokio::time::timeout(Duration::from_micros(i * 150), m.acquire()).await;
        assert!(r.is_err(), "acquired a held lock");
    }
    let left = wait_empty_but(&b, "/lock", 1).await;
    assert_eq!(left, vec![g.path().rsplit('/').next().unwrap().to_owned()]);

    g.release().await.unwrap();
    assert!(wait_empty(&b, "/lock").await.is_empty());
}

/// Waits until `path` has exactly `n` children (cancelled acquisitions clean up in the
/// background).
async fn wait_empty_but(c: &zookeeper_tokio::Client, path: &str, n: usize) -> Vec<String> {
    bounded("leftovers to go", async {
        loop {
            let (list, _, w) = c.get_children_and_watch(path).await.unwrap();
            if list.len() <= n {
                return list;
            }
            w.await;
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reentrant_acquisition_counts_and_deletes_at_zero() {
    let connect = chroot_connect("mutex_reentrant");
    let (a, b) = (client(&connect).await, client(&connect).await);
    let m = Mutex::new(&a, "/lock").unwrap();
    let g1 = bounded("acquire", m.acquire()).await.unwrap();
    let g2 = g1.reenter().unwrap();
    let g3 = g2.reenter().unwrap();
    // Only explicitly: through the handle, a second acquisition contends like any other.
    assert!(m.try_acquire().await.unwrap().is_none());
    assert_eq!(g1.path(), g2.path());
    assert_eq!(g3.hold_count(), 3);
    assert_eq!(children(&a, "/lock").await.len(), 1);

    let other = Mutex::new(&b, "/lock").unwrap();
    g1.release().await.unwrap();
    drop(g3);
    assert!(a.exists(g2.path()).await.unwrap().is_some());
    assert!(other.try_acquire().await.unwrap().is_none());
    let path = g2.path().to_owned();
    g2.release().await.unwrap();
    assert!(a.exists(&path).await.unwrap().is_none());
    let g = bounded("other acquires", other.acquire()).await.unwrap();
    g.release().await.unwrap();
}

/// Records who is inside the critical section; any overlap, or a token that does not grow,
/// is a failure.
#[derive(Default)]
struct Checker {
    inside: AtomicUsize,
    log: StdMutex<Vec<(usize, i64)>>,
}

impl Checker {
    fn enter(&self, who: usize, token: i64) {
        let before = self.inside.fetch_add(1, Ordering::SeqCst);
        assert_eq!(
            before, 0,
            "contender {who} entered while another was inside"
        );
        let mut log = self.log.lock().unwrap();
        if let Some(&(prev, last)) = log.last() {
            assert!(
                token > last,
                "token {token} of {who} not above {last} of {prev}"
            );
        }
        log.push((who, token));
    }

    fn exit(&self) {
        self.inside.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn run_contenders(
    connect: &str,
    sessions: usize,
    per_session: usize,
    rounds: usize,
) -> Arc<Checker> {
    // Sessions that outlast any stall of a starved machine: these tests check exclusion and
    // order, and a session that expires under them ends its holder's lock as it should (the
    // loss suites test that), which the checker here would count against the lock. A run
    // beside two other suites on two cores once stalled the shared server past 4 s.
    let cs = common::clients_with_session(connect, sessions, Duration::from_secs(30)).await;
    let checker = Arc::new(Checker::default());
    let progress = common::Progress::default();
    let mut tasks = Vec::new();
    for (s, c) in cs.iter().enumerate() {
        for k in 0..per_session {
            let (c, checker, progress) = (c.clone(), checker.clone(), progress.clone());
            let who = s * per_session + k;
            tasks.push(tokio::spawn(async move {
                let m = Mutex::new(&c, "/contended").unwrap();
                for _ in 0..rounds {
                    let g = m.acquire().await.unwrap();
                    progress.step();
                    checker.enter(who, g.fencing_token().0);
                    tokio::task::yield_now().await;
                    checker.exit();
                    g.release().await.unwrap();
                }
            }));
        }
    }
    // The grants come one at a time, as many as contenders × rounds (a thousand): how long
    // the queue takes depends on the machine, so the bound is on progress, a grant at least
    // every `BOUND`, not on the whole run.
    common::join_making_progress("the contenders", &progress, tasks).await;
    checker
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_exclusion_with_growing_fencing_tokens() {
    let connect = chroot_connect("mutex_exclusion");
    let checker = run_contenders(&connect, 8, 4, 5).await;
    let log = checker.log.lock().unwrap().clone();
    assert_eq!(log.len(), 8 * 4 * 5);
    let served: BTreeSet<usize> = log.iter().map(|(w, _)| *w).collect();
    assert_eq!(served.len(), 32, "every contender served");
    let c = client(&connect).await;
    assert!(children(&c, "/contended").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousand_contenders_over_fifty_sessions_all_served_once() {
    let connect = chroot_connect("mutex_thousand");
    let started = std::time::Instant::now();
    let checker = run_contenders(&connect, 50, 20, 1).await;
    let log = checker.log.lock().unwrap();
    let served: BTreeSet<usize> = log.iter().map(|(w, _)| *w).collect();
    assert_eq!(log.len(), 1000);
    assert_eq!(served.len(), 1000);
    eprintln!("1000 contenders over 50 sessions: {:?}", started.elapsed());
}

/// No herd: with a hundred waiters queued, each watches the two contenders nearest ahead of it
/// (the first waiter only the holder), so a release notifies the next waiter and the one after
/// it, never more, and each waiter is woken at most twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_two_notifications_per_release_with_a_hundred_waiters() {
    let connect = chroot_connect("mutex_herd");
    let cs = clients(&connect, 10).await;
    let holder = Mutex::new(&cs[0], "/herd").unwrap();
    let g = bounded("holder", holder.acquire()).await.unwrap();

    let progress = common::Progress::default();
    let mut waiters = Vec::new();
    for i in 0..100 {
        let (c, progress) = (cs[i % 10].clone(), progress.clone());
        waiters.push(tokio::spawn(async move {
            let m = Mutex::new(&c, "/herd").unwrap();
            let g = m.acquire().await.unwrap();
            progress.step();
            let wakeups = g.wakeups();
            g.release().await.unwrap();
            wakeups
        }));
    }
    // Every waiter queued and watching before the first release.
    bounded("100 waiters queued", async {
        loop {
            let (list, _, w) = cs[0].get_children_and_watch("/herd").await.unwrap();
            if list.len() == 101 {
                break;
            }
            w.await;
        }
    })
    .await;
    // Waiter k in the queue's order watches nodes k-1 and k-2 (the first waiter only the
    // holder's). The server keeps one watch per session and node, so the expected watches are
    // pairs of the waiter's session and the watched node: wait until they are set, and check
    // that they are all there is.
    let server = zookeeper_testkit::shared_server();
    let chroot_prefix = connect
        .split_once('/')
        .map(|(_, p)| format!("/{p}/herd/"))
        .unwrap();
    let mut queue = children(&cs[0], "/herd").await;
    queue.sort_by(|a, b| a[a.len() - 10..].cmp(&b[b.len() - 10..]));
    let mut expected = BTreeSet::new();
    for (k, node) in queue.iter().enumerate().skip(1) {
        let owner = cs[0]
            .exists(&format!("/herd/{node}"))
            .await
            .unwrap()
            .unwrap()
            .ephemeral_owner as u64;
        for ahead in &queue[k.saturating_sub(2)..k] {
            expected.insert((owner, format!("{chroot_prefix}{ahead}")));
        }
    }
    let watched = bounded("every watch set", async {
        loop {
            let watched: BTreeSet<(u64, String)> = server
                .wchc()
                .await
                .unwrap()
                .into_iter()
                .flat_map(|(session, paths)| paths.into_iter().map(move |p| (session, p)))
                .filter(|(_, p)| p.starts_with(&chroot_prefix))
                .collect();
            if watched.is_superset(&expected) {
                return watched;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert_eq!(
        watched, expected,
        "a waiter watches its two nearest, nothing else"
    );

    g.release().await.unwrap();
    // A hundred handoffs in queue order, not in spawn order: bounded by progress.
    let mut total = 0;
    for wakeups in common::join_making_progress("the waiters", &progress, waiters).await {
        assert!(
            (1..=2).contains(&wakeups),
            "a waiter was woken {wakeups} times"
        );
        total += wakeups;
    }
    assert!(
        total <= 1 + 2 * 99,
        "more than two notifications per release"
    );
}

/// An uncontended acquisition is one round trip: the create and the listing are written back
/// to back. Checked by order, not time: while the proxy holds back every reply, both requests
/// still reach the server (a listing that waited for the create's reply would never be sent),
/// and they are the only requests the acquisition makes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uncontended_acquire_takes_one_round_trip() {
    const CREATE: [i32; 2] = [1, 15];
    const LIST: [i32; 2] = [8, 12];
    let chroot = zookeeper_testkit::chroot_for("mutex_one_round_trip");
    let proxy = Proxy::start(zookeeper_testkit::shared_server().addr())
        .await
        .unwrap();
    let c = client(&format!("{}{}", proxy.connect_string(), chroot)).await;
    c.create("/lock", b"", &zookeeper_tokio::CreateOptions::persistent())
        .await
        .unwrap();
    let m = Mutex::new(&c, "/lock").unwrap();
    proxy.record_frames(true);
    proxy.hold_replies(true);
    let acquiring = tokio::spawn(async move { m.acquire().await });
    bounded(
        "create and listing forwarded with no reply delivered",
        proxy.wait_for_frames(|log| {
            let sent = |ops: [i32; 2]| {
                log.iter().any(|e| {
                    matches!(e, FrameEvent::ClientToServer { opcode, .. } if ops.contains(opcode))
                })
            };
            sent(CREATE) && sent(LIST)
        }),
    )
    .await;
    proxy.hold_replies(false);
    let g = bounded("acquire", acquiring).await.unwrap().unwrap();
    let log = proxy.take_frame_log();
    g.release().await.unwrap();

    // Pings (negative xids) come and go on their own schedule; the rest is the acquisition.
    let requests: Vec<i32> = log
        .iter()
        .filter_map(|e| match *e {
            FrameEvent::ClientToServer { xid, opcode, .. } if xid >= 0 => Some(opcode),
            _ => None,
        })
        .collect();
    assert!(
        requests.len() == 2 && CREATE.contains(&requests[0]) && LIST.contains(&requests[1]),
        "the acquisition sent {requests:?}: {log:?}"
    );
    let first_reply = log
        .iter()
        .position(|e| matches!(e, FrameEvent::ServerToClient { xid, .. } if *xid >= 0))
        .expect("replies delivered");
    let last_request = log
        .iter()
        .rposition(|e| matches!(e, FrameEvent::ClientToServer { xid, .. } if *xid >= 0))
        .unwrap();
    assert!(
        last_request < first_reply,
        "a request waited for a reply: {log:?}"
    );
}

/// A handoff costs the next holder no listing: the waiter watched the holder, the holder was
/// all that stood before it, so the deletion event is the grant. Checked on the waiter's wire:
/// after its watch is set, the only frames are the event and nothing it asks the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handoff_needs_no_listing() {
    const GET_DATA: i32 = 4;
    const LIST: [i32; 2] = [8, 12];
    let chroot = zookeeper_testkit::chroot_for("mutex_handoff_no_listing");
    let holder = client(&format!(
        "{}{}",
        zookeeper_testkit::shared_server().connect_string(),
        chroot
    ))
    .await;
    let proxy = Proxy::start(zookeeper_testkit::shared_server().addr())
        .await
        .unwrap();
    let waiter = client(&format!("{}{}", proxy.connect_string(), chroot)).await;
    let held = bounded(
        "holder acquires",
        Mutex::new(&holder, "/lock").unwrap().acquire(),
    )
    .await
    .unwrap();

    proxy.record_frames(true);
    let m = Mutex::new(&waiter, "/lock").unwrap();
    let acquiring = tokio::spawn(async move { m.acquire().await });
    bounded(
        "the waiter's watch is set",
        proxy.wait_for_frames(|log| {
            log.iter().any(|e| match *e {
                FrameEvent::ClientToServer { xid, opcode, .. } if opcode == GET_DATA => log
                    .iter()
                    .any(|r| matches!(*r, FrameEvent::ServerToClient { xid: x, .. } if x == xid)),
                _ => false,
            })
        }),
    )
    .await;
    proxy.take_frame_log();

    held.release().await.unwrap();
    let g = bounded("waiter acquires", acquiring)
        .await
        .unwrap()
        .unwrap();
    let log = proxy.take_frame_log();
    assert_eq!(g.wakeups(), 1);
    let asked: Vec<i32> = log
        .iter()
        .filter_map(|e| match *e {
            FrameEvent::ClientToServer { xid, opcode, .. } if xid >= 0 => Some(opcode),
            _ => None,
        })
        .collect();
    assert!(
        !asked.iter().any(|op| LIST.contains(op)),
        "the waiter listed the queue after the handoff: {log:?}"
    );
    assert!(
        asked.is_empty(),
        "the handoff cost requests {asked:?}: {log:?}"
    );
    g.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_request_names_its_operation_and_path() {
    let c = client(&chroot_connect("mutex_refused")).await;
    let read_only = vec![zookeeper_tokio::Acl {
        perms: zookeeper_tokio::perms::READ,
        id: zookeeper_tokio::Id::anyone(),
    }];
    c.create(
        "/ro",
        b"",
        &zookeeper_tokio::CreateOptions::persistent().acl(read_only),
    )
    .await
    .unwrap();
    let m = Mutex::new(&c, "/ro/lock").unwrap();
    let err = bounded("acquire", m.acquire()).await.unwrap_err();
    match &err {
        zookeeper_recipes::Error::Client(e) => {
            assert_eq!(*e, zookeeper_tokio::ErrorKind::NoAuth);
            assert_eq!(e.path(), Some("/ro/lock"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        err.to_string(),
        "create /ro/lock: not authorised by the node's ACL"
    );
}

/// Recipes hold the client of a session that authenticated: none of them prints the
/// credential or the session password in its `Debug`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_output_of_recipes_shows_no_secret() {
    const PASSWORD: &str = "hunter2-s3cret";
    let c = bounded(
        "connect",
        zookeeper_tokio::Client::builder(&chroot_connect("debug_secrets"))
            .digest_auth("alice", PASSWORD)
            .connect_timeout(common::CONNECT_TIMEOUT)
            .connect(),
    )
    .await
    .unwrap();
    let session_password = format!("{:?}", c.session_password());
    let session_password = session_password
        .trim_start_matches("b\"")
        .trim_end_matches('"');
    let mutex = Mutex::new(&c, "/m").unwrap();
    let guard = bounded("acquire", mutex.acquire()).await.unwrap();
    let rwlock = zookeeper_recipes::ReadWriteLock::new(&c, "/rw").unwrap();
    let semaphore = zookeeper_recipes::Semaphore::new(&c, "/s", 2).unwrap();
    let latch = bounded(
        "latch",
        zookeeper_recipes::LeaderLatch::start(&c, "/l", "node-a"),
    )
    .await
    .unwrap();
    let (context_tx, mut context) = tokio::sync::mpsc::unbounded_channel();
    let selector = zookeeper_recipes::LeaderSelector::builder(&c, "/sel")
        .id("node-a")
        .start(move |ctx: zookeeper_recipes::LeaderContext| {
            let _ = context_tx.send(format!("{ctx:?}"));
            async {}
        })
        .unwrap();
    let context = bounded("the selector leads", context.recv()).await.unwrap();
    let semaphore_mutex = zookeeper_recipes::SemaphoreMutex::new(&c, "/sm").unwrap();
    for printed in [
        format!("{c:?}"),
        format!("{selector:?}"),
        context,
        format!("{semaphore_mutex:?}"),
        format!("{mutex:?}"),
        format!("{guard:?}"),
        format!("{rwlock:?}"),
        format!("{semaphore:?}"),
        format!("{latch:?}"),
    ] {
        assert!(!printed.contains(PASSWORD), "{printed}");
        assert!(!printed.contains(session_password), "{printed}");
    }
    guard.release().await.unwrap();
    latch.resign().await.unwrap();
}

/// A release returns without waiting for its delete's reply, so whatever the same session asks
/// right after it must reach the server behind that delete: a read finds the node gone, and
/// acquiring again finds nobody ahead. On a current-thread runtime nothing else runs between
/// the release and the next call, so a delete started only by a background task (rather than
/// queued by the release itself) would reach the server after that call.
#[tokio::test(flavor = "current_thread")]
async fn acquiring_again_right_after_a_release_is_ordered_behind_its_delete() {
    let c = client(&chroot_connect("mutex_release_order")).await;
    let m = Mutex::new(&c, "/lock").unwrap();
    for _ in 0..20 {
        let g = bounded("acquire", m.acquire()).await.unwrap();
        let old = g.path().to_owned();
        bounded("release", g.release()).await.unwrap();
        // Queued when called, before anything else on this thread ran.
        let after = c.exists(&old).await.unwrap();
        assert!(
            after.is_none(),
            "a request made after the release overtook its delete"
        );
        let again = bounded("acquire again", m.acquire()).await.unwrap();
        assert_eq!(again.wakeups(), 0, "waited behind its own released node");
        let name = again.path().rsplit('/').next().unwrap().to_owned();
        assert_eq!(children(&c, "/lock").await, vec![name]);
        bounded("release", again.release()).await.unwrap();
    }
}

/// Every waiter keeps its acquisition's state for as long as it waits (in its task, when it
/// waits in one of its own), so ten thousand waiters hold ten thousand of them. Compiled
/// async state nests by value: an acquisition passed on by value used to be kept twice
/// (5.5 KB for a mutex, 11.6 KB for a semaphore). What an acquisition returns to its caller
/// stays small; the rest is one allocation of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquisition_future_is_small() {
    const MOST: usize = 512;
    let c = client(&chroot_connect("mutex_future_size")).await;
    let m = Mutex::new(&c, "/lock").unwrap();
    let rw = zookeeper_recipes::ReadWriteLock::new(&c, "/rw").unwrap();
    let s = zookeeper_recipes::Semaphore::new(&c, "/sem", 2).unwrap();
    let sizes = [
        ("Mutex::acquire", std::mem::size_of_val(&m.acquire())),
        (
            "Mutex::acquire_timeout",
            std::mem::size_of_val(&m.acquire_timeout(Duration::from_secs(1))),
        ),
        (
            "Mutex::try_acquire",
            std::mem::size_of_val(&m.try_acquire()),
        ),
        ("ReadWriteLock::read", std::mem::size_of_val(&rw.read())),
        ("ReadWriteLock::write", std::mem::size_of_val(&rw.write())),
        ("Semaphore::acquire", std::mem::size_of_val(&s.acquire())),
    ];
    for (what, size) in sizes {
        assert!(size <= MOST, "{what}: {size} bytes");
    }
}
