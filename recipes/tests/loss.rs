//! Losing a lock, and keeping it: session expiry through a black-holed proxy, our node
//! deleted by someone else, a lost create reply (adopted by GUID, but never a node of another
//! session with the same GUID), a disconnect healed at once, and a holder whose server dies in
//! an ensemble.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{blip_rig, bounce_connection, bounded, children, client, BlipRig};
use zookeeper_recipes::{Holding, LeaderLatch, Lease, LockGuard, LossReason, Mutex, Semaphore};
use zookeeper_testkit::{Ensemble, Proxy, ZkServer};
use zookeeper_tokio::{Client, CreateOptions, MultiOp, SessionState};

/// A client with a session of `timeout`, waiting for it as patiently as `common::client`.
async fn session(connect: &str, timeout: Duration) -> Client {
    bounded(
        "connect",
        Client::builder(connect)
            .session_timeout(timeout)
            .connect_timeout(common::CONNECT_TIMEOUT)
            .connect(),
    )
    .await
    .expect("connect")
}

/// A lock, a semaphore's lease and a latch's leadership, all on `c`.
async fn hold_three(c: &Client) -> (LockGuard, Lease, LeaderLatch) {
    let g = bounded("acquire", Mutex::new(c, "/lock").unwrap().acquire())
        .await
        .unwrap();
    let sem = Semaphore::new(c, "/sem", 1).unwrap();
    let lease_guard = bounded("lease", sem.acquire()).await.unwrap();
    let latch = bounded("latch", LeaderLatch::start(c, "/election", "holder"))
        .await
        .unwrap();
    bounded("leads", latch.await_leadership()).await.unwrap();
    (g, lease_guard, latch)
}

/// A write guarded by a lock that is lost is refused (a node named `/stale` stays absent).
async fn assert_stale_write_refused(g: &LockGuard) {
    let stale = g
        .guarded_multi(vec![MultiOp::create(
            "/stale",
            b"",
            &CreateOptions::persistent(),
        )])
        .await;
    assert!(stale.is_err(), "{stale:?}");
}

/// A holder cut off from the server is told the lock is lost before anyone else holds it:
/// at the moment a waiter is granted the lock, the holder's `state()` already reads `Lost`
/// and its `lost()` future is already resolved. The takeover happens only once the server
/// expired the holder's session, and the holder's lease ends no later than that.
///
/// Replies reach the holder 500 ms after the server sent them, so counting the session
/// timeout from the last frame received would declare the loss 500 ms too late, after the
/// server's expiry (tick 200 ms) and the takeover; the lease counts from the send times.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_holder_is_told_before_a_waiter_takes_over_with_a_higher_token() {
    let server = ZkServer::start().await.unwrap();
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let holder_client = session(&proxy.connect_string(), Duration::from_secs(3)).await;
    proxy.set_latency(Duration::from_millis(500));
    let other = client(&server.connect_string()).await;

    let holder = Mutex::new(&holder_client, "/lock").unwrap();
    let g = Arc::new(bounded("holder", holder.acquire()).await.unwrap());
    let suspended = g.suspended();
    let lost = g.lost();

    let waiter = Mutex::new(&other, "/lock").unwrap();
    let seen_by_holder = g.clone();
    let taking_over = tokio::spawn(async move {
        let mine = waiter.acquire().await.unwrap();
        // Looked at the moment of the grant, with no await in between.
        let holder_state = seen_by_holder.state();
        let lost_already = tokio::time::timeout(Duration::ZERO, lost).await.ok();
        let token = mine.fencing_token();
        mine.release().await.unwrap();
        (token, holder_state, lost_already)
    });
    bounded("waiter queued", async {
        while children(&other, "/lock").await.len() < 2 {
            tokio::task::yield_now().await;
        }
    })
    .await;

    // Cut the holder off: nothing passes, the connection stays open.
    proxy.black_hole(true);
    // With replies this slow the lease may run out before the read timeout notices the
    // silence: then the first signal is the loss itself.
    let first = bounded("suspended", suspended).await;
    assert!(
        matches!(first, Holding::Suspended | Holding::Lost(_)),
        "{first:?}"
    );
    let (new_token, holder_state, lost_already) = bounded("takeover", taking_over).await.unwrap();
    assert!(
        matches!(holder_state, Holding::Lost(_)),
        "another contender holds the lock while ours reads {holder_state:?}"
    );
    let end = lost_already.expect("lost() resolved before the takeover");
    assert!(
        matches!(
            end,
            Holding::Lost(LossReason::LeaseExpired | LossReason::SessionExpired)
        ),
        "{end:?}"
    );
    assert!(new_token > g.fencing_token());
    assert!(matches!(g.state(), Holding::Lost(_)));
}

