//! SharedCount and DistributedAtomicLong against real servers: changes seen by every holder,
//! stale compare-and-sets refused, concurrent increments from many sessions with none lost,
//! and both counters through a session expiry and a member kill.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::faults::{client_off_the_leader, expire, move_session};
use common::stale::stale_increment;
use common::{bounded, chroot_connect, client, clients, join_making_progress, Progress};
use zookeeper_recipes::{DistributedAtomicLong, Error, PromotedToLock, RetryPolicy, SharedCount};
use zookeeper_testkit::Ensemble;
use zookeeper_tokio::CreateOptions;

fn retry() -> RetryPolicy {
    RetryPolicy::n_times(3, Duration::from_millis(5))
}

/// Increments `count` once, by compare-and-set, however many tries it takes.
async fn increment(count: &SharedCount) -> u32 {
    let mut tries = 0;
    loop {
        tries += 1;
        let seen = count.versioned();
        if count.try_set_count(seen.count + 1, seen).await.unwrap() {
            return tries;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_counts_see_each_others_changes_and_stale_sets_fail() {
    let connect = chroot_connect("counter_shared_basics");
    let cs = clients(&connect, 2).await;
    let a = SharedCount::start(&cs[0], "/counters/c", 7).await.unwrap();
    // The seed only applies to a missing node.
    let b = SharedCount::start(&cs[1], "/counters/c", 99).await.unwrap();
    assert_eq!((a.count(), b.count()), (7, 7));
    // 4 bytes, big-endian, as Curator writes it.
    let (data, _) = cs[0].get_data("/counters/c").await.unwrap();
    assert_eq!(&data[..], &[0, 0, 0, 7]);

    let mut changes = b.changes();
    let seen = a.versioned();
    assert!(a.try_set_count(8, seen).await.unwrap());
    assert_eq!(bounded("b sees 8", changes.next()).await.unwrap().count, 8);
    // a's old view is stale now; so is b's if it raced.
    assert!(!a.try_set_count(100, seen).await.unwrap());
    b.set_count(-3).await.unwrap();
    let mut a_changes = a.changes();
    while a.count() != -3 {
        bounded("a sees -3", a_changes.next()).await.unwrap();
    }
    // Garbage in the node: the last readable count stays.
    cs[0].set_data("/counters/c", b"xx", None).await.unwrap();
    b.set_count(5).await.unwrap();
    while a.count() != 5 {
        bounded("a sees 5", a_changes.next()).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_shared_count_increments_lose_nothing() {
    let connect = chroot_connect("counter_shared_concurrent");
    let cs = clients(&connect, 4).await;
    // Contention made certain rather than left to the scheduler: all four read the count
    // before any of them sets it, so their first sets are made on one version, and exactly
    // one of them may win.
    let all_read = Arc::new(tokio::sync::Barrier::new(cs.len()));
    let progress = Progress::default();
    let mut tasks = Vec::new();
    for c in &cs {
        let count = SharedCount::start(c, "/c", 0).await.unwrap();
        let (all_read, progress) = (all_read.clone(), progress.clone());
        tasks.push(tokio::spawn(async move {
            let seen = count.versioned();
            bounded("all four read", all_read.wait()).await;
            let first_won = count.try_set_count(seen.count + 1, seen).await.unwrap();
            let mut tries = 1;
            for _ in usize::from(first_won)..50 {
                tries += increment(&count).await;
                progress.step();
            }
            (first_won, tries)
        }));
    }
    // Bounded by progress: 200 increments, retried on every conflict, take what they take.
    let outcomes = join_making_progress("the increments", &progress, tasks).await;
    let check = SharedCount::start(&cs[0], "/c", 0).await.unwrap();
    assert_eq!(check.count(), 200);
    let winners = outcomes.iter().filter(|(won, _)| *won).count();
    assert_eq!(winners, 1, "four sets on one version, stale ones refused");
    let tries: u32 = outcomes.iter().map(|(_, tries)| tries).sum();
    assert!(tries >= 203, "{tries} tries");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_atomic_long_increments_lose_nothing_and_report_their_tries() {
    let chroot = zookeeper_testkit::chroot_for("counter_long_concurrent");
    let connect = zookeeper_testkit::shared_server().connect_string_with_chroot(&chroot);
    let cs = clients(&connect, 6).await;
    let progress = Progress::default();
    let mut tasks = Vec::new();
    for c in &cs {
        let progress = progress.clone();
        let counter =
            DistributedAtomicLong::new(c, "/stats/hits", RetryPolicy::n_times(1, Duration::ZERO))
                .unwrap()
                .promote_to_lock(
                    PromotedToLock::new("/stats/hits-lock", Duration::from_secs(20), retry())
                        .unwrap(),
                );
        tasks.push(tokio::spawn(async move {
            let mut results = Vec::new();
            for _ in 0..40 {
                loop {
                    let r = counter.increment().await.unwrap();
                    if r.succeeded {
                        assert_eq!(r.post_value, r.pre_value + 1);
                        results.push(r);
                        progress.step();
                        break;
                    }
                }
            }
            results
        }));
    }
    // Bounded by progress: 240 increments take what they take.
    let results: Vec<_> = join_making_progress("the increments", &progress, tasks)
        .await
        .into_iter()
        .flatten()
        .collect();
    let counter = DistributedAtomicLong::new(&cs[0], "/stats/hits", retry()).unwrap();
    assert_eq!(counter.get().await.unwrap().post_value, 240);
    // Every value from 1 to 240 was written exactly once.
    let mut posts: Vec<i64> = results.iter().map(|r| r.post_value).collect();
    posts.sort();
    assert_eq!(posts, (1..=240).collect::<Vec<_>>());
    assert!(results.iter().all(|r| r.stats.optimistic_tries >= 1));

    // Whether the racing increments above needed the lock is the scheduler's call; here one
    // does for certain: its optimistic try read a version that is gone by its write.
    let promoted = PromotedToLock::new("/stats/hits-lock", Duration::from_secs(20), retry());
    let r = stale_increment(&cs[0], &chroot, "/stats/hits", promoted.unwrap()).await;
    assert!(r.succeeded);
    assert_eq!((r.pre_value, r.post_value), (240, 241));
    assert_eq!(r.stats.optimistic_tries, 1);
    assert_eq!(r.stats.promoted_tries, 1, "went through the lock");
    // 8 bytes, big-endian.
    let (data, _) = cs[0].get_data("/stats/hits").await.unwrap();
    assert_eq!(&data[..], &241i64.to_be_bytes());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn atomic_long_operations_follow_curator() {
    let c = client(&chroot_connect("counter_long_ops")).await;
    let counter = DistributedAtomicLong::new(&c, "/a/b/n", retry()).unwrap();
    // Missing: 0; created (parents as containers) on the first write.
    assert_eq!(counter.get().await.unwrap().post_value, 0);
    let r = counter.decrement().await.unwrap();
    assert!(r.succeeded);
    assert_eq!((r.pre_value, r.post_value), (0, -1));
    assert_eq!(counter.add(11).await.unwrap().post_value, 10);
    assert_eq!(counter.subtract(4).await.unwrap().post_value, 6);
    let miss = counter.compare_and_set(5, 50).await.unwrap();
    assert!(!miss.succeeded);
    assert_eq!((miss.pre_value, miss.post_value), (6, 6));
    assert!(counter.compare_and_set(6, 60).await.unwrap().succeeded);
    assert!(!counter.initialize(1).await.unwrap(), "exists already");
    counter.force_set(i64::MAX).await.unwrap();
    assert_eq!(counter.increment().await.unwrap().post_value, i64::MIN);
    // An empty node reads as 0.
    c.create("/empty", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let empty = DistributedAtomicLong::new(&c, "/empty", retry()).unwrap();
    assert_eq!(empty.increment().await.unwrap().post_value, 1);
    // Data of the wrong size is refused, not misread.
    c.set_data("/empty", b"abc", None).await.unwrap();
    assert!(matches!(
        empty.increment().await,
        Err(Error::BadValue { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_carry_on_in_a_new_session_after_expiry() {
    let common::faults::ExpiryRig {
        proxy,
        direct,
        sessions,
    } = common::faults::expiry_rig("counter_expiry").await;
    let other = client(&direct).await;

    let count = SharedCount::start(&sessions, "/shared", 0).await.unwrap();
    let long = DistributedAtomicLong::new(&sessions, "/long", retry()).unwrap();
    long.increment().await.unwrap();
    let first = sessions.client().session_id();
    expire(&proxy, &direct, &sessions.client()).await;

    // Changed while the session was gone, and after: the count follows in the new session.
    let theirs = SharedCount::start(&other, "/shared", 0).await.unwrap();
    theirs.set_count(41).await.unwrap();
    let mut changes = count.changes();
    while count.count() != 41 {
        bounded("41 seen in the new session", changes.next())
            .await
            .unwrap();
    }
    theirs.set_count(42).await.unwrap();
    while count.count() != 42 {
        bounded("42 seen", changes.next()).await.unwrap();
    }
    assert!(increment(&count).await >= 1);
    assert_eq!(long.increment().await.unwrap().post_value, 2);
    assert_ne!(sessions.client().session_id(), first);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_carry_on_when_the_member_serving_them_dies() {
    let ensemble = Ensemble::start(3).await.unwrap();
    bounded("ensemble serving", ensemble.wait_serving())
        .await
        .unwrap();
    // Off the leader, so that the kill is of a follower (no election: the session moves at
    // once, well within its 8 s); the bystander on the members that survive, untouched.
    let c = client_off_the_leader(&ensemble, Duration::from_secs(8)).await;
    let member = ensemble
        .member_serving(c.session_id().0)
        .await
        .expect("a member serves the session");
    let other = client(&ensemble.connect_string_without(member).unwrap()).await;
    let count = SharedCount::start(&c, "/shared", 0).await.unwrap();
    let long = DistributedAtomicLong::new(&c, "/long", retry()).unwrap();
    assert_eq!(long.increment().await.unwrap().post_value, 1);

    let killed = move_session(&ensemble, &c).await;
    assert_eq!(killed, Some(member));
    SharedCount::start(&other, "/shared", 0)
        .await
        .unwrap()
        .set_count(9)
        .await
        .unwrap();
    let mut changes = count.changes();
    while count.count() != 9 {
        bounded("9 seen after the failover", changes.next())
            .await
            .unwrap();
    }
    assert_eq!(long.increment().await.unwrap().post_value, 2);
    assert_eq!(increment(&count).await, 1);
    assert_eq!(count.count(), 10);
}
