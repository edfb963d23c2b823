//! Step-by-step tests of the session machine: no sockets, no clock, time is an argument.

use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use tokio::sync::{mpsc, oneshot, watch};
use zk_protocol::{
    ConnectRequest, ConnectResponse, Decode, Encode, ErrorCode, EventType, GetDataRequest,
    KeeperState, OpCode, ReplyHeader, Request, RequestHeader, SetWatches, SetWatches2,
    WatcherEvent, WatcherType,
};

use super::*;
use crate::packet::{Packet, PacketKind, ReplyRx, WatchRegistration};
use crate::watcher::WatchedEvent;

const T: Duration = Duration::from_millis(3000);

fn hosts(n: u16) -> Vec<HostPort> {
    (0..n)
        .map(|i| HostPort {
            host: "127.0.0.1".into(),
            port: 2000 + i,
        })
        .collect()
}

fn config(n: u16) -> SessionConfig {
    SessionConfig {
        hosts: hosts(n),
        chroot: Chroot::new(None),
        session_timeout: T,
        attempt_timeout: None,
        read_only: false,
        fail_fast: false,
        max_incoming_frame: 1 << 20,
        set_watches_max_bytes: SET_WATCHES_MAX_BYTES,
        auth: Vec::new(),
        seed: 1,
        resume: None,
    }
}

/// A frame the client wrote, decoded.
#[derive(Debug)]
enum Sent {
    Connect(ConnectRequest),
    Request {
        xid: i32,
        opcode: OpCode,
        body: Bytes,
    },
}

struct Harness {
    s: Session,
    state: watch::Receiver<SessionState>,
    now: Instant,
    handshaken: bool,
}

impl Harness {
    fn new(cfg: SessionConfig) -> Harness {
        let (tx, rx) = crate::state::StatePublisher::new();
        let now = Instant::now();
        Harness {
            s: Session::new(cfg, tx, now),
            state: rx,
            now,
            handshaken: false,
        }
    }

    fn state(&self) -> SessionState {
        *self.state.borrow()
    }

    fn advance(&mut self, by: Duration) {
        self.now += by;
        self.s.on_timeout(self.now);
    }

    fn actions(&mut self) -> Vec<Action> {
        std::iter::from_fn(|| self.s.poll_action()).collect()
    }

    /// Every frame written since the last call.
    fn sent(&mut self) -> Vec<Sent> {
        let mut out = self.s.output().split().freeze();
        let mut frames = Vec::new();
        while !out.is_empty() {
            let len = i32::from_be_bytes(out[..4].try_into().unwrap()) as usize;
            let mut frame = out.slice(4..4 + len);
            out = out.slice(4 + len..);
            if !self.handshaken {
                self.handshaken = true;
                frames.push(Sent::Connect(ConnectRequest::decode(&mut frame).unwrap()));
            } else {
                let header = RequestHeader::decode(&mut frame).unwrap();
                frames.push(Sent::Request {
                    xid: header.xid,
                    opcode: header.opcode,
                    body: frame,
                });
            }
        }
        frames
    }

    fn feed(&mut self, payload: BytesMut) {
        let mut buf = BytesMut::new();
        buf.put_i32(payload.len() as i32);
        buf.extend_from_slice(&payload);
        self.s.on_bytes(&mut buf, self.now);
    }

    /// TCP up + handshake answered; returns the connect request the machine sent.
    fn establish(&mut self, session_id: i64, timeout_ms: i32) -> ConnectRequest {
        self.establish_with(session_id, timeout_ms, false)
    }

    fn establish_with(
        &mut self,
        session_id: i64,
        timeout_ms: i32,
        read_only: bool,
    ) -> ConnectRequest {
        self.handshake(session_id, timeout_ms, read_only)
    }

