//! Losing and regaining connections: failing in-flight requests, resuming the session,
//! restoring watches, expiry, close.

use super::*;

#[test]
fn disconnect_fails_pending_with_connection_loss_never_hangs() {
    let mut h = connected();
    let mut rxs: Vec<_> = (0..5).map(|i| h.get_data(&format!("/{i}"))).collect();
    h.s.on_disconnected(h.now, "eof");
    for rx in &mut rxs {
        assert_eq!(result(rx), Some(Err(ErrorKind::ConnectionLoss)));
    }
    assert_eq!(h.state(), SessionState::Disconnected);
}

#[test]
fn close_sends_close_session_after_earlier_requests() {
    let mut h = connected();
    let mut a = h.get_data("/a");
    let (done_tx, mut done_rx) = oneshot::channel();
    h.s.close(Some(done_tx), h.now);
    assert_eq!(
        h.xids(),
        vec![(1, OpCode::GetData), (2, OpCode::CloseSession)]
    );
    let mut late = h.get_data("/late");
    assert_eq!(result(&mut late), Some(Err(ErrorKind::Closed)));
    h.reply(1, 3, ErrorCode::Ok, &[]);
    assert!(matches!(a.try_recv(), Ok(Ok(_))));
    assert!(
        done_rx.try_recv().is_err(),
        "not done before the close reply"
    );
    h.reply(2, 4, ErrorCode::Ok, &[]);
    assert!(done_rx.try_recv().is_ok());
    assert_eq!(h.state(), SessionState::Closed);
    assert!(h.s.is_terminated());
    assert_eq!(h.s.next_deadline(), None);
}

#[test]
fn close_while_disconnected_ends_at_once_and_fails_waiting_requests() {
    let mut h = connected();
    h.s.on_disconnected(h.now, "eof");
    let mut waiting = h.get_data("/a");
    assert_eq!(result(&mut waiting), None, "held for the reconnect");
    h.s.close(None, h.now);
    assert_eq!(h.state(), SessionState::Closed);
    assert_eq!(result(&mut waiting), Some(Err(ErrorKind::Closed)));
}

/// Reconnect after a loss: same session id and password, the last zxid from replies (not from
/// notifications or pings), auth replayed first, then the watches, then the reads behind
/// persistent watches, then the held requests.
#[test]
fn resume_handshake_replays_auth_then_watches_then_waiting_requests() {
    let mut cfg = config(2);
    cfg.auth = vec![("digest".into(), Secret::copy_from(b"u:p"))];
    let mut h = Harness::new(cfg);
    h.establish(0x77, 3000);
    assert_eq!(
        h.state(),
        SessionState::Connecting,
        "connected only once auth is back"
    );
    assert_eq!(h.xids(), vec![(-4, OpCode::Auth)]);
    h.reply(-4, 0, ErrorCode::Ok, &[]);
    assert_eq!(h.state(), SessionState::Connected);

    let (_r, mut wrx) = h.get_data_watched("/w");
    let (ptx, mut prx) = event_queue::channel(usize::MAX);
    let _p = h.submit(
        Request::AddWatch(zookeeper_jute::AddWatchRequest {
            path: "/p".into(),
            mode: 1,
        }),
        Some(WatchRegistration::Persistent {
            path: "/p".into(),
            recursive: true,
            tx: ptx,
        }),
    );
    h.xids();
    h.reply(1, 0x30, ErrorCode::Ok, &[]);
    h.reply(2, 0x31, ErrorCode::Ok, &[0, 0, 0, 0]);
    h.notify(EventType::NodeCreated, "/p/x");
    assert_eq!(prx.try_recv().unwrap().path, "/p/x");

    h.s.on_disconnected(h.now, "eof");
    assert_eq!(h.state(), SessionState::Disconnected);
    let mut waiting = h.get_data("/later");

    let request = h.establish(0x77, 3000);
    assert_eq!(request.session_id, 0x77);
    assert_eq!(&request.passwd[..], &[7; 16]);
    assert_eq!(request.last_zxid_seen, 0x31);
    let sent = h.sent();
    let kinds: Vec<OpCode> = sent
        .iter()
        .map(|f| match f {
            Sent::Request { opcode, .. } => *opcode,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            OpCode::Auth,
            OpCode::SetWatches2,
            OpCode::GetChildren2,
            OpCode::GetData
        ]
    );
    let Sent::Request {
        xid: sw_xid, body, ..
    } = &sent[1]
    else {
        unreachable!()
    };
    let sw = SetWatches2::decode(&mut body.clone()).unwrap();
    assert_eq!(sw.relative_zxid, 0x31);
    assert_eq!(sw.data_watches, vec!["/w".to_string()]);
    assert_eq!(sw.persistent_recursive_watches, vec!["/p".to_string()]);
    let Sent::Request { xid: walk_xid, .. } = &sent[2] else {
        unreachable!()
    };
    let Sent::Request { xid: get_xid, .. } = &sent[3] else {
        unreachable!()
    };

    // Missed change reported by the server before the setWatches reply: fires exactly once.
    h.reply(-4, 0, ErrorCode::Ok, &[]);
    h.notify(EventType::NodeDataChanged, "/w");
    h.reply(*sw_xid, 0x35, ErrorCode::Ok, &[]);
    // The recursive watch's subtree is gone: what was known below it is reported deleted.
    h.reply(*walk_xid, 0x35, ErrorCode::NoNode, &[]);
    h.reply(*get_xid, 0x35, ErrorCode::Ok, &[]);
    assert_eq!(
        events(&mut prx),
        vec![
            (EventType::NodeDeleted, "/p/x".to_string()),
            (EventType::NodeDeleted, "/p".to_string())
        ]
    );
    assert_eq!(
        wrx.try_recv().unwrap().event_type,
        EventType::NodeDataChanged
    );
    assert_eq!(result(&mut waiting), Some(Ok(())));
    assert_eq!(h.state(), SessionState::Connected);
}

