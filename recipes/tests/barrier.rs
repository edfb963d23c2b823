//! DistributedBarrier and DistributedDoubleBarrier against real servers: waiters held until
//! the barrier goes, members entering and leaving together, timeouts that are bounds and leave
//! nothing behind, wakeups (a reconnect) that let nobody through, and both barriers through a
//! session expiry and a member kill.

mod common;

use std::time::Duration;

use common::faults::{client_off_the_leader, expire, move_session};
use common::{bounce_connection, bounded, children, chroot_connect, client, wait_empty};
use tokio::task::JoinHandle;
use zookeeper_recipes::{DistributedBarrier, DistributedDoubleBarrier};
use zookeeper_testkit::{chroot_for, shared_server, Ensemble, Proxy};
use zookeeper_tokio::Client;

/// Long enough for a wrongly released waiter to show, short enough to keep the suite quick.
/// Used only to check that something has *not* happened yet.
const GLIMPSE: Duration = Duration::from_millis(300);

async fn not_finished<T: std::fmt::Debug>(what: &str, task: &mut JoinHandle<T>) {
    tokio::time::sleep(GLIMPSE).await;
    if task.is_finished() {
        // What it ended with tells a wrong release from a failure.
        let outcome = task.await;
        panic!("{what} went through too early: {outcome:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_barrier_holds_its_waiters_until_it_is_removed() {
    let connect = chroot_connect("barrier_basics");
    let c = client(&connect).await;
    let barrier = DistributedBarrier::new(&c, "/b/hold").unwrap();
    // Not set: nobody waits.
    assert!(barrier
        .wait_on_barrier_timeout(Duration::from_secs(5))
        .await
        .unwrap());
    barrier.set_barrier().await.unwrap();
    barrier.set_barrier().await.unwrap();
    assert!(!barrier
        .wait_on_barrier_timeout(Duration::from_millis(50))
        .await
        .unwrap());
    let mut waiters = Vec::new();
    for _ in 0..3 {
        let w = DistributedBarrier::new(&client(&connect).await, "/b/hold").unwrap();
        waiters.push(tokio::spawn(async move { w.wait_on_barrier().await }));
    }
    not_finished("a waiter", &mut waiters[0]).await;
    barrier.remove_barrier().await.unwrap();
    barrier.remove_barrier().await.unwrap();
    for w in waiters {
        bounded("waiter released", w).await.unwrap().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timed_barrier_waits_return_by_their_deadline_while_cut_off() {
    let chroot = chroot_for("barrier_cut_off");
    let server = shared_server();
    let proxy = Proxy::start(server.addr()).await.unwrap();
    // A long session: through the black hole nothing fails on its own before the read timeout
    // (2/3 of it, 13 s), far past the bound below.
    let c = bounded(
        "connect",
        Client::builder(&format!("{}{}", proxy.connect_string(), chroot))
            .session_timeout(Duration::from_secs(20))
            .connect_timeout(common::CONNECT_TIMEOUT)
            .connect(),
    )
    .await
    .unwrap();
    let barrier = DistributedBarrier::new(&c, "/hold").unwrap();
    barrier.set_barrier().await.unwrap();
    let members = DistributedDoubleBarrier::new(&c, "/double", 2).unwrap();
    // Silent, not closed: requests hang until the session times out.
    proxy.black_hole(true);
    const TIMEOUT: Duration = Duration::from_millis(500);
    // Each call returns by its deadline; the margin on top is for a starved machine's
    // scheduling, and still far below the read timeout a call ignoring its deadline would
    // wait for.
    let bound = TIMEOUT + Duration::from_secs(2);
    let started = tokio::time::Instant::now();
    let passed = bounded("timed wait", barrier.wait_on_barrier_timeout(TIMEOUT))
        .await
        .unwrap();
    assert!(!passed);
    let took = started.elapsed();
    assert!(took <= bound, "the wait took {took:?}");
    let started = tokio::time::Instant::now();
    let entered = bounded("timed enter", members.enter_timeout(TIMEOUT))
        .await
        .unwrap();
    assert!(!entered);
    let took = started.elapsed();
    assert!(took <= bound, "the enter took {took:?}");
    proxy.black_hole(false);
    // The member that gave up left nothing behind.
    assert!(wait_empty(&c, "/double").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn double_barrier_members_enter_and_leave_together() {
    let connect = chroot_connect("double_barrier_together");
    let mut members = Vec::new();
    for _ in 0..4 {
        let c = client(&connect).await;
        members.push(std::sync::Arc::new(
            DistributedDoubleBarrier::new(&c, "/jobs/run", 4).unwrap(),
        ));
    }
    let observer = client(&connect).await;
    let mut entering: Vec<_> = members[..3]
        .iter()
        .map(|m| {
            let m = m.clone();
            tokio::spawn(async move { m.enter().await })
        })
        .collect();
    bounded("three members in", async {
        while children(&observer, "/jobs/run").await.len() < 3 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    not_finished("an entering member", &mut entering[0]).await;
    let last = members[3].clone();
    entering.push(tokio::spawn(async move { last.enter().await }));
    for e in entering {
        bounded("entered", e).await.unwrap().unwrap();
    }
    let mut inside = children(&observer, "/jobs/run").await;
    inside.sort();
    assert_eq!(inside.len(), 5, "{inside:?}");
    assert!(inside.contains(&"ready".to_string()));
    assert!(inside
        .iter()
        .filter(|n| *n != "ready")
        .all(|n| n.len() == 36 && n.matches('-').count() == 4));

    // Leaving: nobody goes while one member is still inside.
    let mut leaving: Vec<_> = members[..3]
        .iter()
        .map(|m| {
            let m = m.clone();
            tokio::spawn(async move { m.leave().await })
        })
        .collect();
    not_finished("a leaving member", &mut leaving[0]).await;
    let last = members[3].clone();
    leaving.push(tokio::spawn(async move { last.leave().await }));
    for l in leaving {
        bounded("left", l).await.unwrap().unwrap();
    }
    assert!(children(&observer, "/jobs/run").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn double_barrier_timeouts_leave_no_member_behind() {
    let connect = chroot_connect("double_barrier_timeouts");
    let observer = client(&connect).await;
    let lonely = DistributedDoubleBarrier::new(&client(&connect).await, "/b", 3).unwrap();
    assert!(
        !bounded("enter", lonely.enter_timeout(Duration::from_millis(200)))
            .await
            .unwrap()
    );
    assert!(wait_empty(&observer, "/b").await.is_empty());

    // Two enter; one of them never leaves.
    let a = DistributedDoubleBarrier::new(&client(&connect).await, "/b", 2).unwrap();
    let b = DistributedDoubleBarrier::new(&client(&connect).await, "/b", 2).unwrap();
    let (ra, rb) = tokio::join!(a.enter(), b.enter());
    ra.unwrap();
    rb.unwrap();
    assert!(
        !bounded("leave", a.leave_timeout(Duration::from_millis(200)))
            .await
            .unwrap()
    );
    // a is gone from the barrier whether it was the lowest or not; b is still in.
    let left = wait_until_count(&observer, "/b", 2).await;
    assert!(left.contains(&"ready".to_string()), "{left:?}");
    assert!(!left.iter().any(|n| a.member_path().ends_with(n.as_str())));
    bounded("b leaves alone", b.leave()).await.unwrap();
    assert!(children(&observer, "/b").await.is_empty());
}

/// Waits until `path` has `n` children; returns them.
async fn wait_until_count(c: &Client, path: &str, n: usize) -> Vec<String> {
    bounded("children count", async {
        loop {
            match c.get_children_and_watch(path).await {
                Ok((names, _, watcher)) => {
                    if names.len() == n {
                        return names;
                    }
                    watcher.await;
                }
                // Not created yet: wait for it.
                Err(e) if e == zookeeper_tokio::ErrorKind::NoNode => {
                    let (stat, watcher) = c.exists_and_watch(path).await.unwrap();
                    if stat.is_none() {
                        watcher.await;
                    }
                }
                Err(e) => panic!("listing {path}: {e}"),
            }
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnect_lets_no_member_through() {
    let chroot = chroot_for("double_barrier_wakeups");
    let server = shared_server();
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let c = client(&format!("{}{}", proxy.connect_string(), chroot)).await;
    let first = std::sync::Arc::new(DistributedDoubleBarrier::new(&c, "/b", 2).unwrap());
    let mut entering = {
        let first = first.clone();
        tokio::spawn(async move { first.enter().await })
    };
    let observer = client(&server.connect_string_with_chroot(&chroot)).await;
    wait_until_count(&observer, "/b", 1).await;
    // Curator 5.4 took any wakeup of its watch as the go, a reconnect included; here a wakeup
    // is only a reason to look again.
    bounce_connection(&c, &proxy).await;
    bounce_connection(&c, &proxy).await;
    not_finished("the first member", &mut entering).await;
    let second = DistributedDoubleBarrier::new(&observer, "/b", 2).unwrap();
    bounded("second enters", second.enter()).await.unwrap();
    bounded("first enters", entering).await.unwrap().unwrap();
    let (a, b) = tokio::join!(first.leave(), second.leave());
    a.unwrap();
    b.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn barriers_through_a_session_expiry() {
    let common::faults::ExpiryRig {
        proxy,
        direct,
        sessions,
    } = common::faults::expiry_rig("barriers_expiry").await;
    let other = client(&direct).await;

    // A barrier wait goes on in the new session.
    let setter = DistributedBarrier::new(&other, "/hold").unwrap();
    setter.set_barrier().await.unwrap();
    let waiter = DistributedBarrier::new(&sessions, "/hold").unwrap();
    let mut waiting = tokio::spawn(async move { waiter.wait_on_barrier().await });
    // A member entering when its session expires fails, and its node goes with the session.
    let member =
        std::sync::Arc::new(DistributedDoubleBarrier::new(&sessions, "/double", 2).unwrap());
    let entering = {
        let member = member.clone();
        tokio::spawn(async move { member.enter().await })
    };
    wait_until_count(&other, "/double", 1).await;
    expire(&proxy, &direct, &sessions.client()).await;
    let failed = bounded("enter fails", entering).await.unwrap();
    assert!(failed.unwrap_err().is_session_terminal());
    assert!(wait_empty(&other, "/double").await.is_empty());
    not_finished("the barrier waiter", &mut waiting).await;
    setter.remove_barrier().await.unwrap();
    bounded("waiter released", waiting).await.unwrap().unwrap();
    // Entering again takes the new session.
    let partner = DistributedDoubleBarrier::new(&other, "/double", 2).unwrap();
    let (a, b) = tokio::join!(member.enter(), partner.enter());
    a.unwrap();
    b.unwrap();
    let (a, b) = tokio::join!(member.leave(), partner.leave());
    a.unwrap();
    b.unwrap();
    assert!(children(&other, "/double").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn barriers_through_a_member_kill() {
    let ensemble = Ensemble::start(3).await.unwrap();
    bounded("ensemble serving", ensemble.wait_serving())
        .await
        .unwrap();
    // Every session off the leader: the member killed is a follower, so no election drops
    // them all, and the sessions it served move to the other follower at once, well within
    // their 8 s.
    let mut clients = Vec::new();
    for _ in 0..3 {
        clients.push(client_off_the_leader(&ensemble, Duration::from_secs(8)).await);
    }
    let members: Vec<_> = clients
        .iter()
        .map(|c| std::sync::Arc::new(DistributedDoubleBarrier::new(c, "/b", 3).unwrap()))
        .collect();
    let entering: Vec<_> = members[..2]
        .iter()
        .map(|m| {
            let m = m.clone();
            tokio::spawn(async move { m.enter().await })
        })
        .collect();
    wait_until_count(&clients[2], "/b", 2).await;
    // A barrier waiter on the session that moves.
    let hold = DistributedBarrier::new(&clients[2], "/hold").unwrap();
    hold.set_barrier().await.unwrap();
    let waiter = DistributedBarrier::new(&clients[0], "/hold").unwrap();
    let mut waiting = tokio::spawn(async move { waiter.wait_on_barrier().await });
    move_session(&ensemble, &clients[0]).await;
    not_finished("the barrier waiter", &mut waiting).await;
    hold.remove_barrier().await.unwrap();
    bounded("waiter released", waiting).await.unwrap().unwrap();
    bounded("third enters", members[2].enter()).await.unwrap();
    for e in entering {
        bounded("entered", e).await.unwrap().unwrap();
    }
    let leaving: Vec<_> = members
        .iter()
        .map(|m| {
            let m = m.clone();
            tokio::spawn(async move { m.leave().await })
        })
        .collect();
    for l in leaving {
        bounded("left", l).await.unwrap().unwrap();
    }
    assert!(children(&clients[2], "/b").await.is_empty());
}

/// A barrier set through one member holds a waiter whose member has not applied the set yet:
/// that member is paused while the barrier is set, and the wait begins as it resumes, with
/// the leader's commit and the waiter's read arriving together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_barrier_set_through_another_member_holds_a_waiter_on_a_member_behind() {
    let ensemble = Ensemble::start(3).await.unwrap();
    bounded("ensemble serving", ensemble.wait_serving())
        .await
        .unwrap();
    let leader = bounded("a leader", ensemble.leader()).await.unwrap();
    let mut followers = (0..3).filter(|&i| i != leader);
    let (behind, ahead) = (followers.next().unwrap(), followers.next().unwrap());
    // One member each, and a session that outlasts the pause many times over.
    let connect_to = |member: usize| {
        Client::builder(&ensemble.addr(member).unwrap().to_string())
            .session_timeout(Duration::from_secs(30))
            .connect_timeout(common::CONNECT_TIMEOUT)
            .connect()
    };
    let setter = bounded("connect", connect_to(ahead)).await.unwrap();
    let watcher = bounded("connect", connect_to(behind)).await.unwrap();

    ensemble.pause(behind).unwrap();
    let hold = DistributedBarrier::new(&setter, "/hold").unwrap();
    bounded("set while a follower is paused", hold.set_barrier())
        .await
        .unwrap();
    let waiter = DistributedBarrier::new(&watcher, "/hold").unwrap();
    let mut waiting = tokio::spawn(async move { waiter.wait_on_barrier().await });
    ensemble.resume(behind).unwrap();
    not_finished("the waiter on the member behind", &mut waiting).await;
    hold.remove_barrier().await.unwrap();
    bounded("waiter released", waiting).await.unwrap().unwrap();
}

/// A wait whose request is on its way when the session expires goes on in the next session:
/// its connection drops with the request unanswered, and waiting to reconnect ends with the
/// expiry, which renewing sessions answer like an expiry seen by the watch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_barrier_wait_in_the_middle_of_a_request_goes_on_through_an_expiry() {
    const SYNC: i32 = 9;
    let common::faults::ExpiryRig {
        proxy,
        direct,
        sessions,
    } = common::faults::expiry_rig("barrier_expiry_mid_request").await;
    let other = client(&direct).await;
    let setter = DistributedBarrier::new(&other, "/hold").unwrap();
    setter.set_barrier().await.unwrap();

    // The wait's sync is answered by the server, never delivered, and its connection
    // dropped; the proxy refuses new connections until the session is closed behind the
    // client's back, so that its reconnect is told it expired.
    let cut = proxy.cut_after_next_and_refuse(SYNC);
    let waiter = DistributedBarrier::new(&sessions, "/hold").unwrap();
    let mut waiting = tokio::spawn(async move { waiter.wait_on_barrier().await });
    bounded("the wait's sync cut", cut.wait())
        .await
        .expect("the cut fired");
    common::faults::close_behind(&proxy, &direct, &sessions.client()).await;
    not_finished("the barrier waiter", &mut waiting).await;
    setter.remove_barrier().await.unwrap();
    bounded("waiter released", waiting).await.unwrap().unwrap();
}