    fn handshake(&mut self, session_id: i64, timeout_ms: i32, read_only: bool) -> ConnectRequest {
        let actions = self.actions();
        assert!(
            matches!(actions.last(), Some(Action::Connect(_))),
            "{actions:?}"
        );
        self.s.on_connected(self.now);
        self.handshaken = false;
        let request = match self.sent().remove(0) {
            Sent::Connect(c) => c,
            other => panic!("{other:?}"),
        };
        let mut payload = BytesMut::new();
        ConnectResponse {
            protocol_version: 0,
            timeout: timeout_ms,
            session_id,
            passwd: Bytes::from_static(&[7; 16]),
            read_only: Some(read_only),
        }
        .encode(&mut payload);
        self.feed(payload);
        request
    }

    fn reply(&mut self, xid: i32, zxid: i64, err: ErrorCode, body: &[u8]) {
        let mut payload = BytesMut::new();
        ReplyHeader { xid, zxid, err }.encode(&mut payload);
        payload.extend_from_slice(body);
        self.feed(payload);
    }

    fn notify(&mut self, event_type: EventType, path: &str) {
        let mut payload = BytesMut::new();
        ReplyHeader {
            xid: -1,
            zxid: -1,
            err: ErrorCode::Ok,
        }
        .encode(&mut payload);
        WatcherEvent {
            event_type,
            state: KeeperState::SyncConnected,
            path: path.into(),
        }
        .encode(&mut payload);
        self.feed(payload);
    }

    fn submit(&mut self, request: Request, watch: Option<WatchRegistration>) -> ReplyRx {
        let (frame, opcode) = Packet::encode(&request, 0, 1 << 20).unwrap();
        let (tx, rx) = oneshot::channel();
        self.s.submit(
            Packet {
                frame: frame.freeze(),
                opcode,
                kind: PacketKind::Request,
                watch,
                reply: tx,
            },
            self.now,
        );
        rx
    }

    fn get_data(&mut self, path: &str) -> ReplyRx {
        self.submit(
            Request::GetData(GetDataRequest {
                path: path.into(),
                watch: false,
            }),
            None,
        )
    }

    fn xids(&mut self) -> Vec<(i32, OpCode)> {
        self.sent()
            .into_iter()
            .map(|f| match f {
                Sent::Request { xid, opcode, .. } => (xid, opcode),
                other => panic!("{other:?}"),
            })
            .collect()
    }
}

fn connected() -> Harness {
    let mut h = Harness::new(config(1));
    h.establish(0x42, 3000);
    assert_eq!(h.state(), SessionState::Connected);
    h
}

fn result(rx: &mut ReplyRx) -> Option<Result<(), Error>> {
    rx.try_recv().ok().map(|r| r.map(|_| ()))
}

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
    assert_eq!(result(&mut rx), Some(Err(Error::ConnectionLoss)));
    let actions = h.actions();
    assert_eq!(actions[0], Action::Disconnect);
    assert!(
        matches!(actions[1], Action::Connect(_)),
        "reconnects at once"
    );
    assert_eq!(h.s.take_completed(), 1);
}

#[test]
fn xid_mismatch_is_a_protocol_error_that_fails_every_pending_request() {
    let mut h = connected();
    let mut a = h.get_data("/a");
    let mut b = h.get_data("/b");
    assert_eq!(h.xids(), vec![(1, OpCode::GetData), (2, OpCode::GetData)]);
    h.reply(2, 10, ErrorCode::Ok, &[]);
    assert_eq!(result(&mut a), Some(Err(Error::ConnectionLoss)));
    assert_eq!(result(&mut b), Some(Err(Error::ConnectionLoss)));
    assert_eq!(h.state(), SessionState::Disconnected);
    assert_eq!(
        h.s.last_zxid(),
        0,
        "a reply that broke the protocol is not trusted"
    );
}

#[test]
fn reply_with_nothing_pending_is_a_protocol_error() {
    let mut h = connected();
    h.reply(9, 10, ErrorCode::Ok, &[]);
    assert_eq!(h.state(), SessionState::Disconnected);
}

