//! The session's lease against a real server: it follows what the server answered, and the
//! server never expires the session before it.

mod common;

use std::time::{Duration, Instant};

use common::{wait_state, within};
use zookeeper_testkit::{Proxy, ZkServer};
use zookeeper_tokio::{Client, CreateOptions, EventType, SessionState};

#[tokio::test]
async fn an_answered_request_extends_the_lease_from_its_send_time() {
    let c = common::client("lease_answered").await;
    let timeout = c.session_timeout();
    let first = c
        .lease_deadline()
        .expect("the handshake vouches for the session");
    assert!(first > Instant::now() && first <= Instant::now() + timeout);
    let before_call = Instant::now();
    c.exists("/").await.unwrap();
    let lease = c.lease_deadline().unwrap();
    // Sent after the call was made, answered before we looked.
    assert!(
        lease >= before_call + timeout,
        "{lease:?} < call + {timeout:?}"
    );
    assert!(lease <= Instant::now() + timeout);
    c.close().await;
    assert_eq!(c.lease_deadline(), None, "a closed session has no lease");
}

/// A client cut off behind the proxy: its ephemeral node disappears for another client only
/// after the lease the cut-off client published, so a holder that trusts its lease never
/// overlaps with whoever the server lets in next.
#[tokio::test]
async fn the_server_expires_a_cut_off_session_only_after_its_lease() {
    common::init_tracing();
    let server = ZkServer::start().await.unwrap();
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let c = Client::builder(&proxy.connect_string())
        .session_timeout(Duration::from_secs(2))
        // The default connect timeout would be the 2 s session timeout, which only makes
        // expiry fast: connecting is not under test.
        .connect_timeout(Duration::from_secs(30))
        .connect()
        .await
        .unwrap();
    let direct = Client::connect(&server.connect_string()).await.unwrap();
    c.create("/e", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let (_, _, gone) = direct.get_data_and_watch("/e").await.unwrap();

    proxy.black_hole(true);
    // Once the client has given the connection up, nothing more can be answered: the lease
    // is final.
    wait_state(&c, |s| s != SessionState::Connected).await;
    let lease = c
        .lease_deadline()
        .expect("the session may still live: the lease stands");
    let event = within("the ephemeral removed by expiry", gone).await;
    let removed_seen = Instant::now();
    assert_eq!(event.event_type, EventType::NodeDeleted);
    assert!(
        removed_seen >= lease,
        "the server expired the session {:?} before the lease ran out",
        lease - removed_seen
    );
}
