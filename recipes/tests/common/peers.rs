//! Real Curator and kazoo peers, driven over stdin/stdout (see `tests/peers/`).
//!
//! The Java peers are compiled at test time with `javac` against Debian's jars
//! (`libcurator-recipes-java`), into the test target directory, cached by source hash.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex as StdMutex;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::bounded;

const JARS: &[&str] = &[
    "/usr/share/java/curator-recipes.jar",
    "/usr/share/java/curator-framework.jar",
    "/usr/share/java/curator-client.jar",
    "/usr/share/java/zookeeper.jar",
    "/usr/share/java/zookeeper-jute.jar",
    "/usr/share/java/slf4j-nop.jar",
];

fn peers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers")
}

/// Compiles the Java peers (every `.java` file in `tests/peers/`) once per version of their
/// sources; returns the classpath to run them.
fn curator_classpath() -> String {
    static BUILT: StdMutex<Option<String>> = StdMutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(cp) = built.as_ref() {
        return cp.clone();
    }
    for jar in JARS {
        assert!(
            Path::new(jar).exists(),
            "{jar} missing: install libcurator-recipes-java (scripts/setup)"
        );
    }
    let mut sources: Vec<PathBuf> = std::fs::read_dir(peers_dir())
        .expect("list tests/peers")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "java"))
        .collect();
    sources.sort();
    let mut h = DefaultHasher::new();
    for source in &sources {
        std::fs::read(source)
            .expect("read a Java peer")
            .hash(&mut h);
    }
    let out =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("curator-peers-{:016x}", h.finish()));
    let jars = JARS.join(":");
    if !out.exists() {
        let tmp = out.with_extension(format!("tmp{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        let status = std::process::Command::new("javac")
            .args(["-nowarn", "-d"])
            .arg(&tmp)
            .args(["-cp", &jars])
            .args(&sources)
            .status()
            .expect("run javac: install a JDK (default-jdk-headless, see scripts/setup)");
        assert!(status.success(), "javac {sources:?} failed");
        // Another test binary may have won the race; either copy is the same.
        let _ = std::fs::rename(&tmp, &out);
        let _ = std::fs::remove_dir_all(&tmp);
    }
    let cp = format!("{jars}:{}", out.display());
    *built = Some(cp.clone());
    cp
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
        let python = if Path::new("/usr/bin/python3").exists() {
            "/usr/bin/python3"
        } else {
            "python3"
        };
        let mut cmd = Command::new(python);
        cmd.arg(peers_dir().join("kazoo_peer.py")).arg(connect);
        Peer::spawn("kazoo", cmd).await
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
