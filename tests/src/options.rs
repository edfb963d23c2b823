//! Settings shared by standalone servers and ensembles, and the files they produce.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use crate::install::Installation;
use crate::tls::TlsOptions;

/// Default `tickTime`: short, so that session expiry and failover take seconds.
pub const DEFAULT_TICK_TIME: Duration = Duration::from_millis(200);
/// Default `minSessionTimeout` (two ticks): clients may ask for very short sessions.
pub const DEFAULT_MIN_SESSION_TIMEOUT: Duration = Duration::from_millis(400);
/// Default `maxSessionTimeout`: long enough that no ordinary request is clamped.
pub const DEFAULT_MAX_SESSION_TIMEOUT: Duration = Duration::from_secs(60);
/// Default bound on a server's (or ensemble's) start-up.
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(60);

/// How to run a ZooKeeper server; see [`ZkServer::builder`](crate::ZkServer::builder) and
/// [`Ensemble::builder`](crate::Ensemble::builder) for the setters.
#[derive(Clone, Debug)]
pub struct Options {
    pub(crate) tick_time: Duration,
    pub(crate) min_session_timeout: Duration,
    pub(crate) max_session_timeout: Duration,
    pub(crate) init_limit: u32,
    pub(crate) sync_limit: u32,
    pub(crate) config: Vec<(String, String)>,
    pub(crate) system_properties: Vec<(String, String)>,
    pub(crate) jvm_args: Vec<String>,
    /// Files written into each server's directory before it starts: (relative name, text).
    pub(crate) files: Vec<(String, String)>,
    pub(crate) start_timeout: Duration,
    pub(crate) installation: Option<Installation>,
    pub(crate) tls: Option<TlsOptions>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            tick_time: DEFAULT_TICK_TIME,
            min_session_timeout: DEFAULT_MIN_SESSION_TIMEOUT,
            max_session_timeout: DEFAULT_MAX_SESSION_TIMEOUT,
            // Ticks a follower has to connect and sync (5 s): JVMs start slowly on busy machines.
            init_limit: 25,
            // Ticks before a silent peer is dropped (1 s): fast failover.
            sync_limit: 5,
            config: Vec::new(),
            system_properties: Vec::new(),
            jvm_args: Vec::new(),
            files: Vec::new(),
            start_timeout: DEFAULT_START_TIMEOUT,
            installation: None,
            tls: None,
        }
    }
}

/// Generates the option setters on a builder that holds `options: Options`.
macro_rules! option_setters {
    () => {
        /// `tickTime` (default 200 ms). Session timeouts are tracked in ticks.
        pub fn tick_time(mut self, tick: std::time::Duration) -> Self {
            self.options.tick_time = tick;
            self
        }

        /// `minSessionTimeout` (default 400 ms).
        pub fn min_session_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.options.min_session_timeout = timeout;
            self
        }

        /// `maxSessionTimeout` (default 60 s).
        pub fn max_session_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.options.max_session_timeout = timeout;
            self
        }

        /// An extra `zoo.cfg` line `key=value` (later lines override earlier ones).
        pub fn config(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
            self.options.config.push((key.into(), value.into()));
            self
        }

        /// An extra JVM system property `-Dkey=value`.
        pub fn system_property(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
            self.options
                .system_properties
                .push((key.into(), value.into()));
            self
        }

        /// An extra JVM argument, e.g. `-Xmx512m`.
        pub fn jvm_arg(mut self, arg: impl Into<String>) -> Self {
            self.options.jvm_args.push(arg.into());
            self
        }

        /// A file written into the server's directory (its working directory) before it
        /// starts, e.g. a JAAS configuration that a system property names by relative path.
        pub fn file(mut self, name: impl Into<String>, text: impl Into<String>) -> Self {
            self.options.files.push((name.into(), text.into()));
            self
        }

        /// Enables TTL nodes (`zookeeper.extendedTypesEnabled=true`).
        pub fn extended_types(self) -> Self {
            self.system_property("zookeeper.extendedTypesEnabled", "true")
        }

        /// Lets a member that lost its quorum serve reads (`readonlymode.enabled=true`).
        pub fn read_only_mode(self) -> Self {
            self.system_property("readonlymode.enabled", "true")
        }

        /// Bound on start-up (default 60 s).
        pub fn start_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.options.start_timeout = timeout;
            self
        }

        /// Serve TLS on a secure client port too, with certificates made at start-up; see
        /// [`crate::tls`].
        pub fn tls(mut self, tls: $crate::tls::TlsOptions) -> Self {
            self.options.tls = Some(tls);
            self
        }

        /// Java and classpath to use instead of the ones found on this machine.
        pub fn installation(mut self, installation: $crate::Installation) -> Self {
            self.options.installation = Some(installation);
            self
        }
    };
}
pub(crate) use option_setters;

