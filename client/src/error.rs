//! The one error type of the crate, classified so that callers know what to do next.

use zookeeper_jute::{DecodeError, ErrorCode};

/// Everything that can go wrong with a request or the session.
///
/// A variant per server error code, plus the conditions the client itself detects. Use
/// [`Error::is_retryable`] and [`Error::is_session_terminal`] rather than listing variants.
///
/// A **write** that failed with [`Error::ConnectionLoss`] or [`Error::Timeout`] may or may not
/// have been applied by the server: the request could have been sent before the answer was lost.
/// Use versions (or read back) before retrying a non-idempotent write such as a sequential create.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
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
    /// failed and `code` its error; [`Error::multi_cause`] gives it as an [`Error`].
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
    /// The client was closed.
    #[error("client closed")]
    Closed,
    /// Authentication failed; the session is unusable.
    #[error("authentication failed")]
    AuthFailed,
    /// The request's deadline passed before a reply arrived. A write may have been applied.
    #[error("request timed out")]
    Timeout,
    /// No server could be reached within the connect timeout.
    #[error("could not connect to any server: {0}")]
    Connect(String),
    /// The server sent bytes that do not follow the protocol; the connection was dropped.
    #[error("protocol error: {0}")]
    Protocol(String),

    /// A path was rejected before anything was sent.
    #[error("invalid path {path:?}: {reason}")]
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

/// Result of a client operation.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The error for a non-zero server error code.
    pub fn from_code(code: ErrorCode) -> Error {
        match code {
            ErrorCode::NoNode => Error::NoNode,
            ErrorCode::NodeExists => Error::NodeExists,
            ErrorCode::BadVersion => Error::BadVersion,
            ErrorCode::NotEmpty => Error::NotEmpty,
            ErrorCode::NoChildrenForEphemerals => Error::NoChildrenForEphemerals,
            ErrorCode::InvalidAcl => Error::InvalidAcl,
            ErrorCode::NoAuth => Error::NoAuth,
            ErrorCode::BadArguments => Error::BadArguments,
            ErrorCode::Unimplemented => Error::Unimplemented,
            ErrorCode::NotReadOnly => Error::NotReadOnly,
            ErrorCode::NoWatcher => Error::NoWatcher,
            ErrorCode::MarshallingError => Error::MarshallingError,
            ErrorCode::SessionMoved => Error::SessionMoved,
            ErrorCode::ThrottledOp => Error::Throttled,
            ErrorCode::QuotaExceeded => Error::QuotaExceeded,
            ErrorCode::EphemeralOnLocalSession => Error::EphemeralOnLocalSession,
            ErrorCode::SessionExpired => Error::SessionExpired,
            ErrorCode::AuthFailed => Error::AuthFailed,
            ErrorCode::ConnectionLoss => Error::ConnectionLoss,
            ErrorCode::OperationTimeout | ErrorCode::RequestTimeout => Error::Timeout,
            other => Error::Server(other),
        }
    }

    /// The ZooKeeper error code for this error, where there is one.
    pub fn code(&self) -> Option<ErrorCode> {
        Some(match self {
            Error::NoNode => ErrorCode::NoNode,
            Error::NodeExists => ErrorCode::NodeExists,
            Error::BadVersion => ErrorCode::BadVersion,
            Error::NotEmpty => ErrorCode::NotEmpty,
            Error::NoChildrenForEphemerals => ErrorCode::NoChildrenForEphemerals,
            Error::InvalidAcl => ErrorCode::InvalidAcl,
            Error::NoAuth => ErrorCode::NoAuth,
            Error::BadArguments => ErrorCode::BadArguments,
            Error::Unimplemented => ErrorCode::Unimplemented,
            Error::NotReadOnly => ErrorCode::NotReadOnly,
            Error::NoWatcher => ErrorCode::NoWatcher,
            Error::MarshallingError => ErrorCode::MarshallingError,
            Error::SessionMoved => ErrorCode::SessionMoved,
            Error::Throttled => ErrorCode::ThrottledOp,
            Error::QuotaExceeded => ErrorCode::QuotaExceeded,
            Error::EphemeralOnLocalSession => ErrorCode::EphemeralOnLocalSession,
            Error::Server(code) => *code,
            Error::MultiFailed { code, .. } => *code,
            Error::ConnectionLoss => ErrorCode::ConnectionLoss,
            Error::SessionExpired => ErrorCode::SessionExpired,
            Error::AuthFailed => ErrorCode::AuthFailed,
            Error::Timeout => ErrorCode::OperationTimeout,
            _ => return None,
        })
    }

    /// For [`Error::MultiFailed`], the failing operation's error as an [`Error`].
    pub fn multi_cause(&self) -> Option<(usize, Error)> {
        match self {
            Error::MultiFailed { index, code } => Some((*index, Error::from_code(*code))),
            _ => None,
        }
    }

    /// True when the same request may succeed if retried on this session: the connection was
    /// lost, the deadline passed, the server was throttling or was read-only, or the session
    /// moved. For writes, see the note on [`Error`] about unknown outcomes.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::ConnectionLoss
                | Error::Timeout
                | Error::Throttled
                | Error::NotReadOnly
                | Error::SessionMoved
                | Error::Server(ErrorCode::NewConfigNoQuorum)
                | Error::Server(ErrorCode::ReconfigInProgress)
        )
    }

    /// True when the session is finished for good: expired, closed or failed authentication.
    /// Every later request on this client fails; create a new client.
    pub fn is_session_terminal(&self) -> bool {
        matches!(
            self,
            Error::SessionExpired | Error::Closed | Error::AuthFailed
        )
    }
}

impl From<DecodeError> for Error {
    fn from(err: DecodeError) -> Self {
        Error::Protocol(err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_codes_round_trip_through_the_enum() {
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
            assert_eq!(Error::from_code(code).code(), Some(code));
        }
    }

    #[test]
    fn classification() {
        assert!(Error::ConnectionLoss.is_retryable());
        assert!(Error::Timeout.is_retryable());
        assert!(!Error::NoNode.is_retryable());
        assert!(Error::SessionExpired.is_session_terminal());
        assert!(Error::Closed.is_session_terminal());
        assert!(Error::AuthFailed.is_session_terminal());
        assert!(!Error::ConnectionLoss.is_session_terminal());
        let failed = Error::MultiFailed {
            index: 1,
            code: ErrorCode::NodeExists,
        };
        assert_eq!(failed.multi_cause(), Some((1, Error::NodeExists)));
    }
}
