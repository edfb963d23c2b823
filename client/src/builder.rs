//! Session settings and `connect`.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use zookeeper_jute::{DEFAULT_MAX_FRAME, PASSWORD_LEN};

use crate::client::{Client, Inner};
use crate::connect_string::ConnectString;
use crate::connector::Connect;
use crate::driver;
use crate::error::{ErrorKind, Result};
use crate::limits;
use crate::path::{validate_path, Chroot};
use crate::queue::RequestQueue;
use crate::sasl::SaslFactory;
use crate::secret::Secret;
use crate::session::{Session, SessionConfig, SET_WATCHES_MAX_BYTES};
use crate::state::{SessionId, SessionState, StatePublisher};
use crate::transport::Connector;

impl Client {
    /// Connects with default settings; see [`Client::builder`].
    ///
    /// `connect_string` is `host:port[,host:port...][/chroot]`.
    pub async fn connect(connect_string: &str) -> Result<Client> {
        Client::builder(connect_string).connect().await
    }

    /// A builder for the session timeout, chroot, authentication and the rest.
    pub fn builder(connect_string: &str) -> ClientBuilder {
        ClientBuilder::new(connect_string)
    }
}

/// Default requested session timeout.
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest default wait of [`ClientBuilder::connect`] for the first session: the default
/// connect timeout is the session timeout, at most this.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default bound on requests queued or in flight.
pub const DEFAULT_MAX_OUTSTANDING: usize = 16 * 1024;
/// Default largest reply the client reads, 1,048,659 bytes: what the server sends at most about
/// one node. ZooKeeper (3.8 checked) bounds what it receives by `jute.maxbuffer` (1,048,575
/// bytes by default) and checks nothing it sends, so the largest reply about one node is the
/// largest data a request could write, with a reply header (16 bytes) and a stat (68 bytes)
/// around it. Listings of many children and `multi_read` results have no bound on the server;
/// a larger reply fails its own request with [`ErrorKind::ReplyTooLarge`].
pub const DEFAULT_MAX_INCOMING_FRAME: usize = DEFAULT_MAX_FRAME + 16 + 68;
/// Default bound on the events a persistent watch's stream queues for a consumer that falls
/// behind: about 1 MB of events (see [`ClientBuilder::max_queued_events`]).
pub const DEFAULT_MAX_QUEUED_EVENTS: usize = 10_000;
/// Default bound on what a persistent-recursive watch remembers of its subtree, to report what
/// changed while the client was cut off: 32 MiB, about 120,000 nodes of 50-byte paths (see
/// [`ClientBuilder::max_recursive_watch_memory`]).
pub const DEFAULT_MAX_RECURSIVE_WATCH_MEMORY: usize = 32 << 20;
/// Default deadline of every request: long enough for the largest listing or the walk behind a
/// recursive watch over a large subtree, short enough that a server which answers pings but
/// not requests cannot hold a caller for good.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// A seed for the session's host shuffling, jitter and rebalancing draws. Sessions created
/// in the same instant must still draw independently (clients that all made the same draw
/// would rebalance as one), so the clock goes through the standard library's hasher, whose
/// keys come from the operating system's random source.
fn session_seed() -> u64 {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    hasher.write_u32(std::process::id());
    hasher.finish()
}

/// Sets the recipes' stream of draws apart from the session's when both come from one seed.
const RECIPES_STREAM: u64 = 0x5eed_0f2e_c19e_5a11;

