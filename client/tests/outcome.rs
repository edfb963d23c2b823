//! `Error::is_outcome_unknown` against a real server: a write whose reply was lost (through
//! the testkit's proxy, which lets the request reach the server and then cuts the connection,
//! or holds the reply past the request's deadline) reports that it may have been applied, and
//! it was; reads, refusals by the server and writes that never left the client do not.

mod common;

use std::time::Duration;

use common::{wait_state, within};
use zookeeper_testkit::Proxy;
use zookeeper_tokio::{Acl, Client, CreateOptions, ErrorKind, MultiOp, SessionState};

// Opcodes as the proxy sees them.
const DELETE: i32 = 2;
const GET_DATA: i32 = 4;
const SET_DATA: i32 = 5;
const SET_ACL: i32 = 7;
const MULTI: i32 = 14;
const CREATE2: i32 = 15;

/// A proxy to the shared server, a client behind it and one straight to the server, both in
/// a fresh chroot for `test`.
async fn behind_a_proxy(test: &str, fail_fast: bool) -> (Proxy, Client, Client) {
    common::init_tracing();
    let chroot = zookeeper_testkit::chroot_for(test);
    let server = zookeeper_testkit::shared_server();
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let behind = Client::builder(&format!("{}{}", proxy.connect_string(), chroot))
        .session_timeout(Duration::from_secs(10))
        .connect_timeout(Duration::from_secs(30))
        .fail_fast(fail_fast)
        .connect()
        .await
        .unwrap();
    let direct = Client::builder(&server.connect_string_with_chroot(&chroot))
        .connect_timeout(Duration::from_secs(30))
        .connect()
        .await
        .unwrap();
    (proxy, behind, direct)
}

fn persistent() -> CreateOptions {
    CreateOptions::persistent()
}

#[tokio::test]
async fn writes_whose_reply_was_cut_may_have_been_applied_and_were() {
    let (proxy, c, direct) = behind_a_proxy("outcome_cut_writes", false).await;
    direct.create("/set", b"", &persistent()).await.unwrap();
    direct.create("/gone", b"", &persistent()).await.unwrap();
    direct.create("/acl", b"", &persistent()).await.unwrap();

    let cut = proxy.cut_after_next(CREATE2);
    let err = c.create("/made", b"", &persistent()).await.unwrap_err();
    assert!(within("cut", cut.wait()).await.is_some());
    assert_eq!(err, ErrorKind::ConnectionLoss);
    assert!(err.is_outcome_unknown(), "{err:?}");
    assert!(direct.exists("/made").await.unwrap().is_some(), "applied");

    wait_state(&c, |s| s == SessionState::Connected).await;
    let cut = proxy.cut_after_next(SET_DATA);
    let err = c.set_data("/set", b"new", None).await.unwrap_err();
    assert!(within("cut", cut.wait()).await.is_some());
    assert!(err.is_outcome_unknown(), "{err:?}");
    assert_eq!(&direct.get_data("/set").await.unwrap().0[..], b"new");

    wait_state(&c, |s| s == SessionState::Connected).await;
    let cut = proxy.cut_after_next(DELETE);
    let err = c.delete("/gone", None).await.unwrap_err();
    assert!(within("cut", cut.wait()).await.is_some());
    assert!(err.is_outcome_unknown(), "{err:?}");
    assert!(direct.exists("/gone").await.unwrap().is_none(), "applied");
    // Which is why a blind retry misleads: the node is gone, by our own hand.
    wait_state(&c, |s| s == SessionState::Connected).await;
    let again = c.delete("/gone", None).await.unwrap_err();
    assert_eq!(again, ErrorKind::NoNode);
    assert!(!again.is_outcome_unknown());

    let cut = proxy.cut_after_next(MULTI);
    let ops = vec![MultiOp::create("/in-multi", b"", &persistent())];
    let err = c.multi(ops).await.unwrap_err();
    assert!(within("cut", cut.wait()).await.is_some());
    assert!(err.is_outcome_unknown(), "{err:?}");
    assert!(
        direct.exists("/in-multi").await.unwrap().is_some(),
        "applied"
    );

    wait_state(&c, |s| s == SessionState::Connected).await;
    let cut = proxy.cut_after_next(SET_ACL);
    let err = c
        .set_acl("/acl", Acl::read_unsafe(), None)
        .await
        .unwrap_err();
    assert!(within("cut", cut.wait()).await.is_some());
    assert!(err.is_outcome_unknown(), "{err:?}");
    assert_eq!(direct.get_acl("/acl").await.unwrap().1.aversion, 1);
}

#[tokio::test]
async fn a_read_whose_reply_was_cut_changed_nothing() {
    let (proxy, c, _direct) = behind_a_proxy("outcome_cut_read", false).await;
    let cut = proxy.cut_after_next(GET_DATA);
    let err = c.get_data("/").await.unwrap_err();
    assert!(within("cut", cut.wait()).await.is_some());
    assert_eq!(err, ErrorKind::ConnectionLoss);
    assert!(!err.is_outcome_unknown());
}

