//! Running the built `zk` against real servers, with every wait bounded.
#![allow(dead_code)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdout, Command};
use zookeeper_testkit::{chroot_for, shared_server};
use zookeeper_tokio::Client;

/// The bound on any single wait: generous for a loaded machine, but a hang fails the test.
pub const BOUND: Duration = Duration::from_secs(60);

pub async fn bounded<F: Future>(what: &str, f: F) -> F::Output {
    zookeeper_testkit::bounded_by(BOUND, what, f).await
}

/// A connect string to a fresh chroot on the shared server, and a client on it.
pub async fn chroot(test: &str) -> (String, Client) {
    let connect = shared_server().connect_string_with_chroot(&chroot_for(test));
    let client = Client::connect(&connect).await.expect("connect");
    (connect, client)
}

/// The variables `zk` reads besides `ZK_SERVER`: a test sets those it means.
const SETTINGS: &[&str] = &[
    "ZK_AUTH",
    "ZK_TLS",
    "ZK_TLS_CA",
    "ZK_TLS_CERT",
    "ZK_TLS_KEY",
    "ZK_TLS_NO_HOSTNAME_VERIFY",
    "ZK_SASL_USER",
    "ZK_SASL_PASSWORD",
    "ZK_SASL_PASSWORD_FILE",
    "ZK_SASL_GSSAPI",
    "ZK_SASL_SERVICE",
    "ZK_SASL_HOST",
];

/// `zk` with `--server` set to `connect` (and nothing from the caller's environment).
pub fn zk(connect: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zk"));
    for name in SETTINGS {
        cmd.env_remove(name);
    }
    cmd.env("ZK_SERVER", connect)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // As a terminal starts it, whatever started these tests: `zk` leaves ignored a signal it
    // was started with ignored (a script's background job has SIGINT ignored), and the tests
    // send it signals.
    // SAFETY: between fork and exec, only signal(2), which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    cmd
}

/// What a finished `zk` left.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Run {
    fn of(output: std::process::Output) -> Run {
        Run {
            code: output.status.code(),
            stdout: output.stdout,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Asserts a failure with `code` and one line on stderr, and returns that line.
    pub fn failed(&self, code: i32) -> &str {
        assert_eq!(self.code, Some(code), "stderr: {}", self.stderr);
        assert_eq!(self.stderr.lines().count(), 1, "{:?}", self.stderr);
        assert!(self.stderr.starts_with("Error: "), "{:?}", self.stderr);
        self.stderr.trim_end()
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.stdout.clone()).expect("UTF-8 output")
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.text()))
    }

    /// Asserts success and returns stdout as text.
    pub fn ok(&self) -> String {
        assert_eq!(self.code, Some(0), "zk failed: {}", self.stderr);
        self.text()
    }
}

/// Runs `zk ARGS` to the end, with `input` on stdin.
pub async fn run_with(connect: &str, args: &[&str], input: Option<&[u8]>) -> Run {
    let mut cmd = zk(connect);
    cmd.args(args);
    if input.is_some() {
        cmd.stdin(Stdio::piped());
    }
    let mut child = cmd.spawn().expect("spawn zk");
    if let Some(input) = input {
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input).await.unwrap();
        drop(stdin);
    }
    let output = bounded(&format!("zk {args:?}"), child.wait_with_output())
        .await
        .unwrap();
    Run::of(output)
}

/// Runs a `zk` made by [`zk`] (arguments, environment) to the end.
pub async fn finish(mut cmd: Command) -> Run {
    let what = format!("{:?}", cmd.as_std());
    let output = bounded(&what, cmd.output()).await.unwrap();
    Run::of(output)
}

pub async fn run(connect: &str, args: &[&str]) -> Run {
    run_with(connect, args, None).await
}

/// A `zk` left running, whose output is read line by line.
pub struct Running {
    pub child: Child,
    lines: Option<tokio::io::Lines<BufReader<ChildStdout>>>,
    errors: Option<BufReader<ChildStderr>>,
}

impl Running {
    pub fn start(mut cmd: Command) -> Running {
        let mut child = cmd.spawn().expect("spawn zk");
        let lines = Some(BufReader::new(child.stdout.take().unwrap()).lines());
        Running {
            child,
            lines,
            errors: None,
        }
    }

    pub async fn line(&mut self) -> String {
        let lines = self.lines.as_mut().expect("stdout still open");
        bounded("a line from zk", lines.next_line())
            .await
            .unwrap()
            .expect("zk ended its output")
    }

    /// Closes our end of its stdout, as `head` does once it has read enough.
    pub fn close_stdout(&mut self) {
        self.lines = None;
    }

    pub fn signal(&self, signal: i32) {
        let pid = self.child.id().expect("running") as i32;
        // SAFETY: kill(2) on a pid of our own child.
        unsafe {
            libc::kill(pid, signal);
        }
    }

    pub async fn wait(&mut self) -> ExitStatus {
        bounded("zk to exit", self.child.wait()).await.unwrap()
    }

    /// Runs `wait` while zk runs: a zk that exits first fails the test with its status and
    /// stderr, rather than leaving `wait` to time out with nothing said about why.
    pub async fn meanwhile<F: Future>(&mut self, wait: F) -> F::Output {
        tokio::select! {
            out = wait => out,
            status = self.child.wait() => {
                let stderr = self.stderr().await;
                panic!("zk exited ({status:?}) while waited on; its stderr:\n{stderr}")
            }
        }
    }

    /// The next line of its stderr (the rest stays readable by [`Running::stderr`]).
    pub async fn stderr_line(&mut self) -> String {
        if self.errors.is_none() {
            self.errors = Some(BufReader::new(self.child.stderr.take().unwrap()));
        }
        let mut line = String::new();
        let reader = self.errors.as_mut().unwrap();
        bounded("a line on zk's stderr", reader.read_line(&mut line))
            .await
            .unwrap();
        assert!(!line.is_empty(), "zk closed its stderr");
        line.trim_end().to_owned()
    }

    pub async fn stderr(&mut self) -> String {
        let mut text = String::new();
        if let Some(mut err) = self.errors.take() {
            bounded("zk's stderr", err.read_to_string(&mut text))
                .await
                .unwrap();
            return text;
        }
        let mut text = String::new();
        if let Some(mut err) = self.child.stderr.take() {
            bounded("zk's stderr", err.read_to_string(&mut text))
                .await
                .unwrap();
        }
        text
    }
}

/// A fresh empty directory for the files a test's commands write.
pub fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zk-cli-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Waits until `path` exists, by polling: the file is written by another process, which
/// nothing else here can observe.
pub async fn wait_file(path: &Path) {
    bounded(&format!("{}", path.display()), async {
        while !path.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

/// The lines of a log file the commands append to.
pub fn log_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}
