//! The metrics of the `metrics` feature, read from a recorder after known workloads against a
//! real server: exact counts by operation and error kind, one duration per finished request,
//! connections, reconnects, session states, watches and bytes.
//!
//! Each test runs its client on a current-thread runtime with a recorder of its own on that
//! thread (`zookeeper_testkit::metrics::recorded`), session task included, so that tests
//! running in parallel never see each other's metrics.

mod common;

use std::time::Duration;

use common::{connect_string, within};
use zookeeper_testkit::metrics::recorded;
use zookeeper_testkit::Proxy;
use zookeeper_tokio::{
    AddWatchMode, Client, CreateOptions, ErrorKind, EventType, SessionState, MIN_FRAME_LIMIT,
};

async fn connect(test: &str) -> Client {
    Client::builder(&connect_string(test))
        .session_timeout(Duration::from_secs(10))
        .connect()
        .await
        .unwrap()
}

#[test]
fn requests_are_counted_by_operation_with_durations_and_error_kinds() {
    let m = recorded(|| async {
        let c = connect("metrics_requests").await;
        c.create("/n", b"data", &CreateOptions::persistent())
            .await
            .unwrap();
        for _ in 0..5 {
            c.get_data("/n").await.unwrap();
        }
        for _ in 0..3 {
            let e = c.get_data("/missing").await.unwrap_err();
            assert_eq!(e, ErrorKind::NoNode);
        }
        // Refused before sending: a request all the same, failed with its kind.
        let e = c.get_data("no-slash").await.unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::InvalidPath { .. }), "{e}");
        let e = c.set_data("/n", b"x", Some(7)).await.unwrap_err();
        assert_eq!(e, ErrorKind::BadVersion);
        // `exists` answers a missing node with `None`: not an error.
        assert!(c.exists("/missing").await.unwrap().is_none());
        // Dropped before its reply: counted, without a duration.
        drop(c.get_data("/n"));
        c.close().await;
    });

    assert_eq!(
        m.counter("zookeeper_requests_total", &[("operation", "get_data")]),
        10,
        "{:?}",
        m.label_sets("zookeeper_requests_total")
    );
    assert_eq!(
        m.counter("zookeeper_requests_total", &[("operation", "create")]),
        1
    );
    assert_eq!(
        m.counter("zookeeper_requests_total", &[("operation", "set_data")]),
        1
    );
    assert_eq!(
        m.counter("zookeeper_requests_total", &[("operation", "exists")]),
        1
    );
    let durations = m.histogram(
        "zookeeper_request_duration_seconds",
        &[("operation", "get_data")],
    );
    assert_eq!(durations.len(), 9, "one per request that finished");
    assert!(
        durations.iter().all(|&d| (0.0..30.0).contains(&d)),
        "{durations:?}"
    );
    let errors = "zookeeper_request_errors_total";
    let get_data = ("operation", "get_data");
    assert_eq!(m.counter(errors, &[get_data, ("kind", "no_node")]), 3);
    assert_eq!(m.counter(errors, &[get_data, ("kind", "invalid_path")]), 1);
    assert_eq!(
        m.counter(
            errors,
            &[("operation", "set_data"), ("kind", "bad_version")]
        ),
        1
    );
    assert_eq!(
        m.label_sets(errors).len(),
        3,
        "no other error: {:?}",
        m.label_sets(errors)
    );
    assert_eq!(m.gauge("zookeeper_requests_in_flight", &[]), 0.0);

    assert_eq!(m.counter("zookeeper_connection_attempts_total", &[]), 1);
    assert_eq!(m.counter("zookeeper_connections_established_total", &[]), 1);
    assert_eq!(m.counter("zookeeper_reconnects_total", &[]), 0);
    let changes = "zookeeper_session_state_changes_total";
    assert_eq!(m.counter(changes, &[("state", "connected")]), 1);
    assert_eq!(m.counter(changes, &[("state", "closed")]), 1);
    assert_eq!(
        m.label_sets(changes).len(),
        2,
        "{:?}",
        m.label_sets(changes)
    );
    // The session is gone with its task: no state holds it any more.
    for state in ["connecting", "connected", "closed"] {
        assert_eq!(m.gauge("zookeeper_sessions", &[("state", state)]), 0.0);
    }
    assert!(m.counter("zookeeper_bytes_sent_total", &[]) > 0);
    assert!(m.counter("zookeeper_bytes_received_total", &[]) > 0);
}

