//! Real Curator and kazoo peers, driven over stdin/stdout (see `tests/peers/`).
//!
//! The Java peers are compiled at test time with `javac` against Debian's jars
//! (`libcurator-recipes-java`), into the test target directory, cached by source hash.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex as StdMutex;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use zookeeper_testkit::peers::{compile_curator_peers, kazoo_python};

use super::bounded;

fn peers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers")
}

/// Compiles the Java peers (every `.java` file in `tests/peers/`) once per source version;
/// returns the classpath to run them.
fn curator_classpath() -> String {
    static BUILT: StdMutex<Option<String>> = StdMutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(cp) = built.as_ref() {
        return cp.clone();
    }
    let sources: Vec<PathBuf> = std::fs::read_dir(peers_dir())
        .expect("list tests/peers")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "java"))
        .collect();
    let cp = compile_curator_peers(&sources, Path::new(env!("CARGO_TARGET_TMPDIR")))
        .unwrap_or_else(|e| panic!("{e}"));
    *built = Some(cp.clone());
    cp
}

/// Runs `cmd` with `names` on stdin, one a line; returns its output lines.
async fn run_with_names(mut cmd: Command, names: &[String]) -> Vec<String> {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = cmd.spawn().expect("start a peer's order program");
    let mut stdin = child.stdin.take().unwrap();
    let input: String = names.iter().map(|n| format!("{n}\n")).collect();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    let out = bounded("a peer's order", child.wait_with_output())
        .await
        .unwrap();
    assert!(out.status.success(), "the peer's order program failed");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// `names` in the order Curator's own sorting code gives (`tests/peers/CuratorOrder.java`):
/// `mode` is `mutex`, `rw` or `latch`.
pub async fn curator_order(mode: &str, names: &[String]) -> Vec<String> {
    let mut cmd = Command::new("java");
    cmd.args(["-cp", &curator_classpath(), "CuratorOrder", mode]);
    run_with_names(cmd, names).await
}

/// How kazoo's own code orders `names` (`tests/peers/kazoo_order.py`) for `class` (`Lock`,
/// `ReadLock`, `WriteLock`): the contenders in order, and each one's predecessor (`None`:
/// kazoo grants it the lock).
pub async fn kazoo_order(
    class: &str,
    names: &[String],
) -> (Vec<String>, Vec<(String, Option<String>)>) {
    let mut cmd = Command::new(kazoo_python());
    cmd.arg(peers_dir().join("kazoo_order.py")).arg(class);
    let lines = run_with_names(cmd, names).await;
    let order = lines
        .iter()
        .filter_map(|l| l.strip_prefix("contender "))
        .map(str::to_owned)
        .collect();
    let predecessors = lines
        .iter()
        .filter_map(|l| l.strip_prefix("predecessor "))
        .map(|l| {
            let (name, pred) = l.split_once(' ').unwrap();
            (name.to_owned(), (pred != "-").then(|| pred.to_owned()))
        })
        .collect();
    (order, predecessors)
}

/// A running peer process.
pub struct Peer {
    name: &'static str,
    _child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    /// Every line read so far.
    pub seen: Vec<String>,
}

impl Peer {
    async fn spawn(name: &'static str, mut cmd: Command) -> Peer {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("start {name} peer: {e}"));
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut peer = Peer {
            name,
            _child: child,
            stdin,
            lines,
            seen: Vec::new(),
        };
        peer.expect("ready").await;
        peer
    }

    /// A Curator 5.4 peer connected to `connect`.
    pub async fn curator(connect: &str) -> Peer {
        Peer::curator_class("CuratorPeer", connect).await
    }

    /// The Curator 5.4 peer of the counters, barriers and group membership
    /// (`CuratorRecipesPeer.java`) connected to `connect`.
    pub async fn curator_recipes(connect: &str) -> Peer {
        Peer::curator_class("CuratorRecipesPeer", connect).await
    }

    async fn curator_class(class: &str, connect: &str) -> Peer {
        let mut cmd = Command::new("java");
        cmd.args(["-cp", &curator_classpath(), class, connect]);
        Peer::spawn("curator", cmd).await
    }

    /// A kazoo peer connected to `connect` (Debian's python3-kazoo, hence /usr/bin/python3).
    pub async fn kazoo(connect: &str) -> Peer {
        let mut cmd = Command::new(kazoo_python());
        cmd.arg(peers_dir().join("kazoo_peer.py")).arg(connect);
        Peer::spawn("kazoo", cmd).await
    }

    /// The Curator 5.4 peer of the leader selector and the shared-count semaphore
    /// (`CuratorContentionPeer.java`) connected to `connect`.
    pub async fn curator_contention(connect: &str) -> Peer {
        Peer::curator_class("CuratorContentionPeer", connect).await
    }

    /// Sends one command line.
    pub async fn send(&mut self, line: &str) {
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// Reads lines until one starts with `prefix`; returns the rest of it. Fails on an
    /// `error` or `violation` line.
    pub async fn expect(&mut self, prefix: &str) -> String {
        let name = self.name;
        let what = format!("{name} peer to say {prefix:?}");
        bounded(&what, async {
            loop {
                let line = self
                    .lines
                    .next_line()
                    .await
                    .unwrap()
                    .unwrap_or_else(|| panic!("{name} peer exited; saw {:?}", self.seen));
                self.seen.push(line.clone());
                assert!(
                    !line.starts_with("error") && !line.starts_with("violation"),
                    "{name} peer: {line}"
                );
                if let Some(rest) = line.strip_prefix(prefix) {
                    return rest.trim().to_owned();
                }
            }
        })
        .await
    }

    /// The `enter <czxid>` tokens seen so far.
    pub fn tokens(&self) -> Vec<i64> {
        self.seen
            .iter()
            .filter_map(|l| l.strip_prefix("enter "))
            .map(|t| t.trim().parse().unwrap())
            .collect()
    }
}