#[test]
fn oversized_frame_is_a_protocol_error() {
    let mut h = connected();
    let mut rx = h.get_data("/a");
    let mut buf = BytesMut::new();
    buf.put_i32(2 << 20);
    h.s.on_bytes(&mut buf, h.now);
    assert_eq!(result(&mut rx), Some(Err(Error::ConnectionLoss)));
    assert!(buf.is_empty());
}

#[test]
fn replies_complete_in_order_and_errors_are_typed() {
    let mut h = connected();
    let mut a = h.get_data("/a");
    let mut b = h.get_data("/b");
    h.xids();
    h.reply(1, 7, ErrorCode::NoNode, &[]);
    assert_eq!(result(&mut a), Some(Err(Error::NoNode)));
    assert_eq!(result(&mut b), None);
    h.reply(2, 8, ErrorCode::Ok, b"body");
    let reply = b.try_recv().unwrap().unwrap();
    assert_eq!(&reply.body[..], b"body");
    assert_eq!(h.s.last_zxid(), 8);
}

#[test]
fn disconnect_fails_pending_with_connection_loss_never_hangs() {
    let mut h = connected();
    let mut rxs: Vec<_> = (0..5).map(|i| h.get_data(&format!("/{i}"))).collect();
    h.s.on_disconnected(h.now, "eof");
    for rx in &mut rxs {
        assert_eq!(result(rx), Some(Err(Error::ConnectionLoss)));
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
    assert_eq!(result(&mut late), Some(Err(Error::Closed)));
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
fn close_without_reply_ends_at_the_deadline() {
    let mut h = connected();
    h.s.close(None, h.now);
    h.advance(Duration::from_millis(2000));
    assert_eq!(h.state(), SessionState::Closed);
}

#[test]
fn close_while_disconnected_ends_at_once_and_fails_waiting_requests() {
    let mut h = connected();
    h.s.on_disconnected(h.now, "eof");
    let mut waiting = h.get_data("/a");
    assert_eq!(result(&mut waiting), None, "held for the reconnect");
    h.s.close(None, h.now);
    assert_eq!(h.state(), SessionState::Closed);
    assert_eq!(result(&mut waiting), Some(Err(Error::Closed)));
}

#[test]
fn event_is_delivered_before_the_reply_that_follows_it() {
    let mut h = connected();
    let (wtx, mut wrx) = oneshot::channel();
    let _g = h.submit(
        Request::GetData(GetDataRequest {
            path: "/w".into(),
            watch: true,
        }),
        Some(WatchRegistration::Data("/w".into(), wtx)),
    );
    h.reply(1, 5, ErrorCode::Ok, &[]);
    let mut set = h.get_data("/w");
    // Server order: the notification, then the reply of the write that caused it.
    let mut buf = BytesMut::new();
    for payload in [
        {
            let mut p = BytesMut::new();
            ReplyHeader {
                xid: -1,
                zxid: -1,
                err: ErrorCode::Ok,
            }
            .encode(&mut p);
            WatcherEvent {
                event_type: EventType::NodeDataChanged,
                state: KeeperState::SyncConnected,
                path: "/w".into(),
            }
            .encode(&mut p);
            p
        },
        {
            let mut p = BytesMut::new();
            ReplyHeader {
                xid: 2,
                zxid: 6,
                err: ErrorCode::Ok,
            }
            .encode(&mut p);
            p
        },
    ] {
        buf.put_i32(payload.len() as i32);
        buf.extend_from_slice(&payload);
    }
    // Feed one byte short of the second frame: the event is out, the reply is not.
    let mut first = buf.split_to(buf.len() - 1);
    h.s.on_bytes(&mut first, h.now);
    assert_eq!(
        wrx.try_recv().unwrap().event_type,
        EventType::NodeDataChanged
    );
    assert_eq!(result(&mut set), None);
    first.extend_from_slice(&buf);
    h.s.on_bytes(&mut first, h.now);
    assert_eq!(result(&mut set), Some(Ok(())));
}

#[test]
fn exists_on_missing_node_leaves_an_exist_watch_but_get_data_does_not() {
    let mut h = connected();
    let (etx, mut erx) = oneshot::channel();
    let _e = h.submit(
        Request::Exists(zk_protocol::ExistsRequest {
            path: "/x".into(),
            watch: true,
        }),
        Some(WatchRegistration::Exists("/x".into(), etx)),
    );
    let (dtx, mut drx) = oneshot::channel();
    let _d = h.submit(
        Request::GetData(GetDataRequest {
            path: "/x".into(),
            watch: true,
        }),
        Some(WatchRegistration::Data("/x".into(), dtx)),
    );
    h.reply(1, 1, ErrorCode::NoNode, &[]);
    h.reply(2, 1, ErrorCode::NoNode, &[]);
    assert!(matches!(
        drx.try_recv(),
        Err(oneshot::error::TryRecvError::Closed)
    ));
    h.notify(EventType::NodeCreated, "/x");
    assert_eq!(erx.try_recv().unwrap().event_type, EventType::NodeCreated);
}

/// Reconnect after a loss: same session id and password, the last zxid from replies (not from
/// notifications or pings), auth replayed first, then the watches, then the held requests.
#[test]
fn resume_handshake_replays_auth_then_watches_then_waiting_requests() {
    let mut cfg = config(2);
    cfg.auth = vec![("digest".into(), Bytes::from_static(b"u:p"))];
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

    let (wtx, mut wrx) = oneshot::channel();
    let _r = h.submit(
        Request::GetData(GetDataRequest {
            path: "/w".into(),
            watch: true,
        }),
        Some(WatchRegistration::Data("/w".into(), wtx)),
    );
    let (ptx, mut prx) = mpsc::unbounded_channel();
    let _p = h.submit(
        Request::AddWatch(zk_protocol::AddWatchRequest {
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
        vec![OpCode::Auth, OpCode::SetWatches2, OpCode::GetData]
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
    let Sent::Request { xid: get_xid, .. } = &sent[2] else {
        unreachable!()
    };

    // Missed change reported by the server before the setWatches reply: fires exactly once.
    h.reply(-4, 0, ErrorCode::Ok, &[]);
    h.notify(EventType::NodeDataChanged, "/w");
    h.reply(*sw_xid, 0x35, ErrorCode::Ok, &[]);
    h.reply(*get_xid, 0x35, ErrorCode::Ok, &[]);
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
            Request::Exists(zk_protocol::ExistsRequest {
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
    let (tx, rx) = oneshot::channel();
    let _r = h.submit(
        Request::GetData(GetDataRequest {
            path: "/w".into(),
            watch: true,
        }),
        Some(WatchRegistration::Data("/w".into(), tx)),
    );
    h.reply(1, 2, ErrorCode::Ok, &[]);
    drop(rx);
    h.s.on_disconnected(h.now, "eof");
    h.establish(0x42, 3000);
    assert!(h.xids().is_empty(), "nothing to restore");
}

#[test]
fn expired_on_reconnect_ends_everything() {
    let mut h = connected();
    let (tx, mut wrx) = oneshot::channel();
    let _r = h.submit(
        Request::GetData(GetDataRequest {
            path: "/w".into(),
            watch: true,
        }),
        Some(WatchRegistration::Data("/w".into(), tx)),
    );
    h.reply(1, 2, ErrorCode::Ok, &[]);
    h.s.on_disconnected(h.now, "eof");
    let mut waiting = h.get_data("/x");
    h.establish(0, 0);
    assert_eq!(h.state(), SessionState::Expired);
    assert_eq!(
        wrx.try_recv().unwrap(),
        WatchedEvent::session(SessionState::Expired, "/w")
    );
    assert_eq!(result(&mut waiting), Some(Err(Error::SessionExpired)));
    let mut late = h.get_data("/y");
    assert_eq!(result(&mut late), Some(Err(Error::SessionExpired)));
    assert!(h.s.is_terminated());
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
fn connect_attempt_times_out_at_timeout_over_hosts() {
    let mut h = Harness::new(config(3));
    h.actions();
    h.advance(Duration::from_millis(999));
    assert!(h.actions().is_empty());
    h.advance(Duration::from_millis(1));
    assert!(matches!(h.actions().last(), Some(Action::Connect(_))));
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
    assert_eq!(result(&mut rx), Some(Err(Error::ConnectionLoss)));
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
fn auth_reply_may_overtake_earlier_replies() {
    let mut h = connected();
    let mut a = h.get_data("/a");
    let (frame, opcode) = Packet::encode(
        &Request::Auth(zk_protocol::AuthPacket {
            auth_type: 0,
            scheme: "digest".into(),
            auth: Bytes::from_static(b"u:p"),
        }),
        -4,
        1 << 20,
    )
    .unwrap();
    let (tx, mut auth) = oneshot::channel();
    h.s.submit(
        Packet {
            frame: frame.freeze(),
            opcode,
            kind: PacketKind::Auth {
                scheme: "digest".into(),
                auth: Bytes::from_static(b"u:p"),
            },
            watch: None,
            reply: tx,
        },
        h.now,
    );
    assert_eq!(h.xids(), vec![(1, OpCode::GetData), (-4, OpCode::Auth)]);
    h.reply(-4, 0, ErrorCode::Ok, &[]);
    assert!(matches!(auth.try_recv(), Ok(Ok(_))));
    h.reply(1, 3, ErrorCode::Ok, &[]);
    assert!(matches!(a.try_recv(), Ok(Ok(_))));
    // The identity is replayed after a reconnect.
    h.s.on_disconnected(h.now, "eof");
    h.establish(0x42, 3000);
    assert_eq!(h.xids(), vec![(-4, OpCode::Auth)]);
}

#[test]
fn auth_failure_is_terminal() {
    let mut cfg = config(1);
    cfg.auth = vec![("bogus".into(), Bytes::from_static(b"x"))];
    let mut h = Harness::new(cfg);
    h.establish(3, 3000);
    h.xids();
    h.reply(-4, 0, ErrorCode::AuthFailed, &[]);
    assert_eq!(h.state(), SessionState::AuthFailed);
    let mut late = h.get_data("/a");
    assert_eq!(result(&mut late), Some(Err(Error::AuthFailed)));
}

#[test]
fn remove_watches_resolves_local_watchers() {
    let mut h = connected();
    let (tx, mut wrx) = oneshot::channel();
    let _r = h.submit(
        Request::GetData(GetDataRequest {
            path: "/w".into(),
            watch: true,
        }),
        Some(WatchRegistration::Data("/w".into(), tx)),
    );
    h.reply(1, 2, ErrorCode::Ok, &[]);
    let _rm = h.submit(
        Request::RemoveWatches(zk_protocol::RemoveWatchesRequest {
            path: "/w".into(),
            watcher_type: 2,
        }),
        Some(WatchRegistration::Remove("/w".into(), WatcherType::Data)),
    );
    h.reply(2, 2, ErrorCode::Ok, &[]);
    assert_eq!(
        wrx.try_recv().unwrap().event_type,
        EventType::DataWatchRemoved
    );
}

#[test]
fn xids_wrap_to_one() {
    let mut h = connected();
    h.s.next_xid = i32::MAX;
    let _a = h.get_data("/a");
    let _b = h.get_data("/b");
    assert_eq!(
        h.xids(),
        vec![(i32::MAX, OpCode::GetData), (1, OpCode::GetData)]
    );
}

fn read_only_config(n: u16) -> SessionConfig {
    let mut cfg = config(n);
    cfg.read_only = true;
    cfg
}

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
    assert_eq!(result(&mut pending), Some(Err(Error::ConnectionLoss)));
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
