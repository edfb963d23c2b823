//! The semaphore against a real server.

mod common;

use std::time::Duration;

use common::{
    bounded, children, chroot_connect, client, clients, until_children, until_watching_the_leases,
};
use zookeeper_recipes::Semaphore;
use zookeeper_testkit::Proxy;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grants_at_most_n_leases_and_hands_one_over_per_release() {
    let chroot = zookeeper_testkit::chroot_for("semaphore_n");
    let server = zookeeper_testkit::shared_server();
    let mut cs = clients(&server.connect_string_with_chroot(&chroot), 2).await;
    // The waiter's client goes through a proxy, whose frame log shows when its watch is set.
    let proxy = Proxy::start(server.addr()).await.unwrap();
    cs.push(client(&format!("{}{}", proxy.connect_string(), chroot)).await);
    let s: Vec<Semaphore> = cs
        .iter()
        .map(|c| Semaphore::new(c, "/sem", 2).unwrap())
        .collect();
    let l0 = bounded("lease 0", s[0].acquire()).await.unwrap();
    let l1 = bounded("lease 1", s[1].acquire()).await.unwrap();
    assert!(l0.path().starts_with("/sem/leases/_c_") && l0.path().contains("-lease-"));
    assert!(s[2].try_acquire().await.unwrap().is_none());
    assert!(s[2]
        .acquire_timeout(Duration::from_millis(150))
        .await
        .unwrap()
        .is_none());
    // The failed attempts leave no lease behind: their nodes are deleted in the background
    // (another session sees that some time after `acquire_timeout` returns).
    until_children(&cs[0], "/sem/leases", 2).await;
    // The gate goes in the background: another session sees it go after the acquisition.
    assert!(
        common::wait_empty(&cs[0], "/sem/locks").await.is_empty(),
        "gate released"
    );

    let c2 = cs[2].clone();
    proxy.record_frames(true);
    let waiter = tokio::spawn(async move {
        let s = Semaphore::new(&c2, "/sem", 2).unwrap();
        let l = s.acquire().await.unwrap();
        let (token, wakeups) = (l.fencing_token(), l.wakeups());
        l.release().await.unwrap();
        (token, wakeups)
    });
    // Release only once the waiter watches: a release before that would let it find room on
    // its next listing without being woken.
    until_watching_the_leases(&proxy).await;
    assert_eq!(children(&cs[0], "/sem/leases").await.len(), 3);
    assert!(!waiter.is_finished(), "the waiter took a lease beyond 2");
    l0.release().await.unwrap();
    let (token, wakeups) = bounded("waiter", waiter).await.unwrap();
    assert!(token > l1.fencing_token());
    assert_eq!(wakeups, 1);
    l1.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_more_than_n_holders_under_contention() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let connect = chroot_connect("semaphore_contention");
    let cs = clients(&connect, 4).await;
    let inside = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let granted = Arc::new(AtomicUsize::new(0));
    // The first three holders keep their leases until all three are in: the leases are
    // shared, whatever the scheduling (a semaphore that let one in at a time would hang here).
    let first_three = Arc::new(tokio::sync::Barrier::new(3));
    // Six tasks share each handle: their acquisitions must queue, not re-enter the gate.
    let handles: Vec<Arc<Semaphore>> = cs
        .iter()
        .map(|c| Arc::new(Semaphore::new(c, "/sem", 3).unwrap()))
        .collect();
    let progress = common::Progress::default();
    let mut tasks = Vec::new();
    for i in 0..24 {
        let s = handles[i % 4].clone();
        let (inside, peak) = (inside.clone(), peak.clone());
        let (granted, first_three) = (granted.clone(), first_three.clone());
        let progress = progress.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..2 {
                let lease = s.acquire().await.unwrap();
                progress.step();
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                assert!(now <= 3, "{now} holders of 3 leases");
                peak.fetch_max(now, Ordering::SeqCst);
                if granted.fetch_add(1, Ordering::SeqCst) < 3 {
                    bounded("three leases held at once", first_three.wait()).await;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                lease.release().await.unwrap();
            }
        }));
    }
    // 48 grants one after another on a slow machine: bounded by progress, not in total.
    common::join_making_progress("the holders", &progress, tasks).await;
    assert_eq!(peak.load(Ordering::SeqCst), 3, "leases were shared");
    assert!(common::wait_empty(&cs[0], "/sem/leases").await.is_empty());
}

/// Curator's `InterProcessSemaphoreMutex` is not reentrant: a handle shared by tasks makes
/// them exclude each other, and the holder's own second acquisition does not get through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_semaphore_mutex_is_not_reentrant_and_excludes_tasks_sharing_a_handle() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use zookeeper_recipes::SemaphoreMutex;
    let connect = chroot_connect("semaphore_mutex");
    let c = client(&connect).await;
    let mutex = Arc::new(SemaphoreMutex::new(&c, "/m").unwrap());
    let held = bounded("acquire", mutex.acquire()).await.unwrap();
    assert!(held.path().starts_with("/m/leases/_c_") && held.path().contains("-lease-"));
    assert!(mutex.try_acquire().await.unwrap().is_none(), "re-entered");
    assert!(mutex
        .acquire_timeout(Duration::from_millis(100))
        .await
        .unwrap()
        .is_none());
    assert_eq!(mutex.participants().await.unwrap().len(), 1, "left a node");
    held.release().await.unwrap();

    let inside = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let (mutex, inside) = (mutex.clone(), inside.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..3 {
                let lease = mutex.acquire().await.unwrap();
                assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders");
                tokio::task::yield_now().await;
                inside.fetch_sub(1, Ordering::SeqCst);
                lease.release().await.unwrap();
            }
        }));
    }
    for t in tasks {
        bounded("task", t).await.unwrap();
    }
    assert!(children(&c, "/m/leases").await.is_empty());
}
