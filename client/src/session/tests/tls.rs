//! TLS failures: counted apart from network failures, paced like them.

use super::*;
use crate::error::TlsCause;

fn failure(host: &str) -> ErrorKind {
    ErrorKind::Tls {
        cause: TlsCause::UntrustedServer,
        message: format!("the certificate of {host} is not trusted"),
    }
}

fn every_server_failed(h: &Harness) -> bool {
    h.s.state_tx.info.failures.borrow().every_server_tls
}

/// Fails the pending attempt on TLS and returns the delay before the next one.
fn fail_on_tls(h: &mut Harness) -> Duration {
    let actions = h.actions();
    assert!(
        matches!(actions.last(), Some(Action::Connect(_))),
        "{actions:?}"
    );
    h.s.on_tls_failure(h.now, failure("zk"));
    match h.s.phase {
        Phase::Backoff { until } => until - h.now,
        _ => Duration::ZERO,
    }
}

#[test]
fn every_server_failing_on_tls_in_a_row_is_published_and_paced() {
    let mut h = Harness::new(config(3));
    assert_eq!(fail_on_tls(&mut h), Duration::ZERO, "next server at once");
    assert!(!every_server_failed(&h));
    assert_eq!(fail_on_tls(&mut h), Duration::ZERO);
    assert!(!every_server_failed(&h));
    let pause = fail_on_tls(&mut h);
    assert!(every_server_failed(&h), "three servers, three TLS failures");
    assert!(pause > Duration::ZERO, "a round of failures backs off");
    let last = h.s.state_tx.info.failures.borrow().last_tls.clone();
    assert_eq!(last, Some(failure("zk")));
    assert_eq!(h.state(), SessionState::Connecting);
}

#[test]
fn a_network_failure_between_tls_failures_starts_the_count_again() {
    let mut h = Harness::new(config(2));
    fail_on_tls(&mut h);
    h.actions();
    h.s.on_disconnected(h.now, "connection refused");
    h.advance(Duration::from_secs(2));
    fail_on_tls(&mut h);
    assert!(
        !every_server_failed(&h),
        "one server refused TCP: it may still accept TLS"
    );
    fail_on_tls(&mut h);
    assert!(every_server_failed(&h));
}

#[test]
fn a_tls_failure_of_a_live_connection_reconnects_and_a_handshake_resets_the_count() {
    let mut h = Harness::new(config(1));
    h.establish(0x55, 3000);
    assert_eq!(h.state(), SessionState::Connected);
    h.s.on_tls_failure(h.now, failure("zk"));
    assert_eq!(h.state(), SessionState::Disconnected);
    assert!(every_server_failed(&h), "the only server failed on TLS");
    h.advance(Duration::from_secs(2));
    h.establish(0x55, 3000);
    assert_eq!(h.state(), SessionState::Connected);
    assert_eq!(h.s.tls_failures_in_a_row, 0);
    assert!(!every_server_failed(&h));
}