/// A holder whose whole process stands still (here: its runtime, which also drives its
/// client, is not run at all, as under `SIGSTOP` or a long pause) past its session timeout:
/// meanwhile the server expires the session and another contender takes the lock. On resuming,
/// the holder's first look, before its runtime has run a single task or sent a byte, says the
/// lock is lost; so do its semaphore lease and its leadership.
#[test]
fn a_holder_paused_past_its_lease_reads_lost_on_its_first_look() {
    let paused = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let others = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let connect = common::chroot_connect("loss_paused_holder");
    // The first looks below come after the runtime stopped, so after the last renewal of the
    // lease: pings go out a third of the session timeout after the last request, and the
    // lease runs a session timeout from a request's sending, so they have at least 2/3 of it
    // (4 s here) to be made in, however slow the machine. The takeover waits for the server
    // to expire the session, which is what makes the test take these 6 s.
    let (holder_client, g, lease_guard, latch) = paused.block_on(async {
        let c = session(&connect, Duration::from_secs(6)).await;
        let (g, lease_guard, latch) = hold_three(&c).await;
        (c, g, lease_guard, latch)
    });
    assert_eq!(g.state(), Holding::Held);
    assert_eq!(lease_guard.state(), Holding::Held);
    assert_eq!(latch.state(), Holding::Held);
    let lease = holder_client.lease_deadline().unwrap();

    // The holder stands still; another contender waits for the server to expire it.
    let (taken, other) = others.block_on(async {
        let other = client(&connect).await;
        let m = Mutex::new(&other, "/lock").unwrap();
        let mine = bounded("takeover", m.acquire()).await.unwrap();
        let token = mine.fencing_token();
        mine.release().await.unwrap();
        (token, other)
    });
    assert!(taken > g.fencing_token());
    assert!(
        std::time::Instant::now() >= lease,
        "taken over within the lease"
    );

    // Resumed: the first looks, before the runtime ran anything.
    let expired = Holding::Lost(LossReason::LeaseExpired);
    assert_eq!(g.state(), expired);
    assert_eq!(lease_guard.state(), expired);
    assert!(!latch.has_leadership());
    assert_eq!(latch.state(), Holding::Lost(LossReason::LeaseExpired));
    paused.block_on(async {
        assert_eq!(
            tokio::time::timeout(Duration::ZERO, g.lost()).await.ok(),
            Some(Holding::Lost(LossReason::LeaseExpired))
        );
        // A write guarded by the lock is refused by the server.
        assert_stale_write_refused(&g).await;
        drop((g, lease_guard, latch));
        holder_client.close().await;
    });
    others.block_on(async {
        assert!(other.exists("/stale").await.unwrap().is_none());
    });
}