#[test]
fn a_reply_over_the_incoming_limit_is_counted_as_a_frame_and_an_error() {
    let m = recorded(|| async {
        let c = Client::builder(&connect_string("metrics_oversized"))
            .max_incoming_frame(MIN_FRAME_LIMIT)
            .connect()
            .await
            .unwrap();
        let big = vec![7u8; 2 * MIN_FRAME_LIMIT];
        c.create("/big", &big, &CreateOptions::persistent())
            .await
            .unwrap();
        let e = c.get_data("/big").await.unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::ReplyTooLarge { .. }), "{e}");
        c.get_data("/").await.unwrap();
        c.close().await;
    });
    assert_eq!(m.counter("zookeeper_frames_over_limit_total", &[]), 1);
    assert_eq!(
        m.counter(
            "zookeeper_request_errors_total",
            &[("operation", "get_data"), ("kind", "reply_too_large")]
        ),
        1
    );
    assert_eq!(
        m.counter("zookeeper_connection_losses_total", &[("reason", "closed")]),
        0
    );
}

#[test]
fn watch_registrations_and_events_are_counted_by_kind() {
    let m = recorded(|| async {
        let c = connect("metrics_watches").await;
        // One node per watch: the server keeps one watch mode per connection and path, so a
        // recursive watch would absorb a child watch set on its own path.
        for node in ["/w", "/p", "/r"] {
            c.create(node, b"1", &CreateOptions::persistent())
                .await
                .unwrap();
        }
        let (_, _, data) = c.get_data_and_watch("/w").await.unwrap();
        let (_, exist) = c.exists_and_watch("/later").await.unwrap();
        let (_, _, child) = c.get_children_and_watch("/p").await.unwrap();
        let mut tree = c
            .add_watch("/r", AddWatchMode::PersistentRecursive)
            .await
            .unwrap();

        c.set_data("/w", b"2", None).await.unwrap();
        c.create("/later", b"", &CreateOptions::persistent())
            .await
            .unwrap();
        c.create("/p/c", b"", &CreateOptions::persistent())
            .await
            .unwrap();
        c.set_data("/r", b"2", None).await.unwrap();
        c.create("/r/c", b"", &CreateOptions::persistent())
            .await
            .unwrap();
        assert_eq!(
            within("data", data).await.event_type,
            EventType::NodeDataChanged
        );
        assert_eq!(
            within("exist", exist).await.event_type,
            EventType::NodeCreated
        );
        assert_eq!(
            within("child", child).await.event_type,
            EventType::NodeChildrenChanged
        );
        let events = common::next_events(&mut tree, 2).await;
        assert_eq!(
            events,
            [
                (EventType::NodeDataChanged, "/r".to_string()),
                (EventType::NodeCreated, "/r/c".to_string())
            ]
        );
        c.close().await;
    });
    let registrations = "zookeeper_watch_registrations_total";
    for kind in ["data", "exist", "child", "persistent_recursive"] {
        assert_eq!(m.counter(registrations, &[("kind", kind)]), 1, "{kind}");
    }
    assert_eq!(m.label_sets(registrations).len(), 4);
    let events = "zookeeper_watch_events_total";
    // A change each for the data watch and the recursive one, a creation each for the exist
    // watch and the recursive one. The session's end, which closes the recursive stream, is
    // not a watch event.
    assert_eq!(m.counter(events, &[("event", "node_data_changed")]), 2);
    assert_eq!(m.counter(events, &[("event", "node_created")]), 2);
    assert_eq!(m.counter(events, &[("event", "node_children_changed")]), 1);
    assert_eq!(m.label_sets(events).len(), 3, "{:?}", m.label_sets(events));
    assert_eq!(m.counter("zookeeper_watch_events_coalesced_total", &[]), 0);
}

