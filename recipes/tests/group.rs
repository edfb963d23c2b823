//! PersistentNode and GroupMember against real servers: a node created again when deleted
//! (and after its data changed), another session's node waited out and never taken over, a
//! close right after start leaving nothing, the node in a new session after expiry, kept
//! through a member kill; members seeing each other come and go, and a Curator member.

mod common;

use std::time::Duration;

use common::faults::{expire, move_session};
use common::peers::Peer;
use common::{bounded, chroot_connect, client};
use zookeeper_recipes::{GroupMember, PersistentNode, PersistentNodeState};
use zookeeper_testkit::Ensemble;
use zookeeper_tokio::{CreateOptions, Stat};

/// Waits until the node is ours with a czxid other than `not`; returns its stat.
async fn created(node: &PersistentNode, not: i64) -> Stat {
    let mut states = node.states();
    let state = bounded(
        "created",
        states.wait_for(|s| matches!(s, PersistentNodeState::Created(stat) if stat.czxid != not)),
    )
    .await
    .unwrap();
    match &*state {
        PersistentNodeState::Created(stat) => *stat,
        _ => unreachable!(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_node_comes_back_when_deleted_even_after_its_data_changed() {
    let connect = chroot_connect("persistent_node_back");
    let ours = client(&connect).await;
    let other = client(&connect).await;
    let node =
        PersistentNode::start(&ours, "/svc/a/me", b"v1", CreateOptions::ephemeral()).unwrap();
    let first = created(&node, 0).await;
    assert_eq!(first.ephemeral_owner, ours.session_id().0);
    other.delete("/svc/a/me", None).await.unwrap();
    let second = created(&node, first.czxid).await;
    assert_eq!(&other.get_data("/svc/a/me").await.unwrap().0[..], b"v1");
    // A data change fires the watch; the node is still watched after it (CURATOR-258).
    node.set_data(b"v2");
    bounded("data written", async {
        while &other.get_data("/svc/a/me").await.unwrap().0[..] != b"v2" {
            tokio::task::yield_now().await;
        }
    })
    .await;
    other.delete("/svc/a/me", None).await.unwrap();
    created(&node, second.czxid).await;
    assert_eq!(&other.get_data("/svc/a/me").await.unwrap().0[..], b"v2");
    node.close().await.unwrap();
    assert!(other.exists("/svc/a/me").await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_mode_node_comes_back_too() {
    let c = client(&chroot_connect("persistent_node_persistent")).await;
    let node = PersistentNode::start(&c, "/p", b"x", CreateOptions::persistent()).unwrap();
    let first = created(&node, 0).await;
    assert_eq!(first.ephemeral_owner, 0);
    c.delete("/p", None).await.unwrap();
    created(&node, first.czxid).await;
    assert!(PersistentNode::start(&c, "/q", b"", CreateOptions::ephemeral_sequential()).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_sessions_ephemeral_node_is_waited_out_not_taken_over() {
    let connect = chroot_connect("persistent_node_blocked");
    let ours = client(&connect).await;
    let squatter = client(&connect).await;
    squatter
        .create("/me", b"theirs", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let node = PersistentNode::start(&ours, "/me", b"ours", CreateOptions::ephemeral()).unwrap();
    let mut states = node.states();
    let state = bounded(
        "blocked",
        states.wait_for(|s| matches!(s, PersistentNodeState::Blocked { .. })),
    )
    .await
    .unwrap()
    .clone();
    assert_eq!(
        state,
        PersistentNodeState::Blocked {
            owner: squatter.session_id().0
        }
    );
    // Curator would have written its data into the squatter's node, which then vanishes
    // with the squatter's session.
    assert_eq!(&ours.get_data("/me").await.unwrap().0[..], b"theirs");
    squatter.close().await;
    let stat = created(&node, 0).await;
    assert_eq!(stat.ephemeral_owner, ours.session_id().0);
    assert_eq!(&ours.get_data("/me").await.unwrap().0[..], b"ours");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_right_after_start_leaves_nothing_behind() {
    let connect = chroot_connect("persistent_node_close_at_once");
    let c = client(&connect).await;
    let observer = client(&connect).await;
    for i in 0..20 {
        let path = format!("/n{i}");
        let node = PersistentNode::start(&c, &path, b"", CreateOptions::persistent()).unwrap();
        // Give the create a head start some of the time.
        for _ in 0..i % 4 {
            tokio::task::yield_now().await;
        }
        node.close().await.unwrap();
        assert!(
            observer.exists(&path).await.unwrap().is_none(),
            "{path} left behind"
        );
    }
    // And dropped without close: deleted in the background.
    let node = PersistentNode::start(&c, "/dropped", b"", CreateOptions::persistent()).unwrap();
    created(&node, 0).await;
    drop(node);
    bounded("dropped node deleted", async {
        while observer.exists("/dropped").await.unwrap().is_some() {
            tokio::task::yield_now().await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_is_created_again_in_a_new_session_after_expiry() {
    let common::faults::ExpiryRig {
        proxy,
        direct,
        sessions,
    } = common::faults::expiry_rig("persistent_node_expiry").await;
    let observer = client(&direct).await;
    let node =
        PersistentNode::start(&sessions, "/me", b"here", CreateOptions::ephemeral()).unwrap();
    let first = created(&node, 0).await;
    expire(&proxy, &direct, &sessions.client()).await;
    let second = created(&node, first.czxid).await;
    assert_ne!(second.ephemeral_owner, first.ephemeral_owner);
    assert_eq!(second.ephemeral_owner, sessions.client().session_id().0);
    let (data, stat) = observer.get_data("/me").await.unwrap();
    assert_eq!(
        (&data[..], stat.ephemeral_owner),
        (&b"here"[..], second.ephemeral_owner)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_stays_when_the_member_serving_its_session_dies() {
    let ensemble = Ensemble::start(3).await.unwrap();
    bounded("ensemble serving", ensemble.wait_serving())
        .await
        .unwrap();
    // Off the leader: the member killed is a follower, so no election, and the session moves
    // to the other follower at once, well within its 8 s.
    let c = common::faults::client_off_the_leader(&ensemble, Duration::from_secs(8)).await;
    let member = GroupMember::start(&c, "/g", "me", b"p").await.unwrap();
    let PersistentNodeState::Created(before) = member.state() else {
        panic!("{:?}", member.state())
    };
    assert!(move_session(&ensemble, &c).await.is_some());
    let observer = client(&ensemble.connect_string()).await;
    let (_, stat) = observer.get_data("/g/me").await.unwrap();
    assert_eq!(stat.czxid, before.czxid, "the same node, kept");
    assert_eq!(member.members().len(), 1);
    member.close().await.unwrap();
}

/// Waits until `m` lists exactly `names`.
async fn wait_members(m: &GroupMember, names: &[&str]) {
    let mut changes = m.changes();
    bounded("members", async {
        loop {
            let now: Vec<String> = m.members().into_keys().collect();
            if now == names {
                return;
            }
            changes.next().await.unwrap();
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_see_each_other_come_and_go() {
    let common::faults::ExpiryRig {
        proxy,
        direct,
        sessions,
    } = common::faults::expiry_rig("group_members").await;
    let a = GroupMember::start(&client(&direct).await, "/g", "a", b"pa")
        .await
        .unwrap();
    let b = GroupMember::start(&client(&direct).await, "/g", "b", b"pb")
        .await
        .unwrap();
    // c lives behind the proxy, in renewing sessions.
    let c = GroupMember::start(&sessions, "/g", "c", b"pc")
        .await
        .unwrap();
    wait_members(&a, &["a", "b", "c"]).await;
    assert_eq!(&a.members()["c"][..], b"pc");
    b.set_payload(b"pb2");
    bounded("payload seen", async {
        let mut changes = a.changes();
        while &a.members()["b"][..] != b"pb2" {
            changes.next().await.unwrap();
        }
    })
    .await;
    b.close().await.unwrap();
    wait_members(&a, &["a", "c"]).await;
    // c's session expires: it drops out, and comes back in its new session.
    let observer = client(&direct).await;
    expire(&proxy, &direct, &sessions.client()).await;
    bounded("c back in its new session", async {
        loop {
            let (stat, watcher) = observer.exists_and_watch("/g/c").await.unwrap();
            let renewed = sessions.client();
            if stat.is_some_and(|s| s.ephemeral_owner == renewed.session_id().0) {
                return;
            }
            // A change of the node, or the new session's state.
            let mut states = renewed.state_watcher();
            tokio::select! {
                _ = watcher => {}
                _ = states.changed() => {}
            }
        }
    })
    .await;
    wait_members(&a, &["a", "c"]).await;
    wait_members(&c, &["a", "c"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_curator_member_and_ours_see_each_other() {
    let connect = chroot_connect("group_interop");
    let c = client(&connect).await;
    let mut curator = Peer::curator_recipes(&connect).await;
    curator.send("member /group java hello").await;
    curator.expect("member-started").await;
    let ours = GroupMember::start(&c, "/group", "rust", b"hi")
        .await
        .unwrap();
    let mut changes = ours.changes();
    bounded("curator's member seen", async {
        while !ours.members().contains_key("java") {
            changes.next().await.unwrap();
        }
    })
    .await;
    assert_eq!(&ours.members()["java"][..], b"hello");
    // Curator's view lists us.
    let listed = bounded("curator lists us", async {
        loop {
            curator.send("members").await;
            let mut members = Vec::new();
            loop {
                let line = curator.expect("").await;
                if line == "end" {
                    break;
                }
                members.push(line);
            }
            if members.iter().any(|m| m == "member rust hi") {
                return members;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(
        listed.contains(&"member java hello".to_string()),
        "{listed:?}"
    );
    curator.send("member-close").await;
    curator.expect("member-closed").await;
    bounded("curator's member gone", async {
        while ours.members().contains_key("java") {
            changes.next().await.unwrap();
        }
    })
    .await;
    ours.close().await.unwrap();
}