/// Builds a [`Client`]. Obtain one with [`Client::builder`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> zookeeper_tokio::Result<()> {
/// use std::time::Duration;
/// use zookeeper_tokio::{Client, CreateOptions, ErrorKind};
///
/// let servers = "zk1:2181,zk2:2181,zk3:2181";
/// let app = "/app";
/// # let servers = &zookeeper_testkit::shared_server().connect_string();
/// # let chroot = zookeeper_testkit::chroot_for("doc_client_builder");
/// # let app = chroot.as_str();
/// let client = Client::builder(servers)
///     .chroot(app) // every path below lives under /app on the servers
///     .session_timeout(Duration::from_secs(10))
///     .request_timeout(Duration::from_secs(2)) // no call waits longer for its reply
///     .digest_auth("deployer", "secret") // replayed on every reconnect
///     .connect()
///     .await?;
/// assert_eq!(client.chroot(), Some(app));
/// assert_eq!(client.session_timeout(), Duration::from_secs(10)); // as the server granted it
/// client.create("/config", b"v1", &CreateOptions::persistent()).await?;
/// # let full = format!("{app}/config");
/// # let outside = Client::connect(&zookeeper_testkit::shared_server().connect_string()).await?;
/// # assert!(outside.exists(&full).await?.is_some());
///
/// // Nothing listening: connect gives up after its timeout (5 s by default) and names the
/// // servers it tried.
/// let dead = "127.0.0.1:1";
/// let err = Client::builder(dead)
///     .connect_timeout(Duration::from_millis(500))
///     .connect()
///     .await
///     .unwrap_err();
/// assert!(matches!(err.kind(), ErrorKind::Connect(_)));
/// assert!(err.to_string().contains("tried 127.0.0.1:1"), "{err}");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    connect_string: String,
    session_timeout: Duration,
    connect_timeout: Option<Duration>,
    attempt_timeout: Option<Duration>,
    chroot: Option<String>,
    read_only: bool,
    auth: Vec<(String, Secret)>,
    sasl: Option<Arc<dyn SaslFactory>>,
    request_timeout: Option<Duration>,
    fail_fast: bool,
    max_outstanding: usize,
    max_frame: usize,
    max_incoming_frame: usize,
    max_queued_events: usize,
    set_watches_max_bytes: usize,
    max_recursive_watch_memory: usize,
    resume: Option<(i64, Secret)>,
    follow_config: bool,
    connector: Connector,
    rng_seed: Option<u64>,
}

impl ClientBuilder {
    pub(crate) fn new(connect_string: &str) -> ClientBuilder {
        ClientBuilder {
            connect_string: connect_string.to_owned(),
            session_timeout: DEFAULT_SESSION_TIMEOUT,
            connect_timeout: None,
            attempt_timeout: None,
            chroot: None,
            read_only: false,
            auth: Vec::new(),
            sasl: None,
            request_timeout: Some(DEFAULT_REQUEST_TIMEOUT),
            fail_fast: false,
            max_outstanding: DEFAULT_MAX_OUTSTANDING,
            max_frame: DEFAULT_MAX_FRAME,
            max_incoming_frame: DEFAULT_MAX_INCOMING_FRAME,
            max_queued_events: DEFAULT_MAX_QUEUED_EVENTS,
            set_watches_max_bytes: SET_WATCHES_MAX_BYTES,
            max_recursive_watch_memory: DEFAULT_MAX_RECURSIVE_WATCH_MEMORY,
            resume: None,
            follow_config: false,
            connector: Connector::default(),
            rng_seed: None,
        }
    }

    /// The session timeout to ask for (default 30 s; 1 ms to [`MAX_TIMEOUT`](crate::MAX_TIMEOUT)). The server clamps
    /// it to its `[minSessionTimeout, maxSessionTimeout]`; [`Client::session_timeout`] gives
    /// the result.
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// How long [`ClientBuilder::connect`] waits for the first session (default: the session
    /// timeout, at most [`DEFAULT_CONNECT_TIMEOUT`], 5 s; 1 ms to
    /// [`MAX_TIMEOUT`](crate::MAX_TIMEOUT)), so that a dead ensemble is reported in seconds
    /// while the session, once established, keeps its longer timeout. Until then each attempt
    /// gets a share of this wait (see [`ClientBuilder::attempt_timeout`]), so a silent server
    /// tried first cannot use it all up.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// How long one connection attempt to one server may take, handshake included (default:
    /// the negotiated session timeout divided by the number of servers, and at most half the
    /// time left before the session would expire, so a silent server leaves time for another
    /// attempt; before the first
    /// session, the connect timeout divided by one more than the number of servers, so that
    /// every server is tried before `connect` gives up; at least 100 ms either way; 1 ms to
    /// [`MAX_TIMEOUT`](crate::MAX_TIMEOUT) when set).
    pub fn attempt_timeout(mut self, timeout: Duration) -> Self {
        self.attempt_timeout = Some(timeout);
        self
    }

    /// Work under this path; overrides a chroot in the connect string. It must be a valid path
    /// that leaves room for paths of its own within [`ClientBuilder::max_frame`].
    pub fn chroot(mut self, chroot: &str) -> Self {
        self.chroot = Some(chroot.to_owned());
        self
    }

