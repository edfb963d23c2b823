//! The model server's state and what each request does to it: sessions on the simulated
//! clock, the tree, the watches, and the frames each connection is owed. One lock around it
//! all, never held across an await: the model applies one request at a time, as the real
//! server's single commit pipeline does.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::Instant;
use zookeeper_jute::codec::{encode_notification_frame, encode_record_frame};
use zookeeper_jute::{
    encode_reply_frame, perms, ClientInfo, ConnectRequest, ConnectResponse, CreateMode, ErrorCode,
    EventType, KeeperState, MultiOp, MultiOpResult, ReplyHeader, Request, Response, WatcherEvent,
};

use super::acl;
use super::faults::Faults;
use super::rng::SimRng;
use super::tree::{valid_path, Applied, Tree, Write};
use super::watches::{ConnId, Mode, Table, Watches};

/// What a connection's writer is handed, in order.
#[derive(Debug)]
pub(crate) enum Out {
    /// A frame, written after this much delay (slow replies delay everything behind them).
    Frame(BytesMut, Duration),
    /// Close the connection after what came before.
    Close,
}

#[derive(Debug)]
pub(crate) struct Session {
    pub timeout: Duration,
    pub password: [u8; 16],
    pub last_heard: Instant,
    pub conn: Option<ConnId>,
}

/// A connection, and the identities it holds: as on the real server, `addAuth` identities
/// belong to the connection (the client adds them again after a reconnect).
#[derive(Debug)]
pub(crate) struct Conn {
    pub tx: UnboundedSender<Out>,
    pub session: i64,
    /// What ACLs are checked against: its address, then each `addAuth` identity once.
    pub ids: Vec<zookeeper_jute::Id>,
    /// What `whoAmI` answers, in the same order.
    pub infos: Vec<ClientInfo>,
}

/// Settings of the model server.
#[derive(Clone, Debug)]
pub struct SimOptions {
    /// `tickTime`: sessions are checked for expiry each tick.
    pub tick: Duration,
    /// Session timeouts are clamped to these.
    pub min_session_timeout: Duration,
    /// Session timeouts are clamped to these.
    pub max_session_timeout: Duration,
    /// How often containers and TTL nodes are cleaned up (the server's
    /// `znode.container.checkIntervalMs`).
    pub container_check: Duration,
    /// Seeds session ids, passwords and every fault draw.
    pub seed: u64,
    /// Faults to inject (none by default).
    pub faults: Faults,
}

impl Default for SimOptions {
    /// The testkit's real servers' settings: 200 ms ticks, sessions of 400 ms to 60 s.
    fn default() -> Self {
        SimOptions {
            tick: Duration::from_millis(200),
            min_session_timeout: Duration::from_millis(400),
            max_session_timeout: Duration::from_secs(60),
            container_check: Duration::from_secs(1),
            seed: 0,
            faults: Faults::default(),
        }
    }
}

/// How many trace lines are kept: the end of a long run is what explains its failure.
const TRACE_LINES: usize = 20_000;

#[derive(Debug)]
pub(crate) struct State {
    pub options: SimOptions,
    pub tree: Tree,
    pub watches: Watches,
    pub zxid: i64,
    pub sessions: BTreeMap<i64, Session>,
    pub conns: BTreeMap<ConnId, Conn>,
    next_conn: ConnId,
    pub rng: SimRng,
    pub start: Instant,
    pub trace: VecDeque<String>,
    /// Every change made to the tree, in zxid order: what `SimServer::tree_at` folds.
    pub journal: Vec<Change>,
    /// The server is down (`SimServer::stop`): it accepts no connection, and its clock, which
    /// expires sessions and cleans containers, stands still.
    pub down: bool,
}

/// A change the model made to its tree: the event it fires, with the node as the transaction
/// left it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// The transaction's zxid.
    pub zxid: i64,
    /// The node changed.
    pub path: String,
    /// What changed: `NodeCreated`, `NodeDataChanged`, `NodeDeleted`, or
    /// `NodeChildrenChanged` (for the parent of a node created or deleted).
    pub event: EventType,
    /// The node's data and stat once the transaction applied; `None` if it is gone.
    pub node: Option<(Bytes, zookeeper_jute::Stat)>,
}

/// The wall-clock time the model's clock starts at (ms since the Unix epoch), for `ctime`.
const EPOCH_MS: i64 = 1_700_000_000_000;

