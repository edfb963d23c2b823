//! The peers' entry into the critical section, checked on its own: a Curator or kazoo
//! contender creates its marker only while its lock node exists.
//!
//! Both peers' libraries retry an operation after a session expiry on the new session
//! (Curator's retry loop does it for every operation; the kazoo contender tries its create
//! again after a lost connection, by which time kazoo may have started a new session). A
//! marker created unguarded then appears after the lock went with the old session, while the
//! next holder is inside: the checker reports a violation that the peer contender made, not
//! the lock. A lock node that is gone stands for that case here.

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

fn curator(connect: &str, node: &str, marker: &str) -> Command {
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
        node,
        marker,
    ]);
    command
}

fn kazoo(connect: &str, node: &str, marker: &str) -> Command {
    let mut command = Command::new(kazoo_python());
    command.arg(peers_dir().join("chaos_kazoo.py"));
    command.args(["enter-once", connect, node, marker]);
    command
}

/// Lock node gone: no marker. Lock node there: the marker is created, and a second entry
/// finds it occupied.
async fn check_peer(peer: fn(&str, &str, &str) -> Command, name: &str) {
    let connect =
        shared_server().connect_string_with_chroot(&chroot_for(&format!("peer_entry_{name}")));
    let client = Client::builder(&connect).connect().await.expect("connect");

    let line = enter_once(peer(&connect, "/lock/gone-0000000001", "/inside")).await;
    assert_eq!(line, "lost", "{name}: entered without its lock node");
    assert_eq!(
        client.exists("/inside").await.expect("exists"),
        None,
        "{name} made a marker without its lock node"
    );

    client
        .create("/lock", b"", &CreateOptions::persistent())
        .await
        .expect("create the lock's parent");
    client
        .create("/lock/held-0000000001", b"", &CreateOptions::persistent())
        .await
        .expect("create a lock node");
    let line = enter_once(peer(&connect, "/lock/held-0000000001", "/inside")).await;
    assert!(line.starts_with("inside "), "{name}: {line}");
    // The peer closed its session before it ended, and its ephemeral marker went with it.
    let other = Client::builder(&connect).connect().await.expect("connect");
    other
        .create("/inside", b"someone", &CreateOptions::ephemeral())
        .await
        .expect("another holder's marker");
    let line = enter_once(peer(&connect, "/lock/held-0000000001", "/inside")).await;
    assert_eq!(line, "occupied someone", "{name}");
}

#[tokio::test]
async fn a_curator_contender_enters_only_while_its_lock_node_exists() {
    check_peer(curator, "curator").await;
}

#[tokio::test]
async fn a_kazoo_contender_enters_only_while_its_lock_node_exists() {
    check_peer(kazoo, "kazoo").await;
}
