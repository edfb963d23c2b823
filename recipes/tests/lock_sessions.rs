//! Locks on `Sessions` live through session expiry: a waiter whose session expires queues
//! again on the next session by itself; a holder whose session expires reads lost, the waiter
//! gets the lock, and the holder's handle acquires again on its own next session. No user code
//! rebuilds a client or a lock.

mod common;

use std::time::Duration;

use common::faults::expire;
use common::{bounded, client, CONNECT_TIMEOUT};
use zookeeper_recipes::{Holding, Mutex, ReadWriteLock, Sessions};
use zookeeper_testkit::{chroot_for, shared_server, Proxy};
use zookeeper_tokio::Client;

/// Sessions through a proxy of their own (so that each can be expired alone) on `chroot`.
async fn renewing_behind_proxy(chroot: &str) -> (Proxy, Sessions) {
    let proxy = Proxy::start(shared_server().addr()).await.unwrap();
    let builder = Client::builder(&format!("{}{chroot}", proxy.connect_string()))
        .session_timeout(Duration::from_secs(4))
        .connect_timeout(CONNECT_TIMEOUT);
    let sessions = bounded("connect", Sessions::connect(builder))
        .await
        .unwrap();
    (proxy, sessions)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutex_on_sessions_outlives_the_expiry_of_holder_and_waiter() {
    let chroot = chroot_for("lock_sessions_mutex");
    let direct = shared_server().connect_string_with_chroot(&chroot);
    let (holder_proxy, holder_sessions) = renewing_behind_proxy(&chroot).await;
    let (waiter_proxy, waiter_sessions) = renewing_behind_proxy(&chroot).await;
    let observer = client(&direct).await;
    let holder = Mutex::new(&holder_sessions, "/lock").unwrap();
    let waiter = std::sync::Arc::new(Mutex::new(&waiter_sessions, "/lock").unwrap());

    let held = bounded("the holder acquires", holder.acquire())
        .await
        .unwrap();
    let waiting = {
        let waiter = waiter.clone();
        tokio::spawn(async move { waiter.acquire().await })
    };
    common::until_children(&observer, "/lock", 2).await;

    // The waiter's session expires while it waits: it queues again on its next session.
    let first_waiter_session = waiter_sessions.client().session_id();
    expire(&waiter_proxy, &direct, &waiter_sessions.client()).await;
    bounded("the waiter queued again", async {
        loop {
            let (children, _) = observer.get_children("/lock").await.unwrap();
            let owners = session_owners(&observer, &children).await;
            if owners.len() == 2 && !owners.contains(&first_waiter_session.0) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(!waiting.is_finished(), "the waiter still waits");

    // The holder's session expires: its guard reads lost, the waiter gets the lock.
    expire(&holder_proxy, &direct, &holder_sessions.client()).await;
    // Lost: from the expiry, or from the lease if it ran out before the client heard.
    assert!(
        matches!(held.state(), Holding::Lost(_)),
        "the holder reads lost: {}",
        held.state()
    );
    let granted = bounded("the waiter's grant", waiting)
        .await
        .unwrap()
        .unwrap();
    assert_ne!(
        waiter_sessions.client().session_id(),
        first_waiter_session,
        "granted on the next session"
    );
    assert!(granted.fencing_token() > held.fencing_token());
    drop(held);

    // The holder's handle acquires again, on its next session, once the waiter lets go.
    let again = tokio::spawn(async move { holder.acquire().await.map(|g| (g, holder)) });
    granted.release().await.unwrap();
    let (again, _holder) = bounded("the old holder acquires again", again)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.state(), Holding::Held);
    again.release().await.unwrap();
}

/// The session owners of `children` of `/lock`.
async fn session_owners(observer: &Client, children: &[String]) -> Vec<i64> {
    let mut owners = Vec::new();
    for child in children {
        if let Ok(Some(stat)) = observer.exists(&format!("/lock/{child}")).await {
            owners.push(stat.ephemeral_owner);
        }
    }
    owners
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_write_lock_on_sessions_writes_again_after_expiry() {
    let chroot = chroot_for("lock_sessions_rw");
    let direct = shared_server().connect_string_with_chroot(&chroot);
    let (proxy, sessions) = renewing_behind_proxy(&chroot).await;
    let lock = ReadWriteLock::new(&sessions, "/rw").unwrap();
    let write = bounded("write", lock.write()).await.unwrap();
    expire(&proxy, &direct, &sessions.client()).await;
    assert!(matches!(write.state(), Holding::Lost(_)));
    let again = bounded("write again", lock.write()).await.unwrap();
    assert_eq!(again.state(), Holding::Held);
    again.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selector_on_sessions_leads_again_after_expiry() {
    let chroot = chroot_for("lock_sessions_selector");
    let direct = shared_server().connect_string_with_chroot(&chroot);
    let (proxy, sessions) = renewing_behind_proxy(&chroot).await;
    let (terms_tx, mut terms) = tokio::sync::mpsc::unbounded_channel();
    let selector = zookeeper_recipes::LeaderSelector::builder(&sessions, "/election")
        .id("renewing")
        .auto_requeue(true)
        .start(move |context| {
            let terms_tx = terms_tx.clone();
            async move {
                let _ = terms_tx.send((context.term(), context.client().session_id()));
                std::future::pending::<()>().await;
            }
        })
        .unwrap();
    let (first_term, first_session) = bounded("the first term", terms.recv()).await.unwrap();
    expire(&proxy, &direct, &sessions.client()).await;
    let (second_term, second_session) = bounded("a term on the next session", terms.recv())
        .await
        .unwrap();
    assert!(second_term > first_term);
    assert_ne!(second_session, first_session);
    assert!(
        !matches!(selector.state(), zookeeper_recipes::Holding::Lost(_)),
        "{}",
        selector.state()
    );
    selector.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_semaphore_on_sessions_leases_again_after_expiry() {
    let chroot = chroot_for("lock_sessions_semaphore");
    let direct = shared_server().connect_string_with_chroot(&chroot);
    let (proxy, sessions) = renewing_behind_proxy(&chroot).await;
    let semaphore = zookeeper_recipes::Semaphore::new(&sessions, "/sem", 1).unwrap();
    let lease = bounded("lease", semaphore.acquire()).await.unwrap();
    expire(&proxy, &direct, &sessions.client()).await;
    assert!(matches!(lease.state(), Holding::Lost(_)));
    let again = bounded("lease again", semaphore.acquire()).await.unwrap();
    assert_eq!(again.state(), Holding::Held);
    again.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latch_on_sessions_joins_again_after_expiry_waiting_or_leading() {
    let chroot = chroot_for("lock_sessions_latch");
    let direct = shared_server().connect_string_with_chroot(&chroot);
    let (proxy, sessions) = renewing_behind_proxy(&chroot).await;
    let other = client(&direct).await;
    let leader = zookeeper_recipes::LeaderLatch::start(&other, "/e", "leader")
        .await
        .unwrap();
    bounded("lead", leader.await_leadership()).await.unwrap();

    // A waiter whose session expires joins again on the next session by itself.
    let latch = std::sync::Arc::new(
        zookeeper_recipes::LeaderLatch::start(&sessions, "/e", "renewing")
            .await
            .unwrap(),
    );
    let first_token = latch.fencing_token();
    let waiting = {
        let latch = latch.clone();
        tokio::spawn(async move { latch.await_leadership().await })
    };
    let first_session = sessions.client().session_id();
    expire(&proxy, &direct, &sessions.client()).await;
    common::until_children(&other, "/e", 2).await;
    leader.resign().await.unwrap();
    bounded("the waiter leads", waiting).await.unwrap().unwrap();
    assert_ne!(sessions.client().session_id(), first_session);
    assert!(latch.fencing_token() > first_token, "a new node");

    // A leader whose session expires reads lost; its next wait joins again and leads.
    expire(&proxy, &direct, &sessions.client()).await;
    assert!(matches!(latch.state(), zookeeper_recipes::Holding::Lost(_)));
    bounded("lead again", latch.await_leadership())
        .await
        .unwrap();
    latch.resign().await.unwrap();
}

/// A latch cut off between the server creating its node and the reply reaching it, whose
/// session then expires, joins on the next session: joining is as much a part of riding out an
/// expiry as waiting is. (`zk elect` exited with "session expired" here.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latch_whose_session_expires_while_joining_joins_on_the_next() {
    let chroot = chroot_for("lock_sessions_latch_join");
    let direct = shared_server().connect_string_with_chroot(&chroot);
    let (proxy, sessions) = renewing_behind_proxy(&chroot).await;
    let observer = client(&direct).await;
    let first = sessions.client();
    // 15 is create2, the opcode of every create the client sends. Reconnecting is refused
    // from the start, so the node's reply is never heard on its session.
    let cut = proxy.cut_after_next(15);
    proxy.refuse(true);
    let joining = {
        let sessions = sessions.clone();
        tokio::spawn(async move {
            zookeeper_recipes::LeaderLatch::start(&sessions, "/e", "renewing").await
        })
    };
    assert!(bounded("cut fired", cut.wait()).await.is_some());
    let twin = bounded(
        "resume",
        Client::builder(&direct)
            .session(first.session_id(), &first.session_password())
            .connect_timeout(CONNECT_TIMEOUT)
            .connect(),
    )
    .await
    .unwrap();
    twin.close().await;
    proxy.refuse(false);

    let latch = bounded("joined", joining).await.unwrap().unwrap();
    let second = sessions.client();
    assert_ne!(second.session_id(), first.session_id());
    let nodes = common::until_children(&observer, "/e", 1).await;
    let owner = observer
        .exists(&format!("/e/{}", nodes[0]))
        .await
        .unwrap()
        .unwrap()
        .ephemeral_owner;
    assert_eq!(
        owner,
        second.session_id().0,
        "the node is the new session's"
    );
    bounded("lead", latch.await_leadership()).await.unwrap();
    latch.resign().await.unwrap();
}