/// The runtime that ran the holder's session shuts down while its guards live on (a service
/// dropping the runtime it connected on): nothing will renew the session again, so every
/// guard reads lost on its first look, and not only once the lease has run out, a session
/// timeout later. A write guarded by the lock is refused on the spot.
#[test]
fn a_holder_whose_sessions_runtime_shut_down_reads_lost_on_its_first_look() {
    let holder = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let connect = common::chroot_connect("loss_runtime_gone");
    // A lease far longer than the test: a loss read below cannot be the lease's end.
    let (g, lease_guard, latch) = holder.block_on(async {
        let c = session(&connect, Duration::from_secs(30)).await;
        hold_three(&c).await
    });
    assert_eq!(g.state(), Holding::Held);

    drop(holder);

    let closed = Holding::Lost(LossReason::SessionClosed);
    assert_eq!(g.state(), closed);
    assert_eq!(lease_guard.state(), closed);
    assert_eq!(latch.state(), closed);
    assert!(!latch.has_leadership());
    let others = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    others.block_on(async {
        assert_eq!(
            tokio::time::timeout(Duration::ZERO, g.lost()).await.ok(),
            Some(closed)
        );
        assert_stale_write_refused(&g).await;
        drop((g, lease_guard, latch));
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_our_node_from_outside_is_a_loss() {
    let connect = common::chroot_connect("loss_deleted");
    let (a, b) = (client(&connect).await, client(&connect).await);
    let m = Mutex::new(&a, "/lock").unwrap();
    let g = bounded("acquire", m.acquire()).await.unwrap();
    let mut states = g.state_watcher();
    b.delete(g.path(), None).await.unwrap();
    let end = bounded("lost", g.lost()).await;
    assert_eq!(end, Holding::Lost(LossReason::NodeDeleted));
    bounded("state", states.wait_for(|s| matches!(s, Holding::Lost(_))))
        .await
        .unwrap();
    // Re-acquiring through the same handle makes a fresh node instead of re-entering.
    let g2 = bounded("fresh", m.acquire()).await.unwrap();
    assert_ne!(g2.path(), g.path());
    assert_eq!(g2.hold_count(), 1);
    g2.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_create_reply_is_adopted_not_duplicated() {
    let server = ZkServer::start().await.unwrap();
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let c = client(&proxy.connect_string()).await;
    let direct = client(&server.connect_string()).await;
    direct
        .create("/lock", b"", &zookeeper_tokio::CreateOptions::persistent())
        .await
        .unwrap();
    // 15 is create2, the opcode of every create the client sends.
    let cut = proxy.cut_after_next(15);
    let m = Mutex::new(&c, "/lock").unwrap();
    let g = bounded("acquire through a cut", m.acquire()).await.unwrap();
    assert!(bounded("cut fired", cut.wait()).await.is_some());
    let list = children(&direct, "/lock").await;
    assert_eq!(list.len(), 1, "one node, adopted: {list:?}");
    assert_eq!(format!("/lock/{}", list[0]), g.path());
    assert_eq!(
        direct
            .exists(g.path())
            .await
            .unwrap()
            .unwrap()
            .ephemeral_owner,
        c.session_id().0
    );
    g.release().await.unwrap();
    assert!(common::wait_empty(&direct, "/lock").await.is_empty());
}

/// A chroot on the shared server with `/lock` made: a proxy, a client behind it, and a client
/// straight to the server.
async fn lock_behind_a_proxy(test: &str) -> (Proxy, Client, Client) {
    let chroot = zookeeper_testkit::chroot_for(test);
    let server = zookeeper_testkit::shared_server();
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let behind = client(&format!("{}{}", proxy.connect_string(), chroot)).await;
    let direct = client(&server.connect_string_with_chroot(&chroot)).await;
    direct
        .create("/lock", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    (proxy, behind, direct)
}

/// The connection is lost again while the acquisition looks for its node after a lost create
/// reply (the reply of the `exists` on the node it listed is withheld): it looks again once
/// connected and adopts the node. Giving up there would return an error and, when the
/// acquisition is being abandoned, leave the node behind to block the lock until the session
/// ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_lost_while_finding_our_node_is_survived() {
    let (proxy, c, direct) = lock_behind_a_proxy("loss_find_cut").await;
    // 15 is create2, the opcode of every create the client sends; 3 is exists.
    let cut = proxy.cut_after_next(15);
    let m = Mutex::new(&c, "/lock").unwrap();
    let acquiring = tokio::spawn(async move { m.acquire().await });
    assert!(bounded("create cut", cut.wait()).await.is_some());
    let second = proxy.cut_after_next(3);
    assert!(bounded("exists cut", second.wait()).await.is_some());
    let g = bounded("acquire through two cuts", acquiring)
        .await
        .unwrap()
        .unwrap();
    let list = children(&direct, "/lock").await;
    assert_eq!(list.len(), 1, "one node, adopted: {list:?}");
    assert_eq!(format!("/lock/{}", list[0]), g.path());
    g.release().await.unwrap();
    assert!(common::wait_empty(&direct, "/lock").await.is_empty());
}

/// A node named with our attempt's GUID but owned by another session is not ours. After a
/// lost create reply the acquisition lists the lock and finds only such a node (someone
/// deleted ours and made one with the same name prefix): it must not adopt it, but create its
/// own and queue behind the foreign one like behind any contender, leaving it alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_node_bearing_our_guid_is_not_adopted() {
    let (proxy, c, direct) = lock_behind_a_proxy("loss_foreign_guid").await;

    // The create is applied but its reply is lost, and the client cannot reconnect yet.
    proxy.refuse(true);
    let cut = proxy.cut_after_next(15);
    let m = Mutex::new(&c, "/lock").unwrap();
    let mut acquiring = tokio::spawn(async move { m.acquire().await });
    assert!(bounded("cut fired", cut.wait()).await.is_some());

    // Replace our node by a foreign one with the same GUID-bearing prefix.
    let ours = children(&direct, "/lock").await;
    assert_eq!(ours.len(), 1, "{ours:?}");
    let ours = format!("/lock/{}", ours[0]);
    let stat = direct.exists(&ours).await.unwrap().unwrap();
    assert_eq!(stat.ephemeral_owner, c.session_id().0);
    let prefix = ours.trim_end_matches(|ch: char| ch.is_ascii_digit());
    assert!(prefix.ends_with("-lock-"), "{prefix}");
    direct.delete(&ours, None).await.unwrap();
    let (foreign, _) = direct
        .create(
            prefix,
            b"",
            &zookeeper_tokio::CreateOptions::ephemeral_sequential(),
        )
        .await
        .unwrap();
    proxy.refuse(false);

    // The acquisition makes a node of its own (same prefix, our session) instead of adopting.
    let listing = bounded("a second node", async {
        loop {
            let (list, _, changed) = direct.get_children_and_watch("/lock").await.unwrap();
            if list.len() >= 2 {
                return list;
            }
            tokio::select! {
                _ = changed => {}
                done = &mut acquiring => panic!(
                    "acquired without a node of its own: {:?}",
                    done.unwrap().map(|g| g.path().to_owned())
                ),
            }
        }
    })
    .await;
    assert_eq!(listing.len(), 2, "{listing:?}");
    let mut own = None;
    for name in &listing {
        let path = format!("/lock/{name}");
        assert!(path.starts_with(prefix), "{path}");
        let owner = direct.exists(&path).await.unwrap().unwrap().ephemeral_owner;
        if path == foreign {
            assert_eq!(
                owner,
                direct.session_id().0,
                "the foreign node changed hands"
            );
        } else {
            assert_eq!(owner, c.session_id().0);
            own = Some(path);
        }
    }
    let own = own.expect("a node of our own");

    // It waits behind the foreign node (watching it), and gets the lock once that goes.
    let watched = format!("{}{foreign}", direct.chroot().expect("under a chroot"));
    bounded("the foreign node watched", async {
        while !zookeeper_testkit::shared_server()
            .wchc()
            .await
            .unwrap()
            .values()
            .flatten()
            .any(|p| *p == watched)
        {
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert!(
        !acquiring.is_finished(),
        "acquired ahead of the foreign node"
    );
    direct.delete(&foreign, None).await.unwrap();
    let g = bounded("acquire", acquiring).await.unwrap().unwrap();
    assert_eq!(g.path(), own);
    assert_eq!(g.stat().ephemeral_owner, c.session_id().0);
    assert_eq!(g.wakeups(), 1);
    g.release().await.unwrap();
    assert!(common::wait_empty(&direct, "/lock").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holder_keeps_the_lock_when_its_server_dies() {
    let ensemble = Ensemble::start(3).await.unwrap();
    bounded("ensemble serving", ensemble.wait_serving())
        .await
        .unwrap();
    // The holder's session is kept off the leader: the member killed is a follower, the
    // quorum stays, and the session moves to the other follower at once. (A killed leader
    // would make the lock's keeping depend on an election ending within the session timeout.)
    // Nothing here waits for an expiry, so the session is long: the lease survives a starved
    // machine's slow reconnect too.
    let holder_client =
        common::faults::client_off_the_leader(&ensemble, Duration::from_secs(20)).await;
    let m = Mutex::new(&holder_client, "/lock").unwrap();
    let g = bounded("acquire", m.acquire()).await.unwrap();
    let mut states = g.state_watcher();
    let lost = tokio::spawn(g.lost());

    let serving = ensemble
        .member_serving(holder_client.session_id().0)
        .await
        .expect("a member serves the session");
    ensemble.kill(serving).unwrap();
    bounded("suspended", states.wait_for(|s| *s != Holding::Held))
        .await
        .unwrap();
    let mut session = holder_client.state_watcher();
    bounded(
        "reconnected",
        session.wait_for(|s| *s == SessionState::Connected),
    )
    .await
    .unwrap();
    bounded("held again", states.wait_for(|s| *s == Holding::Held))
        .await
        .unwrap();
    assert!(!lost.is_finished());

    // On the surviving members only.
    let other_client = client(&ensemble.connect_string_without(serving).unwrap()).await;
    let other = Mutex::new(&other_client, "/lock").unwrap();
    assert!(
        other.try_acquire().await.unwrap().is_none(),
        "lock kept across the failover"
    );
    let token = g.fencing_token();
    g.release().await.unwrap();
    let g2 = bounded("other", other.acquire()).await.unwrap();
    assert!(g2.fencing_token() > token);
    g2.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_off_leader_loses_leadership_and_the_next_leads() {
    let server = ZkServer::start().await.unwrap();
    let proxy = Proxy::start(server.addr()).await.unwrap();
    // The lease runs out 4 s after the black hole: a shorter session could run out before it
    // on a starved machine, and the leader would then be lost without being suspended first.
    let leader_client = client(&proxy.connect_string()).await;
    let other = client(&server.connect_string()).await;
    let leader = bounded(
        "start",
        zookeeper_recipes::LeaderLatch::start(&leader_client, "/e", "a"),
    )
    .await
    .unwrap();
    bounded("leads", leader.await_leadership()).await.unwrap();
    let next = bounded(
        "start",
        zookeeper_recipes::LeaderLatch::start(&other, "/e", "b"),
    )
    .await
    .unwrap();
    let mut changes = leader.changes();
    let lost = leader.lost();
    proxy.black_hole(true);
    bounded("suspended", async {
        while changes.next().await != Some(zookeeper_recipes::Holding::Suspended) {}
    })
    .await;
    let end = bounded("lost", lost).await;
    assert!(
        matches!(end, zookeeper_recipes::Holding::Lost(_)),
        "{end:?}"
    );
    bounded("next leads", next.await_leadership())
        .await
        .unwrap();
    assert!(next.fencing_token() > leader.fencing_token());
}

/// A release cut off from the server waits for it, and returns once the connection is back
/// and the node gone, with the session still alive (so the node went by our delete, not by
/// expiry). A guard dropped while disconnected has its delete tried in the background: the
/// node goes as soon as the connection is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_during_connection_loss_completes_in_the_background() {
    let server = ZkServer::start().await.unwrap();
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let holder = client(&proxy.connect_string()).await;
    let direct = client(&server.connect_string()).await;
    for (i, by_drop) in [false, true].into_iter().enumerate() {
        let path = format!("/lock{i}");
        let m = Mutex::new(&holder, &path).unwrap();
        let g = bounded("acquire", m.acquire()).await.unwrap();
        proxy.refuse(true);
        proxy.drop_all();
        let mut state = holder.state_watcher();
        bounded("disconnected", state.wait_for(|s| !s.is_connected()))
            .await
            .unwrap();
        if by_drop {
            drop(g);
            assert_eq!(children(&direct, &path).await.len(), 1);
            proxy.refuse(false);
            assert!(common::wait_empty(&direct, &path).await.is_empty());
        } else {
            let releasing = tokio::spawn(g.release());
            assert_eq!(children(&direct, &path).await.len(), 1);
            proxy.refuse(false);
            bounded("release once back", releasing)
                .await
                .unwrap()
                .unwrap();
            assert!(
                children(&direct, &path).await.is_empty(),
                "gone when release returned"
            );
        }
        assert_eq!(holder.state(), SessionState::Connected, "same session");
    }
}

/// A disconnect the client heals at once (same proxy, same session) still shows in the
/// guard's transitions as `Suspended`, then `Held` again. The guard lives on a runtime that is
/// not driven while the connection drops and comes back, so its monitor cannot look in
/// between, as with a holder whose runtime is busy during the blip: only an ordered record of
/// the session's transitions tells it a disconnect happened.
#[test]
fn a_disconnect_healed_at_once_is_still_a_suspension() {
    let BlipRig {
        net,
        app: holder,
        proxy,
        client: c,
    } = blip_rig("loss_brief_disconnect");

    let (g, mut changes, suspended) = holder.block_on(async {
        let m = Mutex::new(&c, "/lock").unwrap();
        let g = bounded("acquire", m.acquire()).await.unwrap();
        let changes = g.state_changes();
        let suspended = g.suspended();
        (g, changes, suspended)
    });

    // The holder's runtime stands still from here until the session is back.
    let session = c.session_id();
    net.block_on(async {
        bounce_connection(&c, &proxy).await;
    });
    assert_eq!(c.session_id(), session, "same session");

    holder.block_on(async {
        assert_eq!(bounded("state", changes.next()).await, Some(Holding::Held));
        assert_eq!(
            bounded("suspension", changes.next()).await,
            Some(Holding::Suspended)
        );
        assert_eq!(
            bounded("held again", changes.next()).await,
            Some(Holding::Held)
        );
        assert_eq!(
            bounded("suspended", suspended).await,
            Holding::Suspended,
            "a healed suspension still resolves suspended()"
        );
        assert_eq!(g.state(), Holding::Held);
        g.release().await.unwrap();
    });
}

/// The connection is lost with the reply to a create of the lock's missing parent (applied or
/// not, the client cannot tell): the acquisition and the join create the parents again once
/// connected, instead of failing with the lost connection. Parents go missing whenever an idle
/// lock's containers are reaped, so any acquisition may meet this.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_reply_while_creating_the_parents_is_ridden_out() {
    // 19 is createContainer, the opcode of the parents' creates.
    const CREATE_CONTAINER: i32 = 19;
    let chroot = zookeeper_testkit::chroot_for("loss_parent_create");
    let proxy = Proxy::start(zookeeper_testkit::shared_server().addr())
        .await
        .unwrap();
    let c = client(&format!("{}{}", proxy.connect_string(), chroot)).await;

    let cut = proxy.cut_after_next(CREATE_CONTAINER);
    let guard = bounded("acquire", Mutex::new(&c, "/m0/lock").unwrap().acquire())
        .await
        .unwrap();
    assert!(bounded("cut fired", cut.wait()).await.is_some());
    assert_eq!(guard.state(), Holding::Held);
    guard.release().await.unwrap();

    let cut = proxy.cut_after_next(CREATE_CONTAINER);
    let latch = bounded("join", LeaderLatch::start(&c, "/e0/election", "a"))
        .await
        .unwrap();
    assert!(bounded("cut fired", cut.wait()).await.is_some());
    bounded("lead", latch.await_leadership()).await.unwrap();
    latch.resign().await.unwrap();
}