/// One member's place in the ensemble: the ports of every member, and which one is "us".
#[derive(Clone, Debug)]
pub(crate) struct Ports {
    pub(crate) client: u16,
    pub(crate) quorum: u16,
    pub(crate) election: u16,
    /// The TLS client port (`secureClientPort`), when TLS is on.
    pub(crate) secure_client: Option<u16>,
}

impl Options {
    /// The server's `tickTime`.
    pub fn tick_time(&self) -> Duration {
        self.tick_time
    }

    /// The shortest session timeout the server grants.
    pub fn min_session_timeout(&self) -> Duration {
        self.min_session_timeout
    }

    /// The longest session timeout the server grants.
    pub fn max_session_timeout(&self) -> Duration {
        self.max_session_timeout
    }

    /// The timeout the server negotiates for a client asking for `requested`.
    pub fn negotiated_timeout(&self, requested: Duration) -> Duration {
        requested.clamp(self.min_session_timeout, self.max_session_timeout)
    }

    /// The `zoo.cfg` text for the member `me` (index into `members`; ignored when there is
    /// only one member, which runs standalone).
    pub(crate) fn zoo_cfg(&self, data_dir: &Path, members: &[Ports], me: usize) -> String {
        let mut cfg = String::new();
        let ms = |d: Duration| d.as_millis();
        let _ = writeln!(cfg, "tickTime={}", ms(self.tick_time));
        let _ = writeln!(cfg, "initLimit={}", self.init_limit);
        let _ = writeln!(cfg, "syncLimit={}", self.sync_limit);
        let _ = writeln!(cfg, "dataDir={}", data_dir.display());
        let _ = writeln!(cfg, "clientPort={}", members[me].client);
        cfg.push_str("clientPortAddress=127.0.0.1\n");
        if let Some(port) = members[me].secure_client {
            let _ = writeln!(cfg, "secureClientPort={port}");
            cfg.push_str("secureClientPortAddress=127.0.0.1\n");
        }
        let _ = writeln!(cfg, "minSessionTimeout={}", ms(self.min_session_timeout));
        let _ = writeln!(cfg, "maxSessionTimeout={}", ms(self.max_session_timeout));
        cfg.push_str("4lw.commands.whitelist=*\n");
        cfg.push_str("admin.enableServer=false\n");
        // Tests open many connections from 127.0.0.1; the default limit is 60 per address.
        cfg.push_str("maxClientCnxns=0\n");
        // Test data is throwaway: skip fsync and the 64 MB log preallocation.
        cfg.push_str("forceSync=no\n");
        cfg.push_str("preAllocSize=1024\n");
        if members.len() > 1 {
            for (i, member) in members.iter().enumerate() {
                let _ = writeln!(
                    cfg,
                    "server.{}=127.0.0.1:{}:{}",
                    i + 1,
                    member.quorum,
                    member.election
                );
            }
        }
        for (key, value) in &self.config {
            let _ = writeln!(cfg, "{key}={value}");
        }
        cfg
    }
}

/// log4j 1.2 configuration (Debian's binding): everything to one file.
pub(crate) fn log4j_properties(log_file: &Path) -> String {
    format!(
        "log4j.rootLogger=INFO, FILE\n\
         log4j.appender.FILE=org.apache.log4j.FileAppender\n\
         log4j.appender.FILE.File={}\n\
         log4j.appender.FILE.layout=org.apache.log4j.PatternLayout\n\
         log4j.appender.FILE.layout.ConversionPattern=%d{{ISO8601}} %-5p [%t:%C{{1}}@%L] - %m%n\n",
        log_file.display()
    )
}

/// logback configuration (upstream releases' binding): everything to one file.
pub(crate) fn logback_xml(log_file: &Path) -> String {
    format!(
        "<configuration>\n  <appender name=\"FILE\" class=\"ch.qos.logback.core.FileAppender\">\n    \
         <file>{}</file>\n    <encoder><pattern>%d{{ISO8601}} %-5p [%t:%C{{1}}@%L] - %m%n</pattern></encoder>\n  \
         </appender>\n  <root level=\"INFO\"><appender-ref ref=\"FILE\"/></root>\n</configuration>\n",
        log_file.display()
    )
}
