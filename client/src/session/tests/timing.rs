//! Timers: pings, read timeout, attempt timeout, backoff between rounds, local expiry.

use super::*;

#[test]
fn ping_after_a_third_of_the_timeout_and_one_at_a_time() {
    let mut h = connected();
    h.advance(Duration::from_millis(999));
    assert!(h.xids().is_empty(), "no ping before T/3");
    assert_eq!(h.s.next_deadline(), Some(h.now + Duration::from_millis(1)));
    h.advance(Duration::from_millis(1));
    assert_eq!(h.xids(), vec![(-2, OpCode::Ping)]);
    h.advance(Duration::from_millis(900));
    assert!(h.xids().is_empty(), "at most one ping in flight");
    h.reply(-2, 5, ErrorCode::Ok, &[]);
    assert_eq!(h.s.last_zxid(), 0, "ping replies do not move the last zxid");
    h.advance(Duration::from_millis(99));
    assert!(h.xids().is_empty());
    h.advance(Duration::from_millis(1));
    assert_eq!(
        h.xids(),
        vec![(-2, OpCode::Ping)],
        "next ping T/3 after the last send"
    );
}

#[test]
fn requests_postpone_pings() {
    let mut h = connected();
    h.advance(Duration::from_millis(800));
    let _rx = h.get_data("/a");
    h.xids();
    h.advance(Duration::from_millis(800));
    assert!(h.xids().is_empty(), "sent 800 ms ago: no ping yet");
}

#[test]
fn read_timeout_drops_the_connection_and_fails_pending() {
    let mut h = connected();
    let mut rx = h.get_data("/a");
    h.xids();
    h.actions();
    h.advance(Duration::from_millis(1999));
    assert_eq!(h.state(), SessionState::Connected);
    assert_eq!(result(&mut rx), None);
    h.advance(Duration::from_millis(1));
    assert_eq!(h.state(), SessionState::Disconnected);
    assert_eq!(result(&mut rx), Some(Err(ErrorKind::ConnectionLoss)));
    let actions = h.actions();
    assert_eq!(actions[0], Action::Disconnect);
    assert!(
        matches!(actions[1], Action::Connect(_)),
        "reconnects at once"
    );
    assert_eq!(h.s.take_completed(), 1);
}

#[test]
fn close_without_reply_ends_at_the_deadline() {
    let mut h = connected();
    h.s.close(None, h.now);
    h.advance(Duration::from_millis(2000));
    assert_eq!(h.state(), SessionState::Closed);
}

#[test]
fn local_expiry_after_the_session_timeout_without_any_server() {
    let mut h = Harness::new(config(3));
    h.establish(5, 3000);
    h.s.on_disconnected(h.now, "eof");
    // Every attempt fails at once; the machine keeps trying, with pauses between rounds.
    let mut elapsed = Duration::ZERO;
    while h.state() != SessionState::Expired {
        for action in h.actions() {
            if let Action::Connect(_) = action {
                h.s.on_disconnected(h.now, "refused");
            }
        }
        let deadline = h.s.next_deadline().expect("a deadline while reconnecting");
        assert!(
            deadline > h.now || h.s.poll_action().is_some(),
            "never a busy loop"
        );
        let step = deadline.saturating_duration_since(h.now);
        elapsed += step;
        h.advance(step);
        assert!(elapsed <= T, "expired late: {elapsed:?}");
    }
    assert_eq!(elapsed, T, "expired exactly at the session timeout");
}

#[test]
fn before_the_first_session_there_is_no_local_expiry() {
    let mut h = Harness::new(config(1));
    for _ in 0..100 {
        for action in h.actions() {
            if let Action::Connect(_) = action {
                h.s.on_disconnected(h.now, "refused");
            }
        }
        let deadline = h.s.next_deadline().unwrap();
        h.advance(deadline - h.now);
    }
    assert_eq!(h.state(), SessionState::Connecting);
}

