//! The session as a state machine, with no sockets and no clock inside.
//!
//! The driver feeds it what happens (a connection is up, bytes arrived, the connection died,
//! a deadline passed, a request was made) together with the current `Instant`, and takes from
//! it bytes to write ([`Session::output`]), connection actions ([`Session::poll_action`]) and
//! the next deadline ([`Session::next_deadline`]). Replies, watch events and state changes leave
//! through channels the machine completes synchronously, in the order frames arrived: an event
//! is always delivered before the reply that follows it on the wire.
//!
//! Timing follows the reference client, with `T` the negotiated session timeout:
//! a ping after `T/3` without sending, the connection declared dead after `2T/3` without
//! receiving, `T / hosts` for one connection attempt, and the session declared expired locally
//! once `T` has passed since the last frame from any server.

mod answers;
mod deadlines;
mod foreign_peer;
mod handshake;
pub(crate) mod hosts;
mod learn;
mod lease;
mod lend;
mod lifecycle;
pub(crate) mod pending;
mod rebalance;
mod replies;
mod sasl;
pub(crate) mod watch_memo;
pub(crate) mod watches;

#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::sync::oneshot;
use tracing::{debug, info, trace, warn};
use zookeeper_jute::codec::{Frame, FrameReader};
use zookeeper_jute::{encode_request_frame, xid, DecodeError, Request};

use crate::connect_string::HostPort;
use crate::error::{Error, ErrorKind};
use crate::metrics::{self, InFlight, Loss, SessionGauge};
use crate::packet::{Envelope, Packet, PacketKind};
use crate::path::Chroot;
use crate::sasl::SaslFactory;
use crate::secret::Secret;
use crate::state::{SessionState, StatePublisher};

use answers::Answers;
use hosts::{HostRing, Rng};
use lease::Lease;
use pending::{Pending, PendingAuth, PendingQueue, Unsent};
use watches::WatchRegistry;

/// Bytes of paths per `setWatches` frame (the reference client's choice), far below the
/// server's 1 MiB frame limit.
pub(crate) const SET_WATCHES_MAX_BYTES: usize = 128 * 1024;

/// Bytes of a `ReplyHeader`: xid, zxid, err.
const REPLY_HEADER_LEN: usize = 16;

/// Bytes of a notification over the incoming limit kept past its header: its type, state and
/// the start of its path.
const NOTIFICATION_HEAD: usize = 4096;

/// Shortest time given to one connection attempt when its timeout is a share of the session
/// timeout.
const MIN_ATTEMPT_TIMEOUT: Duration = Duration::from_millis(100);

/// Everything the machine needs to know up front.
#[derive(Debug, Clone)]
pub(crate) struct SessionConfig {
    pub hosts: Vec<HostPort>,
    pub chroot: Chroot,
    /// Requested session timeout.
    pub session_timeout: Duration,
    /// Per-attempt connect timeout; `None` means the negotiated session timeout / hosts, and
    /// before the first session the shorter of the requested one and `connect_timeout`,
    /// / (hosts + 1).
    pub attempt_timeout: Option<Duration>,
    /// How long `connect` waits for the first session: until then a round over every server
    /// must fit in it, or a silent server tried first would use up the wait.
    pub connect_timeout: Duration,
    /// Accept read-only servers.
    pub read_only: bool,
    /// Fail requests made while disconnected at once instead of holding them for the reconnect.
    pub fail_fast: bool,
    /// Largest frame payload accepted from the server.
    pub max_incoming_frame: usize,
    /// Bytes of paths per `setWatches` frame.
    pub set_watches_max_bytes: usize,
    /// Largest frame payload sent: no `setWatches` frame exceeds it.
    pub max_frame: usize,
    /// Bytes of its subtree a recursive watch remembers at most.
    pub max_subtree_bytes: usize,
    /// Identities to authenticate with on every connection (`digest` and the like).
    pub auth: Vec<(String, Secret)>,
    /// The SASL login run after every handshake, before anything else is sent.
    pub sasl: Option<Arc<dyn SaslFactory>>,
    /// Seed for host shuffling and backoff jitter.
    pub seed: u64,
    /// A session to resume instead of creating one: id and password.
    pub resume: Option<(i64, Secret)>,
    /// Speaks plain TCP (no TLS of ours on the stream).
    pub plain: bool,
}

