//! The one error type of the crate: what went wrong, classified so that callers know what to
//! do next ([`ErrorKind`]), and where: the operation and the path of the request ([`Error`]).

use std::fmt;

use zookeeper_jute::{DecodeError, ErrorCode};

/// What went wrong with a request or the session.
///
/// A variant per server error code, plus the conditions the client itself detects. Use
/// [`ErrorKind::is_retryable`] and [`ErrorKind::is_session_terminal`] rather than listing
/// variants. An [`Error`] carries its kind, and where a request failed.
///
/// A **write** that failed with [`ErrorKind::ConnectionLoss`] or [`ErrorKind::Timeout`] may or
/// may not have been applied by the server: the request could have been sent before the answer
/// was lost. The kind alone cannot tell; [`Error::is_outcome_unknown`] can, since the client
/// knows whether the request went out. Use versions (or read back) before retrying such a
/// write when it is not idempotent, a sequential create above all.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> zookeeper_tokio::Result<()> {
/// use zookeeper_tokio::{Client, CreateOptions, ErrorKind};
///
/// let servers = "127.0.0.1:2181";
/// # let servers = &zookeeper_testkit::shared_server()
/// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_error_kind"));
/// let client = Client::connect(servers).await?;
///
/// // Create-if-absent: an existing node is not a failure here.
/// match client.create("/config", b"v1", &CreateOptions::persistent()).await {
///     Ok(_) => {}
///     Err(e) if e.kind() == &ErrorKind::NodeExists => {}
///     Err(e) => return Err(e),
/// }
/// let again = client.create("/config", b"v1", &CreateOptions::persistent()).await;
/// assert!(matches!(again.unwrap_err().kind(), ErrorKind::NodeExists));
///
/// // What to do next, without listing variants.
/// assert!(ErrorKind::ConnectionLoss.is_retryable());
/// assert!(ErrorKind::SessionExpired.is_session_terminal());
/// assert!(!ErrorKind::BadVersion.is_retryable());
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The node does not exist (`NONODE`).
    #[error("node does not exist")]
    NoNode,
    /// The node already exists (`NODEEXISTS`).
    #[error("node already exists")]
    NodeExists,
    /// The expected version did not match (`BADVERSION`).
    #[error("version mismatch")]
    BadVersion,
    /// The node has children and cannot be deleted (`NOTEMPTY`).
    #[error("node has children")]
    NotEmpty,
    /// Ephemeral nodes cannot have children (`NOCHILDRENFOREPHEMERALS`).
    #[error("ephemeral nodes cannot have children")]
    NoChildrenForEphemerals,
    /// The ACL is empty or malformed, or `auth` ids were used without any authenticated identity
    /// (`INVALIDACL`).
    #[error("invalid ACL")]
    InvalidAcl,
    /// The node's ACL does not allow this operation (`NOAUTH`).
    #[error("not authorised by the node's ACL")]
    NoAuth,
    /// The server rejected a path, TTL or flag (`BADARGUMENTS`).
    #[error("the server rejected the arguments")]
    BadArguments,
    /// The server does not support this operation (`UNIMPLEMENTED`): an opcode newer than the
    /// server (the server then closes the connection and the client reconnects), or a TTL create
    /// on a server without `zookeeper.extendedTypesEnabled=true`.
    #[error("operation not supported by the server")]
    Unimplemented,
    /// A write was sent to a read-only server (`NOTREADONLY`). Retry once a read-write server is
    /// reached.
    #[error("the server is read-only")]
    NotReadOnly,
    /// `removeWatches`: no such watch on the server (`NOWATCHER`).
    #[error("no such watch")]
    NoWatcher,
    /// The server could not process the request (`MARSHALLINGERROR`), for example a watcher type
    /// it does not know.
    #[error("the server could not process the request")]
    MarshallingError,
    /// The session is owned by another server (`SESSIONMOVED`).
    #[error("session moved to another server")]
    SessionMoved,
    /// The server is overloaded and did not run the request (`THROTTLEDOP`); retry with backoff.
    #[error("request throttled by the server")]
    Throttled,
    /// Hard quota exceeded (`QUOTAEXCEEDED`).
    #[error("quota exceeded")]
    QuotaExceeded,
    /// Ephemeral create on a local session (`EPHEMERALONLOCALSESSION`).
    #[error("ephemeral node on a local session")]
    EphemeralOnLocalSession,
    /// Any other server error code.
    #[error("server error {0:?}")]
    Server(ErrorCode),

    /// An atomic `multi` failed: nothing was applied. `index` is the first operation that
    /// failed and `code` its error; [`Error::multi_cause`] gives it as an [`Error`] naming the
    /// operation and its path.
    #[error("multi failed at operation {index}: {code:?}")]
    MultiFailed {
        /// Index of the failing operation in the request.
        index: usize,
        /// The failing operation's error code.
        code: ErrorCode,
    },

    /// The connection was lost before the reply arrived. The session may still be alive; the
    /// client reconnects by itself. A write may have been applied.
    #[error("connection lost")]
    ConnectionLoss,
    /// The session expired: ephemerals and watches are gone. A new client is needed.
    #[error("session expired")]
    SessionExpired,
    /// The client was closed, or the runtime that ran its session shut down.
    #[error("client closed")]
    Closed,
    /// Authentication failed; the session is unusable.
    #[error("authentication failed")]
    AuthFailed,
    /// The request's deadline passed before a reply arrived. A write may have been applied.
    #[error("request timed out")]
    Timeout,
    /// No server accepted a session within the connect timeout of
    /// [`ClientBuilder::connect`](crate::ClientBuilder::connect). The text names each server
    /// tried and how its last attempt failed, and those that had not answered yet:
    /// `could not connect: no server accepted a session within 5s; tried 10.0.0.1:2181
    /// (Connection refused (os error 111))`.
    #[error("could not connect: {0}")]
    Connect(String),
    /// A TLS connection could not be made: the server's certificate was not trusted or not
    /// valid for its name, the server refused the client certificate (or asked for one that
    /// was not configured), or the configured certificates could not be read. Retrying does
    /// not help until the certificates change.
    #[error("TLS failure ({cause}): {message}")]
    Tls {
        /// What went wrong, for callers to act on.
        cause: TlsCause,
        /// The whole story, naming the server and the underlying error.
        message: String,
    },
    /// The server sent bytes that do not follow the protocol; the connection was dropped.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The reply was larger than the client accepts
    /// ([`ClientBuilder::max_incoming_frame`](crate::ClientBuilder::max_incoming_frame)): it
    /// was skipped unread, and only this request failed; the connection and every other
    /// request carry on. Not retryable: the same request gets the same reply. A listing of
    /// very many children is the usual cause; raise the limit to read it. A
    /// [`multi`](crate::Client::multi) whose reply could be larger fails with it before
    /// anything is sent (`size` is then the largest reply it could get).
    #[error("reply of {size} bytes exceeds the incoming frame limit of {max} bytes")]
    ReplyTooLarge {
        /// The reply's frame payload, in bytes.
        size: usize,
        /// The limit.
        max: usize,
    },

    /// A path was rejected before anything was sent.
    #[error("invalid path {}: {reason}", Shown { path, quoted: true })]
    InvalidPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The request would exceed the frame limit the server accepts; nothing was sent.
    #[error("request of {size} bytes exceeds the frame limit of {max} bytes")]
    DataTooLarge {
        /// Encoded size of the request frame payload.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// An argument other than a path was rejected before anything was sent.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The connect string could not be parsed.
    #[error("invalid connect string {input:?}: {reason}")]
    InvalidConnectString {
        /// The connect string as given.
        input: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// The cause of an [`ErrorKind::Tls`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TlsCause {
    /// The server's certificate chain does not lead to a trusted authority (unknown issuer,
    /// bad signature, expired, revoked...).
    UntrustedServer,
    /// The server's certificate is trusted but does not name the host that was dialled.
    HostnameMismatch,
    /// The server refused the handshake and no client certificate was configured: it requires
    /// one (`ssl.clientAuth=need`).
    ClientCertificateRequired,
    /// The server refused the client certificate that was presented (untrusted by it, expired,
    /// wrong usage...).
    ClientCertificateRefused,
    /// The configured certificates or key could not be read or used (missing file, no PEM
    /// section, key not matching...).
    Configuration,
    /// Any other failure of the TLS handshake, including a server that closes the connection
    /// during it (for example a plain port dialled with TLS).
    Handshake,
}

impl std::fmt::Display for TlsCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TlsCause::UntrustedServer => "server certificate not trusted",
            TlsCause::HostnameMismatch => "server certificate not valid for the host",
            TlsCause::ClientCertificateRequired => "client certificate required",
            TlsCause::ClientCertificateRefused => "client certificate refused",
            TlsCause::Configuration => "TLS configuration",
            TlsCause::Handshake => "TLS handshake",
        })
    }
}

