//! Read-only servers: probing for a read-write one, local sessions, untrusted expiry.

use super::*;

#[test]
fn read_only_server_is_used_while_probing_for_a_read_write_one() {
    let mut h = Harness::new(read_only_config(3));
    let request = h.establish_with(0x51, 3000, true);
    assert_eq!(request.read_only, Some(true));
    assert_eq!(h.state(), SessionState::ConnectedReadOnly);
    assert!(h.actions().is_empty());
    h.advance(Duration::from_millis(100));
    let Some(Action::Probe(first)) = h.actions().pop() else {
        panic!("no probe")
    };
    h.advance(Duration::from_millis(500));
    assert!(
        !h.actions().iter().any(|a| matches!(a, Action::Probe(_))),
        "one probe at a time"
    );
    h.s.on_probe_result(first, false, h.now);
    h.advance(Duration::from_millis(199));
    assert!(!h.actions().iter().any(|a| matches!(a, Action::Probe(_))));
    h.advance(Duration::from_millis(1));
    let Some(Action::Probe(second)) = h.actions().pop() else {
        panic!("no second probe")
    };
    // A read-write server answers: move there at once.
    let mut pending = h.get_data("/a");
    h.s.on_probe_result(second.clone(), true, h.now);
    assert_eq!(result(&mut pending), Some(Err(ErrorKind::ConnectionLoss)));
    assert_eq!(
        h.actions(),
        vec![Action::Disconnect, Action::Connect(second)]
    );
    // The read-only session id is local to that server: ask the ensemble for a new one.
    h.s.on_connected(h.now);
    h.handshaken = false;
    let Sent::Connect(req) = h.sent().remove(0) else {
        panic!()
    };
    assert_eq!(req.session_id, 0);
}

#[test]
fn session_from_a_read_write_server_is_resumed_on_a_read_only_one_and_back() {
    let mut h = Harness::new(read_only_config(2));
    h.establish_with(0x61, 3000, false);
    h.s.on_disconnected(h.now, "quorum lost");
    let req = h.establish_with(0x61, 3000, true);
    assert_eq!(req.session_id, 0x61);
    assert_eq!(h.state(), SessionState::ConnectedReadOnly);
    h.advance(Duration::from_millis(100));
    let Some(Action::Probe(host)) = h.actions().pop() else {
        panic!()
    };
    h.s.on_probe_result(host, true, h.now);
    let req = h.establish_with(0x61, 3000, false);
    assert_eq!(req.session_id, 0x61);
    assert_eq!(h.state(), SessionState::Connected);
    h.advance(Duration::from_millis(500));
    assert!(
        !h.actions().iter().any(|a| matches!(a, Action::Probe(_))),
        "no probing on rw"
    );
}

#[test]
fn read_only_member_cannot_expire_a_session_of_the_ensemble() {
    let mut h = Harness::new(read_only_config(2));
    h.establish_with(0x71, 3000, false);
    h.s.on_disconnected(h.now, "eof");
    h.handshake(0, 0, true);
    assert_eq!(
        h.state(),
        SessionState::Disconnected,
        "not expired by a read-only member"
    );
    let req = h.establish_with(0x71, 3000, false);
    assert_eq!(req.session_id, 0x71);
    assert_eq!(h.state(), SessionState::Connected);
    // A read-write server's word is final.
    h.s.on_disconnected(h.now, "eof");
    h.handshake(0, 0, false);
    assert_eq!(h.state(), SessionState::Expired);
}