    /// Accept read-only servers (default false): a member that lost its quorum (run with
    /// `readonlymode.enabled=true`) then serves reads, with the state
    /// [`SessionState::ConnectedReadOnly`] and writes failing with
    /// [`ErrorKind::NotReadOnly`]. Meanwhile the client asks the other members
    /// (the `isro` four-letter word, every 100 ms doubling to 60 s) and moves to the first
    /// read-write one. A session created on a read-only member is local to it; the client then
    /// gets a new session of the ensemble when it moves, which is the only case where the
    /// session id changes.
    pub fn read_only(mut self, allowed: bool) -> Self {
        self.read_only = allowed;
        self
    }

    /// Authenticate with `digest` `user:password` on every connection.
    pub fn digest_auth(self, user: &str, password: &str) -> Self {
        self.auth("digest", format!("{user}:{password}").as_bytes())
    }

    /// Authenticate with any scheme on every connection. The scheme must not be empty, and the
    /// `auth` request must fit within [`ClientBuilder::max_frame`].
    pub fn auth(mut self, scheme: &str, auth: &[u8]) -> Self {
        self.auth.push((scheme.to_owned(), Secret::copy_from(auth)));
        self
    }

    /// Log in with SASL DIGEST-MD5 as `user` (a user of the server's JAAS `DigestLoginModule`)
    /// on every connection, before any request is sent; the session then has the identity
    /// `sasl:<user>`. A refused login ends the session with [`ErrorKind::AuthFailed`] (and
    /// `connect` fails with it). The password never appears in `Debug` output or logs.
    #[cfg(feature = "sasl-digest")]
    pub fn sasl_digest(mut self, user: &str, password: &str) -> Self {
        self.sasl = Some(Arc::new(crate::sasl::digest::DigestMd5 {
            user: user.to_owned(),
            password: Secret::copy_from(password.as_bytes()),
        }));
        self
    }

    /// Log in with SASL GSSAPI (Kerberos) on every connection, before any request is sent,
    /// with the default credentials of the process (the ticket cache named by `KRB5CCNAME`,
    /// or a client keytab), to the service principal `zookeeper/<host>` where `<host>` is
    /// the server's host as written in the connect string; see
    /// [`ClientBuilder::sasl_gssapi_service`] to name it. The session then has the
    /// identity `sasl:<principal>`. A refused login ends the session with
    /// [`ErrorKind::AuthFailed`].
    #[cfg(feature = "sasl-gssapi")]
    pub fn sasl_gssapi(self) -> Self {
        self.sasl_gssapi_service("zookeeper", None)
    }

    /// Like [`ClientBuilder::sasl_gssapi`] with the service principal `<service>/<host>`:
    /// `host` names every server alike (`None`: each server's host from the connect
    /// string). ZooKeeper's default is the service `zookeeper`.
    #[cfg(feature = "sasl-gssapi")]
    pub fn sasl_gssapi_service(mut self, service: &str, host: Option<&str>) -> Self {
        self.sasl = Some(Arc::new(crate::sasl::gssapi::Gssapi {
            service: service.to_owned(),
            host: host.map(str::to_owned),
        }));
        self
    }