/// Result of a client operation.
pub type Result<T> = std::result::Result<T, Error>;

/// A failed request, or a failure of the session: its [`ErrorKind`] and, for a request, the
/// operation and the path it was given.
///
/// `Display` says where: `create /config/missing/child: node does not exist`. Errors of the
/// session itself (connecting, an invalid connect string) carry no operation. Decide what to do
/// from the kind: [`Error::is_retryable`], [`Error::is_session_terminal`], or match on
/// [`Error::kind`]; an error also compares equal to its kind (`err == ErrorKind::NoNode`).
///
/// A **write** that failed after it was sent, without its reply, may or may not have been
/// applied: [`Error::is_outcome_unknown`] says so.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use zookeeper_tokio::{Client, CreateOptions, ErrorKind};
///
/// let servers = "127.0.0.1:2181";
/// # let servers = &zookeeper_testkit::shared_server()
/// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_error"));
/// let client = Client::connect(servers).await?;
/// let err = client
///     .create("/config/missing/child", b"", &CreateOptions::persistent())
///     .await
///     .unwrap_err();
/// assert_eq!(err.to_string(), "create /config/missing/child: node does not exist");
/// assert_eq!(err, ErrorKind::NoNode);
/// assert_eq!(err.operation(), Some("create"));
/// assert_eq!(err.path(), Some("/config/missing/child"));
/// assert!(!err.is_retryable() && !err.is_session_terminal());
///
/// // It converts into the usual error boxes (and anyhow's), message included.
/// let boxed: Box<dyn std::error::Error> = err.into();
/// assert!(boxed.to_string().starts_with("create /config/missing/child"));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    /// Boxed, and allocated only when an operation fails: every operation's future holds a
    /// `Result<_, Error>`, which must stay small.
    context: Option<Box<Context>>,
    /// A write reached the connection and no reply came back: see
    /// [`Error::is_outcome_unknown`].
    outcome_unknown: bool,
}

