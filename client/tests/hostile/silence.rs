//! Servers that say nothing, or take their time: a handshake never answered, a connection that
//! goes quiet, a server that answers pings but never a request, slow replies.

use std::time::Duration;

use tokio::time::Instant;
use zookeeper_tokio::{Client, ErrorKind, SessionState, DEFAULT_REQUEST_TIMEOUT};

use crate::common::{within, SCHEDULING_SLACK};
use crate::server::FakeServer;

/// A session timeout so long that no ping or read timeout comes near the request deadline.
const HOUR_MS: i32 = 3_600_000;

#[tokio::test]
async fn a_handshake_never_answered_is_given_up_at_the_connect_timeout() {
    let server = FakeServer::start(|mut peer| async move {
        peer.read_frame().await;
        peer.swallow().await;
    });
    let started = Instant::now();
    let attempt = Duration::from_millis(200);
    // The second attempt is due 250 ms in (the attempt timeout, then a first pause of at most
    // 50 ms, the backoff's minimum): the connect timeout leaves sixteen times that for it.
    let connect_timeout = Duration::from_secs(4);
    let err = within(
        "connect",
        Client::builder(&server.connect_string())
            .attempt_timeout(attempt)
            .connect_timeout(connect_timeout)
            .connect(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Connect(_)), "{err}");
    let took = started.elapsed();
    // At the connect timeout: not before (the clock started before the call), and not past
    // what a loaded machine may add to it.
    assert!(
        took >= connect_timeout && took <= connect_timeout + SCHEDULING_SLACK,
        "{took:?}"
    );
    // It kept trying: the server sees the second attempt, however late it gets to accept it.
    within("a second attempt accepted", async {
        while server.accepted() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    // And one attempt per attempt timeout at most (each lasts that long: the server never
    // answers the handshake), which a slow machine only makes fewer.
    let attempts = server.accepted();
    assert!(
        attempts <= (connect_timeout.as_millis() / attempt.as_millis()) as u64 + 1,
        "{attempts} attempts"
    );
}

/// The server keeps the connection alive (pings) but never answers a request: the call fails
/// at the default deadline. The clock is paused once connected, so the test measures the
/// deadline exactly instead of waiting a minute.
#[tokio::test]
async fn a_request_the_server_never_answers_fails_at_the_default_deadline() {
    let server = FakeServer::start(|mut peer| async move {
        if peer.handshake_granting(HOUR_MS).await.is_some() {
            while peer.next_request().await.is_some() {}
        }
    });
    let client = within("connect", Client::connect(&server.connect_string()))
        .await
        .unwrap();
    tokio::time::pause();
    let err = fails_at_deadline(client.get_data("/a"), DEFAULT_REQUEST_TIMEOUT).await;
    assert_eq!(err.to_string(), "get_data /a: request timed out");
    assert_eq!(client.state(), SessionState::Connected);
    assert_eq!(server.accepted(), 1);
}

/// The session's timer stays where an earlier deadline put it when the next one comes later:
/// it fires once for nothing due, then keeps the later deadline. A call answered at once
/// leaves the timer at its own deadline (10 s); the next call, never answered, fails at its
/// own (30 s), not at the first one's and not at the ping's. The clock is paused only once
/// the first reply is in: a paused clock jumps to the next timer whenever the runtime waits,
/// also while it waits for that reply.
#[tokio::test]
async fn a_later_deadline_is_kept_after_the_timer_fires_for_an_earlier_one() {
    let server = FakeServer::start(|mut peer| async move {
        if peer.handshake_granting(HOUR_MS).await.is_none() {
            return;
        }
        if let Some(first) = peer.next_request().await {
            peer.reply(first.xid, 1, zookeeper_jute::ErrorCode::NoNode, &[])
                .await;
        }
        while peer.next_request().await.is_some() {}
    });
    let client = within("connect", Client::connect(&server.connect_string()))
        .await
        .unwrap();
    let short = client
        .with_request_timeout(Some(Duration::from_secs(10)))
        .expect("a timeout in range");
    assert_eq!(short.exists("/answered").await, Ok(None));
    tokio::time::pause();
    let deadline = Duration::from_secs(30);
    fails_at_deadline(
        client
            .with_request_timeout(Some(deadline))
            .expect("a timeout in range")
            .get_data("/a"),
        deadline,
    )
    .await;
    assert_eq!(client.state(), SessionState::Connected);
}

/// Awaits `call`, started now on a paused clock, and checks that it failed with `Timeout` at
/// `deadline`: not before, and within a second after. Returns the error.
async fn fails_at_deadline<T: std::fmt::Debug>(
    call: impl std::future::Future<Output = Result<T, zookeeper_tokio::Error>>,
    deadline: Duration,
) -> zookeeper_tokio::Error {
    let started = Instant::now();
    let err = tokio::time::timeout(deadline * 2, call)
        .await
        .expect("the call ended")
        .unwrap_err();
    assert_eq!(err, ErrorKind::Timeout);
    let took = started.elapsed();
    assert!(
        took >= deadline && took < deadline + Duration::from_secs(1),
        "{took:?}"
    );
    err
}

/// With the deadline turned off, the same call waits as long as the session lives.
#[tokio::test]
async fn with_the_deadline_off_a_call_waits_while_the_session_lives() {
    let server = FakeServer::start(|mut peer| async move {
        if peer.handshake_granting(HOUR_MS).await.is_some() {
            while peer.next_request().await.is_some() {}
        }
    });
    let client = within(
        "connect",
        Client::builder(&server.connect_string())
            .request_timeout(None)
            .connect(),
    )
    .await
    .unwrap();
    tokio::time::pause();
    let mut call = Box::pin(client.get_data("/a"));
    let waited = tokio::time::timeout(DEFAULT_REQUEST_TIMEOUT * 10, &mut call).await;
    assert!(waited.is_err(), "answered: {waited:?}");
    // The end of the session ends it: closing waits for the replies of earlier requests up to
    // two thirds of the session timeout, then gives up on them.
    drop(client);
    assert_eq!(call.await.unwrap_err(), ErrorKind::Closed);
}

/// A connection that goes silent (no replies, not even to pings) is given up two thirds of the
/// session timeout after the last frame, the call in flight fails with `ConnectionLoss`, and
/// the client connects again.
#[tokio::test]
async fn a_silent_connection_is_left_after_two_thirds_of_the_session_timeout() {
    const TIMEOUT_MS: i32 = 1_500;
    let server = FakeServer::start(|mut peer| async move {
        if peer.handshake_granting(TIMEOUT_MS).await.is_some() {
            peer.swallow().await;
        }
    });
    // The read timeout counts from the handshake's answer, the last frame the client gets: it
    // comes after `before_connect` and before `connected`, so the connection is left no
    // sooner than the read timeout after the first and no later than it after the second
    // (plus what a loaded machine may add).
    let before_connect = Instant::now();
    let client = within("connect", Client::connect(&server.connect_string()))
        .await
        .unwrap();
    let connected = Instant::now();
    let err = within("call", client.exists("/a")).await.unwrap_err();
    assert_eq!(err, ErrorKind::ConnectionLoss);
    let (since_before, since_connected) = (before_connect.elapsed(), connected.elapsed());
    let read_timeout = Duration::from_millis(TIMEOUT_MS as u64 * 2 / 3);
    assert!(since_before >= read_timeout, "{since_before:?}");
    assert!(
        since_connected <= read_timeout + SCHEDULING_SLACK,
        "{since_connected:?}"
    );
    within("reconnect", async {
        while server.accepted() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

/// Replies that take their time (but come well within the deadline and the read timeout)
/// are waited for; nothing reconnects.
#[tokio::test]
async fn slow_replies_are_waited_for() {
    let delay = Duration::from_millis(300);
    let server = FakeServer::start(move |mut peer| async move {
        if peer.handshake().await.is_none() {
            return;
        }
        while let Some(request) = peer.next_request().await {
            tokio::time::sleep(delay).await;
            peer.reply(request.xid, 1, zookeeper_jute::ErrorCode::NoNode, &[])
                .await;
        }
    });
    let client = within("connect", Client::connect(&server.connect_string()))
        .await
        .unwrap();
    let started = Instant::now();
    let calls: Vec<_> = (0..3).map(|i| client.exists(&format!("/n{i}"))).collect();
    for call in calls {
        assert_eq!(within("slow reply", call).await, Ok(None));
    }
    let took = started.elapsed();
    // The server's delays, one after the other: no sooner, and not past what a loaded machine
    // may add to them.
    assert!(
        took >= delay * 3 && took <= delay * 3 + SCHEDULING_SLACK,
        "{took:?}"
    );
    assert_eq!(server.accepted(), 1);
    assert_eq!(client.state(), SessionState::Connected);
}