impl State {
    pub(crate) fn new(options: SimOptions) -> State {
        State {
            rng: SimRng::new(options.seed),
            options,
            tree: Tree::new(),
            watches: Watches::default(),
            zxid: 0,
            sessions: BTreeMap::new(),
            conns: BTreeMap::new(),
            next_conn: 1,
            start: Instant::now(),
            trace: VecDeque::new(),
            journal: Vec::new(),
            down: false,
        }
    }

    pub(crate) fn note(&mut self, line: impl std::fmt::Display) {
        if self.trace.len() == TRACE_LINES {
            self.trace.pop_front();
        }
        // Simulated time as the calling host counts it (hosts start with the simulation), so
        // that lines noted from every host share one clock.
        let at = if turmoil::in_simulation() {
            turmoil::elapsed()
        } else {
            self.start.elapsed()
        };
        self.trace.push_back(format!(
            "{:>6}.{:03}s {line}",
            at.as_secs(),
            at.subsec_millis()
        ));
    }

    fn now_ms(&self) -> i64 {
        EPOCH_MS + self.start.elapsed().as_millis() as i64
    }

    /// A new connection's handshake: returns its id, or `None` when it was refused (the
    /// frames saying so, if any, are already queued on `tx`).
    pub(crate) fn open(
        &mut self,
        req: &ConnectRequest,
        tx: UnboundedSender<Out>,
    ) -> Option<ConnId> {
        if self.down {
            let _ = tx.send(Out::Close);
            return None;
        }
        if req.last_zxid_seen > self.zxid {
            // The client has seen a newer server than this one: refused without a reply.
            self.note(format!(
                "refuse connection: client saw zxid {:#x}, server is at {:#x}",
                req.last_zxid_seen, self.zxid
            ));
            let _ = tx.send(Out::Close);
            return None;
        }
        let read_only = req.read_only.map(|_| false);
        let asked = Duration::from_millis(req.timeout.max(0) as u64);
        let timeout = asked.clamp(
            self.options.min_session_timeout,
            self.options.max_session_timeout,
        );
        let session_id = if req.session_id == 0 {
            let id = self.new_session_id();
            let mut password = [0u8; 16];
            password[..8].copy_from_slice(&self.rng.next_u64().to_le_bytes());
            password[8..].copy_from_slice(&self.rng.next_u64().to_le_bytes());
            self.sessions.insert(
                id,
                Session {
                    timeout,
                    password,
                    last_heard: Instant::now(),
                    conn: None,
                },
            );
            self.note(format!("session {id:#x} created, timeout {timeout:?}"));
            id
        } else {
            match self.sessions.get(&req.session_id) {
                Some(s) if s.password[..] == req.passwd[..] => req.session_id,
                _ => {
                    self.note(format!(
                        "session {:#x} refused: expired or wrong password",
                        req.session_id
                    ));
                    let mut buf = BytesMut::new();
                    encode_record_frame(
                        &mut buf,
                        &ConnectResponse {
                            protocol_version: 0,
                            timeout: 0,
                            session_id: 0,
                            passwd: Bytes::from_static(&[0; 16]),
                            read_only,
                        },
                    );
                    let _ = tx.send(Out::Frame(buf, Duration::ZERO));
                    let _ = tx.send(Out::Close);
                    return None;
                }
            }
        };
        let conn = self.next_conn;
        self.next_conn += 1;
        let session = self.sessions.get_mut(&session_id).unwrap();
        session.last_heard = Instant::now();
        let old = session.conn.replace(conn);
        let (timeout, password) = (session.timeout, session.password);
        if let Some(old) = old {
            // The session moved here: the server closes its old connection.
            self.close_conn(old);
        }
        let mut buf = BytesMut::new();
        encode_record_frame(
            &mut buf,
            &ConnectResponse {
                protocol_version: 0,
                timeout: timeout.as_millis() as i32,
                session_id,
                passwd: Bytes::copy_from_slice(&password),
                read_only,
            },
        );
        let _ = tx.send(Out::Frame(buf, Duration::ZERO));
        self.conns.insert(
            conn,
            Conn {
                tx,
                session: session_id,
                ids: vec![zookeeper_jute::Id {
                    scheme: "ip".into(),
                    id: acl::CLIENT_IP.into(),
                }],
                infos: vec![ClientInfo {
                    auth_scheme: "ip".into(),
                    user: acl::CLIENT_IP.into(),
                }],
            },
        );
        self.note(format!(
            "session {session_id:#x} connected on connection {conn}"
        ));
        Some(conn)
    }

    fn new_session_id(&mut self) -> i64 {
        loop {
            // As the server's: a server id in the top byte, then a time-based counter.
            let id = (1i64 << 56) | (self.rng.next_u64() as i64 & 0x00ff_ffff_ffff_ffff);
            if id != 0 && !self.sessions.contains_key(&id) {
                return id;
            }
        }
    }