/// Where a request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Context {
    /// The client method, e.g. `"create"`.
    operation: &'static str,
    /// The path as the caller gave it (no chroot), for operations that take one.
    path: Option<String>,
    /// For a `multi` or `multi_read`, the operation of the transaction that failed.
    failed_op: Option<FailedOp>,
    /// The client's chroot, when the failure shows that it does not exist.
    missing_chroot: Option<String>,
}

/// The operation of a transaction that made it fail.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FailedOp {
    index: usize,
    operation: &'static str,
    path: String,
}

impl ErrorKind {
    /// The kind for a non-zero server error code.
    pub fn from_code(code: ErrorCode) -> ErrorKind {
        match code {
            ErrorCode::NoNode => ErrorKind::NoNode,
            ErrorCode::NodeExists => ErrorKind::NodeExists,
            ErrorCode::BadVersion => ErrorKind::BadVersion,
            ErrorCode::NotEmpty => ErrorKind::NotEmpty,
            ErrorCode::NoChildrenForEphemerals => ErrorKind::NoChildrenForEphemerals,
            ErrorCode::InvalidAcl => ErrorKind::InvalidAcl,
            ErrorCode::NoAuth => ErrorKind::NoAuth,
            ErrorCode::BadArguments => ErrorKind::BadArguments,
            ErrorCode::Unimplemented => ErrorKind::Unimplemented,
            ErrorCode::NotReadOnly => ErrorKind::NotReadOnly,
            ErrorCode::NoWatcher => ErrorKind::NoWatcher,
            ErrorCode::MarshallingError => ErrorKind::MarshallingError,
            ErrorCode::SessionMoved => ErrorKind::SessionMoved,
            ErrorCode::ThrottledOp => ErrorKind::Throttled,
            ErrorCode::QuotaExceeded => ErrorKind::QuotaExceeded,
            ErrorCode::EphemeralOnLocalSession => ErrorKind::EphemeralOnLocalSession,
            ErrorCode::SessionExpired => ErrorKind::SessionExpired,
            ErrorCode::AuthFailed => ErrorKind::AuthFailed,
            ErrorCode::ConnectionLoss => ErrorKind::ConnectionLoss,
            ErrorCode::OperationTimeout | ErrorCode::RequestTimeout => ErrorKind::Timeout,
            other => ErrorKind::Server(other),
        }
    }

