//! One ZooKeeper JVM: its directory, configuration, process and readiness checks.

use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::four_letter::{four_letter_with_timeout, Srvr};
use crate::install::Installation;
use crate::options::{log4j_properties, logback_xml, Options, Ports};
use crate::process::ChildProcess;
use crate::tempdir::TempDir;

/// Lines of log shown in start-up errors.
const LOG_TAIL_LINES: usize = 40;
/// How often readiness is polled while waiting for a server.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

const MAIN_CLASS: &str = "org.apache.zookeeper.server.quorum.QuorumPeerMain";

#[derive(Debug)]
pub(crate) struct Node {
    dir: TempDir,
    client: SocketAddr,
    /// The TLS client port, when there is one: start-up waits until it accepts too.
    secure: Option<SocketAddr>,
    command: (PathBuf, Vec<String>),
    process: Option<ChildProcess>,
}

impl Node {
    /// Writes the member's files; does not start it.
    pub(crate) fn prepare(
        label: &str,
        options: &Options,
        installation: &Installation,
        members: &[Ports],
        me: usize,
    ) -> Result<Node> {
        let dir = TempDir::new(label)?;
        let root = dir.path();
        let data_dir = root.join("data");
        let write = |path: &Path, text: &str| {
            std::fs::write(path, text)
                .map_err(|e| Error::io(format!("writing {}", path.display()), e))
        };
        std::fs::create_dir_all(&data_dir)
            .map_err(|e| Error::io(format!("creating {}", data_dir.display()), e))?;
        if members.len() > 1 {
            write(&data_dir.join("myid"), &format!("{}\n", me + 1))?;
        }
        let cfg_path = root.join("zoo.cfg");
        write(&cfg_path, &options.zoo_cfg(&data_dir, members, me))?;
        let log_file = root.join("zookeeper.log");
        let log4j = root.join("log4j.properties");
        write(&log4j, &log4j_properties(&log_file))?;
        let logback = root.join("logback.xml");
        write(&logback, &logback_xml(&log_file))?;
        for (name, text) in &options.files {
            write(&root.join(name), text)?;
        }

        let mut args: Vec<String> = [
            // Small and quick to start: several servers share two cores in CI.
            "-Xmx256m",
            "-Xms32m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-XX:-UsePerfData",
            "-Xss512k",
            "-Djava.net.preferIPv4Stack=true",
            "-Dzookeeper.admin.enableServer=false",
            "-Dzookeeper.jmx.log4j.disable=true",
            // Peers that are paused accept TCP but never answer; do not wait 5 s on them.
            "-Dzookeeper.cnxTimeout=1000",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.push(format!("-Dlog4j.configuration=file:{}", log4j.display()));
        args.push(format!("-Dlogback.configurationFile={}", logback.display()));
        args.push(format!("-Dzookeeper.log.dir={}", root.display()));
        for (key, value) in &options.system_properties {
            args.push(format!("-D{key}={value}"));
        }
        args.extend(options.jvm_args.iter().cloned());
        args.push("-cp".into());
        args.push(installation.classpath_string());
        args.push(MAIN_CLASS.into());
        args.push(cfg_path.display().to_string());

        Ok(Node {
            dir,
            client: SocketAddr::from((Ipv4Addr::LOCALHOST, members[me].client)),
            secure: members[me]
                .secure_client
                .map(|port| SocketAddr::from((Ipv4Addr::LOCALHOST, port))),
            command: (installation.java.clone(), args),
            process: None,
        })
    }

    pub(crate) fn client_addr(&self) -> SocketAddr {
        self.client
    }

    pub(crate) fn secure_addr(&self) -> Option<SocketAddr> {
        self.secure
    }

    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Starts the JVM (again, after a kill: same configuration and data).
    pub(crate) fn spawn(&mut self) -> Result<()> {
        self.kill();
        let out = self.dir.path().join("java.out");
        let stdout = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&out)
            .map_err(|e| Error::io(format!("opening {}", out.display()), e))?;
        let stderr = stdout
            .try_clone()
            .map_err(|e| Error::io(format!("opening {}", out.display()), e))?;
        let mut command = Command::new(&self.command.0);
        command
            .args(&self.command.1)
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr);
        let process = ChildProcess::spawn(command)
            .map_err(|e| Error::io(format!("starting {}", self.command.0.display()), e))?;
        self.process = Some(process);
        Ok(())
    }

    pub(crate) fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(ChildProcess::pid)
    }

    pub(crate) fn is_running(&mut self) -> bool {
        match &mut self.process {
            Some(p) => p.try_exit().is_none(),
            None => false,
        }
    }

    pub(crate) fn kill(&mut self) {
        if let Some(mut process) = self.process.take() {
            process.kill();
        }
    }

    /// Freezes the JVM and returns once all its threads are stopped.
    pub(crate) fn pause(&mut self) -> Result<()> {
        match &mut self.process {
            Some(p) => p
                .pause()
                .map_err(|e| Error::io(format!("pausing server {}", self.client), e)),
            None => Ok(()),
        }
    }

    pub(crate) fn signal(&mut self, signal: libc::c_int) -> Result<()> {
        match &mut self.process {
            Some(p) => p
                .signal(signal)
                .map_err(|e| Error::io(format!("signalling server {}", self.client), e)),
            None => Ok(()),
        }
    }

    /// The server's log and console output, last `lines` of each.
    pub(crate) fn log_tail(&self, lines: usize) -> String {
        let mut tail = String::new();
        for name in ["zookeeper.log", "java.out"] {
            let path = self.dir.path().join(name);
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let all: Vec<&str> = text.lines().collect();
            let start = all.len().saturating_sub(lines);
            if !all.is_empty() {
                tail.push_str(&format!("--- {} ---\n", path.display()));
                for line in &all[start..] {
                    tail.push_str(line);
                    tail.push('\n');
                }
            }
        }
        tail
    }

    /// Whether the server failed because one of its ports was taken.
    pub(crate) fn bind_failed(&self) -> bool {
        let tail = self.log_tail(200);
        tail.contains("Address already in use") || tail.contains("BindException")
    }

    fn exited_error(&mut self) -> Option<Error> {
        let status = self.process.as_mut()?.try_exit()?;
        Some(Error::Exited {
            status: status.to_string(),
            dir: self.dir.path().to_path_buf(),
            log_tail: self.log_tail(LOG_TAIL_LINES),
        })
    }
}