#[test]
fn host_rotation_tries_every_host_before_pausing() {
    let mut h = Harness::new(config(3));
    let mut tried = Vec::new();
    let Some(Action::Connect(first)) = h.actions().pop() else {
        panic!()
    };
    tried.push(first.port);
    h.s.on_disconnected(h.now, "refused");
    for _ in 0..2 {
        let actions = h.actions();
        let Some(Action::Connect(next)) = actions.last().cloned() else {
            panic!("{actions:?}")
        };
        tried.push(next.port);
        h.s.on_disconnected(h.now, "refused");
    }
    tried.sort();
    assert_eq!(tried, vec![2000, 2001, 2002]);
    let actions = h.actions();
    assert_eq!(
        actions,
        vec![Action::Disconnect],
        "a full round failed: pause"
    );
    let pause = h.s.next_deadline().unwrap() - h.now;
    assert!(
        pause >= hosts::BACKOFF_MIN / 2 && pause <= hosts::BACKOFF_MIN,
        "{pause:?}"
    );
    h.advance(pause);
    assert!(matches!(h.actions().last(), Some(Action::Connect(_))));
}

#[test]
fn before_the_first_session_attempts_share_the_connect_wait() {
    // `connect` waits 2 s: a round over three servers and a first retry fit in it.
    let mut cfg = config(3);
    cfg.connect_timeout = Duration::from_millis(2000);
    let mut h = Harness::new(cfg);
    h.actions();
    h.advance(Duration::from_millis(499));
    assert!(h.actions().is_empty());
    h.advance(Duration::from_millis(1));
    assert!(matches!(h.actions().last(), Some(Action::Connect(_))));
}

#[test]
fn once_a_session_exists_attempts_time_out_at_its_timeout_over_hosts() {
    let mut cfg = config(3);
    cfg.connect_timeout = Duration::from_millis(2000);
    let mut h = Harness::new(cfg);
    h.establish(0x42, 3000);
    // A connection that lasted: its loss is retried at once, not after a pause.
    h.advance(hosts::HEALTHY_AFTER);
    h.s.on_disconnected(h.now, "reset by peer");
    assert!(matches!(h.actions().last(), Some(Action::Connect(_))));
    h.advance(Duration::from_millis(999));
    assert!(h.actions().is_empty());
    h.advance(Duration::from_millis(1));
    assert!(matches!(h.actions().last(), Some(Action::Connect(_))));
}

/// A lone server restarting accepts a connection while it loads and never answers it. With
/// the whole session timeout for that attempt, the session expired before the next one; the
/// attempt now ends halfway to the expiry, and the next one takes the session back.
#[test]
fn a_silent_server_leaves_time_for_another_attempt_before_the_session_expires() {
    let mut h = Harness::new(config(1));
    h.establish(0x42, 30_000);
    // The last word from the server came a read timeout before the loss was seen.
    h.advance(Duration::from_secs(20));
    h.s.on_disconnected(h.now, "read timeout");
    let request = h.open_connection();
    assert_eq!(request.session_id, 0x42);
    let silent_from = h.now;
    while matches!(h.s.phase, Phase::Handshaking { .. }) {
        h.advance(Duration::from_millis(100));
    }
    assert_ne!(h.state(), SessionState::Expired, "no second attempt");
    let given_up_after = h.now - silent_from;
    assert!(
        given_up_after <= Duration::from_secs(5),
        "the silent attempt held on for {given_up_after:?} of the 10 s left"
    );
    let request = h.open_connection();
    assert_eq!(request.session_id, 0x42, "the session is resumed");
    h.answer_handshake(0x42, 30_000, false);
    assert_eq!(h.state(), SessionState::Connected);
}

/// A connection closed before the handshake's answer is recorded with the usual causes; a
/// resume also names a server behind the session's changes, and a TLS client no TLS-only port.
#[test]
fn a_handshake_closed_unanswered_names_the_causes_it_may_have() {
    let reason = |h: &Harness| {
        let failures = h.s.state_tx.info.failures.borrow();
        failures.by_server.last().map(|(_, r)| r.clone()).unwrap()
    };
    let mut h = Harness::new(config(1));
    h.open_connection();
    h.s.on_disconnected(h.now, "connection closed by the server");
    let new_session = reason(&h);
    assert!(new_session.starts_with("connection closed by the server before answering: "));
    assert!(new_session.contains("maxClientCnxns"), "{new_session}");
    assert!(new_session.contains("serves only TLS"), "{new_session}");
    assert!(!new_session.contains("change"), "{new_session}");

    let mut cfg = config(1);
    cfg.plain = false;
    let mut h = Harness::new(cfg);
    h.establish(0x42, 3000);
    let _rx = h.get_data("/a");
    let xid = h.xids()[0].0;
    h.reply(xid, 7, ErrorCode::Ok, &[0, 0, 0, 0]);
    h.advance(hosts::HEALTHY_AFTER);
    h.s.on_disconnected(h.now, "reset by peer");
    h.open_connection();
    h.s.on_disconnected(h.now, "connection closed by the server");
    let resume = reason(&h);
    assert!(resume.contains("has not yet seen every change"), "{resume}");
    assert!(!resume.contains("TLS"), "{resume}");
}