    /// The deadline of every request, counted from the call (from the first poll of its future for
    /// a call made off the runtime that connected): past it, the call fails with
    /// [`ErrorKind::Timeout`] (default [`DEFAULT_REQUEST_TIMEOUT`], 60 s; 1 ms to
    /// [`MAX_TIMEOUT`](crate::MAX_TIMEOUT)). `None` turns it off: a call then waits as long as the
    /// session lives, however long a server takes to answer. [`Client::with_request_timeout`] gives
    /// a handle with another deadline.
    pub fn request_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.request_timeout = timeout.into();
        self
    }

    /// Fail requests made while disconnected at once with
    /// [`ErrorKind::ConnectionLoss`] instead of holding them until the
    /// reconnect (default false: hold them; the request deadline and session expiry still bound
    /// the wait).
    pub fn fail_fast(mut self, fail_fast: bool) -> Self {
        self.fail_fast = fail_fast;
        self
    }

    /// Requests queued or in flight at once (default 16384, at least 1); calls beyond it wait.
    pub fn max_outstanding(mut self, n: usize) -> Self {
        self.max_outstanding = n;
        self
    }

    /// The largest request frame sent (default 1,048,575 bytes, the server's `jute.maxbuffer`;
    /// [`MIN_FRAME_LIMIT`](crate::MIN_FRAME_LIMIT) to [`MAX_FRAME_LIMIT`](crate::MAX_FRAME_LIMIT)); larger requests fail with
    /// [`ErrorKind::DataTooLarge`] before anything is sent. A watch is refused the same way on a
    /// path (chroot included) longer than this less 40 bytes, which the frame setting it again
    /// after a reconnect needs; those frames never exceed it.
    pub fn max_frame(mut self, bytes: usize) -> Self {
        self.max_frame = bytes;
        self
    }

    /// The largest reply read (default [`DEFAULT_MAX_INCOMING_FRAME`];
    /// [`MIN_FRAME_LIMIT`](crate::MIN_FRAME_LIMIT) to
    /// [`MAX_FRAME_LIMIT`](crate::MAX_FRAME_LIMIT)). A larger reply is skipped as it arrives,
    /// never buffered, and fails only its own request, with [`ErrorKind::ReplyTooLarge`]; the
    /// connection and every other request carry on. A recursive watch whose subtree holds a
    /// listing over the limit fails `add_watch` the same way, and one met when the subtree is
    /// read again after a reconnect ends the watch with
    /// [`EventType::PersistentWatchRemoved`](crate::EventType::PersistentWatchRemoved), as does
    /// an event below it whose path is over the limit: what changed there cannot be known. A
    /// watch on a path whose events would be over the limit is refused with
    /// [`ErrorKind::ReplyTooLarge`]. Raise it to read larger listings (a child costs its
    /// name's length plus 4 bytes); each read buffers at most this much.
    pub fn max_incoming_frame(mut self, bytes: usize) -> Self {
        self.max_incoming_frame = bytes;
        self
    }

    /// Follow the ensemble's membership (default false): once connected, the client reads
    /// and watches `/zookeeper/config` and, whenever members join or leave, replaces its
    /// server list with their client addresses through [`Client::update_server_list`]'s
    /// rebalancing. Servers without dynamic configuration (before 3.5) are left alone.
    pub fn follow_config(mut self, follow: bool) -> Self {
        self.follow_config = follow;
        self
    }

    /// Speak TLS to every server of the connect string (cargo feature `tls`), as configured by
    /// `config`: what ZooKeeper serves on its `secureClientPort`.
    ///
    /// The scheme is all or nothing: with TLS, no connection (the read-write probes of
    /// [`ClientBuilder::read_only`] included) is ever made in plain TCP, so a connect string
    /// must list the servers' secure ports only; without it, none is made with TLS.
    ///
    /// A TLS failure (certificate not trusted or not valid for the host, client certificate
    /// required or refused, unreadable files) fails [`ClientBuilder::connect`] with
    /// [`ErrorKind::Tls`] naming the cause, as soon as every server of the connect string has
    /// failed so in a row (attempts are paced as for unreachable servers), or at the connect
    /// timeout if some servers failed otherwise. An established session keeps retrying, with
    /// the same backoff, so that a certificate fixed on disk is picked up.
    ///
    /// [`ClientBuilder::follow_config`] is refused with TLS (`/zookeeper/config` names the
    /// plain client ports); give [`Client::update_server_list`] the secure ports instead.
    #[cfg(feature = "tls")]
    pub fn tls(mut self, config: crate::tls::TlsConfig) -> Self {
        self.connector.tls = Some(std::sync::Arc::new(config));
        self
    }

    /// Open every connection with `connector` instead of dialling TCP (see [`Connect`]): a
    /// simulated network (`TurmoilConnector`, with the `turmoil` feature), an in-process
    /// pipe, a tunnel. The
    /// stream is used as it comes, so it cannot be combined with `tls` (a connector that wants
    /// TLS wraps its own stream). The connect string's hosts are handed to it unresolved.
    pub fn connector<C: Connect>(mut self, connector: C) -> Self {
        self.connector.custom = Some(Arc::new(connector));
        self
    }

    /// Seed the client's randomness: the order its servers are tried in, the jitter of its
    /// reconnection backoff and rebalancing, and [`Client::random_u64`] (what the recipes draw
    /// their node names' GUIDs and retry jitter from). By default each client draws a seed
    /// from the operating system. Two clients given the same seed make the same draws, which
    /// is what a deterministic simulation needs and what a production ensemble does not want
    /// (clients that draw alike reconnect alike): leave it unset outside tests.
    pub fn rng_seed(mut self, seed: u64) -> Self {
        self.rng_seed = Some(seed);
        self
    }

    /// How many events the stream of a persistent or recursive watch queues for a consumer
    /// that reads more slowly than they come (default [`DEFAULT_MAX_QUEUED_EVENTS`], at least
    /// 1). Past it, events are no longer queued but folded, per node, into what changed since:
    /// once the consumer has read everything queued, it gets one event per node and kind of
    /// change, as after a reconnect (see [`Client::add_watch`]), then the live events again.
    /// Nothing is lost, and a stream holds at most this many events, plus one small entry per
    /// node that changed while its consumer was behind.
    pub fn max_queued_events(mut self, n: usize) -> Self {
        self.max_queued_events = n;
        self
    }

    /// How many bytes of its subtree a persistent-recursive watch remembers, to report after a
    /// reconnect what changed while the client was cut off (default
    /// [`DEFAULT_MAX_RECURSIVE_WATCH_MEMORY`], 32 MiB; counted as each node's path twice plus
    /// 160 bytes). Past it, whatever the server reports, the watch folds instead of growing: it
    /// keeps only its root, and after a reconnect reports by zxid every node created, changed or
    /// whose children changed since the last reply before the connection was lost, once each
    /// (a deleted node below the root as `NodeChildrenChanged` of its parent). Nothing is lost,
    /// but a change already delivered live may be reported again. Live events are unaffected.
    pub fn max_recursive_watch_memory(mut self, bytes: usize) -> Self {
        self.max_recursive_watch_memory = bytes;
        self
    }

    /// Resume an existing session (from [`Client::session_id`] and
    /// [`Client::session_password`], which is 16 bytes) instead of creating one. If it has
    /// expired, `connect` fails with [`ErrorKind::SessionExpired`].
    pub fn session(mut self, id: SessionId, password: &[u8]) -> Self {
        self.resume = Some((id.0, Secret::copy_from(password)));
        self
    }

    /// Bytes of paths per `setWatches` frame when watches are restored after a reconnect (at
    /// least 1).
    #[doc(hidden)]
    pub fn set_watches_max_bytes(mut self, bytes: usize) -> Self {
        self.set_watches_max_bytes = bytes;
        self
    }

    /// Starts the session task and waits until a server accepted the session.
    ///
    /// Fails with [`ErrorKind::Connect`] if no server accepted a session within the connect
    /// timeout (its message names each server tried and how it failed), [`ErrorKind::Tls`] if
    /// TLS failed (see `ClientBuilder::tls`), [`ErrorKind::AuthFailed`] if an identity was
    /// refused, and before anything starts with [`ErrorKind::InvalidConnectString`],
    /// [`ErrorKind::InvalidPath`] (the chroot), [`ErrorKind::DataTooLarge`] (an identity too
    /// large to send) or [`ErrorKind::InvalidArgument`] naming the setting out of range. Must
    /// be called inside a tokio runtime.
    pub async fn connect(self) -> Result<Client> {
        let parsed = ConnectString::parse(&self.connect_string)?;
        let max_frame = limits::frame_limit("max_frame", self.max_frame)?;
        let chroot = match self.chroot.as_deref().or(parsed.chroot.as_deref()) {
            Some(c) => {
                validate_path(c)?;
                limits::chroot_fits(c, max_frame)?;
                Chroot::new(Some(c))
            }
            None => Chroot::new(None),
        };
        let session_timeout = limits::timeout("session timeout", self.session_timeout)?;
        let connect_timeout = match self.connect_timeout {
            Some(t) => limits::timeout("connect timeout", t)?,
            None => session_timeout.min(DEFAULT_CONNECT_TIMEOUT),
        };
        // Said when it bites: a short session timeout silently shortens the wait to connect.
        let connect_rule = (self.connect_timeout.is_none()
            && session_timeout < DEFAULT_CONNECT_TIMEOUT)
            .then(|| {
                format!(
                    "; the connect timeout defaults to the session timeout ({session_timeout:?}) \
                     when that is shorter than {DEFAULT_CONNECT_TIMEOUT:?}: set connect_timeout \
                     to wait longer"
                )
            });
        let attempt_timeout = self
            .attempt_timeout
            .map(|t| limits::timeout("attempt timeout", t))
            .transpose()?;
        let request_timeout = self
            .request_timeout
            .map(|t| limits::timeout("request timeout", t))
            .transpose()?;
        let max_outstanding = limits::at_least_one("max_outstanding", self.max_outstanding)?;
        let max_incoming_frame =
            limits::frame_limit("max_incoming_frame", self.max_incoming_frame)?;
        let max_queued_events = limits::at_least_one("max_queued_events", self.max_queued_events)?;
        let set_watches_max_bytes =
            limits::at_least_one("set_watches_max_bytes", self.set_watches_max_bytes)?;
        for (scheme, auth) in &self.auth {
            limits::auth_fits(scheme, auth.expose().len(), max_frame)?;
        }
        if let Some((_, password)) = &self.resume {
            if password.expose().len() != PASSWORD_LEN {
                return Err(ErrorKind::InvalidArgument(format!(
                    "a session password is {PASSWORD_LEN} bytes, not {}",
                    password.expose().len()
                ))
                .into());
            }
        }
        #[cfg(feature = "tls")]
        if self.follow_config && self.connector.tls.is_some() {
            // Dynamic configuration names each member's plain client port only.
            return Err(ErrorKind::InvalidArgument(
                "follow_config cannot be used with TLS: /zookeeper/config lists the members' \
                 plain client ports, not their secure ones"
                    .into(),
            )
            .into());
        }
        #[cfg(feature = "tls")]
        if self.connector.custom.is_some() && self.connector.tls.is_some() {
            return Err(ErrorKind::InvalidArgument(
                "a connector cannot be combined with tls: the connector's stream is used as it \
                 comes"
                    .into(),
            )
            .into());
        }
        // One seed spread into two independent ones: the session machine's and the recipes'.
        let base = self.rng_seed.unwrap_or_else(session_seed);
        let seed = crate::random::mix(base);
        let random = crate::random::Random::new(crate::random::mix(base ^ RECIPES_STREAM));
        let hosts = parsed.hosts.clone();
        let cfg = SessionConfig {
            hosts: parsed.hosts,
            chroot: chroot.clone(),
            session_timeout,
            attempt_timeout,
            connect_timeout,
            read_only: self.read_only,
            fail_fast: self.fail_fast,
            max_incoming_frame,
            set_watches_max_bytes,
            max_frame,
            max_subtree_bytes: self.max_recursive_watch_memory,
            auth: self.auth,
            sasl: self.sasl,
            seed,
            resume: self.resume,
            #[cfg(feature = "tls")]
            plain: self.connector.tls.is_none(),
            #[cfg(not(feature = "tls"))]
            plain: true,
        };
        let (state_tx, state_rx) = StatePublisher::new();
        // Every transition, from before the session starts: a session accepted and lost again
        // at once must still count as accepted (the latest state alone may already be
        // `Disconnected` when this task looks).
        let mut changes = state_tx.changes();
        let queue = RequestQueue::new(max_outstanding);
        let info = state_tx.info.clone();
        let session = Session::new(
            cfg,
            state_tx.clone(),
            tokio::time::Instant::now().into_std(),
        );
        let failures = info.failures.subscribe();
        driver::spawn(session, queue.clone(), self.connector);
        let client = Client::from_inner(
            Inner {
                queue,
                info: info.clone(),
                state_rx: state_rx.clone(),
                publisher: state_tx,
                chroot,
                max_frame,
                max_incoming_frame,
                max_queued_events,
                metrics: crate::metrics::ClientMetrics::new(),
                random,
            },
            request_timeout,
        );
        let mut failures_rx = failures.clone();
        // The real clock beside the runtime's, for the failure's text only (see `clock_note`).
        let began = std::time::Instant::now();
        let outcome = tokio::time::timeout(
            connect_timeout,
            first_session(&mut changes, &mut failures_rx),
        )
        .await;
        match outcome {
            Ok(Ok(())) => {
                if self.follow_config {
                    crate::servers::follow_config(&client);
                }
                Ok(client)
            }
            Ok(Err(kind)) => Err(kind.into()),
            // Some servers failed on TLS, others otherwise: the TLS failure is the news.
            Err(_) => {
                let last_tls = failures.borrow().last_tls.clone();
                Err(last_tls
                    .unwrap_or_else(|| {
                        let mut failure = info.connect_failure(&hosts, connect_timeout);
                        failure.push_str(connect_rule.as_deref().unwrap_or_default());
                        failure.push_str(&clock_note(connect_timeout, began.elapsed()));
                        ErrorKind::Connect(failure)
                    })
                    .into())
            }
        }
        // On failure `client` drops here, which stops the session task.
    }
}

