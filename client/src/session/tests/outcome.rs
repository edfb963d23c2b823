//! Whether a failed request may have been applied: a write that went out and was not
//! answered may have; a read, an answer of the server, and a write that never went out have
//! not.

use zookeeper_jute::{CreateRequest, DeleteRequest};

use super::*;

/// The kind of a failed request and whether its outcome is unknown.
fn failure(rx: &mut ReplyRx) -> Option<(ErrorKind, bool)> {
    match rx.try_recv().ok()? {
        Ok(_) => panic!("the request succeeded"),
        Err(e) => Some((e.kind().clone(), e.is_outcome_unknown())),
    }
}

fn create_until(h: &mut Harness, path: &str, deadline: Option<Instant>) -> ReplyRx {
    let request = Request::Create2(CreateRequest {
        path: path.into(),
        data: None,
        acl: zookeeper_jute::Acl::open_unsafe(),
        flags: 0,
    });
    h.submit_until(request, None, deadline)
}

fn create(h: &mut Harness, path: &str) -> ReplyRx {
    create_until(h, path, None)
}

fn delete(h: &mut Harness, path: &str) -> ReplyRx {
    h.submit(
        Request::Delete(DeleteRequest {
            path: path.into(),
            version: -1,
        }),
        None,
    )
}

#[test]
fn a_write_in_flight_when_the_connection_is_lost_may_have_been_applied() {
    let mut h = connected();
    let mut write = create(&mut h, "/w");
    let mut read = h.get_data("/r");
    let mut gone = delete(&mut h, "/d");
    assert_eq!(h.xids().len(), 3);
    h.s.on_disconnected(h.now, "eof");
    assert_eq!(failure(&mut write), Some((ErrorKind::ConnectionLoss, true)));
    assert_eq!(failure(&mut read), Some((ErrorKind::ConnectionLoss, false)));
    assert_eq!(failure(&mut gone), Some((ErrorKind::ConnectionLoss, true)));
}

#[test]
fn a_write_held_back_while_disconnected_fails_fast_as_never_sent() {
    let mut cfg = config(1);
    cfg.fail_fast = true;
    let mut h = Harness::new(cfg);
    h.establish(0x42, 3000);
    h.s.on_disconnected(h.now, "eof");
    h.actions();
    let mut write = create(&mut h, "/w");
    assert_eq!(
        failure(&mut write),
        Some((ErrorKind::ConnectionLoss, false))
    );
}

#[test]
fn a_write_past_its_deadline_may_have_been_applied_only_if_it_was_sent() {
    let mut h = connected();
    let deadline = h.now + Duration::from_millis(500);
    let mut sent = create_until(&mut h, "/sent", Some(deadline));
    assert_eq!(h.xids().len(), 1);
    h.s.on_disconnected(h.now, "eof");
    assert_eq!(failure(&mut sent), Some((ErrorKind::ConnectionLoss, true)));

    let mut held = create_until(&mut h, "/held", Some(deadline));
    h.advance(Duration::from_millis(500));
    assert_eq!(failure(&mut held), Some((ErrorKind::Timeout, false)));

    let mut h = connected();
    let deadline = h.now + Duration::from_millis(500);
    let mut slow = create_until(&mut h, "/slow", Some(deadline));
    let mut slow_read = h.submit_until(
        Request::GetData(GetDataRequest {
            path: "/r".into(),
            watch: false,
        }),
        None,
        Some(deadline),
    );
    assert_eq!(h.xids().len(), 2);
    h.advance(Duration::from_millis(500));
    assert_eq!(failure(&mut slow), Some((ErrorKind::Timeout, true)));
    assert_eq!(failure(&mut slow_read), Some((ErrorKind::Timeout, false)));
}

#[test]
fn answers_of_the_server_are_definite() {
    let mut h = connected();
    let mut exists = create(&mut h, "/a");
    let mut moved = create(&mut h, "/b");
    h.xids();
    h.reply(1, 5, ErrorCode::NodeExists, &[]);
    h.reply(2, 5, ErrorCode::SessionMoved, &[]);
    assert_eq!(failure(&mut exists), Some((ErrorKind::NodeExists, false)));
    assert_eq!(failure(&mut moved), Some((ErrorKind::SessionMoved, false)));
}

#[test]
fn a_write_in_flight_when_the_session_expires_may_have_been_applied() {
    let mut h = connected();
    let mut refused = create(&mut h, "/a");
    let mut behind = create(&mut h, "/b");
    h.xids();
    h.reply(1, 5, ErrorCode::SessionExpired, &[]);
    assert_eq!(h.state(), SessionState::Expired);
    assert_eq!(
        failure(&mut refused),
        Some((ErrorKind::SessionExpired, false))
    );
    assert_eq!(
        failure(&mut behind),
        Some((ErrorKind::SessionExpired, true))
    );
}

#[test]
fn a_write_held_for_a_reconnect_that_finds_the_session_expired_was_never_sent() {
    let mut h = connected();
    h.s.on_disconnected(h.now, "eof");
    h.actions();
    let mut held = create(&mut h, "/held");
    h.establish(0, 0);
    assert_eq!(h.state(), SessionState::Expired);
    assert_eq!(failure(&mut held), Some((ErrorKind::SessionExpired, false)));
}
