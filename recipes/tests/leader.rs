//! Leader election against a real server.

mod common;

use common::{bounded, chroot_connect, clients};
use zk_recipes::{LeaderLatch, Leadership, LossReason};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_in_order_and_resign_hands_over() {
    let connect = chroot_connect("leader_order");
    let cs = clients(&connect, 3).await;
    let mut latches = Vec::new();
    for (i, c) in cs.iter().enumerate() {
        latches.push(
            bounded(
                "start",
                LeaderLatch::start(c, "/election", &format!("p{i}")),
            )
            .await
            .unwrap(),
        );
    }
    bounded("p0 leads", latches[0].await_leadership())
        .await
        .unwrap();
    let mut changes = latches[1].changes();
    let parts = latches[2].participants().await.unwrap();
    let ids: Vec<&str> = parts.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["p0", "p1", "p2"]);
    assert!(parts[0].is_leader && !parts[1].is_leader);
    assert!(parts[0].node.starts_with("_c_") && parts[0].node.contains("-latch-"));
    bounded("p1 follows", async {
        while changes.next().await != Some(Leadership::Follower) {}
    })
    .await;
    assert!(!latches[1].has_leadership() && !latches[2].has_leadership());

    latches[0].resign().await.unwrap();
    assert_eq!(latches[0].state(), Leadership::Closed);
    assert_eq!(
        bounded("p1 change", changes.next()).await,
        Some(Leadership::Leader)
    );
    assert!(latches[1].has_leadership());
    assert!(!latches[2].has_leadership());
    assert!(latches[1].fencing_token() > latches[0].fencing_token());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leadership_is_lost_when_our_node_is_deleted() {
    let connect = chroot_connect("leader_deleted");
    let cs = clients(&connect, 2).await;
    let latch = bounded("start", LeaderLatch::start(&cs[0], "/election", "a"))
        .await
        .unwrap();
    bounded("leads", latch.await_leadership()).await.unwrap();
    let lost = latch.lost();
    cs[1].delete(latch.node(), None).await.unwrap();
    assert_eq!(
        bounded("lost", lost).await,
        Leadership::Lost(LossReason::NodeDeleted)
    );
    assert!(!latch.has_leadership());
}