    /// The ZooKeeper error code for this kind, where there is one.
    pub fn code(&self) -> Option<ErrorCode> {
        Some(match self {
            ErrorKind::NoNode => ErrorCode::NoNode,
            ErrorKind::NodeExists => ErrorCode::NodeExists,
            ErrorKind::BadVersion => ErrorCode::BadVersion,
            ErrorKind::NotEmpty => ErrorCode::NotEmpty,
            ErrorKind::NoChildrenForEphemerals => ErrorCode::NoChildrenForEphemerals,
            ErrorKind::InvalidAcl => ErrorCode::InvalidAcl,
            ErrorKind::NoAuth => ErrorCode::NoAuth,
            ErrorKind::BadArguments => ErrorCode::BadArguments,
            ErrorKind::Unimplemented => ErrorCode::Unimplemented,
            ErrorKind::NotReadOnly => ErrorCode::NotReadOnly,
            ErrorKind::NoWatcher => ErrorCode::NoWatcher,
            ErrorKind::MarshallingError => ErrorCode::MarshallingError,
            ErrorKind::SessionMoved => ErrorCode::SessionMoved,
            ErrorKind::Throttled => ErrorCode::ThrottledOp,
            ErrorKind::QuotaExceeded => ErrorCode::QuotaExceeded,
            ErrorKind::EphemeralOnLocalSession => ErrorCode::EphemeralOnLocalSession,
            ErrorKind::Server(code) => *code,
            ErrorKind::MultiFailed { code, .. } => *code,
            ErrorKind::ConnectionLoss => ErrorCode::ConnectionLoss,
            ErrorKind::SessionExpired => ErrorCode::SessionExpired,
            ErrorKind::AuthFailed => ErrorCode::AuthFailed,
            ErrorKind::Timeout => ErrorCode::OperationTimeout,
            _ => return None,
        })
    }

    /// True when the same request may succeed if retried on this session: the connection was
    /// lost, the deadline passed, the server was throttling or was read-only, or the session
    /// moved. For writes, see the note on [`ErrorKind`] about unknown outcomes.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ErrorKind::ConnectionLoss
                | ErrorKind::Timeout
                | ErrorKind::Throttled
                | ErrorKind::NotReadOnly
                | ErrorKind::SessionMoved
                | ErrorKind::Server(ErrorCode::NewConfigNoQuorum)
                | ErrorKind::Server(ErrorCode::ReconfigInProgress)
        )
    }

    /// True when the session is finished for good: expired, closed or failed authentication.
    /// Every later request on this client fails; create a new client.
    pub fn is_session_terminal(&self) -> bool {
        matches!(
            self,
            ErrorKind::SessionExpired | ErrorKind::Closed | ErrorKind::AuthFailed
        )
    }
}

impl Error {
    /// The error for a non-zero server error code, without an operation.
    pub fn from_code(code: ErrorCode) -> Error {
        ErrorKind::from_code(code).into()
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The client method that failed (`"create"`, `"get_data"`, `"multi"`, ...), or `None` for
    /// an error of the session itself.
    pub fn operation(&self) -> Option<&'static str> {
        self.context.as_ref().map(|c| c.operation)
    }

    /// The path the failed operation was given, as the caller gave it (without the chroot).
    /// `None` for operations without a path, and for `multi`, whose failing operation's path
    /// is in [`Error::multi_cause`].
    pub fn path(&self) -> Option<&str> {
        self.context.as_ref().and_then(|c| c.path.as_deref())
    }

    /// The ZooKeeper error code for this error, where there is one.
    pub fn code(&self) -> Option<ErrorCode> {
        self.kind.code()
    }

