//! Self-tests of ensembles: election, failover, restart, pause.

use std::time::Instant;

use zk_tests::{Ensemble, Mode};

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
