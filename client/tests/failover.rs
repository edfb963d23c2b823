//! Failover across a real 3-node ensemble, each member behind its own fault proxy.
//!
//! Ensembles are heavy (three JVMs), so the tests of this binary run one at a time.

mod common;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use common::{assert_black_hole_noticed, next_events, next_state, wait_state, within};
use tokio::sync::Mutex;
use zookeeper_testkit::{Ensemble, Proxy};
use zookeeper_tokio::{AddWatchMode, Client, CreateOptions, ErrorKind, EventType, SessionState};

static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

/// Bound for waits that include an election or JVM restarts.
const SLOW: Duration = Duration::from_secs(60);

struct Cluster {
    ensemble: Ensemble,
    proxies: Vec<Proxy>,
}

impl Cluster {
    async fn start() -> Cluster {
        common::init_tracing();
        let ensemble = Ensemble::start(3).await.expect("ensemble");
        let mut proxies = Vec::new();
        for addr in ensemble.addrs() {
            proxies.push(Proxy::start(*addr).await.expect("proxy"));
        }
        Cluster { ensemble, proxies }
    }

    fn connect_string(&self) -> String {
        let parts: Vec<String> = self.proxies.iter().map(|p| p.addr().to_string()).collect();
        parts.join(",")
    }

    /// A client through the proxies, connected to member `only` if given.
    async fn client(&self, timeout: Duration, only: Option<usize>) -> Client {
        if let Some(only) = only {
            self.refuse_all_but(Some(only));
        }
        let c = Client::builder(&self.connect_string())
            .session_timeout(timeout)
            .connect_timeout(SLOW)
            .connect()
            .await
            .expect("connect through the proxies");
        self.refuse_all_but(None);
        c
    }

    fn refuse_all_but(&self, keep: Option<usize>) {
        for (i, p) in self.proxies.iter().enumerate() {
            p.refuse(keep.is_some_and(|k| k != i));
        }
    }

    /// The member whose proxy carries the client's connection.
    fn member_of_client(&self) -> Option<usize> {
        self.proxies.iter().position(|p| p.open_connections() > 0)
    }

    /// [`Cluster::member_of_client`] once the proxy of member `left`, whose connection the
    /// client has given up, counts it closed: the proxy closes the client's side before it
    /// counts the connection gone, so a client quick to reconnect elsewhere can be seen on
    /// both members at once.
    async fn member_of_client_after_leaving(&self, left: usize) -> Option<usize> {
        within(
            "the connection left counted closed",
            self.proxies[left].wait_open(0),
        )
        .await;
        self.member_of_client()
    }

    /// A client straight to the ensemble, not through the proxies.
    async fn observer(&self) -> Client {
        Client::builder(&self.ensemble.connect_string())
            .connect_timeout(SLOW)
            .connect()
            .await
            .expect("observer")
    }
}

