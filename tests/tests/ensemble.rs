//! Self-tests of ensembles: election, failover, restart, pause.

use std::time::Instant;

use zookeeper_testkit::{bounded, Ensemble, Mode};
use zookeeper_tokio::Client;

#[tokio::test]
async fn an_ensemble_elects_survives_its_leader_and_takes_it_back() {
    let started = Instant::now();
    let ensemble = Ensemble::start(3).await.expect("ensemble starts");
    eprintln!("ensemble started in {:?}", started.elapsed());
    assert_eq!(ensemble.size(), 3);
    assert_eq!(ensemble.connect_string().split(',').count(), 3);

    let leader = ensemble.leader().await.unwrap();
    let states = ensemble.states().await;
    assert_eq!(states[leader].as_ref().unwrap().mode, Mode::Leader);
    let followers = states
        .iter()
        .filter(|s| s.as_ref().is_some_and(|s| s.mode == Mode::Follower))
        .count();
    assert_eq!(followers, 2);

    // A session kept off the leader is found on the member it is on, and only there.
    let off_the_leader = ensemble.connect_string_without(leader).unwrap();
    assert_eq!(off_the_leader.split(',').count(), 2);
    assert!(!off_the_leader.contains(&ensemble.addr(leader).unwrap().to_string()));
    assert!(ensemble.connect_string_without(3).is_err());
    let follower = (leader + 1) % 3;
    let on_one = bounded(
        "connect to one follower",
        Client::connect(&ensemble.addr(follower).unwrap().to_string()),
    )
    .await
    .unwrap();
    let session = on_one.session_id().0;
    assert_eq!(ensemble.member_serving(session).await, Some(follower));
    assert_eq!(ensemble.member_serving(session ^ 1).await, None);
    on_one.close().await;

    let failover = Instant::now();
    ensemble.kill(leader).unwrap();
    assert_eq!(ensemble.pid(leader).unwrap(), None);
    let new_leader = ensemble.leader().await.unwrap();
    eprintln!("new leader after {:?}", failover.elapsed());
    assert_ne!(new_leader, leader);

    ensemble.restart(leader).await.unwrap();
    let after = ensemble.wait_serving().await.unwrap();
    let states = ensemble.states().await;
    assert_eq!(
        states[leader].as_ref().unwrap().mode,
        Mode::Follower,
        "{states:?}"
    );
    assert_eq!(after, new_leader);
}

#[tokio::test]
async fn a_paused_leader_is_replaced_and_rejoins_when_resumed() {
    let ensemble = Ensemble::start(3).await.expect("ensemble starts");
    let leader = ensemble.leader().await.unwrap();
    ensemble.pause(leader).unwrap();
    let new_leader = ensemble.leader().await.unwrap();
    assert_ne!(new_leader, leader);
    ensemble.resume(leader).unwrap();
    ensemble.wait_serving().await.unwrap();
    let states = ensemble.states().await;
    assert!(states.iter().all(|s| s.is_some()), "{states:?}");
    assert_eq!(
        states[leader].as_ref().unwrap().mode,
        Mode::Follower,
        "{states:?}"
    );
}

#[tokio::test]
async fn a_member_cut_off_from_its_quorum_serves_read_only_when_enabled() {
    let ensemble = Ensemble::builder(3)
        .read_only_mode()
        .start()
        .await
        .expect("ensemble starts");
    let leader = ensemble.leader().await.unwrap();
    let survivor = (leader + 1) % 3;
    for i in 0..3 {
        if i != survivor {
            ensemble.kill(i).unwrap();
        }
    }
    let addr = ensemble.addr(survivor).unwrap();
    let deadline = Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Ok(srvr) = zookeeper_testkit::srvr(addr).await {
            if srvr.mode == Mode::ReadOnly {
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the survivor never went read-only"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        zookeeper_testkit::four_letter(addr, "isro").await.unwrap(),
        "ro"
    );
}