#[test]
fn events_folded_for_a_slow_persistent_reader_are_counted() {
    let m = recorded(|| async {
        let c = Client::builder(&connect_string("metrics_coalesced"))
            .max_queued_events(2)
            .connect()
            .await
            .unwrap();
        c.create("/p", b"0", &CreateOptions::persistent())
            .await
            .unwrap();
        let mut stream = c.add_watch("/p", AddWatchMode::Persistent).await.unwrap();
        for i in 1..=5 {
            c.set_data("/p", format!("{i}").as_bytes(), None)
                .await
                .unwrap();
        }
        // Every notification comes before the reply of a request sent after the change.
        c.get_data("/p").await.unwrap();
        // Two queued, the three others folded into one change of /p.
        let events = common::next_events(&mut stream, 3).await;
        assert!(
            events
                .iter()
                .all(|e| *e == (EventType::NodeDataChanged, "/p".to_string())),
            "{events:?}"
        );
        c.close().await;
    });
    assert_eq!(m.counter("zookeeper_watch_events_coalesced_total", &[]), 3);
    assert_eq!(
        m.counter(
            "zookeeper_watch_registrations_total",
            &[("kind", "persistent")]
        ),
        1
    );
}

#[test]
fn a_lost_connection_is_counted_with_the_reconnect_that_resumes_the_session() {
    let m = recorded(|| async {
        let server = zookeeper_testkit::shared_server();
        let proxy = Proxy::start(server.addr()).await.unwrap();
        let c = Client::builder(&proxy.connect_string())
            .session_timeout(Duration::from_secs(10))
            .connect()
            .await
            .unwrap();
        let mut changes = c.state_changes();
        proxy.drop_all();
        within("disconnected then connected", async {
            assert_eq!(changes.next().await, Some(SessionState::Disconnected));
            assert_eq!(changes.next().await, Some(SessionState::Connected));
        })
        .await;
        c.get_data("/").await.unwrap();
        c.close().await;
    });
    assert_eq!(
        m.counter("zookeeper_connection_losses_total", &[("reason", "closed")]),
        1
    );
    assert_eq!(m.label_sets("zookeeper_connection_losses_total").len(), 1);
    assert_eq!(m.counter("zookeeper_connection_attempts_total", &[]), 2);
    assert_eq!(m.counter("zookeeper_connections_established_total", &[]), 2);
    assert_eq!(m.counter("zookeeper_reconnects_total", &[]), 1);
    let changes = "zookeeper_session_state_changes_total";
    assert_eq!(m.counter(changes, &[("state", "connected")]), 2);
    assert_eq!(m.counter(changes, &[("state", "disconnected")]), 1);
    assert_eq!(m.counter("zookeeper_session_expirations_total", &[]), 0);
}

#[test]
fn an_expired_session_is_counted() {
    let m = recorded(|| async {
        let connect = connect_string("metrics_expired");
        let first = Client::connect(&connect).await.unwrap();
        let (id, password) = (first.session_id(), first.session_password());
        first.close().await;
        // Resuming a closed session: the server answers that it expired.
        let e = Client::builder(&connect)
            .session(id, &password)
            .connect()
            .await
            .unwrap_err();
        assert_eq!(e, ErrorKind::SessionExpired);
    });
    assert_eq!(m.counter("zookeeper_session_expirations_total", &[]), 1);
    assert_eq!(
        m.counter(
            "zookeeper_session_state_changes_total",
            &[("state", "expired")]
        ),
        1
    );
    assert_eq!(m.counter("zookeeper_connection_attempts_total", &[]), 2);
    assert_eq!(m.counter("zookeeper_connections_established_total", &[]), 1);
}

#[test]
fn no_label_carries_a_path_or_a_session_id() {
    let m = recorded(|| async {
        let c = connect("metrics_labels").await;
        let _ = c.get_data("/secret-path").await;
        let _ = c
            .create("/secret-path/x", b"", &CreateOptions::persistent())
            .await;
        c.close().await;
    });
    let names = [
        "zookeeper_requests_total",
        "zookeeper_request_duration_seconds",
        "zookeeper_request_errors_total",
    ];
    for name in names {
        for labels in m.label_sets(name) {
            for (key, value) in labels {
                assert!(
                    ["operation", "kind"].contains(&key.as_str()),
                    "{name}: {key}={value}"
                );
                assert!(
                    !value.contains('/') && !value.contains("0x"),
                    "{name}: {value}"
                );
            }
        }
    }
}
