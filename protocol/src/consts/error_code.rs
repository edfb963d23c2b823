//! Error codes (`KeeperException.Code`) carried in `ReplyHeader.err` and in multi results.

use super::int_enum::int_enum;

int_enum! {
    /// A ZooKeeper error code. Some codes are produced only by client libraries and never
    /// appear on the wire; they are listed so that a client can reuse the numbering.
    #[derive(Default)]
    pub enum ErrorCode {
        /// Success.
        #[default]
        Ok = 0 => "OK",
        /// Range marker; never sent.
        SystemError = -1 => "SYSTEMERROR",
        /// Inside a failed multi: the op was not attempted because an earlier op failed.
        RuntimeInconsistency = -2 => "RUNTIMEINCONSISTENCY",
        /// Not produced by current servers.
        DataInconsistency = -3 => "DATAINCONSISTENCY",
        /// Client-side: the connection was lost.
        ConnectionLoss = -4 => "CONNECTIONLOSS",
        /// The server could not process the request (for example an undecodable body).
        MarshallingError = -5 => "MARSHALLINGERROR",
        /// Unknown opcode (the server then closes the connection), TTL nodes disabled, or
        /// reconfig on a standalone server.
        Unimplemented = -6 => "UNIMPLEMENTED",
        /// Client-side: operation timeout.
        OperationTimeout = -7 => "OPERATIONTIMEOUT",
        /// Invalid path, TTL or flags.
        BadArguments = -8 => "BADARGUMENTS",
        /// Server-internal.
        UnknownSession = -12 => "UNKNOWNSESSION",
        /// reconfig: the new configuration has no synced quorum.
        NewConfigNoQuorum = -13 => "NEWCONFIGNOQUORUM",
        /// reconfig: another reconfig is in progress.
        ReconfigInProgress = -14 => "RECONFIGINPROGRESS",
        /// Range marker; never sent.
        ApiError = -100 => "APIERROR",
        /// The node does not exist.
        NoNode = -101 => "NONODE",
        /// Not authorised by the node's ACL.
        NoAuth = -102 => "NOAUTH",
        /// Version mismatch.
        BadVersion = -103 => "BADVERSION",
        /// Ephemeral nodes cannot have children.
        NoChildrenForEphemerals = -108 => "NOCHILDRENFOREPHEMERALS",
        /// The node already exists.
        NodeExists = -110 => "NODEEXISTS",
        /// The node has children.
        NotEmpty = -111 => "NOTEMPTY",
        /// The session has expired or was closed.
        SessionExpired = -112 => "SESSIONEXPIRED",
        /// Client-side: invalid callback.
        InvalidCallback = -113 => "INVALIDCALLBACK",
        /// Empty, null or malformed ACL.
        InvalidAcl = -114 => "INVALIDACL",
        /// Authentication failed (the server closes the connection).
        AuthFailed = -115 => "AUTHFAILED",
        /// The session moved to another server.
        SessionMoved = -118 => "SESSIONMOVED",
        /// A write was sent to a read-only server.
        NotReadOnly = -119 => "NOTREADONLY",
        /// Ephemeral create on a local session.
        EphemeralOnLocalSession = -120 => "EPHEMERALONLOCALSESSION",
        /// checkWatches/removeWatches: no such watch.
        NoWatcher = -121 => "NOWATCHER",
        /// Client-side: request timeout.
        RequestTimeout = -122 => "REQUESTTIMEOUT",
        /// reconfig is disabled.
        ReconfigDisabled = -123 => "RECONFIGDISABLED",
        /// The server requires SASL authentication and the session did not pass it (the session
        /// is closed).
        SessionClosedRequireSaslAuth = -124 => "SESSIONCLOSEDREQUIRESASLAUTH",
        /// Hard quota exceeded.
        QuotaExceeded = -125 => "QUOTAEXCEEDED",
        /// The server is overloaded and did not execute the op; retry with backoff.
        ThrottledOp = -127 => "THROTTLEDOP",
    }
}

impl ErrorCode {
    /// True for [`ErrorCode::Ok`].
    #[inline]
    pub const fn is_ok(self) -> bool {
        matches!(self, ErrorCode::Ok)
    }
}
