//! The lease: from the send time of the latest request a read-write server answered, plus the
//! session timeout; published for the handles.

use super::*;

const MS: Duration = Duration::from_millis(1);

/// The machine's lease, checked against what the handles read.
fn lease(h: &Harness) -> Option<Instant> {
    let deadline = h.s.lease_deadline();
    assert_eq!(h.s.state_tx.info.lease(), deadline, "published as computed");
    deadline
}

#[test]
fn the_handshake_vouches_from_when_it_was_sent() {
    let mut h = Harness::new(config(1));
    assert_eq!(lease(&h), None, "no session yet");
    h.open_connection();
    let sent = h.now;
    h.now += 400 * MS;
    h.answer_handshake(0x42, 3000, false);
    assert_eq!(lease(&h), Some(sent + T));
}

#[test]
fn a_reply_vouches_from_the_send_time_of_its_request() {
    let mut h = connected();
    let established = h.now;
    h.now += 100 * MS;
    let sent = h.now;
    let _a = h.get_data("/a");
    h.xids();
    h.now += 1500 * MS;
    assert_eq!(lease(&h), Some(established + T), "not answered yet");
    h.reply(1, 7, ErrorCode::NoNode, &[]);
    assert_eq!(lease(&h), Some(sent + T), "an error reply is an answer too");
}

#[test]
fn a_slow_ping_counts_from_the_ping_not_from_its_reply() {
    let mut h = connected();
    let established = h.now;
    h.advance(1000 * MS);
    let ping_sent = h.now;
    assert_eq!(h.xids(), vec![(-2, OpCode::Ping)]);
    // Answered 900 ms later, just inside the read timeout.
    h.advance(900 * MS);
    assert_eq!(lease(&h), Some(established + T));
    h.reply(-2, 0, ErrorCode::Ok, &[]);
    assert_eq!(lease(&h), Some(ping_sent + T), "not {:?}", h.now + T);
}

#[test]
fn after_a_reconnect_only_what_the_new_connection_answers_counts() {
    let mut h = connected();
    let established = h.now;
    h.now += 100 * MS;
    let mut lost = h.get_data("/lost");
    h.xids();
    h.now += 100 * MS;
    h.s.on_disconnected(h.now, "eof");
    assert_eq!(result(&mut lost), Some(Err(ErrorKind::ConnectionLoss)));
    assert_eq!(
        lease(&h),
        Some(established + T),
        "a disconnect neither ends nor extends the lease"
    );
    h.now += 100 * MS;
    let _held = h.get_data("/held");

    h.now += 200 * MS;
    h.open_connection();
    let handshake_sent = h.now;
    h.now += 300 * MS;
    h.answer_handshake(0x42, 3000, false);
    assert_eq!(lease(&h), Some(handshake_sent + T));
    // The request held through the disconnect leaves now, on the new connection.
    let held_sent = h.now;
    assert_eq!(h.xids(), vec![(2, OpCode::GetData)]);
    h.now += 400 * MS;
    h.reply(2, 9, ErrorCode::Ok, &[]);
    assert_eq!(lease(&h), Some(held_sent + T));
}

#[test]
fn a_smaller_timeout_granted_on_reconnect_shortens_the_lease() {
    let mut h = connected();
    h.s.on_disconnected(h.now, "eof");
    h.open_connection();
    let sent = h.now;
    h.answer_handshake(0x42, 2000, false);
    assert_eq!(lease(&h), Some(sent + Duration::from_millis(2000)));
}

#[test]
fn read_only_servers_do_not_vouch() {
    let mut h = Harness::new(read_only_config(1));
    h.establish_with(0x42, 3000, true);
    assert_eq!(h.state(), SessionState::ConnectedReadOnly);
    let _a = h.get_data("/a");
    h.xids();
    h.reply(1, 3, ErrorCode::Ok, &[]);
    assert_eq!(lease(&h), None);
}

#[test]
fn auth_replies_do_not_vouch() {
    let mut cfg = config(1);
    cfg.auth = vec![("digest".into(), crate::secret::Secret::copy_from(b"u:p"))];
    let mut h = Harness::new(cfg);
    h.open_connection();
    let handshake_sent = h.now;
    h.now += 300 * MS;
    h.answer_handshake(0x42, 3000, false);
    assert_eq!(h.xids(), vec![(-4, OpCode::Auth)]);
    h.now += 300 * MS;
    // The server answers auth without touching the session.
    h.reply(-4, 0, ErrorCode::Ok, &[]);
    assert_eq!(h.state(), SessionState::Connected);
    assert_eq!(lease(&h), Some(handshake_sent + T));
}

#[test]
fn an_ended_session_has_no_lease() {
    let mut h = connected();
    h.s.close(None, h.now);
    h.xids();
    h.reply(1, 3, ErrorCode::Ok, &[]);
    assert_eq!(h.state(), SessionState::Closed);
    assert_eq!(lease(&h), None);

    let mut h = connected();
    h.s.on_disconnected(h.now, "eof");
    assert!(lease(&h).is_some());
    h.advance(T);
    assert_eq!(h.state(), SessionState::Expired);
    assert_eq!(lease(&h), None);
}
