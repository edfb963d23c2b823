//! The session across connection faults, through zookeeper-testkit' proxy and a real server.

mod common;

use std::time::{Duration, Instant};

use tokio::net::TcpListener;

use common::{assert_black_hole_noticed, next_state, wait_state, within};
use zookeeper_testkit::{Proxy, ZkServer};
use zookeeper_tokio::{
    Client, CreateOptions, ErrorKind, EventType, SessionState, DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_SESSION_TIMEOUT,
};

async fn behind_proxy(timeout: Duration) -> (ZkServer, Proxy, Client) {
    common::init_tracing();
    let server = ZkServer::start().await.unwrap();
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let client = Client::builder(&proxy.connect_string())
        .session_timeout(timeout)
        // The default connect timeout is the session timeout (at most 5 s): 1.5 s for the
        // short sessions that only make expiry fast. Connecting is not under test here.
        .connect_timeout(Duration::from_secs(30))
        .connect()
        .await
        .unwrap();
    (server, proxy, client)
}

#[tokio::test]
async fn dropped_connection_resumes_the_same_session() {
    let (_server, proxy, c) = behind_proxy(Duration::from_secs(6)).await;
    let id = c.session_id();
    assert!(c.session_timeout() >= Duration::from_secs(1));
    c.create("/e", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let mut changes = c.state_changes();
    proxy.drop_all();
    next_state(&mut changes, |s| s == SessionState::Disconnected).await;
    next_state(&mut changes, |s| s == SessionState::Connected).await;
    assert_eq!(c.session_id(), id);
    let stat = c.exists("/e").await.unwrap().expect("ephemeral survives");
    assert_eq!(stat.ephemeral_owner, id.0);
}

#[tokio::test]
async fn request_whose_reply_was_cut_fails_with_connection_loss_and_may_have_applied() {
    let (_server, proxy, c) = behind_proxy(Duration::from_secs(6)).await;
    let cut = proxy.cut_after_next(15); // create2
    let err = c
        .create("/x", b"", &CreateOptions::persistent())
        .await
        .unwrap_err();
    assert_eq!(err, ErrorKind::ConnectionLoss);
    assert!(within("cut", cut.wait()).await.is_some());
    assert!(err.is_retryable());
    // The write was applied although its reply was lost.
    assert!(c.exists("/x").await.unwrap().is_some());
}

#[tokio::test]
async fn requests_made_while_disconnected_wait_for_the_reconnect() {
    let (_server, proxy, c) = behind_proxy(Duration::from_secs(10)).await;
    proxy.refuse(true);
    proxy.drop_all();
    wait_state(&c, |s| s == SessionState::Disconnected).await;
    let pending = c.create("/later", b"", &CreateOptions::persistent());
    proxy.refuse(false);
    within("request after reconnect", pending).await.unwrap();
    assert_eq!(c.state(), SessionState::Connected);
}

#[tokio::test]
async fn fail_fast_requests_made_while_disconnected() {
    let server = ZkServer::start().await.unwrap();
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let c = Client::builder(&proxy.connect_string())
        .session_timeout(Duration::from_secs(10))
        .fail_fast(true)
        .connect()
        .await
        .unwrap();
    proxy.refuse(true);
    proxy.drop_all();
    wait_state(&c, |s| s == SessionState::Disconnected).await;
    assert_eq!(
        c.get_data("/").await.map(|_| ()).unwrap_err(),
        ErrorKind::ConnectionLoss
    );
    proxy.refuse(false);
    wait_state(&c, |s| s == SessionState::Connected).await;
    c.get_data("/").await.unwrap();
}

#[tokio::test]
async fn watch_set_before_a_drop_fires_for_a_change_made_while_cut_off() {
    let (server, proxy, c) = behind_proxy(Duration::from_secs(10)).await;
    c.create("/w", b"1", &CreateOptions::persistent())
        .await
        .unwrap();
    let (_, _, watcher) = c.get_data_and_watch("/w").await.unwrap();
    proxy.refuse(true);
    proxy.drop_all();
    wait_state(&c, |s| s == SessionState::Disconnected).await;
    let other = Client::connect(&server.connect_string()).await.unwrap();
    other.set_data("/w", b"2", None).await.unwrap();
    proxy.refuse(false);
    let event = within("missed event", watcher).await;
    assert_eq!(event.event_type, EventType::NodeDataChanged);
}

#[tokio::test]
async fn black_hole_is_noticed_within_two_thirds_of_the_session_timeout() {
    let (_server, proxy, c) = behind_proxy(Duration::from_millis(3000)).await;
    assert_black_hole_noticed(&c, || proxy.black_hole(true)).await;
    proxy.black_hole(false);
}

#[tokio::test]
async fn cut_off_past_the_session_timeout_expires_and_the_server_agrees() {
    let (server, proxy, c) = behind_proxy(Duration::from_millis(1500)).await;
    let id = c.session_id();
    c.create("/e", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let (_, _, watcher) = c.get_data_and_watch("/e").await.unwrap();
    proxy.black_hole(true);
    let state = wait_state(&c, |s| s.is_terminal()).await;
    assert_eq!(state, SessionState::Expired);
    let e = within("watcher", watcher).await;
    assert_eq!(
        (e.event_type, e.state),
        (EventType::None, SessionState::Expired)
    );
    assert_eq!(
        c.get_data("/").await.map(|_| ()).unwrap_err(),
        ErrorKind::SessionExpired
    );
    // The server expires it too: the ephemeral goes away.
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    within("server-side expiry", async {
        loop {
            match observer.exists("/e").await.unwrap() {
                None => break,
                Some(stat) => assert_eq!(stat.ephemeral_owner, id.0),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    proxy.black_hole(false);
}

/// The session is closed on the server while the client is cut off; when the client gets back
/// in, the server answers its resume with timeout 0 and the client reports expiry.
#[tokio::test]
async fn expiry_reported_by_the_server_on_reconnect() {
    let (server, proxy, c) = behind_proxy(Duration::from_secs(20)).await;
    let (_, _, watcher) = c.get_data_and_watch("/").await.unwrap();
    proxy.refuse(true);
    proxy.drop_all();
    wait_state(&c, |s| s == SessionState::Disconnected).await;
    let twin = Client::builder(&server.connect_string())
        .session(c.session_id(), &c.session_password())
        .connect()
        .await
        .unwrap();
    assert_eq!(twin.session_id(), c.session_id());
    twin.close().await;
    proxy.refuse(false);
    let e = within("expired", watcher).await;
    assert_eq!(
        (e.event_type, e.state),
        (EventType::None, SessionState::Expired)
    );
    assert_eq!(c.state(), SessionState::Expired);
    assert_eq!(c.exists("/").await.unwrap_err(), ErrorKind::SessionExpired);
    // Resuming an expired session fails too; nothing opens a new one silently.
    let again = Client::builder(&server.connect_string())
        .session(c.session_id(), &c.session_password())
        .connect()
        .await;
    assert_eq!(again.map(|_| ()).unwrap_err(), ErrorKind::SessionExpired);
}

#[tokio::test]
async fn close_is_idempotent_and_later_calls_fail_closed() {
    let (_server, _proxy, c) = behind_proxy(Duration::from_secs(6)).await;
    let clone = c.clone();
    c.close().await;
    c.close().await;
    assert_eq!(c.state(), SessionState::Closed);
    assert_eq!(clone.exists("/").await.unwrap_err(), ErrorKind::Closed);
}

#[tokio::test]
async fn connect_to_nothing_fails_with_connect_error() {
    let port = zookeeper_testkit::free_port().unwrap();
    let err = Client::builder(&format!("127.0.0.1:{port}"))
        .connect_timeout(Duration::from_millis(500))
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Connect(_)), "{err:?}");
}

/// A dead server is reported in seconds by default, with the server named; the session
/// timeout stays as set for the sessions that do get established.
#[tokio::test]
async fn connect_to_a_closed_port_fails_within_the_default_connect_timeout() {
    let port = zookeeper_testkit::free_port().unwrap();
    let started = Instant::now();
    let err = Client::connect(&format!("127.0.0.1:{port}"))
        .await
        .unwrap_err();
    let waited = started.elapsed();
    assert!(matches!(err.kind(), ErrorKind::Connect(_)), "{err:?}");
    // The promise is the default connect timeout (5 s); without it, connect gave up only at
    // the 30 s session timeout. The bound lies halfway between: 12.5 s of slack for a loaded
    // machine, and still far from the failure it guards against.
    let bound = DEFAULT_CONNECT_TIMEOUT + (DEFAULT_SESSION_TIMEOUT - DEFAULT_CONNECT_TIMEOUT) / 2;
    assert!(waited <= bound, "{waited:?}");
    let text = err.to_string();
    assert!(
        text.contains(&format!("tried 127.0.0.1:{port} (")),
        "{text}"
    );

    let client = Client::connect(&common::connect_string("default_session_timeout"))
        .await
        .unwrap();
    assert_eq!(client.session_timeout(), DEFAULT_SESSION_TIMEOUT);
}

/// Servers that accept the connection and then say nothing each get a share of the connect
/// wait, so every one is tried before `connect` gives up, and the error says so.
#[tokio::test]
async fn silent_servers_each_get_a_share_of_the_connect_wait() {
    // Bound but never accepted: the kernel completes the handshake, nothing ever answers.
    let silent = [
        TcpListener::bind("127.0.0.1:0").await.unwrap(),
        TcpListener::bind("127.0.0.1:0").await.unwrap(),
    ];
    let addrs: Vec<String> = silent
        .iter()
        .map(|l| l.local_addr().unwrap().to_string())
        .collect();
    let err = within("connect", Client::connect(&addrs.join(",")))
        .await
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Connect(_)), "{err:?}");
    let text = err.to_string();
    for addr in &addrs {
        assert!(
            text.contains(&format!("{addr} (no answer within")),
            "{text}"
        );
    }
}

/// On a runtime whose clock is paused (as in `#[tokio::test(start_paused = true)]`), every
/// timeout passes as soon as the runtime waits, so `connect` fails at once against a server
/// on a real network; its error says that the clock ran ahead, rather than only that no
/// server answered for the whole connect timeout. On a real clock it says nothing of the kind.
#[test]
fn a_connect_failure_on_a_paused_clock_says_the_clock_ran_ahead() {
    let connect = |runtime: tokio::runtime::Runtime, timeout: Duration| {
        runtime.block_on(async {
            // Accepted by the kernel, never answered: the failure is the clock's alone.
            let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let err = within(
                "connect",
                Client::builder(&silent.local_addr().unwrap().to_string())
                    .connect_timeout(timeout)
                    .connect(),
            )
            .await
            .unwrap_err();
            assert!(matches!(err.kind(), ErrorKind::Connect(_)), "{err:?}");
            err.to_string()
        })
    };
    let paused = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    let text = connect(paused, Duration::from_secs(5));
    assert!(text.contains("paused or simulated"), "{text}");
    let real = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let text = connect(real, Duration::from_millis(300));
    assert!(!text.contains("paused"), "{text}");
}

/// A lone server restarting accepts connections while it loads and may never answer them. The
/// session's reconnect that lands on such a connection gives up on it in time for another
/// attempt, which takes the session back, rather than waiting out the session timeout.
#[tokio::test]
async fn a_reconnect_that_meets_a_silent_server_leaves_time_to_take_the_session_back() {
    let (server, proxy, c) = behind_proxy(Duration::from_secs(10)).await;
    let id = c.session_id();
    c.create("/kept", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut changes = c.state_changes();
    proxy.set_upstreams(silent.local_addr().unwrap());
    proxy.drop_all();
    next_state(&mut changes, |s| s == SessionState::Disconnected).await;
    // The reconnect reaches the silent server, which holds it open and answers nothing.
    let (_held, _) = within("the reconnect", silent.accept()).await.unwrap();
    proxy.set_upstreams(server.addr());
    let state = next_state(&mut changes, |s| {
        s == SessionState::Connected || s.is_terminal()
    })
    .await;
    assert_eq!(state, SessionState::Connected);
    assert_eq!(c.session_id(), id);
    let stat = c
        .exists("/kept")
        .await
        .unwrap()
        .expect("ephemeral survives");
    assert_eq!(stat.ephemeral_owner, id.0);
}

/// A server that already has as many connections from this host as its `maxClientCnxns`
/// closes every further one without a word: `connect`'s error names that among the causes.
#[tokio::test]
async fn a_server_over_its_connection_limit_is_named_in_the_connect_error() {
    common::init_tracing();
    let server = ZkServer::builder()
        .config("maxClientCnxns", "1")
        .start()
        .await
        .unwrap();
    let connect = server.addr().to_string();
    let first = within("the first client", Client::connect(&connect))
        .await
        .unwrap();
    let err = within(
        "the second client",
        Client::builder(&connect)
            .connect_timeout(Duration::from_secs(1))
            .connect(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Connect(_)), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("before answering"), "{text}");
    assert!(text.contains("maxClientCnxns"), "{text}");
    assert!(text.contains("serves only TLS"), "{text}");
    assert!(first.state().is_connected());
}

/// A silent server listed before a live one does not use up the connect wait.
#[tokio::test]
async fn a_silent_server_in_the_list_does_not_stop_connect() {
    let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let live = common::connect_string("silent_server_in_the_list");
    let servers = format!("{},{live}", silent.local_addr().unwrap());
    let client = within("connect", Client::connect(&servers))
        .await
        .expect("the live server accepts the session");
    assert!(client.state().is_connected());
}

#[tokio::test]
async fn bad_connect_string() {
    let err = Client::connect("host:notaport").await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::InvalidConnectString { .. }),
        "{err:?}"
    );
}

/// A request made while disconnected waits for the reconnect only within its deadline, and a
/// request whose deadline passed before it was sent is never sent.
#[tokio::test]
async fn request_deadline_while_disconnected_and_never_sent_after() {
    let (_server, proxy, c) = behind_proxy(Duration::from_secs(10)).await;
    proxy.refuse(true);
    proxy.drop_all();
    wait_state(&c, |s| s == SessionState::Disconnected).await;
    let quick = c
        .with_request_timeout(Some(Duration::from_millis(200)))
        .expect("a timeout in range");
    assert_eq!(
        quick
            .create("/ghost", b"", &CreateOptions::persistent())
            .await
            .unwrap_err(),
        ErrorKind::Timeout
    );
    proxy.refuse(false);
    wait_state(&c, |s| s == SessionState::Connected).await;
    c.sync("/").await.unwrap();
    assert_eq!(
        c.exists("/ghost").await,
        Ok(None),
        "timed-out request was sent"
    );
}
