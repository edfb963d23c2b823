//! The session machine driven by arbitrary input, for the `session` fuzz target (`fuzz/`) and
//! for `cargo test`, which replays every kept input (`tests/fuzz-inputs/session/`). Not part of
//! the API: compiled for tests, and for the fuzz target with the `fuzzing` feature.
//!
//! After a valid handshake, the input is read as a script of steps (each a fixed number of
//! bytes but for raw bytes, so that a mutation shifts few steps): bytes from the server (raw, or
//! well-formed replies to what is pending and notifications on a few paths), calls of every
//! kind, connections lost and made, clock advances, probes answered, streams read, callers
//! giving up. Whatever happens:
//!
//! * nothing panics;
//! * every request submitted completes exactly once, and the machine reports each completion
//!   once (what returns capacity to the request queue);
//! * memory stays within the configured bounds: the read buffer never holds more than one
//!   frame within the incoming limit, and no watch stream queues more than its bound.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use tokio::sync::oneshot;
use zookeeper_jute::{
    AddWatchRequest, ConnectResponse, Create2Response, CreateRequest, Decode, Encode, ErrorCode,
    EventType, ExistsRequest, GetChildren2Request, GetChildren2Response, GetDataRequest,
    GetDataResponse, KeeperState, OpCode, RemoveWatchesRequest, ReplyHeader, Request,
    RequestHeader, Stat, WatcherEvent, WatcherType,
};

use crate::connect_string::HostPort;
use crate::event_queue::{self, EventReceiver};
use crate::packet::{Envelope, Packet, PacketKind, ReplyRx, WatchRegistration};
use crate::path::Chroot;
use crate::secret::Secret;
use crate::session::{Action, Session, SessionConfig};
use crate::state::StatePublisher;
use crate::watched_event::WatchedEvent;

/// Paths the script picks from, so that calls, replies and notifications meet.
const PATHS: [&str; 8] = ["/", "/a", "/a/b", "/a/b/c", "/b", "/app", "/app/a", "/a/"];
const NAMES: [&str; 4] = ["a", "b", "c", ""];

/// Runs one input; panics if a property does not hold.
pub fn check_session(data: &[u8]) {
    let mut input = Input(data);
    let mut run = Run::new(&mut input);
    run.handshake(&mut input);
    while !input.0.is_empty() {
        run.step(&mut input);
        run.check_bounds();
    }
    run.finish();
}

/// The fuzzer's bytes, read front to back; zeros once they run out.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.byte() as usize % from.len()]
    }

    fn bytes(&mut self, n: usize) -> &[u8] {
        let n = n.min(self.0.len());
        let (taken, rest) = self.0.split_at(n);
        self.0 = rest;
        taken
    }

    fn i64(&mut self) -> i64 {
        i64::from(self.byte()) - 8
    }
}

/// A request the script made, and what became of it.
struct Call {
    reply: Option<ReplyRx>,
}

struct Run {
    s: Session,
    now: Instant,
    max_incoming_frame: usize,
    max_queued_events: usize,
    /// Bytes from the server not yet consumed by the machine.
    read_buf: BytesMut,
    /// Requests on the wire of the current connection, as (xid, opcode), in order.
    sent: VecDeque<(i32, OpCode)>,
    /// The next frame the machine writes is a connect request.
    expect_connect: bool,
    connecting: bool,
    connected: bool,
    probing: Option<HostPort>,
    calls: Vec<Call>,
    streams: Vec<EventReceiver>,
    /// Completions the machine reported.
    completed: usize,
}

impl Run {
    fn new(input: &mut Input) -> Run {
        let flags = input.byte();
        let max_incoming_frame = 32 + usize::from(input.byte()) * 4;
        let max_queued_events = 1 + usize::from(input.byte() % 8);
        let hosts = (0..1 + u16::from(flags % 3))
            .map(|i| HostPort {
                host: "127.0.0.1".into(),
                port: 2181 + i,
            })
            .collect();
        let cfg = SessionConfig {
            hosts,
            chroot: Chroot::new((flags & 4 != 0).then_some("/app")),
            session_timeout: Duration::from_millis(3000),
            attempt_timeout: None,
            connect_timeout: Duration::from_millis(3000),
            read_only: flags & 8 != 0,
            fail_fast: flags & 16 != 0,
            max_incoming_frame,
            set_watches_max_bytes: 1 + usize::from(input.byte()),
            max_frame: 1 << 20,
            // Small enough that recursive watches fold now and then.
            max_subtree_bytes: max_incoming_frame * 8,
            auth: if flags & 32 != 0 {
                vec![("digest".into(), Secret::copy_from(b"u:p"))]
            } else {
                vec![]
            },
            sasl: None,
            seed: u64::from(input.byte()),
            resume: None,
            plain: true,
        };
        let (publisher, _state) = StatePublisher::new();
        let now = Instant::now();
        let mut run = Run {
            s: Session::new(cfg, publisher, now),
            now,
            max_incoming_frame,
            max_queued_events,
            read_buf: BytesMut::new(),
            sent: VecDeque::new(),
            expect_connect: false,
            connecting: false,
            connected: false,
            probing: None,
            calls: vec![],
            streams: vec![],
            completed: 0,
        };
        run.take_actions();
        run
    }

