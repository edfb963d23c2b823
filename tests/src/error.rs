//! The one error type of this crate.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// The command that installs everything the harness needs on a Debian machine.
pub const SETUP_COMMAND: &str = "scripts/setup";

/// Why a server, an ensemble or a helper could not do its job.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No Java runtime was found.
    #[error(
        "no Java runtime found (looked at {looked_at}); run `{SETUP_COMMAND}` as root \
         or point ZK_TESTS_JAVA at a java binary"
    )]
    JavaNotFound {
        /// The places that were tried, for the message.
        looked_at: String,
    },
    /// The ZooKeeper server jars were not found.
    #[error(
        "ZooKeeper server jars not found (looked at {looked_at}); run `{SETUP_COMMAND}` as root \
         (installs Debian's `zookeeper` package) or set ZK_TESTS_CLASSPATH"
    )]
    ZooKeeperNotFound {
        /// The places that were tried, for the message.
        looked_at: String,
    },
    /// An I/O operation of the harness failed.
    #[error("{what}: {source}")]
    Io {
        /// What the harness was doing.
        what: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The Java process ended before the server answered.
    #[error(
        "ZooKeeper server exited during start-up ({status}); working dir {dir:?} \
         (set ZK_TESTS_KEEP_DIRS=1 to keep it); log tail:\n{log_tail}"
    )]
    Exited {
        /// The exit status as the OS reported it.
        status: String,
        /// The server's working directory.
        dir: PathBuf,
        /// The last lines of the server's log and output.
        log_tail: String,
    },
    /// The server did not become ready in time.
    #[error("{what} not ready after {waited:?}; last answer: {last:?}; log tail:\n{log_tail}")]
    NotReady {
        /// What was awaited (server address, ensemble, leader...).
        what: String,
        /// How long the harness waited.
        waited: Duration,
        /// The last thing the server said, if anything.
        last: String,
        /// The last lines of the relevant log(s).
        log_tail: String,
    },
    /// A four-letter-word answer could not be understood.
    #[error("unexpected `{command}` answer from {addr}: {answer:?}")]
    UnexpectedAnswer {
        /// The four-letter word that was sent.
        command: String,
        /// The server that answered.
        addr: String,
        /// What it said.
        answer: String,
    },
    /// The server answered a request of the harness's own minimal client with an error code.
    #[error("ZooKeeper returned error code {code} for {what}")]
    ServerError {
        /// The request that failed.
        what: String,
        /// The ZooKeeper error code.
        code: i32,
    },
    /// A program the harness runs (a Kerberos tool, say) is not installed.
    #[error(
        "`{program}` not found; run `{SETUP_COMMAND}` as root (installs Debian's `{package}`)"
    )]
    ProgramNotFound {
        /// The program's path.
        program: String,
        /// The Debian package that provides it.
        package: String,
    },
    /// A program the harness ran failed.
    #[error("{what} failed ({status}): {output}")]
    CommandFailed {
        /// What the harness was doing.
        what: String,
        /// The exit status as the OS reported it.
        status: String,
        /// What the program printed.
        output: String,
    },
    /// A test certificate or key could not be made.
    #[error("cannot make {what}: {reason}")]
    Certificate {
        /// The certificate or key.
        what: String,
        /// Why not.
        reason: String,
    },
    /// An index that names no ensemble member.
    #[error("no ensemble member {index} (the ensemble has {size})")]
    NoSuchMember {
        /// The index asked for.
        index: usize,
        /// The ensemble's size.
        size: usize,
    },
}

impl Error {
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}

/// Result of the harness's operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_installations_name_the_setup_command() {
        let java = Error::JavaNotFound {
            looked_at: "/usr/bin/java".into(),
        };
        let jars = Error::ZooKeeperNotFound {
            looked_at: "/usr/share/java/zookeeper.jar".into(),
        };
        for message in [java.to_string(), jars.to_string()] {
            assert!(message.contains(SETUP_COMMAND), "{message}");
        }
        assert!(jars.to_string().contains("ZK_TESTS_CLASSPATH"));
        assert!(java.to_string().contains("ZK_TESTS_JAVA"));
    }
}