    /// The server goes down: every connection closes, and nothing is accepted or expires
    /// until `start`.
    pub(crate) fn stop(&mut self) {
        self.note("server stops");
        let conns: Vec<_> = self.conns.keys().copied().collect();
        for c in conns {
            self.close_conn(c);
        }
        self.down = true;
    }

    /// The server comes back with the sessions it held, each with a fresh full timeout from
    /// now: a real server restores its sessions from its snapshot and log, and starts their
    /// timers again as it starts.
    pub(crate) fn start(&mut self) {
        let now = Instant::now();
        for s in self.sessions.values_mut() {
            s.last_heard = now;
        }
        self.down = false;
        self.note("server starts: every session's timer starts again");
    }

    /// Closes a connection (its session lives on until it expires).
    pub(crate) fn close_conn(&mut self, conn: ConnId) {
        if let Some(c) = self.conns.remove(&conn) {
            let _ = c.tx.send(Out::Close);
            self.watches.drop_connection(conn);
            if let Some(s) = self.sessions.get_mut(&c.session) {
                if s.conn == Some(conn) {
                    s.conn = None;
                }
            }
            self.note(format!(
                "connection {conn} closed (session {:#x})",
                c.session
            ));
        }
    }

    /// Ends a session: its ephemerals go (each a transaction firing its watches), its
    /// connection closes.
    pub(crate) fn end_session(&mut self, id: i64, why: &str) {
        let Some(session) = self.sessions.remove(&id) else {
            return;
        };
        self.note(format!("session {id:#x} ends: {why}"));
        let ephemerals = self.tree.ephemerals_of(id);
        if !ephemerals.is_empty() {
            self.zxid += 1;
            let zxid = self.zxid;
            let mut triggers = Vec::new();
            for path in ephemerals.iter().rev() {
                self.tree.remove(path, zxid, &mut triggers);
                self.note(format!("  ephemeral {path} removed at zxid {zxid:#x}"));
            }
            self.fire(&triggers);
        }
        if let Some(conn) = session.conn {
            self.close_conn(conn);
        }
    }

    /// Expires every session past its timeout, and cleans up containers and TTL nodes.
    pub(crate) fn tick(&mut self, clean_containers: bool) {
        if self.down {
            return;
        }
        let now = Instant::now();
        let expired: Vec<i64> = self
            .sessions
            .iter()
            .filter(|(_, s)| now.duration_since(s.last_heard) >= s.timeout)
            .map(|(&id, _)| id)
            .collect();
        for id in expired {
            self.end_session(id, "expired");
        }
        if clean_containers {
            for path in self.tree.expired_containers(self.now_ms()) {
                self.zxid += 1;
                let mut triggers = Vec::new();
                self.tree.remove(&path, self.zxid, &mut triggers);
                self.note(format!("container {path} cleaned up"));
                self.fire(&triggers);
            }
        }
    }

    /// Sends the events of one transaction's changes to the connections watching them.
    fn fire(&mut self, triggers: &[(String, EventType)]) {
        for (path, event) in triggers {
            let node = self.tree.get(path).map(|n| (n.data.clone(), n.stat));
            self.journal.push(Change {
                zxid: self.zxid,
                path: path.clone(),
                event: *event,
                node,
            });
        }
        let none = BTreeSet::new();
        for (path, event) in triggers {
            let mut to = match event {
                EventType::NodeChildrenChanged => {
                    self.watches.trigger(Table::Child, path, *event, &none)
                }
                EventType::NodeDeleted => {
                    let told = self.watches.trigger(Table::Data, path, *event, &none);
                    let mut rest = self.watches.trigger(Table::Child, path, *event, &told);
                    rest.extend(told);
                    rest
                }
                _ => self.watches.trigger(Table::Data, path, *event, &none),
            };
            for conn in std::mem::take(&mut to) {
                self.notify(conn, *event, path);
            }
        }
    }

    fn notify(&mut self, conn: ConnId, event: EventType, path: &str) {
        if let Some(c) = self.conns.get(&conn) {
            let mut buf = BytesMut::new();
            encode_notification_frame(
                &mut buf,
                // A 3.8 server sends no zxid with an event.
                -1,
                &WatcherEvent {
                    event_type: event,
                    state: KeeperState::SyncConnected,
                    path: path.to_owned(),
                },
            );
            let _ = c.tx.send(Out::Frame(buf, Duration::ZERO));
        }
    }

