//! The exit codes, and the failure type that carries one.
//!
//! | Code | Meaning |
//! |---:|---|
//! | 0 | success; for `lock`, `rwlock`, `semaphore` and `elect`, the command's own status |
//! | 1–63 | the command's own status, when it ran |
//! | 64 | bad usage: unknown command or flag, missing argument, invalid path or value |
//! | 65 | a ZooKeeper request failed: no such node, version mismatch, not authorised, ... |
//! | 69 | connection failure: no server answered in time, the session expired |
//! | 74 | reading the data (`-`: standard input) or writing the output failed |
//! | 75 | the lock or leadership was lost while the command ran (the command was stopped) |
//! | 77 | credentials refused: a SASL login or `--auth` identity refused, or TLS failed (server certificate not trusted or not valid for the host, client certificate required or refused) |
//! | 124 | `--timeout` passed: the lock was not acquired, or the request did not finish |
//! | 126 | the command could not be executed (permission denied) |
//! | 127 | the command was not found |
//! | 128+N | the command was killed by signal N; or `zk` itself was interrupted by signal N |

use std::fmt;

use zookeeper_tokio::{Error as ClientError, ErrorKind, SessionState, TlsCause};

/// Bad usage (`EX_USAGE` of `sysexits.h`).
pub const USAGE: u8 = 64;
/// A ZooKeeper request failed (`EX_DATAERR`).
pub const ZOOKEEPER: u8 = 65;
/// No server, or the session ended (`EX_UNAVAILABLE`).
pub const CONNECTION: u8 = 69;
/// Reading input or writing output failed (`EX_IOERR`).
pub const IO: u8 = 74;
/// The lock or leadership was lost while the command ran (`EX_TEMPFAIL`: try again).
pub const LOST: u8 = 75;
/// The server refused our credentials, or TLS failed on certificates (`EX_NOPERM`): unlike
/// [`CONNECTION`], trying again does not help until the credentials or certificates change.
pub const AUTH: u8 = 77;
/// `--timeout` passed (as `timeout(1)` exits).
pub const TIMEOUT: u8 = 124;
/// The command exists but could not be executed (as shells exit).
pub const CANNOT_EXECUTE: u8 = 126;
/// The command was not found (as shells exit).
pub const NOT_FOUND: u8 = 127;

/// The code of a process killed by `signal`, as shells report it.
pub fn signalled(signal: i32) -> u8 {
    (128 + signal).clamp(0, 255) as u8
}

/// How a session ended, in words, for the messages that report it.
pub fn session_end(state: SessionState) -> &'static str {
    match state {
        SessionState::Expired => "the session expired",
        SessionState::AuthFailed => "the session's authentication failed",
        SessionState::Closed => "the session was closed",
        _ => "the session ended",
    }
}

/// Why `zk` stops with a non-zero status: the one line printed on stderr, and the code.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    /// `None`: nothing to print (the command's own status, or an interruption).
    pub message: Option<String>,
}

impl Failure {
    pub fn new(code: u8, message: impl fmt::Display) -> Failure {
        Failure {
            code,
            message: Some(message.to_string()),
        }
    }

    /// Exit with `code` and print nothing.
    pub fn silent(code: u8) -> Failure {
        Failure {
            code,
            message: None,
        }
    }

    pub fn usage(message: impl fmt::Display) -> Failure {
        Failure::new(USAGE, message)
    }
}

/// The code for a client error: what the caller can do about it decides.
pub fn code_of(kind: &ErrorKind) -> u8 {
    match kind {
        ErrorKind::Connect(_)
        | ErrorKind::ConnectionLoss
        | ErrorKind::SessionExpired
        | ErrorKind::Closed => CONNECTION,
        ErrorKind::AuthFailed => AUTH,
        // Certificate or key files that cannot be read or used: a value given wrong.
        ErrorKind::Tls {
            cause: TlsCause::Configuration,
            ..
        } => USAGE,
        ErrorKind::Tls { .. } => AUTH,
        ErrorKind::Timeout => TIMEOUT,
        ErrorKind::InvalidPath { .. }
        | ErrorKind::InvalidArgument(_)
        | ErrorKind::InvalidConnectString { .. }
        | ErrorKind::DataTooLarge { .. } => USAGE,
        _ => ZOOKEEPER,
    }
}

impl From<ClientError> for Failure {
    fn from(e: ClientError) -> Failure {
        Failure::new(code_of(e.kind()), e)
    }
}

impl From<zookeeper_recipes::Error> for Failure {
    fn from(e: zookeeper_recipes::Error) -> Failure {
        use zookeeper_recipes::Error as E;
        let code = match &e {
            E::Client(c) => code_of(c.kind()),
            E::InvalidPath { .. } | E::InvalidArgument(_) | E::UpgradeWouldDeadlock => USAGE,
            E::Disconnected => CONNECTION,
            E::NodeDeleted { .. } | E::LatchClosed | E::LatchLost { .. } => LOST,
            _ => ZOOKEEPER,
        };
        Failure::new(code, e)
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure::new(IO, e)
    }
}

pub type Outcome = Result<u8, Failure>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct() {
        let mut codes = vec![
            USAGE,
            ZOOKEEPER,
            CONNECTION,
            IO,
            LOST,
            AUTH,
            TIMEOUT,
            CANNOT_EXECUTE,
            NOT_FOUND,
        ];
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), 9);
        assert_eq!(signalled(15), 143);
        assert_eq!(code_of(&ErrorKind::NoNode), ZOOKEEPER);
        assert_eq!(code_of(&ErrorKind::SessionExpired), CONNECTION);
        assert_eq!(code_of(&ErrorKind::AuthFailed), AUTH);
        let tls = |cause| ErrorKind::Tls {
            cause,
            message: String::new(),
        };
        assert_eq!(code_of(&tls(TlsCause::UntrustedServer)), AUTH);
        assert_eq!(code_of(&tls(TlsCause::ClientCertificateRequired)), AUTH);
        assert_eq!(code_of(&tls(TlsCause::Configuration)), USAGE);
    }
}
