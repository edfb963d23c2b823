//! The contender processes of a run, and the hub that gathers their lines.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex as StdMutex};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::broadcast;
use zookeeper_testkit::peers::{compile_curator_peers, kazoo_python};

use crate::journal::{Event, Journal};
use crate::options::{contend_args, ContendOptions};

/// Every contender's lines: recorded in the journal and passed on to whoever waits for one.
#[derive(Clone)]
pub struct Hub {
    pub journal: Arc<StdMutex<Journal>>,
    pub events: broadcast::Sender<(String, Event)>,
}

impl Hub {
    pub fn new() -> Hub {
        Hub {
            journal: Arc::default(),
            events: broadcast::channel(1 << 16).0,
        }
    }

    /// Reads `child`'s lines, about `lock`, until it ends.
    fn follow(&self, lock: &str, child: &mut Child) {
        let stdout = child.stdout.take().expect("stdout piped");
        let (hub, lock) = (self.clone(), lock.to_owned());
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if std::env::var_os("CHAOS_TRACE").is_some() {
                    eprintln!("{lock} {line}");
                }
                let event = Event::parse(&line);
                hub.journal
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .entry(lock.clone())
                    .or_default()
                    .record(&event);
                let _ = hub.events.send((lock.clone(), event));
            }
        });
    }
}

/// A running contender process (ours, or a peer's with several contenders in it).
pub struct Process {
    pub name: String,
    pub lock: String,
    pub marker: String,
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Process {
    fn start(
        name: String,
        lock: &str,
        marker: &str,
        mut cmd: Command,
        hub: &Hub,
    ) -> std::io::Result<Process> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn()?;
        let stdin = child.stdin.take();
        hub.follow(lock, &mut child);
        Ok(Process {
            name,
            lock: lock.to_owned(),
            marker: marker.to_owned(),
            child,
            stdin,
        })
    }

    /// One of ours: this very program in its contender role.
    pub fn rust(o: &ContendOptions, hub: &Hub) -> std::io::Result<Process> {
        let mut cmd = Command::new(std::env::current_exe()?);
        // Ours say nothing on stderr unless something is badly wrong: let it show.
        cmd.args(contend_args(o)).stderr(Stdio::inherit());
        Process::start(o.who.clone(), &o.lock, &o.marker, cmd, hub)
    }

    /// `count` Curator contenders in one JVM.
    pub fn curator(classpath: &str, peer: &PeerArgs, hub: &Hub) -> std::io::Result<Process> {
        let mut cmd = Command::new("java");
        // The peers' client libraries log every lost connection on stderr; what matters
        // comes on stdout.
        cmd.args(["-cp", classpath, "ChaosCurator"])
            .args(peer.args())
            .stderr(Stdio::null());
        Process::start("curator".into(), &peer.lock, &peer.marker, cmd, hub)
    }

    /// `count` kazoo contenders in one Python process.
    pub fn kazoo(peer: &PeerArgs, hub: &Hub) -> std::io::Result<Process> {
        let mut cmd = Command::new(kazoo_python());
        cmd.arg(peers_dir().join("chaos_kazoo.py"))
            .args(peer.args())
            .stderr(Stdio::null());
        Process::start("kazoo".into(), &peer.lock, &peer.marker, cmd, hub)
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    pub async fn send(&mut self, line: &str) {
        if let Some(stdin) = self.stdin.as_mut() {
            let _ = stdin.write_all(format!("{line}\n").as_bytes()).await;
            let _ = stdin.flush().await;
        }
    }

    /// Closes its stdin (every contender ends then) and waits a moment before killing it.
    pub async fn stop(mut self) {
        self.stdin = None;
        let exited = tokio::time::timeout(std::time::Duration::from_secs(5), self.child.wait());
        if exited.await.is_err() {
            let _ = self.child.kill().await;
        }
    }
}

/// What a peer process is told.
pub struct PeerArgs {
    pub connect: String,
    pub lock: String,
    pub marker: String,
    pub count: usize,
    pub hold_ms: u128,
    pub session_ms: u128,
}

impl PeerArgs {
    fn args(&self) -> Vec<String> {
        vec![
            self.connect.clone(),
            self.lock.clone(),
            self.marker.clone(),
            self.count.to_string(),
            self.hold_ms.to_string(),
            self.session_ms.to_string(),
        ]
    }
}

fn peers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peers")
}

/// Compiles the Curator contenders (once per version of their source) next to this program.
pub fn curator_classpath() -> Result<String, String> {
    let cache = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
        .unwrap_or_else(std::env::temp_dir);
    compile_curator_peers(&[peers_dir().join("ChaosCurator.java")], &cache)
        .map_err(|e| e.to_string())
}

/// Sends `signal` to `pid`.
pub fn signal(pid: u32, signal: libc::c_int) -> std::io::Result<()> {
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    let rc = unsafe { libc::kill(pid as libc::pid_t, signal) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
