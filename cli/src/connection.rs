//! The connection flags every command shares, and the session they open.

use std::time::Duration;

use clap::Args;
use zookeeper_tokio::Client;

use crate::exit::Failure;

/// Where and how to connect.
#[derive(Args, Debug, Clone)]
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
    /// the wait to acquire; for other commands the whole command.
    #[arg(long, global = true, value_parser = duration, value_name = "DURATION")]
    pub timeout: Option<Duration>,
}

/// A duration such as `10s`, `500ms`, `2m` or `1h 30m`; a bare number is seconds.
pub fn duration(text: &str) -> Result<Duration, String> {
    if let Ok(seconds) = text.parse::<f64>() {
        if seconds.is_finite() && seconds >= 0.0 {
            return Ok(Duration::from_secs_f64(seconds));
        }
    }
    humantime::parse_duration(text).map_err(|e| format!("{e} (expected e.g. 10s, 500ms, 2m)"))
}

impl Connection {
    /// Opens the session, under `--chroot` if given.
    pub async fn connect(&self) -> Result<Client, Failure> {
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
        Ok(builder.connect().await?)
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
    }
}