impl SessionConfig {
    /// Bytes of paths per `setWatches` frame: the setting, within what a frame may carry.
    pub(crate) fn set_watches_limit(&self) -> usize {
        self.set_watches_max_bytes.min(
            self.max_frame
                .saturating_sub(crate::limits::SET_WATCHES_OVERHEAD),
        )
    }
}

/// What the driver must do with the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// Drop the current connection (if any) and open one to this server.
    Connect(HostPort),
    /// Drop the current connection (if any).
    Disconnect,
    /// Set the current connection apart, before the `Disconnect` or `Connect` that follows,
    /// for the answer to the handshake sent on it: a session the server creates for it is
    /// closed at once (see `orphan`). `wait` bounds how long the answer is awaited.
    Orphan { wait: Duration },
    /// Ask this server whether it is read-write (the `isro` four-letter word) and report with
    /// [`Session::on_probe_result`]; the current connection stays.
    Probe(HostPort),
}

/// First pause between read-write probes while on a read-only server; doubles up to the max.
const PROBE_MIN: Duration = Duration::from_millis(100);
const PROBE_MAX: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy)]
struct Probe {
    at: Instant,
    interval: Duration,
    in_flight: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting before the next attempt.
    Backoff {
        until: Instant,
    },
    /// The driver is opening a TCP connection.
    Connecting {
        deadline: Instant,
    },
    /// `ConnectRequest` sent, waiting for `ConnectResponse`.
    Handshaking {
        deadline: Instant,
    },
    Connected,
    /// `closeSession` sent, waiting for its reply.
    Closing {
        deadline: Instant,
    },
    Terminated,
}

/// One ZooKeeper session over any number of connections.
pub(crate) struct Session {
    cfg: SessionConfig,
    phase: Phase,
    state: SessionState,
    state_tx: StatePublisher,
    /// This session in the `zookeeper_sessions` gauge (nothing without the `metrics` feature).
    state_gauge: SessionGauge,
    hosts: HostRing,
    rng: Rng,

    session_id: i64,
    passwd: Secret,
    negotiated: Option<Duration>,
    read_only_conn: bool,
    /// A read-write server accepted this session: its id is global and may be resumed
    /// anywhere. Ids handed out by read-only servers are valid only there.
    seen_rw: bool,
    /// While on a read-only server: when to look for a read-write one.
    probe: Option<Probe>,
    current_host: Option<HostPort>,
    /// How long the attempt under way was given.
    attempt_allowed: Duration,
    /// The session id sent in the pending handshake.
    sent_session_id: i64,
    /// Highest zxid of an ordinary reply: sent on reconnect and with `setWatches`.
    last_zxid: i64,
    next_xid: i32,

    pending: PendingQueue,
    unsent: Unsent,
    watches: WatchRegistry,
    /// Identities that authenticated, replayed after every reconnect.
    auths: Vec<(String, Secret)>,

    out: BytesMut,
    actions: VecDeque<Action>,
    last_recv: Instant,
    last_send: Instant,
    /// When the ping in flight was sent; `None` when no ping is in flight.
    ping_sent: Option<Instant>,
    /// Until when the session is surely alive on the servers.
    lease: Lease,
    /// Last frame from any server while a session existed: the base of local expiry.
    last_heard: Option<Instant>,

