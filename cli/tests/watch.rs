//! `watch` streaming every change, through a reconnect, until interrupted or expired.

mod common;

use common::{chroot, zk, Running};
use serde_json::{json, Value};
use zookeeper_testkit::{chroot_for, shared_server, Proxy};
use zookeeper_tokio::{Client, CreateOptions};

/// The next event, without its time (checked to be there).
async fn event(watching: &mut Running) -> Value {
    let mut event: Value = serde_json::from_str(&watching.line().await).unwrap();
    let time = event.as_object_mut().unwrap().remove("time");
    assert!(time.is_some_and(|t| t.is_i64()), "{event}");
    event
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_zxid_and_time_come_with_each_event() {
    let (connect, client) = chroot("cli_watch_data").await;
    client
        .create("/w", b"v0", &CreateOptions::persistent())
        .await
        .unwrap();

    let mut cmd = zk(&connect);
    cmd.args(["--json", "watch", "--data", "/w"]);
    let mut watching = Running::start(cmd);
    assert_eq!(watching.stderr_line().await, "zk: watching /w");
    let before = now_ms();
    let stat = client.set_data("/w", b"v1", None).await.unwrap();
    let mut event: Value = serde_json::from_str(&watching.line().await).unwrap();
    let after = now_ms();
    let time = event["time"].as_i64().unwrap();
    assert!(
        before <= time && time <= after,
        "{before} <= {time} <= {after}"
    );
    assert_eq!(event["stat"]["mzxid"], json!(stat.mzxid), "{event}");
    event.as_object_mut().unwrap().remove("time");
    event.as_object_mut().unwrap().remove("stat");
    assert_eq!(
        event,
        json!({ "type": "NodeDataChanged", "path": "/w", "data": "v1", "encoding": "utf-8" })
    );
    watching.signal(libc::SIGINT);
    assert_eq!(watching.wait().await.code(), Some(0));

    // Text: the time, the event, the zxid and the data; a deleted node has none.
    let mut cmd = zk(&connect);
    cmd.args(["watch", "--data", "/w"]);
    let mut watching = Running::start(cmd);
    assert_eq!(watching.stderr_line().await, "zk: watching /w");
    let stat = client.set_data("/w", b"v2", None).await.unwrap();
    let line = watching.line().await;
    let (time, rest) = line.split_once(' ').unwrap();
    assert!(
        time.len() == "2026-11-26T14:50:01.123Z".len() && time.ends_with('Z'),
        "{line}"
    );
    assert_eq!(
        rest,
        format!("NodeDataChanged /w mzxid={:#x} data=\"v2\"", stat.mzxid)
    );
    client.delete("/w", None).await.unwrap();
    let line = watching.line().await;
    assert!(line.ends_with(" NodeDeleted /w (no such node)"), "{line}");
    watching.signal(libc::SIGINT);
    assert_eq!(watching.wait().await.code(), Some(0));
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