/// Polls `srvr` on `nodes` until `ready` accepts the answers (one per node, `None` where a
/// server does not answer or does not serve yet), a node dies, or `timeout` passes.
pub(crate) fn wait_ready(
    nodes: &mut [&mut Node],
    what: &str,
    timeout: Duration,
    ready: impl Fn(&[Option<Srvr>]) -> bool,
) -> Result<Vec<Option<Srvr>>> {
    let start = Instant::now();
    let mut last = String::new();
    loop {
        let mut answers = Vec::with_capacity(nodes.len());
        for node in nodes.iter_mut() {
            if node.process.is_some() {
                if let Some(err) = node.exited_error() {
                    return Err(err);
                }
            }
            // A standalone server may answer on its plain port before the secure one is bound.
            if let Some(secure) = node.secure {
                if let Err(e) = TcpStream::connect_timeout(&secure, Duration::from_secs(1)) {
                    last = format!("secure client port {secure}: {e}");
                    answers.push(None);
                    continue;
                }
            }
            let answer = four_letter_with_timeout(node.client, "srvr", Duration::from_secs(1));
            match answer {
                Ok(text) => {
                    last = text.trim().to_string();
                    answers.push(Srvr::parse(&text));
                }
                Err(e) => {
                    last = e.to_string();
                    answers.push(None);
                }
            }
        }
        if ready(&answers) {
            return Ok(answers);
        }
        if start.elapsed() > timeout {
            let log_tail = nodes
                .iter()
                .map(|n| n.log_tail(LOG_TAIL_LINES / nodes.len().max(1)))
                .collect::<Vec<_>>()
                .join("");
            return Err(Error::NotReady {
                what: what.to_string(),
                waited: start.elapsed(),
                last,
                log_tail,
            });
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}
