//! The semaphore whose number of leases is a shared count, against real servers: raising the
//! count admits waiters, lowering it holds new acquirers back without taking a lease away, and
//! a change is obeyed through session expiry and the death of the member serving a session.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::faults::expire;
use common::{bounded, children, client, clients, until_children, until_watching_the_leases};
use zookeeper_recipes::{Holding, Lease, Semaphore, Sessions, SharedCount};
use zookeeper_testkit::{chroot_for, shared_server, Ensemble, Proxy};
use zookeeper_tokio::{Client, SessionState};

/// Waits until `count` has read `n`.
async fn until_count(count: &SharedCount, n: i32) {
    let mut changes = count.changes();
    bounded(&format!("the count read as {n}"), async {
        while count.count() != n {
            changes.next().await.unwrap();
        }
    })
    .await;
}

async fn release_all(leases: Vec<Lease>) {
    for lease in leases {
        lease.release().await.unwrap();
    }
}

/// No lease is returned: only the count can let the waiters in. The first waiter holds the
/// gate and watches the leases; the second waits for the gate behind it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raising_the_count_admits_waiters() {
    let chroot = chroot_for("shared_semaphore_raise");
    let server = shared_server();
    let cs = clients(&server.connect_string_with_chroot(&chroot), 2).await;
    // The waiters' client goes through a proxy, whose frame log shows when they watch; their
    // count reads through another client, so that its reads do not mix with theirs.
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let waiters_client = client(&format!("{}{}", proxy.connect_string(), chroot)).await;

    let setter = SharedCount::start(&cs[0], "/count", 1).await.unwrap();
    let holder = Semaphore::with_shared_count(&cs[0], "/sem", &setter).unwrap();
    let held = bounded("the one lease", holder.acquire()).await.unwrap();
    let count = SharedCount::start(&cs[1], "/count", 1).await.unwrap();
    let sem = Arc::new(Semaphore::with_shared_count(&waiters_client, "/sem", &count).unwrap());
    assert_eq!(sem.max_leases(), 1);
    assert!(sem.try_acquire().await.unwrap().is_none());

    proxy.record_frames(true);
    let wait = |sem: &Arc<Semaphore>| {
        let sem = sem.clone();
        tokio::spawn(async move { sem.acquire().await.unwrap() })
    };
    let first = wait(&sem);
    until_watching_the_leases(&proxy).await;
    let second = wait(&sem);
    until_children(&cs[0], "/sem/locks", 2).await;
    assert_eq!(children(&cs[0], "/sem/leases").await.len(), 2);
    assert!(!first.is_finished() && !second.is_finished());

    setter.set_count(3).await.unwrap();
    let first = bounded("the first waiter admitted", first).await.unwrap();
    let second = bounded("the second waiter admitted", second).await.unwrap();
    assert_eq!(sem.max_leases(), 3);
    assert_eq!(children(&cs[0], "/sem/leases").await.len(), 3);
    assert_eq!(held.state(), Holding::Held);
    assert!(first.fencing_token() > held.fencing_token());
    assert!(second.fencing_token() > first.fencing_token());
    assert!(
        holder.try_acquire().await.unwrap().is_none(),
        "a fourth lease of three"
    );
    release_all(vec![held, first, second]).await;
}

/// Three leases out, the count lowered to one: the three stay held, and a new acquirer gets
/// nothing until all three are back (its own lease would make two of one before that).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lowering_the_count_holds_new_acquirers_until_enough_leases_return() {
    let chroot = chroot_for("shared_semaphore_lower");
    let server = shared_server();
    let cs = clients(&server.connect_string_with_chroot(&chroot), 2).await;
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let late_client = client(&format!("{}{}", proxy.connect_string(), chroot)).await;

    let setter = SharedCount::start(&cs[0], "/count", 3).await.unwrap();
    let holder = Semaphore::with_shared_count(&cs[0], "/sem", &setter).unwrap();
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(bounded("a lease", holder.acquire()).await.unwrap());
    }
    let count = SharedCount::start(&cs[1], "/count", 3).await.unwrap();
    let late = Arc::new(Semaphore::with_shared_count(&late_client, "/sem", &count).unwrap());

    setter.set_count(1).await.unwrap();
    until_count(&count, 1).await;
    assert_eq!(late.max_leases(), 1);
    for lease in &held {
        assert_eq!(lease.state(), Holding::Held, "a lease was taken back");
    }
    assert_eq!(children(&cs[0], "/sem/leases").await.len(), 3);

    // Each try sees what is held then: three, two, one; each is one too many with its own.
    while held.len() > 1 {
        assert!(
            late.try_acquire().await.unwrap().is_none(),
            "a lease beside {} of 1",
            held.len()
        );
        held.remove(0).release().await.unwrap();
    }
    assert!(late.try_acquire().await.unwrap().is_none(), "two of one");
    proxy.record_frames(true);
    let waiter = {
        let late = late.clone();
        tokio::spawn(async move { late.acquire().await.unwrap() })
    };
    until_watching_the_leases(&proxy).await;
    assert!(!waiter.is_finished(), "a lease beside the last one held");
    let last = held.remove(0);
    let last_token = last.fencing_token();
    last.release().await.unwrap();
    let lease = bounded("the waiter admitted", waiter).await.unwrap();
    assert!(lease.fencing_token() > last_token);
    assert_eq!(children(&cs[0], "/sem/leases").await.len(), 1);
    assert!(holder.try_acquire().await.unwrap().is_none());
    lease.release().await.unwrap();
}

