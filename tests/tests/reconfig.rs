//! Self-tests of the reconfigurable ensemble: members join and leave through `reconfig`.

use zookeeper_testkit::{Mode, ReconfigEnsemble, Role};

#[tokio::test]
async fn grows_by_a_participant_and_an_observer_and_shrinks_back() {
    let ensemble = ReconfigEnsemble::start(3).await.unwrap();
    assert_eq!(ensemble.config_ids().await.unwrap(), vec![1, 2, 3]);

    let four = ensemble.start_member(Role::Participant).await.unwrap();
    let config = ensemble.join(four).await.unwrap();
    assert!(
        config.contains(&ensemble.server_spec(four).unwrap()),
        "{config}"
    );
    let five = ensemble.start_member(Role::Observer).await.unwrap();
    ensemble.join(five).await.unwrap();
    assert_eq!(ensemble.config_ids().await.unwrap(), vec![1, 2, 3, 4, 5]);
    let states = ensemble.states().await;
    let observer = states.iter().find(|(id, _)| *id == five).unwrap();
    assert_eq!(observer.1.as_ref().map(|s| &s.mode), Some(&Mode::Observer));

    ensemble.remove(four).await.unwrap();
    ensemble.remove(five).await.unwrap();
    assert_eq!(ensemble.config_ids().await.unwrap(), vec![1, 2, 3]);
    assert_eq!(ensemble.ids(), vec![1, 2, 3]);
}