    /// Handles one request of `conn`. Returns false once the connection is to close.
    pub(crate) fn handle(&mut self, conn: ConnId, xid: i32, request: Request) -> bool {
        let Some(session_id) = self.conns.get(&conn).map(|c| c.session) else {
            return false;
        };
        if let Some(s) = self.sessions.get_mut(&session_id) {
            s.last_heard = Instant::now();
        }
        let is_write = is_write(&request);
        let closing = matches!(request, Request::CloseSession);
        let op = format!("{:?}", request.opcode());
        let (err, response, close) = self.answer(conn, session_id, request);
        if closing {
            // Closing a session is a transaction.
            self.zxid += 1;
        }
        let zxid = self.zxid;
        if op != "Ping" {
            self.note(format!(
                "conn {conn} session {session_id:#x} xid {xid} {op} -> {err:?} zxid {zxid:#x}"
            ));
        }
        let Some(c) = self.conns.get(&conn) else {
            return false;
        };
        if is_write && self.rng.chance(self.options.faults.lose_reply_after_apply) {
            self.note(format!("fault: reply to xid {xid} lost after apply"));
            self.close_conn(conn);
            return false;
        }
        let delay = if self.rng.chance(self.options.faults.slow_reply) {
            let max = self.options.faults.slow_reply_max.as_millis().max(1) as u64;
            Duration::from_millis(self.rng.below(max))
        } else {
            Duration::ZERO
        };
        let mut buf = BytesMut::new();
        encode_reply_frame(&mut buf, &ReplyHeader { xid, zxid, err }, &response);
        let _ = c.tx.send(Out::Frame(buf, delay));
        if closing {
            self.end_session(session_id, "closed by its client");
            return false;
        }
        if close {
            let _ = c.tx.send(Out::Close);
            self.close_conn(conn);
            return false;
        }
        true
    }

    /// One write transaction: a new zxid whatever the outcome, as the server logs failed
    /// writes too.
    fn write(
        &mut self,
        session: i64,
        ids: &[zookeeper_jute::Id],
        write: &Write,
    ) -> Result<Applied, ErrorCode> {
        self.zxid += 1;
        let mut triggers = Vec::new();
        let now = self.now_ms();
        let mut tree = self.tree.clone();
        let result = tree.apply(write, session, ids, self.zxid, now, &mut triggers);
        if result.is_ok() {
            self.tree = tree;
            self.fire(&triggers);
        }
        result
    }