    /// TCP up and a valid `ConnectResponse`.
    fn handshake(&mut self, input: &mut Input) {
        if !self.connecting {
            return;
        }
        self.s.on_connected(self.now);
        self.expect_connect = true;
        self.connected = true;
        self.drain_output();
        let mut payload = BytesMut::new();
        ConnectResponse {
            protocol_version: 0,
            timeout: 400 + i32::from(input.byte()) * 40,
            session_id: 0x77,
            passwd: Bytes::from_static(&[1; 16]),
            read_only: Some(input.byte() % 8 == 0),
        }
        .encode(&mut payload);
        self.feed_frame(&payload);
    }

    fn step(&mut self, input: &mut Input) {
        match input.byte() % 14 {
            0 => {
                let n = usize::from(input.byte());
                let bytes = input.bytes(n).to_vec();
                self.feed(&bytes);
            }
            1 | 2 => self.answer(input),
            3 => self.notify(input),
            4..=6 => self.submit(input),
            7 => {
                self.s.on_disconnected(self.now, "fuzz");
                self.connected = false;
            }
            8 => {
                let by = Duration::from_millis(u64::from(input.byte()) * 20);
                self.now += by;
                self.s.on_timeout(self.now);
            }
            9 => self.handshake(input),
            10 => {
                if let Some(host) = self.probing.take() {
                    self.s
                        .on_probe_result(host, input.byte() % 2 == 0, self.now);
                }
            }
            11 => {
                let (tx, _done) = oneshot::channel();
                self.s.close(Some(tx), self.now);
            }
            12 => {
                // A caller gives up on a request.
                if !self.calls.is_empty() {
                    let i = usize::from(input.byte()) % self.calls.len();
                    self.calls[i].reply = None;
                }
            }
            _ => {
                // A consumer reads some events, or drops its stream.
                if !self.streams.is_empty() {
                    let i = usize::from(input.byte()) % self.streams.len();
                    let n = input.byte();
                    if n == 255 {
                        self.streams.swap_remove(i);
                    } else {
                        for _ in 0..n % 16 {
                            self.streams[i].try_recv();
                        }
                    }
                }
            }
        }
        self.take_actions();
        self.drain_output();
        self.completed += self.s.take_completed();
    }

    fn take_actions(&mut self) {
        while let Some(action) = self.s.poll_action() {
            match action {
                Action::Connect(_) => {
                    self.connecting = true;
                    self.connected = false;
                    self.read_buf.clear();
                    self.sent.clear();
                }
                // The driver closes what the server answers there; nothing of it reaches
                // the session.
                Action::Orphan { .. } => {}
                Action::Disconnect => {
                    self.connecting = false;
                    self.connected = false;
                    self.read_buf.clear();
                    self.sent.clear();
                }
                Action::Probe(host) => self.probing = Some(host),
            }
        }
    }

    /// What the driver would write: frames are parsed to learn the xids in flight.
    fn drain_output(&mut self) {
        let mut out = self.s.output().split().freeze();
        while out.len() >= 4 {
            let len = i32::from_be_bytes([out[0], out[1], out[2], out[3]]);
            let len = usize::try_from(len).expect("the client wrote a negative frame length");
            assert!(out.len() >= 4 + len, "the client wrote a partial frame");
            let mut frame = out.slice(4..4 + len);
            out = out.slice(4 + len..);
            if std::mem::take(&mut self.expect_connect) {
                continue;
            }
            let header = RequestHeader::decode(&mut frame).expect("a request header");
            if header.xid > 0 {
                self.sent.push_back((header.xid, header.opcode));
            }
        }
        assert!(out.is_empty(), "the client wrote a partial frame");
    }

    fn feed(&mut self, bytes: &[u8]) {
        if !self.connected {
            return;
        }
        self.read_buf.extend_from_slice(bytes);
        self.s.on_bytes(&mut self.read_buf, self.now);
        // A frame is buffered only once its length is known to be within the limit.
        let bound = 4 + self.max_incoming_frame.max(16);
        assert!(
            self.read_buf.len() < bound,
            "the client holds {} bytes of an incomplete frame (limit {})",
            self.read_buf.len(),
            self.max_incoming_frame
        );
        self.take_actions();
    }