    /// User requests finished since the driver last asked (returns queue capacity).
    completed: usize,
    /// Of those, the ones whose callers run on the session task's threads.
    completed_here: usize,
    /// Answers decided in the read being handled, sent at its end.
    answers: Answers,
    /// User requests taken and not completed, in the `zookeeper_requests_in_flight` gauge
    /// (nothing without the `metrics` feature).
    in_flight: InFlight,
    close_waiters: Vec<oneshot::Sender<()>>,
    /// Bumped whenever the connection is dropped, so frames of a dead connection are ignored.
    epoch: u64,
    /// Auth replays of this connection still unanswered: the state turns connected only once
    /// every identity is back in place.
    auth_replays: usize,
    /// The SASL login of this connection, while it runs.
    sasl: Option<sasl::SaslExchange>,
    /// A new server list asked this client to move there once nothing is in flight.
    moving_to: Option<HostPort>,
    /// Attempts in a row that failed on TLS (certificates) rather than on the network.
    tls_failures_in_a_row: usize,
    /// Splits what the connection reads into frames, and drops what arrives of a reply over
    /// the incoming limit.
    frames: FrameReader,
    /// The earliest deadline of a request held back in `unsent`, or earlier (see
    /// `deadlines`).
    unsent_deadline: Option<Instant>,
}

impl Session {
    pub fn new(cfg: SessionConfig, state_tx: StatePublisher, now: Instant) -> Session {
        let mut rng = Rng::new(cfg.seed);
        let hosts = HostRing::new(cfg.hosts.clone(), &mut rng);
        let seen_rw = cfg.resume.is_some();
        let (session_id, passwd) = cfg.resume.clone().unwrap_or_default();
        let watches = WatchRegistry::new(cfg.max_subtree_bytes);
        let frames = FrameReader::new(cfg.max_incoming_frame);
        let mut session = Session {
            auths: cfg.auth.clone(),
            cfg,
            phase: Phase::Backoff { until: now },
            state: SessionState::Connecting,
            state_tx,
            state_gauge: SessionGauge::new(SessionState::Connecting),
            hosts,
            rng,
            session_id,
            passwd,
            negotiated: None,
            read_only_conn: false,
            seen_rw,
            probe: None,
            current_host: None,
            sent_session_id: 0,
            last_zxid: 0,
            next_xid: 1,
            pending: PendingQueue::default(),
            unsent: VecDeque::new(),
            watches,
            out: BytesMut::with_capacity(64 * 1024),
            actions: VecDeque::new(),
            last_recv: now,
            last_send: now,
            ping_sent: None,
            lease: Lease::default(),
            last_heard: None,
            completed: 0,
            completed_here: 0,
            answers: Answers::default(),
            in_flight: InFlight::new(),
            close_waiters: Vec::new(),
            epoch: 0,
            attempt_allowed: Duration::ZERO,
            auth_replays: 0,
            sasl: None,
            moving_to: None,
            tls_failures_in_a_row: 0,
            frames,
            unsent_deadline: None,
        };
        session
            .state_tx
            .info
            .record_servers(Some(session.hosts.hosts()), None);
        session.start_attempt(now);
        session
    }

    // ----- what the driver reads -----

    pub fn session_id(&self) -> i64 {
        self.session_id
    }

    /// The instant before which no server can have expired the session (see `lease`).
    #[cfg(test)]
    pub fn lease_deadline(&self) -> Option<Instant> {
        self.lease.deadline()
    }

    #[cfg(test)]
    pub fn last_zxid(&self) -> i64 {
        self.last_zxid
    }

    pub fn is_terminated(&self) -> bool {
        self.phase == Phase::Terminated
    }

    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// Bytes to write to the current connection.
    pub fn output(&mut self) -> &mut BytesMut {
        &mut self.out
    }

    /// User requests completed since the last call.
    pub fn take_completed(&mut self) -> usize {
        self.in_flight.completed(self.completed);
        std::mem::take(&mut self.completed)
    }

    /// Ordered replies answered since the last call to callers on the session task's
    /// threads.
    pub fn take_completed_here(&mut self) -> usize {
        std::mem::take(&mut self.completed_here)
    }

