//! Interoperability with Curator 5.4 on the same paths, for the counters, barriers and group
//! membership (the Java side is `tests/peers/CuratorRecipesPeer.java`, a separate process with
//! its own session).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::peers::Peer;
use common::stale::stale_increment;
use common::{bounded, children, chroot_connect, clients, join_making_progress, Progress};
use zookeeper_recipes::{
    DistributedAtomicLong, DistributedDoubleBarrier, PromotedToLock, RetryPolicy, SharedCount,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_count_increments_from_curator_and_us_interleave_with_none_lost() {
    let connect = chroot_connect("interop_shared_count");
    let cs = clients(&connect, 2).await;
    let mut curator = Peer::curator_recipes(&connect).await;
    curator.send("shared-incr /sc 150").await;
    let progress = Progress::default();
    let mut tasks = Vec::new();
    for c in &cs {
        let count = SharedCount::start(c, "/sc", 0).await.unwrap();
        let progress = progress.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..150 {
                loop {
                    let seen = count.versioned();
                    if count.try_set_count(seen.count + 1, seen).await.unwrap() {
                        progress.step();
                        break;
                    }
                }
            }
        }));
    }
    // Bounded by progress: 300 contended increments take what the machine makes them take.
    join_making_progress("our increments", &progress, tasks).await;
    curator.expect("shared-done 150").await;
    curator.send("shared-get /sc").await;
    assert_eq!(curator.expect("shared-value ").await, "450");
    let ours = SharedCount::start(&cs[0], "/sc", 0).await.unwrap();
    assert_eq!(ours.count(), 450);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn atomic_long_increments_from_curator_and_us_interleave_with_none_lost() {
    let chroot = zookeeper_testkit::chroot_for("interop_atomic_long");
    let connect = zookeeper_testkit::shared_server().connect_string_with_chroot(&chroot);
    let cs = clients(&connect, 2).await;
    let mut curator = Peer::curator_recipes(&connect).await;
    curator.send("along-incr /al /al-lock 150").await;
    let progress = Progress::default();
    let mut tasks = Vec::new();
    for c in &cs {
        let progress = progress.clone();
        // Few optimistic tries, so that the promoted lock (shared with Curator's) is used.
        let counter = DistributedAtomicLong::new(c, "/al", RetryPolicy::n_times(1, Duration::ZERO))
            .unwrap()
            .promote_to_lock(
                PromotedToLock::new(
                    "/al-lock",
                    Duration::from_secs(20),
                    RetryPolicy::n_times(20, Duration::from_millis(10)),
                )
                .unwrap(),
            );
        tasks.push(tokio::spawn(async move {
            let mut promoted = 0;
            for _ in 0..150 {
                loop {
                    let r = counter.increment().await.unwrap();
                    promoted += r.stats.promoted_tries;
                    if r.succeeded {
                        progress.step();
                        break;
                    }
                }
            }
            promoted
        }));
    }
    // Bounded by progress: 300 contended increments take what the machine makes them take.
    let promoted: u32 = join_making_progress("our increments", &progress, tasks)
        .await
        .into_iter()
        .sum();
    curator.expect("along-done 150").await;
    // Whether the race above sent any of our increments to the lock is the scheduler's call
    // (`promoted` may be 0): one more of ours goes through the lock Curator's take for
    // certain, its optimistic try made stale.
    eprintln!("increments of ours that went through the lock in the race: {promoted}");
    let lock = PromotedToLock::new(
        "/al-lock",
        Duration::from_secs(20),
        RetryPolicy::n_times(20, Duration::from_millis(10)),
    );
    let r = stale_increment(&cs[0], &chroot, "/al", lock.unwrap()).await;
    assert!(r.succeeded);
    assert_eq!((r.pre_value, r.post_value), (450, 451));
    assert_eq!(r.stats.promoted_tries, 1, "the shared lock was used");
    curator.send("along-get /al").await;
    assert_eq!(curator.expect("along-value ").await, "451");
    let counter = DistributedAtomicLong::new(&cs[0], "/al", RetryPolicy::never()).unwrap();
    assert_eq!(counter.get().await.unwrap().post_value, 451);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_our_members_enter_and_leave_one_double_barrier_together() {
    let connect = chroot_connect("interop_double_barrier");
    let cs = clients(&connect, 3).await;
    let mut java: Vec<Peer> = Vec::new();
    for _ in 0..2 {
        java.push(Peer::curator_recipes(&connect).await);
    }
    let ours: Vec<_> = cs[..2]
        .iter()
        .map(|c| Arc::new(DistributedDoubleBarrier::new(c, "/db", 4).unwrap()))
        .collect();
    // Three of four in: nobody, Java or Rust, goes through.
    java[0].send("dbarrier-enter /db 4").await;
    let first = {
        let m = ours[0].clone();
        tokio::spawn(async move { m.enter().await })
    };
    java[1].send("dbarrier-enter /db 4").await;
    bounded("three members in", async {
        while children(&cs[2], "/db").await.len() < 3 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!first.is_finished(), "ours entered with three of four");
    // The fourth, ours: everyone enters.
    bounded("our second member enters", ours[1].enter())
        .await
        .unwrap();
    bounded("our first member enters", first)
        .await
        .unwrap()
        .unwrap();
    for peer in &mut java {
        peer.expect("entered").await;
    }
    // Curator's members (children sorted as Curator sorts them) and ours leave together.
    let leaving: Vec<_> = ours
        .iter()
        .map(|m| {
            let m = m.clone();
            tokio::spawn(async move { m.leave().await })
        })
        .collect();
    java[0].send("dbarrier-leave").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        leaving.iter().all(|l| !l.is_finished()),
        "ours left while a Curator member was still in"
    );
    java[1].send("dbarrier-leave").await;
    for l in leaving {
        bounded("ours left", l).await.unwrap().unwrap();
    }
    for peer in &mut java {
        peer.expect("left").await;
    }
    assert!(children(&cs[2], "/db").await.is_empty());
}