/// A server that accepts every handshake and closes at once used to get a connection per
/// handshake, tens of thousands per second: the pauses now grow as if the handshakes had
/// failed, to one connection per half second or more.
#[test]
fn handshakes_that_are_closed_at_once_get_ever_longer_pauses() {
    let mut h = Harness::new(config(3));
    let start = h.now;
    let mut connections = 0;
    while h.now < start + Duration::from_secs(10) {
        h.establish(5, 3000);
        connections += 1;
        h.s.on_disconnected(h.now, "closed by the server");
        assert_eq!(h.state(), SessionState::Disconnected);
        assert!(
            matches!(h.s.phase, Phase::Backoff { .. }),
            "no pause after connection {connections}"
        );
    }
    // 50, 100, 200, 400, 800 ms, then 1 s pauses, each jittered down to half.
    assert!(connections <= 25, "{connections} connections in 10 s");
}

#[test]
fn the_first_loss_after_a_connection_that_lasted_reconnects_at_once() {
    let mut h = Harness::new(config(3));
    h.establish(5, 3000);
    // Short-lived connections first, then one that lasts.
    for _ in 0..3 {
        h.s.on_disconnected(h.now, "closed by the server");
        h.establish(5, 3000);
    }
    h.advance(Duration::from_millis(900));
    h.reply(-2, 0, ErrorCode::Ok, &[]);
    h.advance(hosts::HEALTHY_AFTER - Duration::from_millis(900));
    h.actions();
    h.s.on_disconnected(h.now, "server died");
    let actions = h.actions();
    assert!(
        matches!(actions.last(), Some(Action::Connect(_))),
        "{actions:?}"
    );
}

/// A server restarting refuses connections for a moment: while the session may live, the
/// client comes back a twentieth of its timeout after the outage at the latest, well inside a
/// lock holder's suspend limit (a quarter of the timeout), however long the refusals lasted.
#[test]
fn while_a_session_lives_refused_connections_are_retried_a_twentieth_of_its_timeout_apart() {
    let mut h = Harness::new(config(1));
    h.establish(0x42, 4000);
    h.advance(hosts::HEALTHY_AFTER);
    h.reply(-2, 0, ErrorCode::Ok, &[]);
    h.s.on_disconnected(h.now, "server died");
    assert!(matches!(h.actions().last(), Some(Action::Connect(_))));
    let cap = Duration::from_millis(200);
    let start = h.now;
    let mut attempts = 0;
    // Refused for 2 s (less than the 4 s timeout: no local expiry).
    while h.now < start + Duration::from_secs(2) {
        h.s.on_disconnected(h.now, "connection refused");
        attempts += 1;
        assert_eq!(h.actions(), vec![Action::Disconnect]);
        let pause = h.s.next_deadline().unwrap() - h.now;
        assert!(pause > Duration::ZERO && pause <= cap, "{pause:?}");
        h.advance(pause);
        assert!(matches!(h.actions().last(), Some(Action::Connect(_))));
    }
    assert!(attempts >= 10, "{attempts} attempts in 2 s");
}

/// A member without a quorum accepts the connection and closes it before the handshake's
/// reply: while the session lives, that too is retried a twentieth of its timeout apart.
#[test]
fn while_a_session_lives_attempts_closed_during_the_handshake_are_retried_soon() {
    let mut h = Harness::new(config(1));
    h.establish(0x42, 4000);
    h.advance(hosts::HEALTHY_AFTER);
    h.reply(-2, 0, ErrorCode::Ok, &[]);
    h.s.on_disconnected(h.now, "server died");
    for _ in 0..8 {
        h.actions();
        h.s.on_connected(h.now);
        h.s.on_disconnected(h.now, "closed during the handshake");
        let pause = h.s.next_deadline().unwrap() - h.now;
        assert!(pause <= Duration::from_millis(200), "{pause:?}");
        h.advance(pause);
    }
}
