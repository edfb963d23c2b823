//! Leader election against a real server.

mod common;

use common::{blip_rig, bounce_connection, bounded, chroot_connect, clients, BlipRig};
use zookeeper_recipes::{Holding, LeaderLatch, LossReason};

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
        while changes.next().await != Some(Holding::Waiting) {}
    })
    .await;
    assert!(!latches[1].has_leadership() && !latches[2].has_leadership());

    latches[0].resign().await.unwrap();
    assert_eq!(latches[0].state(), Holding::Released);
    assert_eq!(
        bounded("p1 change", changes.next()).await,
        Some(Holding::Held)
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
    cs[1].delete(&latch.node(), None).await.unwrap();
    assert_eq!(
        bounded("lost", lost).await,
        Holding::Lost(LossReason::NodeDeleted)
    );
    assert!(!latch.has_leadership());
}

/// A disconnect the client heals at once (same proxy, same session) still shows in the
/// latch's changes as `Suspended`, then `Held` again: a leader must hear that it may have
/// been cut off, however briefly. The latch lives on a runtime that is not driven while the
/// connection drops and comes back, so its task cannot look in between, as with a leader
/// whose runtime is busy during the blip: only an ordered record of the session's transitions
/// tells it a disconnect happened.
#[test]
fn a_disconnect_healed_at_once_is_still_a_suspension() {
    let BlipRig {
        net,
        app: leader,
        proxy,
        client: c,
    } = blip_rig("leader_brief_disconnect");

    let (latch, mut changes) = leader.block_on(async {
        let latch = bounded("start", LeaderLatch::start(&c, "/election", "a"))
            .await
            .unwrap();
        bounded("leads", latch.await_leadership()).await.unwrap();
        let mut changes = latch.changes();
        assert_eq!(bounded("state", changes.next()).await, Some(Holding::Held));
        (latch, changes)
    });

    // The latch's runtime stands still from here until the session is back.
    let session = c.session_id();
    net.block_on(async {
        bounce_connection(&c, &proxy).await;
    });
    assert_eq!(c.session_id(), session, "same session");

    leader.block_on(async {
        assert_eq!(
            bounded("suspension", changes.next()).await,
            Some(Holding::Suspended)
        );
        assert_eq!(
            bounded("leading again", changes.next()).await,
            Some(Holding::Held)
        );
        assert!(latch.has_leadership());
        latch.resign().await.unwrap();
        assert_eq!(
            bounded("closed", changes.next()).await,
            Some(Holding::Released)
        );
    });
}

/// A follower's predecessor resigning makes it leader through the same handoff as a lock's:
/// no listing of the election, only the read of its own node that proves it is still ours.
/// Checked on the follower's wire: after its watch is set, the only requests are that read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_takes_over_without_listing_the_election() {
    use zookeeper_testkit::{FrameEvent, Proxy};
    const GET_DATA: i32 = 4;
    let chroot = zookeeper_testkit::chroot_for("leader_handoff_no_listing");
    let server = zookeeper_testkit::shared_server();
    let leader_client = common::client(&server.connect_string_with_chroot(&chroot)).await;
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let follower_client = common::client(&format!("{}{}", proxy.connect_string(), chroot)).await;
    let leader = bounded(
        "start",
        LeaderLatch::start(&leader_client, "/election", "a"),
    )
    .await
    .unwrap();
    bounded("a leads", leader.await_leadership()).await.unwrap();
    let follower = bounded(
        "start",
        LeaderLatch::start(&follower_client, "/election", "b"),
    )
    .await
    .unwrap();
    let mut changes = follower.changes();
    // `Waiting` is published once the watch on the leader's node is set.
    bounded("b follows", async {
        while changes.next().await != Some(Holding::Waiting) {}
    })
    .await;
    proxy.record_frames(true);
    leader.resign().await.unwrap();
    assert_eq!(
        bounded("b leads", changes.next()).await,
        Some(Holding::Held)
    );
    let log = proxy.take_frame_log();
    let asked: Vec<i32> = log
        .iter()
        .filter_map(|e| match *e {
            FrameEvent::ClientToServer { xid, opcode, .. } if xid >= 0 => Some(opcode),
            _ => None,
        })
        .collect();
    assert_eq!(asked, [GET_DATA], "the takeover asked {asked:?}: {log:?}");
    follower.resign().await.unwrap();
}
