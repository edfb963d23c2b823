//! What the client logs, read back from a `tracing` subscriber writing to a buffer, against the
//! shared server behind a proxy.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{next_state, within};
use zookeeper_testkit::{chroot_for, shared_server, Proxy};
use zookeeper_tokio::{Client, SessionState};

/// Everything the subscriber wrote, shared with the test.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn lines(&self) -> Vec<String> {
        let bytes = self.0.lock().unwrap().clone();
        String::from_utf8(bytes)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// A subscriber writing this thread's events at `level` and above to a buffer, this thread's
/// default until the guard drops. The test runtime runs the session task on this thread too.
fn capture(level: tracing::Level) -> (Captured, tracing::subscriber::DefaultGuard) {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    (captured, tracing::subscriber::set_default(subscriber))
}

/// A server that requires SASL answers a refused login with "authentication required": the
/// log says the login was refused, so the operator looks at the password rather than at a
/// login that was never configured.
#[cfg(feature = "sasl-digest")]
#[tokio::test]
async fn a_login_refused_by_a_server_that_requires_one_is_logged_as_refused() {
    let (captured, _guard) = capture(tracing::Level::WARN);
    let server = zookeeper_testkit::ZkServer::builder()
        .sasl_digest(&[("bob", "bob-secret")])
        .require_sasl()
        .start()
        .await
        .unwrap();
    let refused = Client::builder(&server.connect_string())
        .session_timeout(Duration::from_secs(10))
        .sasl_digest("bob", "not-bobs")
        .connect()
        .await
        .unwrap_err();
    assert_eq!(refused, zookeeper_tokio::ErrorKind::AuthFailed);
    let lines = captured.lines();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("the server refused the SASL login")),
        "{lines:#?}"
    );
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("requires SASL authentication")),
        "a refused login read as one never made: {lines:#?}"
    );
}

/// A session's log lines name it once each (through the session task's span, not repeated by
/// the event), in hex; a lost connection names the server it was to.
#[tokio::test]
async fn log_lines_name_the_session_once_and_a_lost_connection_its_server() {
    let (captured, _guard) = capture(tracing::Level::DEBUG);

    let proxy = Proxy::start(shared_server().addr()).await.unwrap();
    let chroot = chroot_for("log_lines");
    let client = Client::builder(&format!("{}{chroot}", proxy.connect_string()))
        .session_timeout(Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    let id = client.session_id().to_string();
    assert!(id.starts_with("0x"), "{id}");

    let mut changes = client.state_changes();
    proxy.drop_all();
    next_state(&mut changes, |s| s == SessionState::Disconnected).await;
    next_state(&mut changes, |s| s == SessionState::Connected).await;
    within("close", client.close()).await;

    let lines = captured.lines();
    let all = lines.join("\n");
    let established: Vec<_> = lines
        .iter()
        .filter(|l| l.contains("session established"))
        .collect();
    assert_eq!(established.len(), 2, "{all}");
    for line in &established {
        assert!(line.contains(&format!("session_id={id}")), "{line}");
    }
    let lost: Vec<_> = lines
        .iter()
        .filter(|l| l.contains("connection lost"))
        .collect();
    assert_eq!(lost.len(), 1, "{all}");
    assert!(
        lost[0].contains(&format!("host={}", proxy.connect_string())),
        "{}",
        lost[0]
    );
    assert!(lost[0].contains(&format!("session_id={id}")), "{}", lost[0]);
    for line in &lines {
        assert!(line.matches("session_id=").count() <= 1, "{line}");
    }
    assert!(
        lines
            .iter()
            .filter(|l| l.contains("session state"))
            .all(|l| !l.contains("session_id=") || l.contains(&format!("session_id={id}"))),
        "{all}"
    );
}