#[test]
fn many_watches_are_restored_in_several_frames() {
    let mut cfg = config(1);
    cfg.set_watches_max_bytes = 1000;
    let mut h = Harness::new(cfg);
    h.establish(1, 3000);
    let mut watchers = Vec::new();
    for i in 0..500 {
        let path = format!("/node-{i:05}");
        let (tx, rx) = oneshot::channel();
        watchers.push(rx);
        let _r = h.submit(
            Request::Exists(zookeeper_jute::ExistsRequest {
                path: path.clone(),
                watch: true,
            }),
            Some(WatchRegistration::Exists(path, tx)),
        );
    }
    h.xids();
    for xid in 1..=500 {
        h.reply(xid, 9, ErrorCode::NoNode, &[]);
    }
    h.s.on_disconnected(h.now, "eof");
    h.establish(1, 3000);
    let mut restored = 0;
    let mut frames = 0;
    for frame in h.sent() {
        let Sent::Request { opcode, body, .. } = frame else {
            panic!()
        };
        assert_eq!(opcode, OpCode::SetWatches);
        assert!(body.len() < 1200);
        let sw = SetWatches::decode(&mut body.clone()).unwrap();
        restored += sw.exist_watches.len();
        frames += 1;
    }
    assert_eq!(restored, 500);
    assert!(frames > 1);
}

#[test]
fn dropped_watchers_are_not_restored() {
    let mut h = connected();
    let (_r, rx) = h.get_data_watched("/w");
    h.reply(1, 2, ErrorCode::Ok, &[]);
    drop(rx);
    h.s.on_disconnected(h.now, "eof");
    h.establish(0x42, 3000);
    assert!(h.xids().is_empty(), "nothing to restore");
}

#[test]
fn expired_on_reconnect_ends_everything() {
    let mut h = connected();
    let (_r, mut wrx) = h.get_data_watched("/w");
    h.reply(1, 2, ErrorCode::Ok, &[]);
    h.s.on_disconnected(h.now, "eof");
    let mut waiting = h.get_data("/x");
    h.establish(0, 0);
    assert_eq!(h.state(), SessionState::Expired);
    assert_eq!(
        wrx.try_recv().unwrap(),
        WatchedEvent::session(SessionState::Expired, "/w")
    );
    assert_eq!(result(&mut waiting), Some(Err(ErrorKind::SessionExpired)));
    let mut late = h.get_data("/y");
    assert_eq!(result(&mut late), Some(Err(ErrorKind::SessionExpired)));
    assert!(h.s.is_terminated());
}