    fn feed_frame(&mut self, payload: &[u8]) {
        let mut framed = Vec::with_capacity(4 + payload.len());
        framed.put_i32(payload.len() as i32);
        framed.extend_from_slice(payload);
        self.feed(&framed);
    }

    /// A reply with a valid header to the oldest request in flight (or a ping or auth reply),
    /// with a body that fits its opcode or not. Takes 9 bytes.
    fn answer(&mut self, input: &mut Input) {
        let mut step = Input(input.bytes(9));
        let input = &mut step;
        let (xid, opcode) = match input.byte() % 8 {
            0 => (-2, OpCode::Ping),
            1 => (-4, OpCode::Auth),
            _ => match self.sent.pop_front() {
                Some(front) => front,
                None => return,
            },
        };
        let err = input.pick(&[
            ErrorCode::Ok,
            ErrorCode::Ok,
            ErrorCode::Ok,
            ErrorCode::NoNode,
            ErrorCode::NodeExists,
            ErrorCode::NoAuth,
            ErrorCode::SessionExpired,
            ErrorCode::AuthFailed,
        ]);
        let mut payload = BytesMut::new();
        ReplyHeader {
            xid,
            zxid: input.i64(),
            err,
        }
        .encode(&mut payload);
        if err == ErrorCode::Ok {
            self.body(opcode, input, &mut payload);
        }
        self.feed_frame(&payload);
    }

    /// The body of a successful reply: variant, stat (czxid, version, cversion), children (a
    /// bit per name) and path.
    fn body(&self, opcode: OpCode, input: &mut Input, out: &mut BytesMut) {
        let variant = input.byte();
        let stat = Stat {
            czxid: input.i64(),
            version: i32::from(input.byte() % 4),
            cversion: i32::from(input.byte() % 4),
            ..Stat::default()
        };
        let children = input.byte();
        match (opcode, variant % 8) {
            // A body that does not fit, now and then: a stat cut short.
            (_, 0) => out.extend_from_slice(&[0; 8][..usize::from(children % 8)]),
            (OpCode::GetChildren2, _) => GetChildren2Response {
                children: (0..NAMES.len())
                    .filter(|i| children & (1 << i) != 0)
                    .map(|i| NAMES[i].to_string())
                    .collect(),
                stat,
            }
            .encode(out),
            (OpCode::Exists, _) => stat.encode(out),
            (OpCode::GetData, _) => GetDataResponse {
                data: Some(Bytes::from_static(b"d")),
                stat,
            }
            .encode(out),
            (OpCode::Create2, _) => Create2Response {
                path: input.pick(&PATHS).to_string(),
                stat,
            }
            .encode(out),
            _ => {}
        }
    }

    /// A notification on one of the paths. Takes 3 bytes.
    fn notify(&mut self, input: &mut Input) {
        let event_type = input.pick(&[
            EventType::NodeCreated,
            EventType::NodeDeleted,
            EventType::NodeDataChanged,
            EventType::NodeChildrenChanged,
            EventType::PersistentWatchRemoved,
            EventType::None,
        ]);
        let mut payload = BytesMut::new();
        ReplyHeader {
            xid: -1,
            zxid: input.i64(),
            err: ErrorCode::Ok,
        }
        .encode(&mut payload);
        WatcherEvent {
            event_type,
            state: KeeperState::SyncConnected,
            path: input.pick(&PATHS).to_string(),
        }
        .encode(&mut payload);
        self.feed_frame(&payload);
    }