    /// For a `multi` that failed at one of its operations, on the server
    /// ([`ErrorKind::MultiFailed`]) or before anything was sent (an invalid path, a bad TTL):
    /// that operation's index, and its error naming the operation (`"create"`, `"delete"`,
    /// `"set_data"`, `"check"`) and its path.
    pub fn multi_cause(&self) -> Option<(usize, Error)> {
        let failed = self.context.as_ref().and_then(|c| c.failed_op.as_ref());
        let (index, kind) = match (&self.kind, failed) {
            (ErrorKind::MultiFailed { index, code }, _) => (*index, ErrorKind::from_code(*code)),
            (kind, Some(op)) => (op.index, kind.clone()),
            _ => return None,
        };
        let cause = Error::from(kind);
        Some((
            index,
            match failed {
                Some(op) => cause.at(op.operation, Some(op.path.clone())),
                None => cause,
            },
        ))
    }

    /// For a transaction that ran `leading` operations of its own before the caller's (a lock
    /// guard's check of its node, say): this error with the failing operation numbered among
    /// the caller's operations, the caller's first being 0, in [`ErrorKind::MultiFailed`],
    /// [`Error::multi_cause`] and the message. An error of one of the `leading` operations,
    /// or of no operation, is returned as it is.
    pub fn multi_relative_to(mut self, leading: usize) -> Error {
        let failed = self.context.as_mut().and_then(|c| c.failed_op.as_mut());
        let index = match (&mut self.kind, failed) {
            (ErrorKind::MultiFailed { index, .. }, _) => index,
            (_, Some(op)) => &mut op.index,
            _ => return self,
        };
        if *index < leading {
            return self;
        }
        *index -= leading;
        let index = *index;
        if let Some(op) = self.context.as_mut().and_then(|c| c.failed_op.as_mut()) {
            op.index = index;
        }
        self
    }

    /// True when the same request may succeed if retried on this session; see
    /// [`ErrorKind::is_retryable`].
    pub fn is_retryable(&self) -> bool {
        self.kind.is_retryable()
    }

    /// True when the session is finished for good; see [`ErrorKind::is_session_terminal`].
    pub fn is_session_terminal(&self) -> bool {
        self.kind.is_session_terminal()
    }

