//! The checker's own evidence: a contender's marker (the ephemeral node that says someone is
//! inside) must never outlive its hold, or the next holder reports a violation that did not
//! happen. A holder stopped for less than its session timeout keeps its session; after the
//! pause it must still take its marker out before it lets the lock go.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};
use zookeeper_testkit::{chroot_for, shared_server};

/// Any single wait here: a bound on a hang, far past what the steps need.
const BOUND: Duration = Duration::from_secs(60);

struct Contender {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Contender {
    fn start(connect: &str, who: &str) -> Contender {
        let mut child = Command::new(env!("CARGO_BIN_EXE_zookeeper-chaos"))
            .args([
                "contend",
                "--connect",
                connect,
                "--lock",
                "/lock",
                "--marker",
                "/inside",
                "--layout",
                "curator",
                "--who",
                who,
                "--hold",
                "20ms",
                // Far longer than the pause below: the session outlives it.
                "--session-timeout",
                "20s",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start a contender");
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Contender { child, lines }
    }

    /// The first line that starts with `prefix`, after any others.
    async fn line(&mut self, prefix: &str) -> String {
        let wait = async {
            loop {
                let line = self.lines.next_line().await.unwrap().expect("output ends");
                if line.starts_with(prefix) {
                    return line;
                }
                assert!(!line.starts_with("violation"), "{line}");
            }
        };
        tokio::time::timeout(BOUND, wait)
            .await
            .unwrap_or_else(|_| panic!("no {prefix:?} line"))
    }

    fn signal(&self, signal: libc::c_int) {
        let pid = self.child.id().expect("running") as libc::pid_t;
        // SAFETY: kill(2) with a pid of our own child.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_continued_within_its_session_leaves_no_marker_behind() {
    let connect = shared_server().connect_string_with_chroot(&chroot_for("chaos_marker"));
    let mut first = Contender::start(&connect, "first");
    first
        .child
        .stdin
        .as_mut()
        .unwrap()
        .write_all(b"pause-next\n")
        .await
        .unwrap();
    first.line("holding first").await;
    let mut second = Contender::start(&connect, "second");
    // A pause far shorter than the session timeout: the holder keeps its session, its lock
    // and its marker through it. The length is the fault, not a wait for anything.
    first.signal(libc::SIGSTOP);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    first.signal(libc::SIGCONT);
    let resumed = first.line("resumed first").await;
    assert!(resumed.contains("Held"), "{resumed}");
    let write = first.line("guarded-write first").await;
    assert!(write.ends_with("applied"), "{write}");
    // The lock passes to the second contender, which must find the critical section empty
    // (`line` fails on a violation line).
    second.line("grant second").await;
}
