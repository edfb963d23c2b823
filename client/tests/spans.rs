//! One span per request (feature `tracing-spans`), read back by a capturing subscriber: named
//! after the operation, a child of the caller's span, with OpenTelemetry's database
//! attributes, where it was sent, and how it ended; closed by the time the call returns.

mod common;

use std::time::Duration;

use tracing::Instrument;
use zookeeper_testkit::spans::capture;
use zookeeper_testkit::Proxy;
use zookeeper_tokio::{Client, CreateOptions, ErrorKind};

async fn connect(connect_string: &str) -> Client {
    Client::builder(connect_string)
        .connect_timeout(Duration::from_secs(30))
        .connect()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_request_has_a_span_named_after_it_in_the_callers_span() {
    let (capture, _guard) = capture();
    let c = connect(&common::connect_string("spans_attributes")).await;
    let server = zookeeper_testkit::shared_server().addr();
    async {
        c.create("/node", b"x", &CreateOptions::persistent())
            .await
            .unwrap();
        c.get_data("/node").await.unwrap();
        let created = capture.named("create");
        assert_eq!(created.len(), 1, "{created:?}");
        let got = capture.named("get_data");
        assert_eq!(got.len(), 1, "{got:?}");
        for (span, operation) in [(&created[0], "create"), (&got[0], "get_data")] {
            assert!(span.closed, "closed when the reply came: {span:?}");
            assert_eq!(span.parent, Some("caller"), "{span:?}");
            assert_eq!(span.field("db.system.name"), Some("zookeeper"));
            assert_eq!(span.field("db.operation.name"), Some(operation));
            assert_eq!(span.field("otel.kind"), Some("client"));
            // The caller's path, not the chrooted one.
            assert_eq!(span.field("zookeeper.path"), Some("/node"));
            assert_eq!(
                span.field("server.address"),
                Some(server.ip().to_string().as_str())
            );
            assert_eq!(
                span.field("server.port"),
                Some(server.port().to_string().as_str())
            );
            assert_eq!(
                span.field("zookeeper.session_id"),
                Some(c.session_id().to_string().as_str())
            );
            let xid: i32 = span.field("zookeeper.xid").unwrap().parse().unwrap();
            assert!(xid > 0, "{span:?}");
            assert_eq!(span.field("error.type"), None, "{span:?}");
        }
    }
    .instrument(tracing::info_span!("caller"))
    .await;
}

#[tokio::test]
async fn requests_sent_by_the_session_and_by_their_caller_both_record_their_xid() {
    let (capture, _guard) = capture();
    let c = connect(&common::connect_string("spans_xids")).await;
    // The first is written by its caller on the idle connection; the second, made while the
    // first is in flight, by the session task.
    let mut first = Box::pin(c.exists("/"));
    tokio::select! {
        biased;
        _ = &mut first => panic!("answered before the session task ran"),
        _ = std::future::ready(()) => {}
    }
    let second = c.exists("/");
    second.await.unwrap();
    first.await.unwrap();
    let spans = capture.named("exists");
    assert_eq!(spans.len(), 2, "{spans:?}");
    let xids: Vec<&str> = spans
        .iter()
        .map(|s| s.field("zookeeper.xid").expect("xid"))
        .collect();
    assert_ne!(xids[0], xids[1]);
    assert!(spans.iter().all(|s| s.closed && s.parent.is_none()));
}

#[tokio::test]
async fn a_failed_request_records_its_error() {
    let (capture, _guard) = capture();
    let c = connect(&common::connect_string("spans_error")).await;
    let err = c.get_data("/missing").await.unwrap_err();
    assert_eq!(err, ErrorKind::NoNode);
    let spans = capture.named("get_data");
    let span = &spans[0];
    assert!(span.closed);
    assert_eq!(span.field("error.type"), Some("no_node"));
    assert_eq!(span.field("db.response.status_code"), Some("-101"));
    assert_eq!(span.field("otel.status_code"), Some("ERROR"));
    assert_eq!(span.field("zookeeper.outcome_unknown"), None);
}

#[tokio::test]
async fn a_write_whose_reply_was_lost_records_an_unknown_outcome() {
    let (capture, _guard) = capture();
    let chroot = zookeeper_testkit::chroot_for("spans_lost");
    let proxy = Proxy::start(zookeeper_testkit::shared_server().addr())
        .await
        .unwrap();
    let c = connect(&format!("{}{chroot}", proxy.connect_string())).await;
    let cut = proxy.cut_after_next(15); // create2
    let err = c
        .create("/lost", b"", &CreateOptions::persistent())
        .await
        .unwrap_err();
    assert!(common::within("cut", cut.wait()).await.is_some());
    assert!(err.is_outcome_unknown());
    let spans = capture.named("create");
    let span = &spans[0];
    assert!(span.closed);
    assert_eq!(span.field("error.type"), Some("connection_loss"));
    assert_eq!(span.field("zookeeper.outcome_unknown"), Some("true"));
    assert_eq!(span.field("server.address"), Some("127.0.0.1"));
}