/// Writes sequential nodes until stopped; returns the paths whose create was acknowledged.
fn spawn_writer(c: Client, stop: Arc<StdMutex<bool>>) -> tokio::task::JoinHandle<Vec<String>> {
    tokio::spawn(async move {
        let mut acked = Vec::new();
        while !*stop.lock().unwrap() {
            match c
                .create("/acked/w-", b"", &CreateOptions::persistent_sequential())
                .await
            {
                Ok((path, _)) => acked.push(path),
                Err(e) if e.is_retryable() => tokio::time::sleep(Duration::from_millis(20)).await,
                Err(e) => panic!("writer: {e}"),
            }
        }
        acked
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_follower_then_the_leader_keeps_the_session_and_every_acknowledged_write() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::start().await;
    let leader = cluster.ensemble.leader().await.unwrap();
    let follower = (0..3).find(|i| *i != leader).unwrap();
    let other_follower = (0..3).find(|i| *i != leader && *i != follower).unwrap();

    // Long enough for an election on a loaded machine: a session that outlives the failover
    // is what is tested, not how fast the ensemble elects.
    let c = cluster
        .client(Duration::from_secs(30), Some(follower))
        .await;
    assert_eq!(cluster.member_of_client(), Some(follower));
    let id = c.session_id();
    c.create("/eph", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    c.create("/acked", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let stop = Arc::new(StdMutex::new(false));
    let writer = spawn_writer(c.clone(), stop.clone());

    // Kill the follower; keep the client off the other follower so it lands on the leader.
    cluster.proxies[other_follower].refuse(true);
    let mut changes = c.state_changes();
    cluster.ensemble.kill(follower).unwrap();
    next_state(&mut changes, |s| s == SessionState::Disconnected).await;
    next_state(&mut changes, |s| s == SessionState::Connected).await;
    assert_eq!(c.session_id(), id);
    assert_eq!(
        cluster.member_of_client_after_leaving(follower).await,
        Some(leader)
    );
    cluster.proxies[other_follower].refuse(false);
    cluster.ensemble.restart(follower).await.unwrap();
    cluster.ensemble.wait_serving().await.unwrap();

    // Now kill the leader the client is on.
    let mut changes = c.state_changes();
    cluster.ensemble.kill(leader).unwrap();
    next_state(&mut changes, |s| s == SessionState::Disconnected).await;
    let state = tokio::time::timeout(
        SLOW,
        changes.wait_for(|s| s.is_connected() || s.is_terminal()),
    )
    .await
    .expect("reconnect after the leader died");
    assert_eq!(state, Some(SessionState::Connected));
    assert_eq!(c.session_id(), id, "same session");
    assert_ne!(
        cluster.member_of_client_after_leaving(leader).await,
        Some(leader)
    );

    *stop.lock().unwrap() = true;
    let acked = within("writer stops", writer).await.unwrap();
    assert!(!acked.is_empty());
    let stat = c
        .exists("/eph")
        .await
        .unwrap()
        .expect("ephemeral survives failover");
    assert_eq!(stat.ephemeral_owner, id.0);
    c.sync("/acked").await.unwrap();
    let (children, _) = c.get_children("/acked").await.unwrap();
    let present: BTreeSet<String> = children
        .into_iter()
        .map(|n| format!("/acked/{n}"))
        .collect();
    for path in &acked {
        assert!(present.contains(path), "acknowledged write {path} lost");
    }
}

/// Changes made while the client is cut off fire its data, child and exist watches (the server
/// reports those against the last zxid the client saw) and its persistent and
/// persistent-recursive watches (the client reads their nodes and subtrees again and reports
/// what differs from what it knew), each exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_made_while_cut_off_fire_every_kind_of_watch_exactly_once() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::start().await;
    let c = cluster.client(Duration::from_secs(10), None).await;
    for p in ["/d", "/c", "/p", "/r", "/r/old", "/r/old/kid", "/r/keep"] {
        c.create(p, b"", &CreateOptions::persistent())
            .await
            .unwrap();
    }
    let (_, _, data) = c.get_data_and_watch("/d").await.unwrap();
    let (_, _, child) = c.get_children_and_watch("/c").await.unwrap();
    let (_, created) = c.exists_and_watch("/new").await.unwrap();
    let mut persistent = c.add_watch("/p", AddWatchMode::Persistent).await.unwrap();
    let mut recursive = c
        .add_watch("/r", AddWatchMode::PersistentRecursive)
        .await
        .unwrap();

    for p in &cluster.proxies {
        p.refuse(true);
        p.drop_all();
    }
    wait_state(&c, |s| s == SessionState::Disconnected).await;
    let other = cluster.observer().await;
    other.set_data("/d", b"changed", None).await.unwrap();
    other
        .create("/c/kid", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    other
        .create("/new", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    other.set_data("/p", b"1", None).await.unwrap();
    other.set_data("/p", b"2", None).await.unwrap();
    other
        .create("/p/kid", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    other.delete("/r/old/kid", None).await.unwrap();
    other.delete("/r/old", None).await.unwrap();
    other
        .create("/r/fresh", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    other.set_data("/r/keep", b"changed", None).await.unwrap();
    for p in &cluster.proxies {
        p.refuse(false);
    }
    wait_state(&c, |s| s == SessionState::Connected).await;

    assert_eq!(
        within("data", data).await.event_type,
        EventType::NodeDataChanged
    );
    assert_eq!(
        within("child", child).await.event_type,
        EventType::NodeChildrenChanged
    );
    assert_eq!(
        within("exist", created).await.event_type,
        EventType::NodeCreated
    );
    assert_eq!(
        next_events(&mut persistent, 2).await,
        vec![
            (EventType::NodeDataChanged, "/p".to_string()),
            (EventType::NodeChildrenChanged, "/p".to_string()),
        ],
        "two data changes are reported as one, with the child change"
    );
    assert_eq!(
        next_events(&mut recursive, 4).await,
        vec![
            (EventType::NodeDeleted, "/r/old/kid".to_string()),
            (EventType::NodeDeleted, "/r/old".to_string()),
            (EventType::NodeCreated, "/r/fresh".to_string()),
            (EventType::NodeDataChanged, "/r/keep".to_string()),
        ]
    );

    // Exactly once: a marker change after everything else is the next event on each stream.
    other.set_data("/p", b"marker", None).await.unwrap();
    other.set_data("/r", b"marker", None).await.unwrap();
    let e = within("persistent marker", persistent.next())
        .await
        .unwrap();
    assert_eq!(
        (e.event_type, e.path.as_str()),
        (EventType::NodeDataChanged, "/p")
    );
    let e = within("recursive marker", recursive.next()).await.unwrap();
    assert_eq!(
        (e.event_type, e.path.as_str()),
        (EventType::NodeDataChanged, "/r")
    );
    // The one-shot watches are spent: changing their nodes again reaches nobody, and the
    // session keeps working.
    other.set_data("/d", b"again", None).await.unwrap();
    c.sync("/").await.unwrap();
}

/// 5,000 watched paths take more than one `setWatches` frame; all are restored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_thousand_watches_are_restored_across_a_reconnect() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::start().await;
    let c = cluster.client(Duration::from_secs(20), None).await;
    let paths: Vec<String> = (0..5000)
        .map(|i| format!("/watched/a-fairly-long-node-name-{i:05}"))
        .collect();
    let bytes: usize = paths.iter().map(|p| p.len() + 4).sum();
    assert!(bytes > 128 * 1024, "needs more than one setWatches frame");
    c.create("/watched", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let calls: Vec<_> = paths.iter().map(|p| c.exists_and_watch(p)).collect();
    let mut watchers = Vec::new();
    for call in calls {
        let (stat, w) = within("exists", call).await.unwrap();
        assert!(stat.is_none());
        watchers.push(w);
    }
    let before = cluster.member_of_client().unwrap();
    let mut changes = c.state_changes();
    cluster.proxies[before].refuse(true);
    cluster.proxies[before].drop_all();
    next_state(&mut changes, |s| s == SessionState::Disconnected).await;
    next_state(&mut changes, |s| s == SessionState::Connected).await;
    let after = cluster
        .member_of_client_after_leaving(before)
        .await
        .unwrap();
    cluster.proxies[before].refuse(false);
    assert_ne!(before, after, "moved to another member");

    let other = cluster.observer().await;
    let creates: Vec<_> = paths
        .iter()
        .map(|p| other.create(p, b"", &CreateOptions::persistent()))
        .collect();
    for f in creates {
        f.await.unwrap();
    }
    for (w, path) in watchers.into_iter().zip(&paths) {
        let e = within("restored watch", w).await;
        assert_eq!((e.event_type, &e.path), (EventType::NodeCreated, path));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn black_hole_is_noticed_within_two_thirds_of_the_session_timeout() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::start().await;
    let c = cluster.client(Duration::from_millis(3000), None).await;
    let member = cluster.member_of_client().unwrap();
    let mut changes =
        assert_black_hole_noticed(&c, || cluster.proxies[member].black_hole(true)).await;
    // And the session carries on elsewhere.
    next_state(&mut changes, |s| s == SessionState::Connected).await;
    cluster.proxies[member].black_hole(false);
    c.exists("/").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn black_holing_every_server_past_the_timeout_expires_the_session_everywhere() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::start().await;
    let c = cluster.client(Duration::from_millis(2000), None).await;
    let id = c.session_id();
    c.create("/eph", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let (_, _, watcher) = c.get_data_and_watch("/eph").await.unwrap();
    let mut recursive = c
        .add_watch("/", AddWatchMode::PersistentRecursive)
        .await
        .unwrap();
    for p in &cluster.proxies {
        p.black_hole(true);
    }
    assert_eq!(
        wait_state(&c, |s| s.is_terminal()).await,
        SessionState::Expired
    );
    let e = within("one-shot", watcher).await;
    assert_eq!(
        (e.event_type, e.state),
        (EventType::None, SessionState::Expired)
    );
    let e = within("stream", recursive.next()).await.unwrap();
    assert_eq!(
        (e.event_type, e.state),
        (EventType::None, SessionState::Expired)
    );
    assert!(recursive.next().await.is_none());
    assert_eq!(c.exists("/").await.unwrap_err(), ErrorKind::SessionExpired);
    for p in &cluster.proxies {
        p.black_hole(false);
    }
    // The ensemble agrees: the ephemeral goes with the session.
    let other = cluster.observer().await;
    within("server-side expiry", async {
        while let Some(stat) = other.exists("/eph").await.unwrap() {
            assert_eq!(stat.ephemeral_owner, id.0);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    // The client does not come back with a new session.
    assert_eq!(c.state(), SessionState::Expired);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_servers_down_then_up_within_the_timeout_keeps_the_session() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::start().await;
    // The servers' longest session (the testkit's maxSessionTimeout, 60 s): three JVMs
    // restarting at once on a loaded machine must not outlast it.
    let c = cluster.client(Duration::from_secs(60), None).await;
    let id = c.session_id();
    c.create("/eph", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let mut changes = c.state_changes();
    for i in 0..3 {
        cluster.ensemble.kill(i).unwrap();
    }
    next_state(&mut changes, |s| s == SessionState::Disconnected).await;
    let e = &cluster.ensemble;
    let (a, b, d) = tokio::join!(e.restart(0), e.restart(1), e.restart(2));
    a.unwrap();
    b.unwrap();
    d.unwrap();
    let state = tokio::time::timeout(
        SLOW,
        changes.wait_for(|s| s.is_connected() || s.is_terminal()),
    )
    .await
    .expect("reconnected");
    // Compare what was reached, not the state now: a member can still drop its clients while
    // the restarted ensemble settles, and the client then simply reconnects.
    assert_eq!(state, Some(SessionState::Connected));
    assert_eq!(c.session_id(), id);
    let stat = within("read after restart", c.exists("/eph"))
        .await
        .unwrap()
        .expect("ephemeral kept");
    assert_eq!(stat.ephemeral_owner, id.0);
}

/// With read-only mode allowed, a member that lost its quorum serves reads: a client gets a
/// session local to that member (3.8 members hand out only local sessions without a quorum, so
/// the ensemble runs with `localSessionsEnabled`), reads work, writes fail with `NotReadOnly`,
/// the client keeps probing the other members, and once the quorum is back it moves to a
/// read-write server with a session of the ensemble.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_member_serves_reads_until_the_quorum_is_back() {
    let _serial = ONE_AT_A_TIME.lock().await;
    common::init_tracing();
    let ensemble = Ensemble::builder(3)
        .read_only_mode()
        .config("localSessionsEnabled", "true")
        .start()
        .await
        .unwrap();
    let setup = Client::builder(&ensemble.connect_string())
        .connect_timeout(SLOW)
        .connect()
        .await
        .unwrap();
    setup
        .create("/data", b"x", &CreateOptions::persistent())
        .await
        .unwrap();
    setup.close().await;

    let leader = ensemble.leader().await.unwrap();
    let survivor = (0..3).find(|i| *i != leader).unwrap();
    for i in (0..3).filter(|i| *i != survivor) {
        ensemble.kill(i).unwrap();
    }
    // The survivor notices the lost quorum only after its sync limit; there is no event to
    // wait on but its own answer.
    let addr = ensemble.addr(survivor).unwrap();
    tokio::time::timeout(SLOW, async {
        while zookeeper_testkit::four_letter(addr, "isro")
            .await
            .ok()
            .as_deref()
            != Some("ro")
        {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("survivor in read-only mode");
    let c = Client::builder(&ensemble.connect_string())
        .session_timeout(Duration::from_secs(30))
        .read_only(true)
        .connect_timeout(Duration::from_secs(30))
        .connect()
        .await
        .unwrap();
    assert_eq!(c.state(), SessionState::ConnectedReadOnly);
    let read_only_id = c.session_id();
    let mut changes = c.state_changes();
    assert_eq!(&c.get_data("/data").await.unwrap().0[..], b"x");
    assert_eq!(
        c.set_data("/data", b"y", None)
            .await
            .map(|_| ())
            .unwrap_err(),
        ErrorKind::NotReadOnly
    );

    let restarts: Vec<usize> = (0..3).filter(|i| *i != survivor).collect();
    let (a, b) = tokio::join!(ensemble.restart(restarts[0]), ensemble.restart(restarts[1]));
    a.unwrap();
    b.unwrap();
    let state = tokio::time::timeout(
        SLOW,
        changes.wait_for(|s| s == SessionState::Connected || s.is_terminal()),
    )
    .await
    .expect("back to read-write");
    assert_eq!(state, Some(SessionState::Connected));
    assert_ne!(
        c.session_id(),
        read_only_id,
        "the read-only session was local"
    );
    c.set_data("/data", b"z", None).await.unwrap();
}
