//! Step-by-step tests of the session machine: no sockets, no clock, time is an argument.

mod catch_up_model;
mod deadlines;
mod lease;
mod lend;
mod outcome;
mod persistent;
mod read_buffer;
mod read_only;
mod rebalance;
mod reconnect;
mod replies;
mod sasl;
mod timing;
mod tls;

use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use tokio::sync::{oneshot, watch};
use zookeeper_jute::{
    ConnectRequest, ConnectResponse, Decode, Encode, ErrorCode, EventType, GetDataRequest,
    KeeperState, OpCode, ReplyHeader, Request, RequestHeader, SetWatches, SetWatches2,
    WatcherEvent, WatcherType,
};

use super::*;
use crate::event_queue::{self, EventReceiver};
use crate::packet::{Envelope, Packet, PacketKind, ReplyRx, WatchRegistration};
use crate::watched_event::WatchedEvent;

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
        connect_timeout: T,
        read_only: false,
        fail_fast: false,
        max_incoming_frame: 1 << 20,
        set_watches_max_bytes: SET_WATCHES_MAX_BYTES,
        max_frame: 1 << 20,
        max_subtree_bytes: usize::MAX,
        auth: Vec::new(),
        sasl: None,
        seed: 1,
        resume: None,
        plain: true,
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
        let request = self.open_connection();
        self.answer_handshake(session_id, timeout_ms, read_only);
        request
    }

    /// TCP up: returns the connect request the machine sent.
    fn open_connection(&mut self) -> ConnectRequest {
        let mut actions = self.actions();
        if !matches!(actions.last(), Some(Action::Connect(_))) {
            // A connection that did not last is followed by a pause: wait it out.
            self.wait_for_attempt();
            actions = self.actions();
        }
        assert!(
            matches!(actions.last(), Some(Action::Connect(_))),
            "{actions:?}"
        );
        self.s.on_connected(self.now);
        self.handshaken = false;
        match self.sent().remove(0) {
            Sent::Connect(c) => c,
            other => panic!("{other:?}"),
        }
    }

    /// The server's answer to the connect request.
    fn answer_handshake(&mut self, session_id: i64, timeout_ms: i32, read_only: bool) {
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
    }

    /// Advances the clock through a pause between attempts, to the next connection attempt.
    fn wait_for_attempt(&mut self) {
        if let Phase::Backoff { until } = self.s.phase {
            let pause = until - self.now;
            assert!(pause <= hosts::BACKOFF_MAX, "{pause:?}");
            self.advance(pause);
        }
    }

    fn reply(&mut self, xid: i32, zxid: i64, err: ErrorCode, body: &[u8]) {
        let mut payload = BytesMut::new();
        ReplyHeader { xid, zxid, err }.encode(&mut payload);
        payload.extend_from_slice(body);
        self.feed(payload);
    }

    fn notify(&mut self, event_type: EventType, path: &str) {
        self.notify_at(event_type, path, -1);
    }

    /// A notification whose header carries `zxid` (3.9+ servers: the zxid of the change).
    fn notify_at(&mut self, event_type: EventType, path: &str, zxid: i64) {
        let mut payload = BytesMut::new();
        ReplyHeader {
            xid: -1,
            zxid,
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
        self.submit_until(request, watch, None)
    }

    /// A request whose deadline the session keeps.
    fn submit_until(
        &mut self,
        request: Request,
        watch: Option<WatchRegistration>,
        deadline: Option<Instant>,
    ) -> ReplyRx {
        let (frame, opcode) = Packet::encode(&request, 0, 1 << 20).unwrap();
        let (tx, rx) = oneshot::channel();
        self.s.submit(
            Packet {
                frame: frame.freeze(),
                kind: PacketKind::Request,
                envelope: Envelope {
                    watch,
                    deadline,
                    ..Envelope::new(opcode, tx)
                },
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

    /// A `getData` that sets a data watch: the reply and the watcher's receiver.
    fn get_data_watched(&mut self, path: &str) -> (ReplyRx, oneshot::Receiver<WatchedEvent>) {
        let (tx, watcher) = oneshot::channel();
        let reply = self.submit(
            Request::GetData(GetDataRequest {
                path: path.into(),
                watch: true,
            }),
            Some(WatchRegistration::Data(path.into(), tx)),
        );
        (reply, watcher)
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

/// The events a stream holds now, as (type, path).
fn events(rx: &mut EventReceiver) -> Vec<(EventType, String)> {
    std::iter::from_fn(|| rx.try_recv())
        .map(|e| (e.event_type, e.path))
        .collect()
}

fn connected() -> Harness {
    let mut h = Harness::new(config(1));
    h.establish(0x42, 3000);
    assert_eq!(h.state(), SessionState::Connected);
    h
}

/// The reply's outcome, if there is one yet; requests fail here with a bare kind.
fn result(rx: &mut ReplyRx) -> Option<Result<(), ErrorKind>> {
    rx.try_recv()
        .ok()
        .map(|r| r.map(|_| ()).map_err(|e| e.kind().clone()))
}

fn read_only_config(n: u16) -> SessionConfig {
    let mut cfg = config(n);
    cfg.read_only = true;
    cfg
}