/// What a connect failure adds when the runtime's clock ran `waited` while far less real
/// time went by. A paused clock (`#[tokio::test(start_paused = true)]`, `time::pause`)
/// jumps to the next timer whenever the runtime waits, so every attempt's timeout passes at
/// once while a server on a real network is still answering; the failure would otherwise
/// read as if no server had answered for the whole connect timeout.
fn clock_note(waited: Duration, real: Duration) -> String {
    if real >= waited / 2 {
        return String::new();
    }
    format!(
        "; the runtime's clock ran {waited:?} in {real:.1?} of real time: it is paused or \
         simulated, and its timeouts pass before a server on a real network can answer"
    )
}

/// Waits until a server accepts the session (`Ok`, even if the connection is gone again by the
/// time this looks), the session ends first, or certificates alone stand in the way.
async fn first_session(
    changes: &mut crate::state::StateChanges,
    failures: &mut tokio::sync::watch::Receiver<crate::state::AttemptFailures>,
) -> std::result::Result<(), ErrorKind> {
    let state = tokio::select! {
        // A session accepted is the outcome, whatever else failed meanwhile.
        biased;
        state = changes.wait_for(|s| s.is_connected() || s.is_terminal()) => {
            state.ok_or(ErrorKind::Closed)?
        }
        // Certificates refused by (or to) every server: no point waiting longer.
        failed = failures.wait_for(|f| f.every_server_tls) => {
            return Err(failed
                .ok()
                .and_then(|f| f.last_tls.clone())
                .unwrap_or(ErrorKind::Closed));
        }
    };
    match state {
        SessionState::AuthFailed => Err(ErrorKind::AuthFailed),
        SessionState::Expired => Err(ErrorKind::SessionExpired),
        SessionState::Closed => Err(ErrorKind::Closed),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that accepts the session and drops the connection at once: the latest state
    /// is `Disconnected` before `connect` looks, and the session was accepted all the same.
    /// (Waiting on the latest state alone, `connect` missed it and timed out.)
    #[tokio::test]
    async fn a_session_accepted_and_lost_before_anyone_looks_counts_as_accepted() {
        let (publisher, _latest) = StatePublisher::new();
        let mut changes = publisher.changes();
        let mut failures = publisher.info.failures.subscribe();
        publisher.publish(SessionState::Connected);
        publisher.publish(SessionState::Disconnected);
        let waited = tokio::time::timeout(
            Duration::from_secs(60),
            first_session(&mut changes, &mut failures),
        )
        .await;
        assert!(matches!(waited, Ok(Ok(()))), "{waited:?}");
    }

    #[test]
    fn a_clock_that_ran_ahead_of_real_time_is_named_and_a_real_one_is_not() {
        let note = clock_note(Duration::from_secs(5), Duration::from_micros(250));
        assert!(note.contains("paused or simulated"), "{note}");
        assert_eq!(
            clock_note(Duration::from_secs(5), Duration::from_secs(5)),
            ""
        );
        // A real clock's timer fires late, never early.
        assert_eq!(
            clock_note(Duration::from_secs(5), Duration::from_millis(5_020)),
            ""
        );
    }

    #[tokio::test]
    async fn a_session_that_ended_before_it_was_accepted_says_how() {
        let (publisher, _latest) = StatePublisher::new();
        let mut changes = publisher.changes();
        let mut failures = publisher.info.failures.subscribe();
        publisher.publish(SessionState::AuthFailed);
        let waited = first_session(&mut changes, &mut failures).await;
        assert!(matches!(waited, Err(ErrorKind::AuthFailed)), "{waited:?}");
    }
}
