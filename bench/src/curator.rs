//! Curator's side of the lock workloads: `java/CuratorBench.java`, compiled at run time with
//! `javac` against Debian's jars and driven line by line over stdin/stdout, so that Curator and
//! our recipes alternate round by round on the same server.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::BenchError;

const SOURCE: &str = include_str!("../java/CuratorBench.java");
const JAR_DIR: &str = "/usr/share/java";
/// Debian package names: libcurator-{recipes,framework,client}-java, libzookeeper-java,
/// libguava-java, libslf4j-java.
const JARS: [&str; 8] = [
    "curator-recipes",
    "curator-framework",
    "curator-client",
    "zookeeper",
    "zookeeper-jute",
    "guava",
    "slf4j-api",
    "slf4j-nop",
];

/// A running CuratorBench JVM.
pub struct Curator {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    dir: PathBuf,
}

fn classpath() -> Result<String, BenchError> {
    let mut parts = Vec::new();
    for jar in JARS {
        let path = Path::new(JAR_DIR).join(format!("{jar}.jar"));
        if !path.is_file() {
            return Err(format!(
                "{} is missing (apt-get install libcurator-recipes-java)",
                path.display()
            )
            .into());
        }
        parts.push(path.display().to_string());
    }
    Ok(parts.join(":"))
}

impl Curator {
    /// Compiles and starts the Java program against `connect` (host:port).
    pub async fn start(connect: &str) -> Result<Curator, BenchError> {
        let cp = classpath()?;
        let dir = std::env::temp_dir().join(format!("zk-bench-curator-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let source = dir.join("CuratorBench.java");
        std::fs::write(&source, SOURCE)?;
        let javac = Command::new("javac")
            .arg("-d")
            .arg(&dir)
            .arg("-cp")
            .arg(&cp)
            .arg(&source)
            .output()
            .await
            .map_err(|e| format!("javac: {e}"))?;
        if !javac.status.success() {
            return Err(format!("javac failed: {}", String::from_utf8_lossy(&javac.stderr)).into());
        }
        let mut child = Command::new("java")
            .arg("-cp")
            .arg(format!("{cp}:{}", dir.display()))
            .arg("CuratorBench")
            .arg(connect)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("java: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut curator = Curator {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
            dir,
        };
        curator.expect_line("ready").await?;
        Ok(curator)
    }

    async fn next_line(&mut self) -> Result<String, BenchError> {
        self.lines
            .next_line()
            .await?
            .ok_or_else(|| "CuratorBench exited".into())
    }

    async fn expect_line(&mut self, want: &str) -> Result<(), BenchError> {
        let line = self.next_line().await?;
        if line.trim() == want {
            Ok(())
        } else {
            Err(format!("CuratorBench said {line:?}, expected {want:?}").into())
        }
    }

    async fn send(&mut self, line: &str) -> Result<(), BenchError> {
        self.stdin.write_all(format!("{line}\n").as_bytes()).await?;
        self.stdin.flush().await?;
        Ok(())
    }

    /// Reads a `result k v k v ...` line into a map.
    async fn result(&mut self) -> Result<HashMap<String, f64>, BenchError> {
        let line = self.next_line().await?;
        let mut words = line.split_whitespace();
        if words.next() != Some("result") {
            return Err(format!("CuratorBench: {line}").into());
        }
        let mut map = HashMap::new();
        while let (Some(k), Some(v)) = (words.next(), words.next()) {
            map.insert(k.to_string(), v.parse::<f64>()?);
        }
        Ok(map)
    }

    /// Runs one command and returns its result fields.
    pub async fn run(&mut self, command: &str) -> Result<HashMap<String, f64>, BenchError> {
        self.send(command).await?;
        self.result().await
    }

    /// Starts the waiters command and returns once every waiter is queued behind the holder,
    /// so the caller can sample server metrics before the holder releases.
    pub async fn waiters(
        &mut self,
        path: &str,
        waiters: usize,
        sessions: usize,
    ) -> Result<QueuedWaiters<'_>, BenchError> {
        self.send(&format!("waiters {path} {waiters} {sessions}"))
            .await?;
        self.expect_line("queued").await?;
        Ok(QueuedWaiters { curator: self })
    }

    pub async fn quit(mut self) {
        let _ = self.send("quit").await;
        let _ = self.child.wait().await;
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Waiters queued behind Curator's holder, not yet released.
pub struct QueuedWaiters<'a> {
    curator: &'a mut Curator,
}

impl QueuedWaiters<'_> {
    /// Releases the holder and waits until every waiter has been served.
    pub async fn release(self) -> Result<HashMap<String, f64>, BenchError> {
        self.curator.send("go").await?;
        self.curator.result().await
    }
}