/// A server behind the client's last zxid closes the connection without a ConnectResponse: the
/// machine moves on to the next server, keeping the session and the zxid.
#[test]
fn server_behind_is_skipped_for_the_next() {
    let mut h = Harness::new(config(2));
    h.establish(9, 3000);
    let _r = h.get_data("/a");
    h.xids();
    h.reply(1, 100, ErrorCode::Ok, &[]);
    // A connection that lasted: the next server is tried at once.
    h.advance(hosts::HEALTHY_AFTER);
    h.s.on_disconnected(h.now, "eof");
    let Some(Action::Connect(first)) = h.actions().pop() else {
        panic!()
    };
    h.s.on_connected(h.now);
    h.handshaken = false;
    let Sent::Connect(req) = h.sent().remove(0) else {
        panic!()
    };
    assert_eq!(req.last_zxid_seen, 100);
    h.s.on_disconnected(h.now, "closed during handshake");
    let Some(Action::Connect(second)) = h.actions().pop() else {
        panic!()
    };
    assert_ne!(first, second);
    assert_eq!(h.state(), SessionState::Disconnected);
    h.s.on_connected(h.now);
    h.handshaken = false;
    let Sent::Connect(req) = h.sent().remove(0) else {
        panic!()
    };
    assert_eq!((req.session_id, req.last_zxid_seen), (9, 100));
}

#[test]
fn fail_fast_fails_requests_made_while_disconnected() {
    let mut cfg = config(1);
    cfg.fail_fast = true;
    let mut h = Harness::new(cfg);
    h.establish(1, 3000);
    h.s.on_disconnected(h.now, "eof");
    let mut rx = h.get_data("/a");
    assert_eq!(result(&mut rx), Some(Err(ErrorKind::ConnectionLoss)));
}

#[test]
fn abandoned_requests_are_never_sent() {
    let mut h = connected();
    h.s.on_disconnected(h.now, "eof");
    let rx = h.get_data("/a");
    drop(rx);
    h.establish(0x42, 3000);
    assert!(h.xids().is_empty());
    assert_eq!(h.s.take_completed(), 1);
}

#[test]
fn auth_failure_is_terminal() {
    let mut cfg = config(1);
    cfg.auth = vec![("bogus".into(), Secret::copy_from(b"x"))];
    let mut h = Harness::new(cfg);
    h.establish(3, 3000);
    h.xids();
    h.reply(-4, 0, ErrorCode::AuthFailed, &[]);
    assert_eq!(h.state(), SessionState::AuthFailed);
    let mut late = h.get_data("/a");
    assert_eq!(result(&mut late), Some(Err(ErrorKind::AuthFailed)));
}

fn orphans(actions: &[Action]) -> usize {
    actions
        .iter()
        .filter(|a| matches!(a, Action::Orphan { .. }))
        .count()
}

/// A handshake given up on is set apart for its answer (the driver closes the session it
/// grants) when it asked for a new session or the session is ending; never when it resumes
/// the session still in use, nor before the request went out.
#[test]
fn a_handshake_given_up_on_is_set_apart_unless_it_resumes_the_session() {
    // A new session asked for: the attempt times out.
    let mut h = Harness::new(config(2));
    h.open_connection();
    h.advance(T);
    let actions = h.actions();
    assert_eq!(orphans(&actions), 1, "{actions:?}");
    let first = actions
        .iter()
        .position(|a| matches!(a, Action::Orphan { .. }))
        .unwrap();
    assert!(
        matches!(actions[first + 1], Action::Disconnect),
        "set apart before it is dropped: {actions:?}"
    );
    assert!(matches!(actions[0], Action::Orphan { wait } if wait == T));

    // Closed by the user while the handshake is out.
    h.s.on_connected(h.now);
    h.s.output().clear();
    h.s.close(None, h.now);
    assert_eq!(orphans(&h.actions()), 1);
    assert_eq!(h.state(), SessionState::Closed);

    // Closed before the TCP connection was even up: nothing was asked.
    let mut h = Harness::new(config(1));
    h.s.close(None, h.now);
    assert_eq!(orphans(&h.actions()), 0);

    // A resume times out: its late answer is the session, which goes on elsewhere.
    let mut h = Harness::new(config(2));
    h.establish(0x42, 3000);
    h.s.on_disconnected(h.now, "eof");
    let request = h.open_connection();
    assert_eq!(request.session_id, 0x42);
    // The attempt's share of the session timeout, short of the session's expiry.
    h.advance(T / 2);
    let actions = h.actions();
    assert!(
        actions.contains(&Action::Disconnect),
        "given up: {actions:?}"
    );
    assert_ne!(h.state(), SessionState::Expired);
    assert_eq!(orphans(&actions), 0);
}
