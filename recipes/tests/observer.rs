//! Leader observers and proclaim, against real servers: an observer that takes no part sees
//! every leader of a latch, a selector, Curator's latch and kazoo's election (a kazoo lock),
//! with the data the leader proclaimed, and finds a change made while its connection was down
//! once it is back.

mod common;

use common::peers::Peer;
use common::{bounce_connection, bounded, chroot_connect, client, client_with_session};
use zookeeper_recipes::{
    ElectionLayout, Error, Holding, Layout, Leader, LeaderChanges, LeaderContext, LeaderLatch,
    LeaderObserver, LeaderSelector, Mutex,
};
use zookeeper_testkit::{chroot_for, shared_server, Proxy};
use zookeeper_tokio::Client;

/// Reads the observer's changes until one satisfies `want`; returns it.
async fn until_leader(
    changes: &mut LeaderChanges,
    what: &str,
    want: impl Fn(&Option<Leader>) -> bool,
) -> Option<Leader> {
    bounded(what, async {
        loop {
            let seen = changes.next().await.expect("the observer runs");
            if want(&seen) {
                return seen;
            }
        }
    })
    .await
}

fn data_is(data: &'static str) -> impl Fn(&Option<Leader>) -> bool {
    move |l| {
        l.as_ref()
            .is_some_and(|l| l.data.as_ref() == data.as_bytes())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observer_sees_latch_leaders_and_what_they_proclaim() {
    let connect = chroot_connect("observer_latch");
    let (watcher, a_client, b_client) = (
        client(&connect).await,
        client(&connect).await,
        client(&connect).await,
    );
    // Before the election exists: nobody leads.
    let observer = LeaderObserver::start(&watcher, "/election", ElectionLayout::Latch)
        .await
        .unwrap();
    assert_eq!(observer.leader(), None);
    let mut changes = observer.changes();
    assert_eq!(bounded("first", changes.next()).await, Some(None));

    let a = LeaderLatch::start(&a_client, "/election", "a")
        .await
        .unwrap();
    bounded("a leads", a.await_leadership()).await.unwrap();
    let b = LeaderLatch::start(&b_client, "/election", "b")
        .await
        .unwrap();
    let seen = until_leader(&mut changes, "a seen", data_is("a"))
        .await
        .unwrap();
    assert_eq!(
        (seen.node.as_str(), seen.version),
        (a.node().rsplit('/').next().unwrap(), 0)
    );
    assert_eq!(seen.fencing_token, a.fencing_token());
    assert_eq!(seen.id(), "a");

    // The leader publishes a new value without giving up leadership; a follower cannot.
    a.proclaim(b"a: serving shard 7").await.unwrap();
    let seen = until_leader(&mut changes, "proclaimed", data_is("a: serving shard 7"))
        .await
        .unwrap();
    assert_eq!((seen.version, seen.fencing_token), (1, a.fencing_token()));
    assert!(a.has_leadership());
    let mut b_changes = b.changes();
    bounded("b follows", async {
        while b_changes.next().await != Some(Holding::Waiting) {}
    })
    .await;
    assert!(matches!(
        b.proclaim(b"b rules").await,
        Err(Error::NotLeader { .. })
    ));
    assert_eq!(
        observer.leader().unwrap().data.as_ref(),
        b"a: serving shard 7"
    );
    // Participants read the proclaimed value as the leader's id, as Curator does.
    assert_eq!(a.participants().await.unwrap()[0].id, "a: serving shard 7");

    a.resign().await.unwrap();
    let seen = until_leader(&mut changes, "b seen", data_is("b"))
        .await
        .unwrap();
    assert_eq!(seen.fencing_token, b.fencing_token());
    assert!(matches!(
        a.proclaim(b"a again").await,
        Err(Error::NotLeader { .. })
    ));
    bounded("b leads", b.await_leadership()).await.unwrap();
    b.proclaim(b"b rules").await.unwrap();
    until_leader(&mut changes, "b proclaimed", data_is("b rules")).await;
    b.resign().await.unwrap();
    until_leader(&mut changes, "nobody", Option::is_none).await;

    // Closing ends the stream.
    observer.close();
    assert_eq!(
        bounded("end", async {
            while changes.next().await.is_some() {}
            observer.error()
        })
        .await,
        None
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observer_follows_a_selector_whose_leader_proclaims() {
    let connect = chroot_connect("observer_selector");
    let (watcher, c) = (client(&connect).await, client(&connect).await);
    let observer = LeaderObserver::start(&watcher, "/select", ElectionLayout::Selector)
        .await
        .unwrap();
    let mut changes = observer.changes();
    let (release_tx, release_rx) = tokio::sync::watch::channel(false);
    let selector = LeaderSelector::builder(&c, "/select")
        .id("sel")
        .start(move |ctx: LeaderContext| {
            let mut release = release_rx.clone();
            async move {
                ctx.proclaim(format!("term {}", ctx.term()).as_bytes())
                    .await
                    .unwrap();
                let _ = release.wait_for(|r| *r).await;
            }
        })
        .unwrap();
    let seen = until_leader(&mut changes, "the term proclaimed", data_is("term 1"))
        .await
        .unwrap();
    assert_eq!(seen.version, 1);
    assert_eq!(
        selector.leader().await.unwrap().unwrap().id,
        "term 1",
        "the selector's participants read the proclaimed id"
    );
    release_tx.send(true).unwrap();
    until_leader(&mut changes, "the term ended", Option::is_none).await;
    selector.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observer_sees_curator_latch_leaders_beside_ours() {
    let connect = chroot_connect("observer_curator_latch");
    let (watcher, c) = (client(&connect).await, client(&connect).await);
    let observer = LeaderObserver::start(&watcher, "/election", ElectionLayout::Latch)
        .await
        .unwrap();
    let mut changes = observer.changes();
    let mut curator = Peer::curator(&connect).await;
    curator.send("latch /election java").await;
    curator.expect("latch-started").await;
    curator.expect("leader java").await;
    until_leader(&mut changes, "curator seen", data_is("java")).await;

    let ours = LeaderLatch::start(&c, "/election", "rust").await.unwrap();
    curator.send("latch-close").await;
    curator.expect("latch-closed").await;
    bounded("we lead", ours.await_leadership()).await.unwrap();
    ours.proclaim(b"rust v2").await.unwrap();
    let seen = until_leader(&mut changes, "ours proclaimed", data_is("rust v2"))
        .await
        .unwrap();
    assert_eq!(seen.fencing_token, ours.fencing_token());
    // Curator reads our proclaimed value as our id.
    curator.send("participants /election").await;
    assert_eq!(curator.expect("participant ").await, "rust v2 true");
    curator.expect("end").await;
    ours.resign().await.unwrap();
    until_leader(&mut changes, "nobody", Option::is_none).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observer_sees_kazoo_election_leaders() {
    let connect = chroot_connect("observer_kazoo");
    let (watcher, c) = (client(&connect).await, client(&connect).await);
    let observer = LeaderObserver::start(&watcher, "/election", ElectionLayout::Kazoo)
        .await
        .unwrap();
    let mut changes = observer.changes();
    let mut kazoo = Peer::kazoo(&connect).await;
    kazoo.send("lock /election py").await;
    let token: i64 = kazoo.expect("locked ").await.parse().unwrap();
    let seen = until_leader(&mut changes, "kazoo seen", data_is("py"))
        .await
        .unwrap();
    assert_eq!(seen.fencing_token.0, token);

    let ours = Mutex::with_layout(&c, "/election", Layout::Kazoo)
        .unwrap()
        .with_data(b"rust");
    let waiting = tokio::spawn(async move { ours.acquire().await.map(|g| (g, ours)) });
    kazoo.send("unlock").await;
    kazoo.expect("unlocked").await;
    until_leader(&mut changes, "ours seen", data_is("rust")).await;
    let (guard, _ours) = bounded("ours", waiting).await.unwrap().unwrap();
    guard.release().await.unwrap();
    until_leader(&mut changes, "nobody", Option::is_none).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observer_finds_changes_made_while_its_connection_was_down() {
    let chroot = chroot_for("observer_reconnect");
    let direct = format!("{}{}", shared_server().connect_string(), chroot);
    let proxy = Proxy::start(shared_server().addr()).await.unwrap();
    // A session that outlives the time the test keeps it cut off, however slow the machine.
    let watcher = client_with_session(
        &format!("{}{}", proxy.connect_string(), chroot),
        std::time::Duration::from_secs(30),
    )
    .await;
    let (a_client, b_client) = (client(&direct).await, client(&direct).await);
    let observer = LeaderObserver::start(&watcher, "/election", ElectionLayout::Latch)
        .await
        .unwrap();
    let mut changes = observer.changes();
    let a = LeaderLatch::start(&a_client, "/election", "a")
        .await
        .unwrap();
    bounded("a leads", a.await_leadership()).await.unwrap();
    until_leader(&mut changes, "a seen", data_is("a")).await;

    // A connection drop that heals at once: the observer reads again.
    bounce_connection(&watcher, &proxy).await;
    assert_eq!(observer.leader().unwrap().data.as_ref(), b"a");

    // Out of touch while the leader changes hands and the new one proclaims: no event can
    // reach the observer then, yet it sees the outcome once it is back.
    let mut states = watcher.state_changes();
    proxy.refuse(true);
    proxy.drop_all();
    bounded(
        "disconnected",
        states.wait_for(|s| s == zookeeper_tokio::SessionState::Disconnected),
    )
    .await
    .unwrap();
    let b = hand_over(a, &b_client).await;
    b.proclaim(b"b after the drop").await.unwrap();
    assert_eq!(observer.leader().unwrap().data.as_ref(), b"a");
    proxy.refuse(false);
    let seen = until_leader(
        &mut changes,
        "b seen after reconnecting",
        data_is("b after the drop"),
    )
    .await
    .unwrap();
    assert_eq!(seen.fencing_token, b.fencing_token());
    b.resign().await.unwrap();
    until_leader(&mut changes, "nobody", Option::is_none).await;
}

/// An observer on the rig's renewing sessions that has seen `a` lead (from a session of its
/// own), and a client for the next leader.
async fn observing_a(
    rig: &common::faults::ExpiryRig,
) -> (LeaderObserver, LeaderChanges, LeaderLatch, Client) {
    let (a_client, b_client) = (client(&rig.direct).await, client(&rig.direct).await);
    let observer = LeaderObserver::start(&rig.sessions, "/election", ElectionLayout::Latch)
        .await
        .unwrap();
    let mut changes = observer.changes();
    let a = LeaderLatch::start(&a_client, "/election", "a")
        .await
        .unwrap();
    bounded("a leads", a.await_leadership()).await.unwrap();
    until_leader(&mut changes, "a seen", data_is("a")).await;
    (observer, changes, a, b_client)
}

/// `b` joins on `b_client`, `a` resigns, and `b` leads.
async fn hand_over(a: LeaderLatch, b_client: &Client) -> LeaderLatch {
    let b = LeaderLatch::start(b_client, "/election", "b")
        .await
        .unwrap();
    a.resign().await.unwrap();
    bounded("b leads", b.await_leadership()).await.unwrap();
    b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observer_on_renewing_sessions_carries_on_after_its_session_expires() {
    let rig = common::faults::expiry_rig("observer_expiry").await;
    let (observer, mut changes, a, b_client) = observing_a(&rig).await;

    let first = rig.sessions.client();
    common::faults::expire(&rig.proxy, &rig.direct, &first).await;
    let b = hand_over(a, &b_client).await;
    until_leader(&mut changes, "b seen in the next session", data_is("b")).await;
    assert_ne!(rig.sessions.client().session_id(), first.session_id());
    assert_eq!(observer.error(), None);
    b.resign().await.unwrap();
    until_leader(&mut changes, "nobody", Option::is_none).await;
}

/// The next session ends too, during its first read: its connection drops with the read
/// unanswered and the session is closed behind its back before it can reconnect. The
/// observer goes on to a third session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observer_on_renewing_sessions_carries_on_when_a_new_session_expires_in_its_first_read() {
    let rig = common::faults::expiry_rig("observer_expiry_first_read").await;
    let (observer, mut changes, a, b_client) = observing_a(&rig).await;

    // The next session's first listing is answered by the server, never delivered, and its
    // connection dropped; the proxy refuses new connections from then on.
    let cut = rig.proxy.cut_after_next_and_refuse(common::GET_CHILDREN2);
    let first = rig.sessions.client();
    common::faults::expire(&rig.proxy, &rig.direct, &first).await;
    bounded("the next session's first read cut", cut.wait())
        .await
        .expect("the cut fired");
    let second = rig.sessions.client();
    assert_ne!(second.session_id(), first.session_id());
    common::faults::close_behind(&rig.proxy, &rig.direct, &second).await;

    let _b = hand_over(a, &b_client).await;
    until_leader(&mut changes, "b seen in a third session", data_is("b")).await;
    let third = rig.sessions.client().session_id();
    assert!(third != first.session_id() && third != second.session_id());
    assert_eq!(observer.error(), None);
}

/// Waits for the observer's stream to end, and checks that its error is the session's end
/// and names the election.
async fn ends_with_the_session(observer: &LeaderObserver, mut changes: LeaderChanges) {
    bounded("the stream ends", async {
        while changes.next().await.is_some() {}
    })
    .await;
    let error = observer.error().expect("a reason");
    assert!(error.is_session_terminal(), "{error}");
    assert!(error.to_string().contains("/election"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observer_on_a_bare_client_ends_with_its_session_and_says_why() {
    let chroot = chroot_for("observer_expiry_fixed");
    let direct = format!("{}{}", shared_server().connect_string(), chroot);
    let proxy = Proxy::start(shared_server().addr()).await.unwrap();
    let watcher = client(&format!("{}{}", proxy.connect_string(), chroot)).await;
    let observer = LeaderObserver::start(&watcher, "/election", ElectionLayout::Kazoo)
        .await
        .unwrap();
    let mut changes = observer.changes();
    assert_eq!(bounded("first", changes.next()).await, Some(None));
    common::faults::expire(&proxy, &direct, &watcher).await;
    ends_with_the_session(&observer, changes).await;
}

/// Renewing sessions whose client its owner closes open no next session: the observer ends,
/// and its error says what it was observing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observer_on_renewing_sessions_ends_when_they_are_closed_and_says_what_it_observed() {
    let rig = common::faults::expiry_rig("observer_sessions_closed").await;
    let observer = LeaderObserver::start(&rig.sessions, "/election", ElectionLayout::Latch)
        .await
        .unwrap();
    let mut changes = observer.changes();
    assert_eq!(bounded("first", changes.next()).await, Some(None));
    rig.sessions.client().close().await;
    ends_with_the_session(&observer, changes).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_that_falls_behind_gets_the_latest_leader_not_a_backlog() {
    let connect = chroot_connect("observer_slow_consumer");
    let (watcher, c) = (client(&connect).await, client(&connect).await);
    let observer = LeaderObserver::start(&watcher, "/election", ElectionLayout::Latch)
        .await
        .unwrap();
    let mut slow = observer.changes();
    assert_eq!(bounded("first", slow.next()).await, Some(None));
    let latch = LeaderLatch::start(&c, "/election", "a").await.unwrap();
    bounded("a leads", latch.await_leadership()).await.unwrap();
    const ROUNDS: i32 = 200;
    for round in 1..=ROUNDS {
        latch
            .proclaim(format!("round {round}").as_bytes())
            .await
            .unwrap();
    }
    // Once the observer has read the last one, the consumer that read nothing meanwhile gets
    // it as its very next item.
    let mut keeping_up = observer.changes();
    until_leader(&mut keeping_up, "the last round read", |l| {
        l.as_ref().is_some_and(|l| l.version == ROUNDS)
    })
    .await;
    let next = bounded("the slow consumer", slow.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (next.version, next.data.as_ref()),
        (ROUNDS, format!("round {ROUNDS}").as_bytes())
    );
    latch.resign().await.unwrap();
}
