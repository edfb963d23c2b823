//! Interoperability with Curator 5.4 on the same paths, for the counters, barriers and group
//! membership (the Java side is `tests/peers/CuratorRecipesPeer.java`, a separate process with
//! its own session).

mod common;

use std::time::Duration;

use common::peers::Peer;
use common::{bounded, chroot_connect, clients};
use zookeeper_recipes::{DistributedAtomicLong, PromotedToLock, RetryPolicy, SharedCount};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_count_increments_from_curator_and_us_interleave_with_none_lost() {
    let connect = chroot_connect("interop_shared_count");
    let cs = clients(&connect, 2).await;
    let mut curator = Peer::curator_recipes(&connect).await;
    curator.send("shared-incr /sc 150").await;
    let mut tasks = Vec::new();
    for c in &cs {
        let count = SharedCount::start(c, "/sc", 0).await.unwrap();
        tasks.push(tokio::spawn(async move {
            for _ in 0..150 {
                loop {
                    let seen = count.versioned();
                    if count.try_set_count(seen.count + 1, seen).await.unwrap() {
                        break;
                    }
                }
            }
        }));
    }
    for t in tasks {
        bounded("our increments", t).await.unwrap();
    }
    curator.expect("shared-done 150").await;
    curator.send("shared-get /sc").await;
    assert_eq!(curator.expect("shared-value ").await, "450");
    let ours = SharedCount::start(&cs[0], "/sc", 0).await.unwrap();
    assert_eq!(ours.count(), 450);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn atomic_long_increments_from_curator_and_us_interleave_with_none_lost() {
    let connect = chroot_connect("interop_atomic_long");
    let cs = clients(&connect, 2).await;
    let mut curator = Peer::curator_recipes(&connect).await;
    curator.send("along-incr /al /al-lock 150").await;
    let mut tasks = Vec::new();
    for c in &cs {
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
                        break;
                    }
                }
            }
            promoted
        }));
    }
    let mut promoted = 0;
    for t in tasks {
        promoted += bounded("our increments", t).await.unwrap();
    }
    curator.expect("along-done 150").await;
    curator.send("along-get /al").await;
    assert_eq!(curator.expect("along-value ").await, "450");
    let counter = DistributedAtomicLong::new(&cs[0], "/al", RetryPolicy::never()).unwrap();
    assert_eq!(counter.get().await.unwrap().post_value, 450);
    assert!(promoted > 0, "the shared lock was used");
}