    /// True exactly when the failed request was a **write** that may nevertheless have been
    /// applied: it was sent, and the client stopped waiting before the server answered. The
    /// connection was lost ([`ErrorKind::ConnectionLoss`]), the request's deadline passed
    /// ([`ErrorKind::Timeout`]), or the session ended ([`ErrorKind::SessionExpired`],
    /// [`ErrorKind::Closed`], [`ErrorKind::AuthFailed`]) while it was in flight.
    ///
    /// False for reads, and for every definite failure: an answer of the server (any error
    /// code, `SESSIONMOVED` included: the server refused the request without running it), an
    /// argument refused before sending, and a write that never left the client (queued while
    /// disconnected under [`ClientBuilder::fail_fast`](crate::ClientBuilder::fail_fast), its
    /// deadline passed before a connection took it, or the session ended first).
    ///
    /// A write of unknown outcome must not be repeated blindly unless repeating it is
    /// harmless: a sequential create would make a second node, a delete would fail with
    /// [`ErrorKind::NoNode`] after deleting, an unconditional `set_data` would undo a later
    /// writer's. Read back first (versions help: a conditional write applied once fails with
    /// [`ErrorKind::BadVersion`] when repeated), or give the node a name the retry can
    /// recognise, as the lock recipes' protected names do.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> zookeeper_tokio::Result<()> {
    /// use zookeeper_tokio::{Client, CreateOptions, ErrorKind};
    ///
    /// let servers = "127.0.0.1:2181";
    /// # let servers = &zookeeper_testkit::shared_server()
    /// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_outcome_unknown"));
    /// let client = Client::connect(servers).await?;
    /// match client.create("/job-", b"", &CreateOptions::persistent_sequential()).await {
    ///     Ok((path, _)) => println!("queued as {path}"),
    ///     // Perhaps created: list the jobs before queueing another.
    ///     Err(e) if e.is_outcome_unknown() => { /* look, then decide */ }
    ///     // Not created: retrying is safe.
    ///     Err(e) if e.is_retryable() => { /* retry */ }
    ///     Err(e) => return Err(e),
    /// }
    /// // An answer of the server is never of unknown outcome.
    /// client.create("/config", b"", &CreateOptions::persistent()).await?;
    /// let err = client.create("/config", b"", &CreateOptions::persistent()).await.unwrap_err();
    /// assert!(err == ErrorKind::NodeExists && !err.is_outcome_unknown());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_outcome_unknown(&self) -> bool {
        self.outcome_unknown
    }

    /// Marks a failure of a request that was sent and not answered, if it was a write.
    pub(crate) fn unanswered(mut self, write: bool) -> Error {
        self.outcome_unknown = write;
        self
    }

    /// This error as one of `operation` on `path`, unless it names where it failed already.
    /// For layers built on the client whose own waits end with the session (a recipe's watch,
    /// a cache), so that their errors say where too: `watch /config: session expired`.
    pub fn at_operation(self, operation: &'static str, path: &str) -> Error {
        self.at(operation, Some(path.to_owned()))
    }

    /// Names the operation and the caller's path, unless a context closer to the failure was
    /// already set.
    pub(crate) fn at(mut self, operation: &'static str, path: Option<String>) -> Error {
        if self.context.is_none() {
            self.context = Some(Box::new(Context {
                operation,
                path,
                failed_op: None,
                missing_chroot: None,
            }));
        }
        self
    }

    /// Names the transaction `operation` and its operation `index` (`op` on `path`) that
    /// failed, unless a context closer to the failure was already set.
    pub(crate) fn at_multi_op(
        mut self,
        operation: &'static str,
        index: usize,
        op: &'static str,
        path: String,
    ) -> Error {
        if self.context.is_none() {
            self.context = Some(Box::new(Context {
                operation,
                path: None,
                failed_op: Some(FailedOp {
                    index,
                    operation: op,
                    path,
                }),
                missing_chroot: None,
            }));
        }
        self
    }
}

impl Error {
    /// Says that the client's `chroot` does not exist, for a failure that proves it (a node
    /// created right under the chroot whose parent is missing).
    pub(crate) fn in_missing_chroot(mut self, chroot: &str) -> Error {
        if let Some(context) = self.context.as_mut() {
            context.missing_chroot = Some(chroot.to_owned());
        }
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(context) = &self.context else {
            return self.kind.fmt(f);
        };
        // An invalid path's message already quotes the path.
        let shows_path = !matches!(self.kind, ErrorKind::InvalidPath { .. });
        f.write_str(context.operation)?;
        if let Some(op) = &context.failed_op {
            write!(f, ": operation {} ({}", op.index, op.operation)?;
            if shows_path {
                write!(f, " {}", Shown::plain(&op.path))?;
            }
            return match &self.kind {
                ErrorKind::MultiFailed { code, .. } => {
                    write!(f, ") failed: {}", ErrorKind::from_code(*code))
                }
                kind => write!(f, ") failed: {kind}"),
            };
        }
        if let (Some(path), true) = (&context.path, shows_path) {
            write!(f, " {}", Shown::plain(path))?;
        }
        write!(f, ": {}", self.kind)?;
        if let Some(chroot) = &context.missing_chroot {
            write!(f, ": the chroot {chroot} does not exist")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// A path in a message: whole up to [`Shown::WHOLE`] bytes, else its start and its length, so
/// that an error about a path of a megabyte is not a line of a megabyte.
struct Shown<'a> {
    path: &'a str,
    /// As `{:?}` shows it.
    quoted: bool,
}

impl Shown<'_> {
    const WHOLE: usize = 256;

    fn plain(path: &str) -> Shown<'_> {
        Shown {
            path,
            quoted: false,
        }
    }
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (start, cut) = if self.path.len() <= Self::WHOLE {
            (self.path, false)
        } else {
            let mut end = Self::WHOLE / 2;
            while !self.path.is_char_boundary(end) {
                end -= 1;
            }
            (&self.path[..end], true)
        };
        if self.quoted {
            write!(f, "{start:?}")?;
        } else {
            f.write_str(start)?;
        }
        if cut {
            write!(f, "... ({} bytes)", self.path.len())?;
        }
        Ok(())
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error {
            kind,
            context: None,
            outcome_unknown: false,
        }
    }
}

