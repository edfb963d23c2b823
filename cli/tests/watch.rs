//! `watch` streaming every change, through a reconnect, until interrupted or expired.

mod common;

use common::{zk, Running};
use serde_json::{json, Value};
use zookeeper_testkit::{chroot_for, shared_server, Proxy};
use zookeeper_tokio::{Client, CreateOptions};

async fn event(watching: &mut Running) -> Value {
    serde_json::from_str(&watching.line().await).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_change_is_streamed_through_a_reconnect() {
    let chroot = chroot_for("cli_watch");
    let client = Client::connect(&shared_server().connect_string_with_chroot(&chroot))
        .await
        .unwrap();
    client
        .create("/w", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let proxy = Proxy::start(shared_server().addr()).await.unwrap();
    let mut cmd = zk(&format!("{}{chroot}", proxy.connect_string()));
    cmd.args([
        "--json",
        "--session-timeout",
        "10s",
        "watch",
        "--recursive",
        "/w",
    ]);
    let mut watching = Running::start(cmd);
    assert_eq!(watching.stderr_line().await, "zk: watching /w");

    client
        .create("/w/a", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    client.set_data("/w/a", b"x", None).await.unwrap();
    client.delete("/w/a", None).await.unwrap();
    for kind in ["NodeCreated", "NodeDataChanged", "NodeDeleted"] {
        assert_eq!(
            event(&mut watching).await,
            json!({ "type": kind, "path": "/w/a" })
        );
    }

    // Changes made while cut off are reported once it is back.
    proxy.refuse(true);
    proxy.drop_all();
    assert_eq!(
        watching.stderr_line().await,
        "zk: connection lost; reconnecting"
    );
    client
        .create("/w/b", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    client.set_data("/w", b"y", None).await.unwrap();
    proxy.refuse(false);
    assert!(watching.stderr_line().await.starts_with("zk: reconnected"));
    let mut missed = vec![event(&mut watching).await, event(&mut watching).await];
    missed.sort_by_key(|e| e["path"].as_str().unwrap().to_owned());
    assert_eq!(
        missed,
        [
            json!({ "type": "NodeDataChanged", "path": "/w" }),
            json!({ "type": "NodeCreated", "path": "/w/b" }),
        ]
    );

    watching.signal(libc::SIGINT);
    assert_eq!(watching.wait().await.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_expiry_ends_the_stream_with_the_connection_code() {
    let chroot = chroot_for("cli_watch_expiry");
    let proxy = Proxy::start(shared_server().addr()).await.unwrap();
    let mut cmd = zk(&format!("{}{chroot}", proxy.connect_string()));
    cmd.args(["--session-timeout", "1s", "watch", "/w"]);
    let mut watching = Running::start(cmd);
    assert_eq!(watching.stderr_line().await, "zk: watching /w");
    proxy.refuse(true);
    proxy.drop_all();
    assert_eq!(watching.wait().await.code(), Some(69));
    let stderr = watching.stderr().await;
    assert!(
        stderr.ends_with(
            "Error: the session expired: the watch has ended and later changes were not seen\n"
        ),
        "{stderr}"
    );
}
