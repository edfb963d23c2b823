//! The runtime that runs a session shuts down while handles on it live on elsewhere: a
//! service that connected on a runtime of its own and dropped it, or a runtime shut down
//! during a service's exit while another thread still looks. The session is over, and every
//! way a handle looks must say so at once: not only calls, but the state a lock holder or a
//! health check reads, the transitions a supervisor follows, and the watches set before.

mod common;

use zookeeper_tokio::{AddWatchMode, CreateOptions, ErrorKind, EventType, SessionState};

fn a_session_whose_runtime_shut_down_reads_closed_everywhere(
    session_runtime: tokio::runtime::Runtime,
) {
    let client = session_runtime.block_on(common::client("session_runtime_gone"));
    let (mut changes, watcher, mut stream) = session_runtime.block_on(async {
        client
            .create("/n", b"x", &CreateOptions::persistent())
            .await
            .unwrap();
        let changes = client.state_changes();
        let (_, _, watcher) = client.get_data_and_watch("/n").await.unwrap();
        let stream = client
            .add_watch("/n", AddWatchMode::Persistent)
            .await
            .unwrap();
        (changes, watcher, stream)
    });
    assert_eq!(client.state(), SessionState::Connected);
    assert!(client.lease_deadline().is_some());

    drop(session_runtime);

    // Read from a plain thread first, as a health check or a lock holder's guard would.
    assert_eq!(
        client.state(),
        SessionState::Closed,
        "the state of a session whose task is gone"
    );
    assert_eq!(
        client.lease_deadline(),
        None,
        "no server vouches for a session whose task is gone"
    );
    common::current_thread().block_on(async {
        let next = common::within("the next transition", changes.next()).await;
        assert_eq!(next, Some(SessionState::Closed));
        let after = common::within("the end of the transitions", changes.next()).await;
        assert_eq!(after, None, "nothing follows the terminal state");

        let fired = common::within("the watch to fire", watcher).await;
        assert_eq!(
            (fired.event_type, fired.state),
            (EventType::None, SessionState::Closed),
            "a one-shot watch set before"
        );
        let last = common::within("the stream's last event", stream.next())
            .await
            .expect("a terminal event before the stream ends");
        assert_eq!(
            (last.event_type, last.state),
            (EventType::None, SessionState::Closed),
            "a persistent watch set before"
        );

        let err = common::within("a call after the runtime is gone", client.exists("/n"))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::Closed);
    });
}

#[test]
fn on_a_multi_thread_runtime() {
    a_session_whose_runtime_shut_down_reads_closed_everywhere(common::multi_thread());
}

#[test]
fn on_a_current_thread_runtime() {
    a_session_whose_runtime_shut_down_reads_closed_everywhere(common::current_thread());
}
