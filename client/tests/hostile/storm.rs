//! A server that accepts every handshake and closes the connection at once: it once got 66,000
//! connections in 10 s from one client. Now a connection that does not last is a failure, and
//! the pauses between attempts grow whatever the handshakes said.

use std::time::Duration;

use tokio::time::Instant;
use zookeeper_tokio::{Client, ErrorKind, SessionState};

use crate::common::{most_attempts_within, within};
use crate::meter::thread_cpu;
use crate::server::FakeServer;

/// CPU time the client may spend on one connection (a debug build: connect, handshake, loss,
/// the pause's timer, the test's own polling) on a loaded machine: measured, about 5 ms; ten
/// times that, while a loop spinning through the pauses would spend seconds.
const CPU_PER_CONNECTION: Duration = Duration::from_millis(50);

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
    // It keeps trying: three more connections, however long a loaded machine takes to make
    // them (the backoff has them due within 50 + 100 + 200 ms, 3 s at most).
    within("three more connections", async {
        while server.accepted() - before < 3 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    // But no more than the backoff allows (pauses of 50, 100, 200, 400 and 800 ms, then 1 s,
    // each jittered down to half at most) in the time measured, at least `watched`: a slow
    // machine only makes fewer.
    tokio::time::sleep_until(start + watched).await;
    let connections = server.accepted() - before;
    let (elapsed, cpu) = (start.elapsed(), thread_cpu() - cpu);
    let most = most_attempts_within(elapsed);
    assert!(
        connections <= most,
        "{connections} connections in {elapsed:?}, more than the backoff's {most}"
    );
    // What each connection costs the client, not a busy loop between them.
    let allowed = CPU_PER_CONNECTION * (connections as u32 + 1);
    assert!(
        cpu < allowed,
        "{cpu:?} of CPU for {connections} connections in {elapsed:?}"
    );
    assert_ne!(
        client.state(),
        SessionState::Expired,
        "the session was not given up"
    );
}
