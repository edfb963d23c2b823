//! A server that accepts every handshake and closes the connection at once: it once got 66,000
//! connections in 10 s from one client. Now a connection that does not last is a failure, and
//! the pauses between attempts grow whatever the handshakes said.

use std::time::Duration;

use tokio::time::Instant;
use zookeeper_tokio::{Client, ErrorKind, SessionState};

use crate::common::within;
use crate::meter::thread_cpu;
use crate::server::FakeServer;

#[tokio::test]
async fn a_server_closing_every_session_at_once_gets_a_few_connections_per_second() {
    let server = FakeServer::start(|mut peer| async move {
        peer.handshake().await;
        // Dropping the peer closes the connection.
    });
    let client = within("connect", Client::connect(&server.connect_string()))
        .await
        .unwrap();
    let watched = Duration::from_secs(5);
    let (cpu, start, before) = (thread_cpu(), Instant::now(), server.accepted());
    // Calls meanwhile fail or wait for a session that never stays; none hangs.
    let call = tokio::time::timeout(watched, client.exists("/a")).await;
    if let Ok(result) = call {
        assert_eq!(result.unwrap_err(), ErrorKind::ConnectionLoss);
    }
    tokio::time::sleep_until(start + watched).await;
    let connections = server.accepted() - before;
    let cpu = thread_cpu() - cpu;
    // Pauses of 50, 100, 200, 400 and 800 ms, then 1 s, each jittered down to half at most:
    // no more than 14 connections fit in 5 s.
    assert!(
        (3..=14).contains(&connections),
        "{connections} connections in {watched:?}"
    );
    assert!(
        cpu < Duration::from_millis(250),
        "{cpu:?} of CPU in {watched:?}"
    );
    assert_ne!(
        client.state(),
        SessionState::Expired,
        "the session was not given up"
    );
}