    /// A call of one of the kinds, on one of the paths. Takes 3 bytes.
    fn submit(&mut self, input: &mut Input) {
        let mut step = Input(input.bytes(3));
        let input = &mut step;
        let path = input.pick(&PATHS).to_string();
        let watched = || oneshot::channel::<WatchedEvent>().0;
        let (request, watch, kind) = match input.byte() % 9 {
            0 => (
                Request::GetData(GetDataRequest {
                    path: path.clone(),
                    watch: false,
                }),
                None,
                PacketKind::Request,
            ),
            1 => (
                Request::GetData(GetDataRequest {
                    path: path.clone(),
                    watch: true,
                }),
                Some(WatchRegistration::Data(path, watched())),
                PacketKind::Request,
            ),
            2 => (
                Request::Exists(ExistsRequest {
                    path: path.clone(),
                    watch: true,
                }),
                Some(WatchRegistration::Exists(path, watched())),
                PacketKind::Request,
            ),
            3 => (
                Request::GetChildren2(GetChildren2Request {
                    path: path.clone(),
                    watch: true,
                }),
                Some(WatchRegistration::Child(path, watched())),
                PacketKind::Request,
            ),
            4 | 5 => {
                let recursive = input.byte() % 2 == 0;
                let (tx, rx) = event_queue::channel(self.max_queued_events);
                self.streams.push(rx);
                (
                    Request::AddWatch(AddWatchRequest {
                        path: path.clone(),
                        mode: i32::from(recursive),
                    }),
                    Some(WatchRegistration::Persistent {
                        path,
                        recursive,
                        tx,
                    }),
                    PacketKind::Request,
                )
            }
            6 => {
                let watcher_type = input.pick(&[
                    WatcherType::Any,
                    WatcherType::Data,
                    WatcherType::Children,
                    WatcherType::Persistent,
                    WatcherType::PersistentRecursive,
                ]);
                (
                    Request::RemoveWatches(RemoveWatchesRequest {
                        path: path.clone(),
                        watcher_type: watcher_type.as_i32(),
                    }),
                    Some(WatchRegistration::Remove(path, watcher_type)),
                    PacketKind::Request,
                )
            }
            7 => (
                Request::Create2(CreateRequest {
                    path,
                    data: None,
                    acl: vec![],
                    flags: 0,
                }),
                None,
                PacketKind::Request,
            ),
            _ => {
                let auth = Secret::copy_from(input.bytes(1));
                (
                    Request::Auth(zookeeper_jute::AuthPacket {
                        auth_type: 0,
                        scheme: "digest".into(),
                        auth: auth.expose().clone(),
                    }),
                    None,
                    PacketKind::Auth {
                        scheme: "digest".into(),
                        auth,
                    },
                )
            }
        };
        let xid = if matches!(kind, PacketKind::Auth { .. }) {
            -4
        } else {
            0
        };
        let (frame, opcode) = Packet::encode(&request, xid, usize::MAX).expect("encodes");
        let (tx, rx) = oneshot::channel();
        self.calls.push(Call { reply: Some(rx) });
        self.s.submit(
            Packet {
                frame: frame.freeze(),
                kind,
                envelope: Envelope {
                    watch,
                    ..Envelope::new(opcode, tx)
                },
            },
            self.now,
        );
    }

    fn check_bounds(&mut self) {
        for stream in &self.streams {
            let (queued, _) = stream.queued();
            assert!(
                queued <= self.max_queued_events.max(2),
                "a stream queued {queued} events (bound {})",
                self.max_queued_events
            );
        }
    }

    /// Ends the session and checks that every request got its one answer.
    fn finish(mut self) {
        let (tx, _done) = oneshot::channel();
        self.s.close(Some(tx), self.now);
        self.s.on_disconnected(self.now, "end of input");
        if !self.s.is_terminated() {
            // Closing waits for a connection; past the close deadline it ends anyway.
            self.now += Duration::from_secs(3600);
            self.s.on_timeout(self.now);
        }
        assert!(self.s.is_terminated(), "the session did not end");
        self.completed += self.s.take_completed();
        assert_eq!(
            self.completed,
            self.calls.len(),
            "completions reported for {} requests",
            self.calls.len()
        );
        for (i, call) in self.calls.iter_mut().enumerate() {
            if let Some(reply) = call.reply.as_mut() {
                assert!(reply.try_recv().is_ok(), "request {i} was never answered");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::Path;

    use super::check_session;

    fn inputs() -> Vec<(String, Vec<u8>)> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-inputs/session");
        let mut inputs: Vec<_> = fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| {
                let path = entry.unwrap().path();
                (path.display().to_string(), fs::read(&path).unwrap())
            })
            .collect();
        inputs.sort();
        inputs
    }

    /// Every kept input: the seeds, and every input the fuzzer ever found a failure with.
    #[test]
    fn kept_inputs_hold_every_property() {
        let inputs = inputs();
        assert!(!inputs.is_empty());
        for (name, data) in inputs {
            let outcome = std::panic::catch_unwind(|| check_session(&data));
            assert!(outcome.is_ok(), "the session machine failed on {name}");
        }
    }

    /// And every prefix of them: the cheapest way to reach the states in between.
    #[test]
    fn prefixes_of_kept_inputs_hold_every_property() {
        for (_, data) in inputs() {
            for cut in 0..data.len() {
                check_session(&data[..cut]);
            }
        }
    }

    #[test]
    fn no_input_at_all_holds() {
        check_session(&[]);
    }
}