    /// When [`Session::on_timeout`] must be called next.
    pub fn next_deadline(&self) -> Option<Instant> {
        let t = self.timeout();
        let phase_deadline = match self.phase {
            Phase::Backoff { until } => Some(until),
            Phase::Connecting { deadline } | Phase::Handshaking { deadline } => Some(deadline),
            Phase::Connected => {
                let mut d = self.last_recv + t * 2 / 3;
                if self.ping_sent.is_none() && !self.sasl_in_progress() {
                    d = d.min(self.last_send + t / 3);
                }
                match self.probe {
                    Some(p) if !p.in_flight => Some(d.min(p.at)),
                    _ => Some(d),
                }
            }
            Phase::Closing { deadline } => Some(deadline),
            Phase::Terminated => return None,
        };
        [
            phase_deadline,
            self.expiry_deadline(),
            self.requests_deadline(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    // ----- inputs -----

    /// A request from a handle.
    pub fn submit(&mut self, packet: Packet, now: Instant) {
        self.in_flight.taken();
        if packet.envelope.reply.is_closed() {
            // The caller gave up (deadline or drop) before it was sent: never send it.
            self.completed += 1;
            return;
        }
        if packet.envelope.deadline.is_some_and(|d| now >= d) && self.phase != Phase::Terminated {
            self.completed += 1;
            return packet.fail(ErrorKind::Timeout.into());
        }
        match self.phase {
            // A login under way holds everything back (see `sasl`).
            Phase::Connected if self.sasl_in_progress() || self.moving_to.is_some() => {
                self.hold(packet)
            }
            Phase::Connected => self.send_packet(packet, now),
            Phase::Closing { .. } | Phase::Terminated => {
                self.completed += 1;
                packet.fail(self.terminal_error());
            }
            _ if self.cfg.fail_fast && self.state != SessionState::Connecting => {
                self.completed += 1;
                packet.fail(ErrorKind::ConnectionLoss.into());
            }
            _ => self.hold(packet),
        }
    }

    /// Holds a request back until it can be sent.
    fn hold(&mut self, packet: Packet) {
        if let Some(deadline) = packet.envelope.deadline {
            self.follow_unsent_deadline(deadline);
        }
        self.unsent.push_back(packet);
    }

    /// The TCP connection asked for by the last `Connect` action is up.
    pub fn on_connected(&mut self, now: Instant) {
        let Phase::Connecting { deadline } = self.phase else {
            return;
        };
        self.out.clear();
        // A session that only ever lived on read-only servers is not known to the ensemble:
        // ask for a new one instead of resuming it.
        self.sent_session_id = if self.seen_rw { self.session_id } else { 0 };
        handshake::write_connect_request(
            &mut self.out,
            self.last_zxid,
            self.cfg.session_timeout,
            self.sent_session_id,
            &self.passwd,
            self.cfg.read_only,
        );
        self.last_send = now;
        self.last_recv = now;
        self.phase = Phase::Handshaking { deadline };
    }

    /// The connection failed or was closed by the peer (EOF, I/O error).
    pub fn on_disconnected(&mut self, now: Instant, reason: &str) {
        if matches!(self.phase, Phase::Handshaking { .. }) {
            // What a server does, without a word, to a connection it will not serve: the
            // reason names the usual causes, for the error `connect` gives up with.
            let causes = self.causes_of_no_answer();
            return self.connection_ended(now, &format!("{reason} before answering: {causes}"));
        }
        self.connection_ended(now, reason)
    }

    /// Why a server closes a connection before answering its handshake, as far as this
    /// attempt could have met them.
    fn causes_of_no_answer(&self) -> String {
        let mut causes = vec!["the server is not serving (starting, or cut off from its quorum)"];
        if self.cfg.plain {
            causes.push("serves only TLS on this port");
        }
        if self.sent_session_id != 0 && self.last_zxid != 0 {
            causes.push("has not yet seen every change this session has");
        }
        causes.push("already has as many connections from this host as its maxClientCnxns allows");
        let last = causes.pop().unwrap_or_default();
        format!("{}, or {last}", causes.join(", "))
    }

    fn connection_ended(&mut self, now: Instant, reason: &str) {
        match self.phase {
            Phase::Connecting { .. } | Phase::Handshaking { .. } => {
                debug!(reason, "connection attempt failed");
                self.attempt_failed(now, reason);
            }
            Phase::Connected => self.connection_lost(now, Loss::Closed, reason),
            Phase::Closing { .. } => self.terminate(SessionState::Closed),
            Phase::Backoff { .. } | Phase::Terminated => {}
        }
    }

    /// The connection attempt, or the connection, failed on TLS: `failure` is an
    /// [`ErrorKind::Tls`]. Handled like any lost connection (the same rotation and backoff), and
    /// published so that `connect` can report it; once every server in a row has failed so,
    /// `connect` gives up (see [`crate::state::AttemptFailures`]).
    pub fn on_tls_failure(&mut self, now: Instant, failure: ErrorKind) {
        if !matches!(
            self.phase,
            Phase::Connecting { .. } | Phase::Handshaking { .. } | Phase::Connected
        ) {
            return self.connection_ended(now, &failure.to_string());
        }
        warn!(%failure, "TLS failure");
        let in_a_row = self.tls_failures_in_a_row + 1;
        self.connection_ended(now, &failure.to_string());
        self.tls_failures_in_a_row = in_a_row;
        let every_server = in_a_row >= self.hosts.len();
        self.state_tx.info.failures.send_modify(|f| {
            f.last_tls = Some(failure);
            f.every_server_tls = every_server;
        });
    }

    /// Bytes read from the connection: every complete frame is handled, the rest stays in `buf`.
    ///
    /// A reply over the incoming limit is read only as far as its header, enough to fail the
    /// request it answers; the rest of it is dropped as it arrives, never buffered. Before the
    /// session is established there is no request such a frame could answer: it ends the
    /// connection.
    pub fn on_bytes(&mut self, buf: &mut BytesMut, now: Instant) {
        self.read_frames(buf, now);
        self.answers.send_all();
    }

    /// How much of an oversized frame starting `buf` (when `at_frame`) is read before it is
    /// handled: a reply's header, enough to fail its request at once; of a notification, also
    /// the start of its path, which tells what it may concern (see `on_oversized_reply`).
    /// Never more than the limit, so that every oversized frame has as much.
    fn head_to_keep(&self, buf: &[u8], at_frame: bool) -> usize {
        let notification = at_frame
            && buf.get(4..8).is_some_and(|x| {
                i32::from_be_bytes(x.try_into().expect("4 bytes")) == xid::NOTIFICATION
            });
        if notification {
            (REPLY_HEADER_LEN + NOTIFICATION_HEAD).min(self.cfg.max_incoming_frame)
        } else {
            REPLY_HEADER_LEN
        }
    }

    fn read_frames(&mut self, buf: &mut BytesMut, now: Instant) {
        let epoch = self.epoch;
        loop {
            let before = buf.len();
            let at_frame = self.frames.skip(buf);
            let keep_head = matches!(self.phase, Phase::Connected | Phase::Closing { .. })
                .then(|| self.head_to_keep(buf, at_frame));
            let next = self.frames.next(buf, keep_head);
            if buf.len() < before {
                self.last_recv = now;
            }
            match next {
                Ok(None) => return,
                // A slice, not a copy: a copy per reply is an allocation made here and freed
                // by the caller, often on another worker, where the allocator's locks then
                // contend. What a caller keeps of it is copied by its decoder (see
                // `packet::detach`), so the buffer is held only by replies not yet taken by
                // their callers, and reused in place once every frame of it has been dropped.
                Ok(Some(Frame::Whole(frame))) => self.on_frame(frame, now),
                Ok(Some(Frame::Oversized { head, len })) => {
                    metrics::frame_over_limit();
                    self.on_oversized_reply(head, len, now);
                }
                Err(e) => {
                    buf.clear();
                    let reason = match e {
                        DecodeError::FrameTooLarge { len, max } => {
                            metrics::frame_over_limit();
                            // The length came from four bytes of the wire: they may be the
                            // start of another protocol's answer.
                            i32::try_from(len)
                                .ok()
                                .map(i32::to_be_bytes)
                                .and_then(foreign_peer::describe)
                                .unwrap_or_else(|| format!("frame length {len} outside 0..={max}"))
                        }
                        DecodeError::InvalidLength { len, .. } => {
                            format!("negative frame length {len}")
                        }
                        e => e.to_string(),
                    };
                    return self.protocol_error(now, &reason);
                }
            }
            if self.epoch != epoch {
                // The connection was dropped while handling this frame: the rest is stale.
                buf.clear();
                return;
            }
        }
    }

    /// A deadline returned by [`Session::next_deadline`] may have passed.
    pub fn on_timeout(&mut self, now: Instant) {
        if let Some(expiry) = self.expiry_deadline() {
            if now >= expiry {
                warn!("no server reached within the session timeout: session expired");
                self.orphan_handshake();
                self.terminate(SessionState::Expired);
                return;
            }
        }
        self.expire_requests(now);
        let t = self.timeout();
        match self.phase {
            Phase::Backoff { until } if now >= until => self.start_attempt(now),
            Phase::Connecting { deadline } | Phase::Handshaking { deadline } if now >= deadline => {
                let reason = format!("no answer within {:?}", self.attempt_allowed);
                debug!(reason, "connection attempt timed out");
                // A late answer to a request for a new session is a session nobody uses; a
                // late answer to a resume is this session, still in use.
                if self.sent_session_id == 0 {
                    self.orphan_handshake();
                }
                self.attempt_failed(now, &reason);
            }
            Phase::Connected => {
                if now >= self.last_recv + t * 2 / 3 {
                    return self.connection_lost(now, Loss::ReadTimeout, "read timeout");
                }
                if self.ping_sent.is_none()
                    && !self.sasl_in_progress()
                    && now >= self.last_send + t / 3
                {
                    trace!("ping");
                    encode_request_frame(&mut self.out, xid::PING, &Request::Ping);
                    self.ping_sent = Some(now);
                    self.last_send = now;
                }
                self.maybe_probe(now);
            }
            Phase::Closing { deadline } if now >= deadline => self.terminate(SessionState::Closed),
            _ => {}
        }
    }

    /// The answer to a [`Action::Probe`]: `read_write` when the server said `rw`.
    pub fn on_probe_result(&mut self, host: HostPort, read_write: bool, now: Instant) {
        let Some(probe) = self.probe.as_mut() else {
            return;
        };
        probe.in_flight = false;
        if self.phase != Phase::Connected {
            return;
        }
        if read_write {
            info!(host = %host.to_addr_string(), "read-write server found: leaving the read-only one");
            let reason = "moving to a read-write server";
            self.connection_lost_to(now, Loss::Moved, reason, Some(host));
        } else {
            probe.interval = (probe.interval * 2).min(PROBE_MAX);
            probe.at = now + probe.interval;
        }
    }

    /// Closes the session: `closeSession` after every request already made, then done.
    pub fn close(&mut self, done: Option<oneshot::Sender<()>>, now: Instant) {
        if let Some(done) = done {
            self.close_waiters.push(done);
        }
        match self.phase {
            Phase::Terminated => self.notify_close_waiters(),
            Phase::Closing { .. } => {}
            Phase::Connected => {
                let xid = self.next_xid();
                encode_request_frame(&mut self.out, xid, &Request::CloseSession);
                self.pending.push(Pending::Close { xid }, now);
                self.last_send = now;
                self.phase = Phase::Closing {
                    deadline: now + self.timeout() * 2 / 3,
                };
            }
            // Not connected: nobody to tell, but the server a handshake went to may still
            // answer it; otherwise the server expires the session on its own.
            _ => {
                self.orphan_handshake();
                self.terminate(SessionState::Closed)
            }
        }
    }

    // ----- internals -----

    fn timeout(&self) -> Duration {
        self.negotiated.unwrap_or(self.cfg.session_timeout)
    }

    /// How long an attempt starting at `now` may take: the configured attempt timeout as
    /// given, or a share of the session timeout. While a session waits to be taken back, the
    /// share also ends halfway to its local expiry, so that a server which accepts and then
    /// stays silent (one still starting, say) leaves time for another attempt.
    fn attempt_timeout(&self, now: Instant) -> Duration {
        self.cfg.attempt_timeout.unwrap_or_else(|| {
            let n = self.hosts.len().max(1) as u32;
            let share = match self.negotiated {
                Some(t) => {
                    // Whatever the phase being left.
                    let left = self
                        .session_expiry()
                        .map_or(t, |expiry| expiry.saturating_duration_since(now));
                    (t / n).min(left / 2)
                }
                // `connect` is waiting: a round over every server, and a first retry, end
                // before it gives up.
                None => self.cfg.session_timeout.min(self.cfg.connect_timeout) / (n + 1),
            };
            share.max(MIN_ATTEMPT_TIMEOUT)
        })
    }

    /// Local expiry applies only while no server is connected and a session exists.
    fn expiry_deadline(&self) -> Option<Instant> {
        match self.phase {
            Phase::Connected | Phase::Closing { .. } | Phase::Terminated => None,
            _ => self.session_expiry(),
        }
    }

    /// When the session expires unless a server is heard from: a session timeout after the
    /// last word of any server, whatever the phase.
    fn session_expiry(&self) -> Option<Instant> {
        self.last_heard
            .filter(|_| self.session_id != 0)
            .map(|heard| heard + self.timeout())
    }

    fn next_xid(&mut self) -> i32 {
        let xid = self.next_xid;
        self.next_xid = crate::packet::xid_after(xid);
        xid
    }

    /// What calls fail with once the session has ended.
    pub(crate) fn terminal_error(&self) -> Error {
        match self.state {
            SessionState::Expired => ErrorKind::SessionExpired,
            SessionState::AuthFailed => ErrorKind::AuthFailed,
            _ => ErrorKind::Closed,
        }
        .into()
    }

    /// A server took a request sent at `sent`: the lease runs from there.
    fn acknowledged(&mut self, sent: Instant) {
        let before = self.lease.deadline();
        self.lease.acknowledged(sent);
        let after = self.lease.deadline();
        if after != before {
            self.state_tx.info.set_lease(after);
        }
    }

    fn set_state(&mut self, state: SessionState) {
        if self.state != state {
            info!(?state, "session state");
            self.state_gauge.set(state);
            self.state = state;
            self.state_tx.publish(state);
        }
    }

    fn send_packet(&mut self, packet: Packet, now: Instant) {
        let Packet {
            frame,
            kind,
            envelope,
        } = packet;
        match kind {
            PacketKind::Request => {
                let xid = self.next_xid();
                let start = self.out.len();
                self.out.extend_from_slice(&frame);
                crate::packet::set_xid(&mut self.out[start..], xid);
                debug!(xid, opcode = ?envelope.opcode, "request sent");
                self.await_reply(xid, envelope, now);
            }
            PacketKind::Auth { scheme, auth } => {
                envelope
                    .span
                    .sent(xid::AUTH, self.session_id, self.current_host.as_ref());
                self.out.extend_from_slice(&frame);
                debug!(scheme, "auth sent");
                self.pending.auths.push_back(PendingAuth {
                    scheme,
                    auth,
                    reply: Some(envelope.reply),
                });
            }
        }
        self.last_send = now;
    }

    /// A user request went on the wire with `xid` at `sent`: its span learns where, and its
    /// reply is awaited.
    fn await_reply(&mut self, xid: i32, mut envelope: Envelope, sent: Instant) {
        let span = std::mem::take(&mut envelope.span);
        span.sent(xid, self.session_id, self.current_host.as_ref());
        self.pending.push(Pending::user(xid, envelope), sent);
    }

    fn on_frame(&mut self, frame: Bytes, now: Instant) {
        self.last_recv = now;
        if self.session_id != 0 {
            self.last_heard = Some(now);
        }
        match self.phase {
            Phase::Handshaking { .. } => self.on_connect_response(frame, now),
            Phase::Connected | Phase::Closing { .. } => self.on_reply(frame, now),
            _ => {}
        }
        if self.moving_to.is_some() {
            self.try_move(now);
        }
    }
}