/// The session the waiter's count reads through expires while the waiter waits; with renewing
/// sessions the count follows its node in a new one, so a raise made after the expiry still
/// admits the waiter. The lease held meanwhile is untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_count_is_obeyed_through_session_expiry() {
    let chroot = chroot_for("shared_semaphore_expiry");
    let server = shared_server();
    let direct = server.connect_string_with_chroot(&chroot);
    let cs = clients(&direct, 2).await;
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let sessions = Sessions::connect(
        Client::builder(&format!("{}{}", proxy.connect_string(), chroot))
            .session_timeout(Duration::from_secs(4)),
    )
    .await
    .unwrap();

    let setter = SharedCount::start(&cs[0], "/count", 1).await.unwrap();
    let holder = Semaphore::with_shared_count(&cs[0], "/sem", &setter).unwrap();
    let held = bounded("the one lease", holder.acquire()).await.unwrap();
    let count = SharedCount::start(&sessions, "/count", 1).await.unwrap();
    let sem = Semaphore::with_shared_count(&cs[1], "/sem", &count).unwrap();
    let waiter = tokio::spawn(async move { sem.acquire().await.unwrap() });
    until_children(&cs[0], "/sem/leases", 2).await;

    let before = sessions.client().session_id();
    expire(&proxy, &direct, &sessions.client()).await;
    setter.set_count(2).await.unwrap();
    let lease = bounded("the waiter admitted", waiter).await.unwrap();
    assert_ne!(sessions.client().session_id(), before, "a new session");
    assert_eq!(count.count(), 2);
    assert_eq!(held.state(), Holding::Held);
    release_all(vec![held, lease]).await;
}

/// The member serving the waiter's session dies, and the count is raised while the waiter is
/// cut off: once its session has moved, its count reads the change it missed, and it is
/// admitted. The lease held on another member is untouched, and nobody gets a third. The
/// waiter is kept off the leader, whose death would drop every client (the setter's too)
/// during the election: the fault under test is the waiter's alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_made_while_the_waiters_member_is_down_is_obeyed() {
    let ensemble = Ensemble::start(3).await.unwrap();
    bounded("ensemble serving", ensemble.wait_serving())
        .await
        .unwrap();
    let leader = bounded("a leader", ensemble.leader()).await.unwrap();
    let w = bounded(
        "connect",
        Client::builder(&ensemble.connect_string_without(leader).unwrap())
            .session_timeout(Duration::from_secs(8))
            .connect(),
    )
    .await
    .unwrap();
    let member = ensemble
        .member_serving(w.session_id().0)
        .await
        .expect("a member serves the session");
    // The holder and the setter on the other members: they stay connected throughout.
    let other = client(&ensemble.connect_string_without(member).unwrap()).await;

    let setter = SharedCount::start(&other, "/count", 1).await.unwrap();
    let holder = Semaphore::with_shared_count(&other, "/sem", &setter).unwrap();
    let held = bounded("the one lease", holder.acquire()).await.unwrap();
    let count = SharedCount::start(&w, "/count", 1).await.unwrap();
    let sem = Semaphore::with_shared_count(&w, "/sem", &count).unwrap();
    let waiter = tokio::spawn(async move { sem.acquire().await.unwrap() });
    until_children(&other, "/sem/leases", 2).await;

    let mut states = w.state_changes();
    ensemble.kill(member).unwrap();
    bounded(
        "disconnected",
        states.wait_for(|s| s == SessionState::Disconnected),
    )
    .await
    .unwrap();
    setter.set_count(2).await.unwrap();
    let lease = bounded("the waiter admitted", waiter).await.unwrap();
    assert_eq!(w.state(), SessionState::Connected);
    assert_eq!(count.count(), 2);
    assert_eq!(held.state(), Holding::Held);
    assert!(lease.fencing_token() > held.fencing_token());
    assert!(
        holder.try_acquire().await.unwrap().is_none(),
        "a third lease of two"
    );
    release_all(vec![held, lease]).await;
}