#[tokio::test]
async fn a_write_timed_out_on_the_wire_may_have_been_applied_and_was() {
    let (proxy, c, direct) = behind_a_proxy("outcome_timeout_sent", false).await;
    proxy.hold_replies(true);
    // The deadline only has to outlast the request's way to the socket, which the next turn
    // of the session takes; three seconds leave a loaded machine ample room.
    let patient = c
        .with_request_timeout(Some(Duration::from_secs(3)))
        .expect("a timeout in range");
    let err = within("timeout", patient.create("/late", b"", &persistent()))
        .await
        .unwrap_err();
    assert_eq!(err, ErrorKind::Timeout);
    assert!(err.is_outcome_unknown(), "{err:?}");
    proxy.hold_replies(false);
    assert!(direct.exists("/late").await.unwrap().is_some(), "applied");
}

#[tokio::test]
async fn writes_that_never_left_the_client_are_definite() {
    // Held back for a reconnect, and timed out there.
    let (proxy, c, direct) = behind_a_proxy("outcome_never_sent", false).await;
    proxy.refuse(true);
    proxy.drop_all();
    wait_state(&c, |s| s == SessionState::Disconnected).await;
    let hasty = c
        .with_request_timeout(Some(Duration::from_millis(200)))
        .expect("a timeout in range");
    let err = within("timeout", hasty.create("/held", b"", &persistent()))
        .await
        .unwrap_err();
    assert_eq!(err, ErrorKind::Timeout);
    assert!(!err.is_outcome_unknown(), "{err:?}");
    proxy.refuse(false);
    wait_state(&c, |s| s == SessionState::Connected).await;
    assert!(
        direct.exists("/held").await.unwrap().is_none(),
        "never sent"
    );

    // Refused at once while disconnected, under fail-fast.
    let (proxy, c, direct) = behind_a_proxy("outcome_fail_fast", true).await;
    proxy.refuse(true);
    proxy.drop_all();
    wait_state(&c, |s| s == SessionState::Disconnected).await;
    let err = c.create("/fast", b"", &persistent()).await.unwrap_err();
    assert_eq!(err, ErrorKind::ConnectionLoss);
    assert!(err.is_retryable() && !err.is_outcome_unknown(), "{err:?}");
    proxy.refuse(false);
    wait_state(&c, |s| s == SessionState::Connected).await;
    assert!(
        direct.exists("/fast").await.unwrap().is_none(),
        "never sent"
    );

    // Refused before sending, and after the session ended.
    let err = c.create("no-slash", b"", &persistent()).await.unwrap_err();
    assert!(!err.is_outcome_unknown(), "{err:?}");
    c.close().await;
    let err = c.create("/closed", b"", &persistent()).await.unwrap_err();
    assert_eq!(err, ErrorKind::Closed);
    assert!(!err.is_outcome_unknown(), "{err:?}");
}

#[tokio::test]
async fn refusals_of_the_server_are_definite() {
    let c = common::client("outcome_refusals").await;
    c.create("/a", b"", &persistent()).await.unwrap();
    for err in [
        c.create("/a", b"", &persistent()).await.unwrap_err(),
        c.create("/missing/child", b"", &persistent())
            .await
            .unwrap_err(),
        c.set_data("/a", b"", Some(7)).await.unwrap_err(),
        c.delete("/missing", None).await.unwrap_err(),
        c.multi(vec![MultiOp::check("/a", 9)]).await.unwrap_err(),
    ] {
        assert!(!err.is_outcome_unknown(), "{err:?}");
    }
}

/// A write held back for a reconnect and timed out there is definite too when the call is made
/// from outside the session's workers: from a thread blocking on a multi-thread runtime (the
/// body of `#[tokio::main]`) and from the blocking client.
#[test]
fn writes_held_back_and_timed_out_off_the_workers_are_definite() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (proxy, c, direct) =
        runtime.block_on(behind_a_proxy("outcome_never_sent_off_workers", false));
    proxy.refuse(true);
    proxy.drop_all();
    runtime.block_on(wait_state(&c, |s| s == SessionState::Disconnected));
    let hasty = c
        .with_request_timeout(Some(Duration::from_millis(200)))
        .expect("a timeout in range");
    let err = runtime
        .block_on(within("timeout", hasty.create("/held", b"", &persistent())))
        .unwrap_err();
    assert_eq!(err, ErrorKind::Timeout);
    assert!(!err.is_outcome_unknown(), "from main: {err:?}");
    runtime.block_on(async {
        proxy.refuse(false);
        wait_state(&c, |s| s == SessionState::Connected).await;
        assert!(
            direct.exists("/held").await.unwrap().is_none(),
            "never sent"
        );
    });

    let blocking = zookeeper_tokio::blocking::Client::connect_with(
        Client::builder(&proxy.connect_string())
            .session_timeout(Duration::from_secs(10))
            .connect_timeout(Duration::from_secs(30)),
    )
    .unwrap();
    let mut states = blocking.state_changes();
    proxy.refuse(true);
    proxy.drop_all();
    while blocking.state() != SessionState::Disconnected {
        states.next().expect("the session goes on");
    }
    let hasty = blocking
        .with_request_timeout(Some(Duration::from_millis(200)))
        .expect("a timeout in range");
    let err = hasty
        .create("/outcome_held_blocking", b"", &persistent())
        .unwrap_err();
    assert_eq!(err, ErrorKind::Timeout);
    assert!(!err.is_outcome_unknown(), "blocking: {err:?}");
}
