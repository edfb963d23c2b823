//! The peers' entry into the critical section, checked on its own: a Curator or kazoo
//! contender creates its marker only on the session that owns its lock node, while the node
//! exists.
//!
//! Otherwise the marker can outlive the lock node, and every later holder finds it: a
//! violation the peer contender made, not the lock. Curator retries an operation on a new
//! session after an expiry, and declares a session expired by its own clock after a connection
//! lost for a session timeout, starting a new session while the server still keeps the old one
//! and its lock node (the `expired` case); kazoo's contender tries its create again after a
//! lost connection, by which time kazoo may have started a new session (the `gone` case: the
//! lock node went with the old session).

use std::path::Path;
use std::time::Duration;

use tokio::process::Command;
use zookeeper_testkit::peers::{compile_curator_peers, kazoo_python};
use zookeeper_testkit::{chroot_for, shared_server};
use zookeeper_tokio::{Client, CreateOptions};

/// A bound on a hang: a JVM's start on a loaded machine, far past what the step needs.
const BOUND: Duration = Duration::from_secs(120);

fn peers_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peers")
}

/// Runs one peer's `enter-once` and returns the line it printed.
async fn enter_once(mut command: Command) -> String {
    let out = tokio::time::timeout(BOUND, command.kill_on_drop(true).output())
        .await
        .expect("the peer ends within its bound")
        .expect("run the peer");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned()
}

fn curator(connect: &str, base: &str, case: &str) -> Command {
    let cache = std::env::temp_dir().join("zookeeper-chaos-peer-entry");
    let classpath = compile_curator_peers(&[peers_dir().join("ChaosCurator.java")], &cache)
        .expect("compile the Curator contenders");
    let mut command = Command::new("java");
    command.args([
        "-cp",
        &classpath,
        "ChaosCurator",
        "enter-once",
        connect,
        &format!("{base}/lock"),
        &format!("{base}/inside"),
        case,
    ]);
    command
}

fn kazoo(connect: &str, base: &str, case: &str) -> Command {
    let mut command = Command::new(kazoo_python());
    command.arg(peers_dir().join("chaos_kazoo.py"));
    command.args([
        "enter-once",
        connect,
        &format!("{base}/lock"),
        &format!("{base}/inside"),
        case,
    ]);
    command
}

/// A peer's `enter-once` command: the connect string (no chroot: Curator's ensemble tracker
/// drops a chroot from it when it reconnects), the chroot its nodes go under, the case.
type Peer = fn(&str, &str, &str) -> Command;

/// Enters once for `case` (see the peers' `enter-once`) and checks the answer, and that no
/// marker was left when the answer is `lost`.
async fn entry(peer: Peer, base: &str, case: &str) -> String {
    let line = enter_once(peer(&shared_server().connect_string(), base, case)).await;
    if line == "lost" {
        let client = Client::builder(&shared_server().connect_string_with_chroot(base))
            .connect()
            .await
            .expect("connect");
        assert_eq!(
            client.exists("/inside").await.expect("exists"),
            None,
            "a marker made without the lock ({case})"
        );
    }
    line
}

/// The peer's own session takes the lock node in each case. Gone (or, for Curator, the session
/// declared expired by the client while the server keeps it): no entry, no marker. Held: the
/// marker is created; held while another's marker is there: occupied.
async fn check_peer(peer: Peer, cases: &[&str]) {
    let name = cases.join("_");
    let base = chroot_for(&format!("peer_entry_{name}"));
    for case in cases {
        assert_eq!(entry(peer, &base, case).await, "lost", "{case}");
    }
    let line = entry(peer, &base, "held").await;
    assert!(line.starts_with("inside "), "{line}");
    // The peer closed its session before it ended, and its ephemeral marker went with it.
    let other = Client::builder(&shared_server().connect_string_with_chroot(&base))
        .connect()
        .await
        .expect("connect");
    other
        .create("/inside", b"someone", &CreateOptions::ephemeral())
        .await
        .expect("another holder's marker");
    assert_eq!(entry(peer, &base, "held").await, "occupied someone");
}

#[tokio::test]
async fn a_curator_contender_enters_only_on_its_lock_nodes_session() {
    check_peer(curator, &["gone", "expired"]).await;
}

#[tokio::test]
async fn a_kazoo_contender_enters_only_while_its_lock_node_exists() {
    check_peer(kazoo, &["gone"]).await;
}