impl PartialEq<ErrorKind> for Error {
    fn eq(&self, kind: &ErrorKind) -> bool {
        self.kind == *kind
    }
}

impl From<DecodeError> for Error {
    fn from(err: DecodeError) -> Self {
        ErrorKind::Protocol(err.to_string()).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_codes_round_trip_through_the_kind() {
        for code in [
            ErrorCode::NoNode,
            ErrorCode::NodeExists,
            ErrorCode::BadVersion,
            ErrorCode::NotEmpty,
            ErrorCode::NoChildrenForEphemerals,
            ErrorCode::InvalidAcl,
            ErrorCode::NoAuth,
            ErrorCode::BadArguments,
            ErrorCode::Unimplemented,
            ErrorCode::NotReadOnly,
            ErrorCode::NoWatcher,
            ErrorCode::SessionExpired,
            ErrorCode::ReconfigDisabled,
        ] {
            assert_eq!(ErrorKind::from_code(code).code(), Some(code));
            assert_eq!(Error::from_code(code).code(), Some(code));
            assert_eq!(Error::from_code(code), ErrorKind::from_code(code));
        }
    }

    #[test]
    fn classification_is_the_kinds_with_or_without_context() {
        for (kind, retryable, terminal) in [
            (ErrorKind::ConnectionLoss, true, false),
            (ErrorKind::Timeout, true, false),
            (ErrorKind::Throttled, true, false),
            (ErrorKind::NoNode, false, false),
            (ErrorKind::SessionExpired, false, true),
            (ErrorKind::Closed, false, true),
            (ErrorKind::AuthFailed, false, true),
            (
                ErrorKind::ReplyTooLarge {
                    size: 2_000_000,
                    max: 1_048_659,
                },
                false,
                false,
            ),
        ] {
            assert_eq!(kind.is_retryable(), retryable, "{kind:?}");
            assert_eq!(kind.is_session_terminal(), terminal, "{kind:?}");
            for err in [
                Error::from(kind.clone()),
                Error::from(kind.clone()).at("set_data", Some("/a".into())),
            ] {
                assert_eq!(err.is_retryable(), retryable, "{err:?}");
                assert_eq!(err.is_session_terminal(), terminal, "{err:?}");
                assert_eq!(err.code(), kind.code());
            }
        }
    }

    #[test]
    fn an_unknown_outcome_is_kept_through_the_context_and_not_shown() {
        let bare = Error::from(ErrorKind::ConnectionLoss);
        assert!(!bare.is_outcome_unknown());
        assert!(!bare.clone().unanswered(false).is_outcome_unknown());
        let lost = bare.unanswered(true).at("create", Some("/a".into()));
        assert!(lost.is_outcome_unknown());
        assert_eq!(lost.to_string(), "create /a: connection lost");
        assert_eq!(lost, ErrorKind::ConnectionLoss);
    }

    #[test]
    fn display_names_the_operation_and_path() {
        let err =
            Error::from(ErrorKind::NoNode).at("create", Some("/seqtest/missing/child".into()));
        assert_eq!(
            err.to_string(),
            "create /seqtest/missing/child: node does not exist"
        );
        assert_eq!(err.operation(), Some("create"));
        assert_eq!(err.path(), Some("/seqtest/missing/child"));
        assert_eq!(err.kind(), &ErrorKind::NoNode);

        let err = Error::from(ErrorKind::AuthFailed).at("add_auth", None);
        assert_eq!(err.to_string(), "add_auth: authentication failed");
        assert_eq!(err.path(), None);
    }

    #[test]
    fn display_without_context_is_the_kinds() {
        let err = Error::from(ErrorKind::ConnectionLoss);
        assert_eq!(err.to_string(), "connection lost");
        assert_eq!((err.operation(), err.path()), (None, None));
        assert_eq!(err.to_string(), ErrorKind::ConnectionLoss.to_string());
    }

    #[test]
    fn a_long_path_is_shown_by_its_start_and_length() {
        let long = format!("/{}", "é".repeat(200_000));
        let e = Error::from(ErrorKind::DataTooLarge { size: 2, max: 1 })
            .at("create", Some(long.clone()));
        let shown = e.to_string();
        assert!(shown.len() < 400, "{}", shown.len());
        assert!(shown.starts_with("create /éé"), "{shown}");
        assert!(
            shown.contains("... (400001 bytes): request of 2 bytes"),
            "{shown}"
        );
        let e = Error::from(ErrorKind::InvalidPath {
            path: long,
            reason: "ends with /",
        });
        let shown = e.to_string();
        assert!(shown.len() < 400, "{}", shown.len());
        assert!(shown.starts_with("invalid path \"/éé"), "{shown}");
        let short = Error::from(ErrorKind::NoNode).at("get_data", Some("/a".into()));
        assert_eq!(short.to_string(), "get_data /a: node does not exist");
    }

    #[test]
    fn an_invalid_path_is_printed_once() {
        let kind = ErrorKind::InvalidPath {
            path: "a/b".into(),
            reason: "path must start with '/'",
        };
        let err = Error::from(kind).at("get_data", Some("a/b".into()));
        assert_eq!(
            err.to_string(),
            "get_data: invalid path \"a/b\": path must start with '/'"
        );
        assert_eq!(err.path(), Some("a/b"));
    }

    #[test]
    fn the_first_context_is_kept() {
        let err = Error::from(ErrorKind::NoNode)
            .at("delete", Some("/x".into()))
            .at("get_data", Some("/y".into()));
        assert_eq!(err.to_string(), "delete /x: node does not exist");
    }

    #[test]
    fn multi_failure_names_the_failing_operation() {
        let err = Error::from(ErrorKind::MultiFailed {
            index: 1,
            code: ErrorCode::NodeExists,
        })
        .at_multi_op("multi", 1, "create", "/a/b".into());
        assert_eq!(
            err.to_string(),
            "multi: operation 1 (create /a/b) failed: node already exists"
        );
        assert_eq!((err.operation(), err.path()), (Some("multi"), None));
        assert_eq!(err.code(), Some(ErrorCode::NodeExists));

        let (index, cause) = err.multi_cause().unwrap();
        assert_eq!(index, 1);
        assert_eq!(cause, ErrorKind::NodeExists);
        assert_eq!(cause.operation(), Some("create"));
        assert_eq!(cause.path(), Some("/a/b"));
        assert_eq!(cause.to_string(), "create /a/b: node already exists");
    }

    #[test]
    fn multi_failure_found_before_sending_names_the_operation() {
        let kind = ErrorKind::InvalidPath {
            path: "b".into(),
            reason: "path must start with '/'",
        };
        let err = Error::from(kind.clone()).at_multi_op("multi", 2, "delete", "b".into());
        assert_eq!(
            err.to_string(),
            "multi: operation 2 (delete) failed: invalid path \"b\": path must start with '/'"
        );
        let (index, cause) = err.multi_cause().unwrap();
        assert_eq!((index, cause.kind()), (2, &kind));
        assert_eq!(cause.path(), Some("b"));
    }

    #[test]
    fn multi_cause_without_context_is_the_bare_kind() {
        let failed = Error::from(ErrorKind::MultiFailed {
            index: 1,
            code: ErrorCode::NodeExists,
        });
        assert_eq!(
            failed.to_string(),
            "multi failed at operation 1: NodeExists"
        );
        assert_eq!(
            failed.multi_cause(),
            Some((1, Error::from(ErrorKind::NodeExists)))
        );
        assert_eq!(Error::from(ErrorKind::NoNode).multi_cause(), None);
        assert_eq!(
            Error::from(ErrorKind::NoNode)
                .at("create", Some("/a".into()))
                .multi_cause(),
            None
        );
    }

    #[test]
    fn an_error_equals_its_kind_whatever_its_context() {
        let bare = Error::from(ErrorKind::BadVersion);
        let placed = bare.clone().at("set_data", Some("/v".into()));
        assert_eq!(bare, ErrorKind::BadVersion);
        assert_eq!(placed, ErrorKind::BadVersion);
        assert_ne!(placed, ErrorKind::NoNode);
        // Between errors, the context counts too.
        assert_ne!(bare, placed);
    }
}
