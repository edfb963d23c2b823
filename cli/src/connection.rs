//! The connection flags every command shares, and the session they open.

use std::time::Duration;

use clap::Args;
use zookeeper_recipes::Sessions;
use zookeeper_tokio::{Client, ClientBuilder, ErrorKind};

use crate::exit::Failure;
use crate::sasl::SaslFlags;
use crate::tls::{self, TlsFlags};

/// Where and how to connect.
#[derive(Args, Clone)]
#[command(next_help_heading = crate::cli::GLOBAL_HEADING)]
pub struct Connection {
    /// Servers, `host:port[,host:port...][/chroot]`.
    #[arg(
        long,
        short = 'S',
        global = true,
        env = "ZK_SERVER",
        default_value = "127.0.0.1:2181",
        value_name = "HOSTS"
    )]
    pub server: String,

    /// Session timeout to ask for (the server clamps it). A `zk` killed without a chance to
    /// release holds its locks until this passes.
    #[arg(long, global = true, default_value = "10s", value_parser = duration, value_name = "DURATION")]
    pub session_timeout: Duration,

    /// How long to wait for a server to accept the session.
    #[arg(long, global = true, default_value = "5s", value_parser = duration, value_name = "DURATION")]
    pub connect_timeout: Duration,

    /// Work under this path: every path given is relative to it.
    #[arg(long, global = true, value_name = "PATH")]
    pub chroot: Option<String>,

    /// Digest identity `user:password` for the session. Prefer the ZK_AUTH variable, which
    /// other users cannot see in `ps`.
    #[arg(
        long,
        global = true,
        env = "ZK_AUTH",
        hide_env_values = true,
        value_name = "USER:PASSWORD"
    )]
    pub auth: Option<String>,

    /// Give up after this long (exit code 124): for `lock`, `rwlock`, `semaphore` and `elect`
    /// the wait to connect, then the wait to acquire; for other commands the whole command,
    /// connecting included.
    #[arg(long, global = true, value_parser = duration, value_name = "DURATION")]
    pub timeout: Option<Duration>,

    #[command(flatten)]
    pub tls: TlsFlags,

    #[command(flatten)]
    pub sasl: SaslFlags,
}

// Written by hand so that the digest credential never reaches a log or a panic message.
impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("server", &self.server)
            .field("session_timeout", &self.session_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("chroot", &self.chroot)
            .field("auth", &self.auth.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("tls", &self.tls)
            .field("sasl", &self.sasl)
            .finish()
    }
}

/// A duration such as `10s`, `500ms`, `2m` or `1h 30m`; a bare number is seconds.
pub fn duration(text: &str) -> Result<Duration, String> {
    if let Ok(seconds) = text.parse::<f64>() {
        if seconds.is_finite() && seconds >= 0.0 {
            return Duration::try_from_secs_f64(seconds)
                .map_err(|_| format!("{text} seconds is too long a duration"));
        }
    }
    humantime::parse_duration(text).map_err(|e| format!("{e} (expected e.g. 10s, 500ms, 2m)"))
}

impl Connection {
    /// Opens the session, under `--chroot` if given.
    pub async fn connect(&self) -> Result<Client, Failure> {
        let builder = self.builder()?;
        builder.connect().await.map_err(|e| self.explain(e))
    }

    /// Sessions that start on `client` and, when its session expires, go on with a new one
    /// opened with the same flags: what lock waiters ride out an expiry with.
    pub fn renewing(&self, client: &Client) -> Result<Sessions, Failure> {
        let builder = self.builder()?;
        Ok(Sessions::renewing(client.clone(), move || {
            builder.clone().connect()
        }))
    }

    /// The builder of a session with these flags.
    fn builder(&self) -> Result<ClientBuilder, Failure> {
        let chroot = self.chroot.as_deref();
        let mut builder = Client::builder(&self.server)
            .session_timeout(self.session_timeout)
            .connect_timeout(self.connect_timeout);
        if let Some(chroot) = chroot {
            builder = builder.chroot(chroot);
        }
        if let Some(auth) = &self.auth {
            let Some((user, password)) = auth.split_once(':') else {
                return Err(Failure::usage("--auth (or ZK_AUTH) must be user:password"));
            };
            builder = builder.digest_auth(user, password);
        }
        self.sasl.apply(self.tls.apply(builder)?)
    }

    /// The failure for a session that could not be opened, saying what to check.
    fn explain(&self, e: zookeeper_tokio::Error) -> Failure {
        let extra = match e.kind() {
            ErrorKind::AuthFailed => {
                let refused = match (self.sasl.describe(), &self.auth) {
                    (Some(login), _) => login,
                    (None, Some(_)) => "the identity of --auth (ZK_AUTH)".to_owned(),
                    (None, None) => "the connection's credentials".to_owned(),
                };
                Some(format!("the server refused {refused}"))
            }
            kind => tls::hint(kind, &self.tls).map(str::to_owned),
        };
        let mut failure = Failure::from(e);
        if let (Some(extra), Some(message)) = (extra, failure.message.as_mut()) {
            message.push_str("; ");
            message.push_str(&extra);
        }
        failure
    }
}

#[cfg(test)]
mod tests {
    use super::duration;
    use std::time::Duration;

    #[test]
    fn durations() {
        assert_eq!(duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(duration("soon").is_err());
        assert!(duration("-1").is_err());
        // Refused, not a panic: more seconds than a Duration holds.
        assert!(duration("1e300").is_err());
    }

    #[test]
    fn debug_hides_the_digest_credential() {
        use clap::Parser;
        #[derive(Parser)]
        struct Flags {
            #[command(flatten)]
            connection: super::Connection,
        }
        let flags = Flags::try_parse_from(["zk", "--auth", "alice:hunter2"]).unwrap();
        let printed = format!("{:?}", flags.connection);
        assert!(!printed.contains("hunter2"), "{printed}");
        assert!(printed.contains("<redacted>"), "{printed}");
    }
}