    fn answer(
        &mut self,
        conn: ConnId,
        session: i64,
        request: Request,
    ) -> (ErrorCode, Response, bool) {
        use Response as R;
        let ok = |r| (ErrorCode::Ok, r, false);
        let fail = |e| (e, R::Empty, false);
        let ids = self
            .conns
            .get(&conn)
            .map(|c| c.ids.clone())
            .unwrap_or_default();
        let ids = &ids[..];
        match request {
            Request::Ping => ok(R::Empty),
            Request::Auth(a) => {
                if a.scheme == "digest" {
                    let id = acl::digest_id(&a.auth);
                    let user = id.split(':').next().unwrap_or_default().to_owned();
                    let id = zookeeper_jute::Id {
                        scheme: "digest".into(),
                        id,
                    };
                    if let Some(c) = self.conns.get_mut(&conn) {
                        if !c.ids.contains(&id) {
                            c.ids.push(id);
                            c.infos.push(ClientInfo {
                                auth_scheme: "digest".into(),
                                user,
                            });
                        }
                    }
                    ok(R::Empty)
                } else {
                    (ErrorCode::AuthFailed, R::Empty, true)
                }
            }
            // Handled by `handle`: the reply goes before the connection closes.
            Request::CloseSession => ok(R::Empty),
            Request::Create(c) => match CreateMode::from_flags(c.flags).filter(|m| !m.is_ttl()) {
                Some(mode) => {
                    self.create_reply(session, ids, c.path, c.data, c.acl, mode, 0, false)
                }
                None => fail(ErrorCode::BadArguments),
            },
            Request::Create2(c) | Request::CreateContainer(c) => {
                match CreateMode::from_flags(c.flags).filter(|m| !m.is_ttl()) {
                    Some(mode) => {
                        self.create_reply(session, ids, c.path, c.data, c.acl, mode, 0, true)
                    }
                    None => fail(ErrorCode::BadArguments),
                }
            }
            Request::CreateTtl(c) => {
                let Some(mode) = CreateMode::from_flags(c.flags).filter(|m| m.is_ttl()) else {
                    return fail(ErrorCode::BadArguments);
                };
                self.create_reply(session, ids, c.path, c.data, c.acl, mode, c.ttl, true)
            }
            Request::Delete(d) => match self.write(
                session,
                ids,
                &Write::Delete {
                    path: d.path,
                    version: d.version,
                },
            ) {
                Ok(_) => ok(R::Empty),
                Err(e) => fail(e),
            },
            Request::SetData(s) => match self.write(
                session,
                ids,
                &Write::SetData {
                    path: s.path,
                    data: s.data.unwrap_or_default(),
                    version: s.version,
                },
            ) {
                Ok(Applied::Set { stat }) => {
                    ok(R::SetData(zookeeper_jute::SetDataResponse { stat }))
                }
                Ok(_) => fail(ErrorCode::SystemError),
                Err(e) => fail(e),
            },
            Request::Exists(e) => {
                if !valid_path(&e.path) {
                    return fail(ErrorCode::BadArguments);
                }
                // No ACL check: a 3.8 server tells anyone whether a node exists, and its
                // stat (the conformance suite found it).
                if e.watch {
                    self.watches.add(Table::Data, &e.path, conn, Mode::Standard);
                }
                match self.tree.get(&e.path) {
                    Some(n) => ok(R::Exists(zookeeper_jute::ExistsResponse { stat: n.stat })),
                    None => fail(ErrorCode::NoNode),
                }
            }
            Request::GetData(g) => {
                if !valid_path(&g.path) {
                    return fail(ErrorCode::BadArguments);
                }
                let Some(n) = self.tree.get(&g.path) else {
                    return fail(ErrorCode::NoNode);
                };
                if let Err(e) = acl::check(&n.acl, perms::READ, ids) {
                    return fail(e);
                }
                let r = R::GetData(zookeeper_jute::GetDataResponse {
                    data: Some(n.data.clone()),
                    stat: n.stat,
                });
                if g.watch {
                    self.watches.add(Table::Data, &g.path, conn, Mode::Standard);
                }
                ok(r)
            }
            Request::GetChildren(g) => match self.children(conn, ids, &g.path, g.watch) {
                Ok((children, _)) => ok(R::GetChildren(zookeeper_jute::GetChildrenResponse {
                    children,
                })),
                Err(e) => fail(e),
            },
            Request::GetChildren2(g) => match self.children(conn, ids, &g.path, g.watch) {
                Ok((children, stat)) => ok(R::GetChildren2(zookeeper_jute::GetChildren2Response {
                    children,
                    stat,
                })),
                Err(e) => fail(e),
            },
            Request::GetAllChildrenNumber(g) => {
                let Some(n) = self.tree.get(&g.path) else {
                    return fail(ErrorCode::NoNode);
                };
                if let Err(e) = acl::check(&n.acl, perms::READ, ids) {
                    return fail(e);
                }
                ok(R::GetAllChildrenNumber(
                    zookeeper_jute::GetAllChildrenNumberResponse {
                        total_number: self.tree.descendants(&g.path) as i32,
                    },
                ))
            }
            Request::GetEphemerals(g) => {
                let ephemerals = self
                    .tree
                    .ephemerals_of(session)
                    .into_iter()
                    .filter(|p| g.prefix_path == "/" || p.starts_with(&g.prefix_path))
                    .collect();
                ok(R::GetEphemerals(zookeeper_jute::GetEphemeralsResponse {
                    ephemerals,
                }))
            }
            Request::GetAcl(g) => {
                let Some(n) = self.tree.get(&g.path) else {
                    return fail(ErrorCode::NoNode);
                };
                if let Err(e) = acl::check(&n.acl, perms::READ | perms::ADMIN, ids) {
                    return fail(e);
                }
                let acl = match acl::check(&n.acl, perms::ADMIN, ids) {
                    Ok(()) => n.acl.clone(),
                    Err(_) => acl::redacted(&n.acl),
                };
                ok(R::GetAcl(zookeeper_jute::GetAclResponse {
                    acl,
                    stat: n.stat,
                }))
            }
            Request::SetAcl(s) => {
                self.zxid += 1;
                if !valid_path(&s.path) {
                    return fail(ErrorCode::BadArguments);
                }
                let new_acl = match acl::fixup(&s.acl, ids) {
                    Ok(a) => a,
                    Err(e) => return fail(e),
                };
                let Some(n) = self.tree.nodes.get_mut(&s.path) else {
                    return fail(ErrorCode::NoNode);
                };
                if let Err(e) = acl::check(&n.acl, perms::ADMIN, ids) {
                    return fail(e);
                }
                if s.version != -1 && s.version != n.stat.aversion {
                    return fail(ErrorCode::BadVersion);
                }
                n.acl = new_acl;
                n.stat.aversion = n.stat.aversion.wrapping_add(1);
                ok(R::SetAcl(zookeeper_jute::SetAclResponse { stat: n.stat }))
            }
            Request::Sync(s) => ok(R::Sync(zookeeper_jute::SyncResponse { path: s.path })),
            Request::Multi(m) => ok(R::Multi(self.multi(session, ids, m.ops))),
            Request::MultiRead(m) => ok(R::Multi(self.multi_read(ids, m.ops))),
            Request::AddWatch(a) => {
                if !valid_path(&a.path) {
                    return fail(ErrorCode::BadArguments);
                }
                self.watches.add_persistent(&a.path, conn, a.mode == 1);
                ok(R::AddWatch(zookeeper_jute::ErrorResponse { err: 0 }))
            }
            Request::SetWatches(w) => {
                self.set_watches(
                    conn,
                    w.relative_zxid,
                    &w.data_watches,
                    &w.exist_watches,
                    &w.child_watches,
                    &[],
                    &[],
                );
                ok(R::Empty)
            }
            Request::SetWatches2(w) => {
                self.set_watches(
                    conn,
                    w.relative_zxid,
                    &w.data_watches,
                    &w.exist_watches,
                    &w.child_watches,
                    &w.persistent_watches,
                    &w.persistent_recursive_watches,
                );
                ok(R::Empty)
            }
            Request::RemoveWatches(r) => {
                if self.watches.remove(&r.path, conn, r.watcher_type) {
                    ok(R::Empty)
                } else {
                    fail(ErrorCode::NoWatcher)
                }
            }
            Request::CheckWatches(r) => {
                let has = match r.watcher_type {
                    1 => self.watches.has(Table::Child, &r.path, conn),
                    2 => self.watches.has(Table::Data, &r.path, conn),
                    _ => {
                        self.watches.has(Table::Child, &r.path, conn)
                            || self.watches.has(Table::Data, &r.path, conn)
                    }
                };
                if has {
                    ok(R::Empty)
                } else {
                    fail(ErrorCode::NoWatcher)
                }
            }
            Request::WhoAmI => {
                let client_info = self
                    .conns
                    .get(&conn)
                    .map(|c| c.infos.clone())
                    .unwrap_or_default();
                ok(R::WhoAmI(zookeeper_jute::WhoAmIResponse { client_info }))
            }
            Request::Reconfig(_) => fail(ErrorCode::ReconfigDisabled),
            Request::Sasl(_) => fail(ErrorCode::Unimplemented),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn create_reply(
        &mut self,
        session: i64,
        ids: &[zookeeper_jute::Id],
        path: String,
        data: Option<Bytes>,
        acl: Vec<zookeeper_jute::Acl>,
        mode: CreateMode,
        ttl: i64,
        with_stat: bool,
    ) -> (ErrorCode, Response, bool) {
        let write = Write::Create {
            path,
            data: data.unwrap_or_default(),
            acl,
            mode,
            ttl,
        };
        match self.write(session, ids, &write) {
            Ok(Applied::Created { path, stat }) if with_stat => (
                ErrorCode::Ok,
                Response::Create2(zookeeper_jute::Create2Response { path, stat }),
                false,
            ),
            Ok(Applied::Created { path, .. }) => (
                ErrorCode::Ok,
                Response::Create(zookeeper_jute::CreateResponse { path }),
                false,
            ),
            Ok(_) => (ErrorCode::SystemError, Response::Empty, false),
            Err(e) => (e, Response::Empty, false),
        }
    }

    fn children(
        &mut self,
        conn: ConnId,
        ids: &[zookeeper_jute::Id],
        path: &str,
        watch: bool,
    ) -> Result<(Vec<String>, zookeeper_jute::Stat), ErrorCode> {
        if !valid_path(path) {
            return Err(ErrorCode::BadArguments);
        }
        let n = self.tree.get(path).ok_or(ErrorCode::NoNode)?;
        acl::check(&n.acl, perms::READ, ids)?;
        let out = (n.children.iter().cloned().collect(), n.stat);
        if watch {
            self.watches.add(Table::Child, path, conn, Mode::Standard);
        }
        Ok(out)
    }

    /// `multi`: every op applies or none does, under one zxid. A failure reports OK for the
    /// ops before it, its own error, and RUNTIMEINCONSISTENCY for the ops after it.
    fn multi(
        &mut self,
        session: i64,
        ids: &[zookeeper_jute::Id],
        ops: Vec<MultiOp>,
    ) -> zookeeper_jute::MultiResponse {
        self.zxid += 1;
        let zxid = self.zxid;
        let now = self.now_ms();
        let mut tree = self.tree.clone();
        let mut triggers = Vec::new();
        let mut results = Vec::new();
        let mut failed = None;
        for (i, op) in ops.iter().enumerate() {
            let write = match op {
                MultiOp::Create(c) | MultiOp::Create2(c) | MultiOp::CreateContainer(c) => {
                    CreateMode::from_flags(c.flags)
                        .filter(|m| !m.is_ttl())
                        .map(|mode| Write::Create {
                            path: c.path.clone(),
                            data: c.data.clone().unwrap_or_default(),
                            acl: c.acl.clone(),
                            mode,
                            ttl: 0,
                        })
                }
                MultiOp::CreateTtl(c) => CreateMode::from_flags(c.flags)
                    .filter(|m| m.is_ttl())
                    .map(|mode| Write::Create {
                        path: c.path.clone(),
                        data: c.data.clone().unwrap_or_default(),
                        acl: c.acl.clone(),
                        mode,
                        ttl: c.ttl,
                    }),
                MultiOp::Delete(d) => Some(Write::Delete {
                    path: d.path.clone(),
                    version: d.version,
                }),
                MultiOp::SetData(s) => Some(Write::SetData {
                    path: s.path.clone(),
                    data: s.data.clone().unwrap_or_default(),
                    version: s.version,
                }),
                MultiOp::Check(c) => Some(Write::Check {
                    path: c.path.clone(),
                    version: c.version,
                }),
                MultiOp::GetData(_) | MultiOp::GetChildren(_) => None,
            };
            let outcome = match write {
                Some(w) => tree.apply(&w, session, ids, zxid, now, &mut triggers),
                None => Err(ErrorCode::BadArguments),
            };
            match outcome {
                Ok(applied) => results.push(match (op, applied) {
                    // A 3.8 server answers `create2` in a multi as `create`, without the stat
                    // (found by the conformance suite).
                    (MultiOp::Create(_) | MultiOp::Create2(_), Applied::Created { path, .. }) => {
                        MultiOpResult::Create { path }
                    }
                    (_, Applied::Created { path, stat }) => MultiOpResult::Create2 { path, stat },
                    (_, Applied::Deleted) => MultiOpResult::Delete,
                    (_, Applied::Set { stat }) => MultiOpResult::SetData { stat },
                    (_, Applied::Checked) => MultiOpResult::Check,
                }),
                Err(e) => {
                    failed = Some((i, e));
                    break;
                }
            }
        }
        if let Some((at, err)) = failed {
            let results = (0..ops.len())
                .map(|i| MultiOpResult::Error {
                    err: match i.cmp(&at) {
                        std::cmp::Ordering::Less => ErrorCode::Ok,
                        std::cmp::Ordering::Equal => err,
                        std::cmp::Ordering::Greater => ErrorCode::RuntimeInconsistency,
                    },
                })
                .collect();
            return zookeeper_jute::MultiResponse { results };
        }
        self.tree = tree;
        self.fire(&triggers);
        zookeeper_jute::MultiResponse { results }
    }

    fn multi_read(
        &mut self,
        ids: &[zookeeper_jute::Id],
        ops: Vec<MultiOp>,
    ) -> zookeeper_jute::MultiResponse {
        let denied = |acl: &[zookeeper_jute::Acl]| acl::check(acl, perms::READ, ids).err();
        let results = ops
            .iter()
            .map(|op| match op {
                MultiOp::GetData(g) => match self.tree.get(&g.path) {
                    Some(n) if denied(&n.acl).is_some() => MultiOpResult::Error {
                        err: ErrorCode::NoAuth,
                    },
                    Some(n) => MultiOpResult::GetData {
                        data: Some(n.data.clone()),
                        stat: n.stat,
                    },
                    None => MultiOpResult::Error {
                        err: ErrorCode::NoNode,
                    },
                },
                MultiOp::GetChildren(g) => match self.tree.get(&g.path) {
                    Some(n) if denied(&n.acl).is_some() => MultiOpResult::Error {
                        err: ErrorCode::NoAuth,
                    },
                    Some(n) => MultiOpResult::GetChildren {
                        children: n.children.iter().cloned().collect(),
                    },
                    None => MultiOpResult::Error {
                        err: ErrorCode::NoNode,
                    },
                },
                _ => MultiOpResult::Error {
                    err: ErrorCode::BadArguments,
                },
            })
            .collect();
        zookeeper_jute::MultiResponse { results }
    }

    /// `setWatches`: what changed after `relative` is told at once, the rest is watched.
    #[allow(clippy::too_many_arguments)]
    fn set_watches(
        &mut self,
        conn: ConnId,
        relative: i64,
        data: &[String],
        exist: &[String],
        child: &[String],
        persistent: &[String],
        recursive: &[String],
    ) {
        for path in data {
            match self.tree.get(path).map(|n| n.stat.mzxid) {
                None => self.notify(conn, EventType::NodeDeleted, path),
                Some(m) if m > relative => self.notify(conn, EventType::NodeDataChanged, path),
                Some(_) => self.watches.add(Table::Data, path, conn, Mode::Standard),
            }
        }
        for path in exist {
            match self.tree.get(path) {
                Some(_) => self.notify(conn, EventType::NodeCreated, path),
                None => self.watches.add(Table::Data, path, conn, Mode::Standard),
            }
        }
        for path in child {
            match self.tree.get(path).map(|n| n.stat.pzxid) {
                None => self.notify(conn, EventType::NodeDeleted, path),
                Some(p) if p > relative => self.notify(conn, EventType::NodeChildrenChanged, path),
                Some(_) => self.watches.add(Table::Child, path, conn, Mode::Standard),
            }
        }
        for path in persistent {
            self.watches.add_persistent(path, conn, false);
        }
        for path in recursive {
            self.watches.add_persistent(path, conn, true);
        }
    }
}

fn is_write(request: &Request) -> bool {
    matches!(
        request,
        Request::Create(_)
            | Request::Create2(_)
            | Request::CreateContainer(_)
            | Request::CreateTtl(_)
            | Request::Delete(_)
            | Request::SetData(_)
            | Request::SetAcl(_)
            | Request::Multi(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(path: &str, mode: CreateMode) -> Write {
        Write::Create {
            path: path.into(),
            data: Bytes::from(path.to_owned()),
            acl: zookeeper_jute::Acl::open_unsafe(),
            mode,
            ttl: 0,
        }
    }

    /// The journal folded up to the last zxid is the live tree, and up to an earlier zxid the
    /// tree as it was then.
    #[test]
    fn the_journal_replays_the_tree_at_every_zxid() {
        let mut s = State::new(SimOptions::default());
        let owner = 7;
        s.write(0, &[], &create("/a", CreateMode::Persistent))
            .unwrap();
        s.write(0, &[], &create("/a/b", CreateMode::Persistent))
            .unwrap();
        s.write(owner, &[], &create("/a/e", CreateMode::Ephemeral))
            .unwrap();
        let before = s.zxid;
        let set = Write::SetData {
            path: "/a/b".into(),
            data: Bytes::from_static(b"new"),
            version: -1,
        };
        s.write(0, &[], &set).unwrap();
        s.write(
            0,
            &[],
            &Write::Delete {
                path: "/a/b".into(),
                version: -1,
            },
        )
        .unwrap();
        // A failed write changes nothing.
        assert!(s
            .write(0, &[], &create("/x/y", CreateMode::Persistent))
            .is_err());
        s.sessions.insert(
            owner,
            Session {
                timeout: Duration::from_secs(1),
                password: [0; 16],
                last_heard: Instant::now(),
                conn: None,
            },
        );
        s.end_session(owner, "test");
        let zxid = s.zxid;
        let live: BTreeMap<String, (Bytes, zookeeper_jute::Stat)> = ["/a"]
            .iter()
            .map(|p| {
                let n = s.tree.get(p).unwrap();
                (p.to_string(), (n.data.clone(), n.stat))
            })
            .collect();
        let server = crate::sim::SimServer {
            state: std::sync::Arc::new(std::sync::Mutex::new(s)),
        };
        let now = server.tree_at("/a", zxid);
        assert_eq!(now.keys().collect::<Vec<_>>(), ["/a"]);
        assert_eq!(now["/a"].0, live["/a"].0);
        assert_eq!(now["/a"].1.mzxid, live["/a"].1.mzxid);
        let then = server.tree_at("/a", before);
        assert_eq!(then.keys().collect::<Vec<_>>(), ["/a", "/a/b", "/a/e"]);
        assert_eq!(&then["/a/b"].0[..], b"/a/b");
        assert_eq!(server.tree_at("/a", before + 1)["/a/b"].1.version, 1);
        assert!(server.journal_after(zxid).is_empty());
    }
}
