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
    assert_eq!(mode_of(&ensemble, five).await, Mode::Observer);

    ensemble.remove(four).await.unwrap();
    ensemble.remove(five).await.unwrap();
    assert_eq!(ensemble.config_ids().await.unwrap(), vec![1, 2, 3]);
    assert_eq!(ensemble.ids(), vec![1, 2, 3]);
}

/// The mode member `id` reports. A member may not answer `srvr` for a moment (a 1 s read on a
/// loaded machine, or while it re-synchronises after a configuration change), so this asks
/// again, for up to a minute, until it does.
async fn mode_of(ensemble: &ReconfigEnsemble, id: u32) -> Mode {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let states = ensemble.states().await;
        if let Some((_, Some(srvr))) = states.into_iter().find(|(member, _)| *member == id) {
            return srvr.mode;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "member {id} never answered srvr"
        );
        // Polling: the server reports its mode only when asked.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
