//! Browsing and editing commands on real nodes: text, raw bytes and JSON parsed back, errors
//! and exit codes.

mod common;

use std::process::Stdio;
use std::time::Duration;

use base64::Engine;
use common::{bounded, chroot, run, run_with, zk, Running};
use serde_json::json;
use tokio::io::AsyncWriteExt;
use zookeeper_tokio::{CreateOptions, ErrorKind};

const BINARY: &[u8] = &[0, 0xff, 0xfe, b'\n', 1, 2, 3, 0x80];

#[tokio::test]
async fn binary_data_round_trips_through_stdin_and_stdout() {
    let (connect, client) = chroot("cli_binary").await;
    let created = run_with(&connect, &["create", "-p", "/app/blob", "-"], Some(BINARY)).await;
    assert_eq!(created.ok(), "/app/blob\n");
    assert_eq!(&client.get_data("/app/blob").await.unwrap().0[..], BINARY);
    let got = run(&connect, &["get", "/app/blob"]).await;
    assert_eq!(got.code, Some(0), "{}", got.stderr);
    // Byte for byte: no newline added when stdout is not a terminal.
    assert_eq!(got.stdout, BINARY);

    // JSON: base64 with its encoding named, text when the bytes are UTF-8.
    let doc = run(&connect, &["--json", "get", "-s", "/app/blob"])
        .await
        .json();
    assert_eq!(doc["encoding"], "base64");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(doc["data"].as_str().unwrap())
        .unwrap();
    assert_eq!(decoded, BINARY);
    assert_eq!(doc["stat"]["dataLength"], BINARY.len());

    run_with(
        &connect,
        &["set", "/app/blob", "-"],
        Some("héllo".as_bytes()),
    )
    .await
    .ok();
    let doc = run(&connect, &["--json", "get", "/app/blob"]).await.json();
    assert_eq!(
        doc,
        json!({ "path": "/app/blob", "data": "héllo", "encoding": "utf-8" })
    );
    // An argument is taken as bytes too.
    run(&connect, &["set", "/app/blob", "plain"]).await.ok();
    assert_eq!(run(&connect, &["get", "/app/blob"]).await.stdout, b"plain");
}

#[tokio::test]
async fn ls_tree_find_count_and_stat_on_a_tree() {
    let (connect, client) = chroot("cli_browse").await;
    let p = CreateOptions::persistent().creating_parents();
    for path in ["/app/b/x", "/app/a/lock-1", "/app/a/lock-2", "/other"] {
        client.create(path, b"", &p).await.unwrap();
    }
    assert_eq!(run(&connect, &["ls", "/app"]).await.ok(), "a\nb\n");
    assert_eq!(
        run(&connect, &["ls", "-R", "/app"]).await.ok(),
        "/app\n/app/a\n/app/a/lock-1\n/app/a/lock-2\n/app/b\n/app/b/x\n"
    );
    let doc = run(&connect, &["--json", "ls", "-s", "/app"]).await.json();
    assert_eq!(doc["children"], json!(["a", "b"]));
    assert_eq!(doc["stat"]["numChildren"], 2);
    let doc = run(&connect, &["--json", "ls", "-R", "/app/a"])
        .await
        .json();
    assert_eq!(
        doc["nodes"],
        json!(["/app/a", "/app/a/lock-1", "/app/a/lock-2"])
    );

    assert_eq!(
        run(&connect, &["tree", "/app"]).await.ok(),
        "/app\n├── a\n│   ├── lock-1\n│   └── lock-2\n└── b\n    └── x\n"
    );
    assert_eq!(
        run(&connect, &["tree", "-L", "1", "/app"]).await.ok(),
        "/app\n├── a\n└── b\n"
    );
    let doc = run(&connect, &["--json", "tree", "/app"]).await.json();
    assert_eq!(doc["children"][0]["name"], "a");
    assert_eq!(doc["children"][0]["children"][1]["path"], "/app/a/lock-2");
    assert_eq!(doc["children"][1]["children"][0]["name"], "x");

    // zkCli's spelling of the flag, and ours.
    assert_eq!(
        run(&connect, &["find", "/", "-name", "lock-*"]).await.ok(),
        "/app/a/lock-1\n/app/a/lock-2\n"
    );
    let doc = run(&connect, &["--json", "find", "/app", "--name", "?"])
        .await
        .json();
    assert_eq!(doc["matches"], json!(["/app/a", "/app/b", "/app/b/x"]));

    assert_eq!(run(&connect, &["count", "/app"]).await.ok(), "5\n");
    assert_eq!(
        run(&connect, &["--json", "count", "/"]).await.json()["count"],
        7
    );

    let stat = client.exists("/app/a").await.unwrap().unwrap();
    let text = run(&connect, &["stat", "/app/a"]).await.ok();
    assert!(
        text.contains(&format!("cZxid = {:#x}\n", stat.czxid)),
        "{text}"
    );
    assert!(text.contains("numChildren = 2\n"), "{text}");
    let doc = run(&connect, &["--json", "stat", "/app/a"]).await.json();
    assert_eq!(doc["stat"]["czxid"], stat.czxid);
    assert_eq!(doc["stat"]["cversion"], 2);
    run(&connect, &["sync", "/app"]).await.ok();
}

#[tokio::test]
async fn create_modes_delete_versions_and_deleteall() {
    let (connect, client) = chroot("cli_edit").await;
    run(&connect, &["create", "/q", ""]).await.ok();
    assert_eq!(
        run(&connect, &["create", "-s", "/q/job-", "a"]).await.ok(),
        "/q/job-0000000000\n"
    );
    let doc = run(&connect, &["--json", "create", "-s", "/q/job-"])
        .await
        .json();
    assert_eq!(doc["path"], "/q/job-0000000001");
    run(&connect, &["create", "-c", "/box", ""]).await.ok();

    // Without -p the missing parent is an error, with the client's message.
    let missing = run(&connect, &["create", "/a/b", "x"]).await;
    assert_eq!(missing.code, Some(65));
    assert_eq!(missing.stderr, "Error: create /a/b: node does not exist\n");

    // Versions: a mismatch is a ZooKeeper error, one line.
    run(&connect, &["set", "/q", "v1"]).await.ok();
    let stale = run(&connect, &["set", "-v", "0", "/q", "v2"]).await;
    assert_eq!(stale.code, Some(65));
    assert_eq!(stale.stderr, "Error: set_data /q: version mismatch\n");
    let doc = run(&connect, &["--json", "set", "-s", "-v", "1", "/q", "v2"])
        .await
        .json();
    assert_eq!(doc["stat"]["version"], 2);
    let not_empty = run(&connect, &["delete", "/q"]).await;
    assert_eq!(not_empty.code, Some(65));
    assert_eq!(not_empty.stderr, "Error: delete /q: node has children\n");
    run(&connect, &["delete", "-v", "0", "/q/job-0000000000"])
        .await
        .ok();

    let doc = run(&connect, &["--json", "deleteall", "/q"]).await.json();
    assert_eq!(doc["deleted"], 2);
    assert!(client.exists("/q").await.unwrap().is_none());
    let gone = run(&connect, &["deleteall", "/q"]).await;
    assert_eq!(
        (gone.code, gone.stderr.as_str()),
        (Some(65), "Error: /q: node does not exist\n")
    );

    // TTL nodes need a server option the shared server does not set.
    let ttl = run(&connect, &["create", "-t", "10s", "/t", ""]).await;
    assert_eq!(ttl.code, Some(65), "{}", ttl.stderr);
    assert!(ttl.stderr.contains("not supported"), "{}", ttl.stderr);
}

#[tokio::test]
async fn an_ephemeral_lives_while_zk_runs_and_ephemerals_finds_its_owner() {
    let (connect, client) = chroot("cli_ephemeral").await;
    client
        .create("/workers", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let mut cmd = zk(&connect);
    cmd.args(["create", "-e", "/workers/w1", "up"]);
    let mut holder = Running::start(cmd);
    assert_eq!(holder.line().await, "/workers/w1");
    let owner = client
        .exists("/workers/w1")
        .await
        .unwrap()
        .unwrap()
        .ephemeral_owner;
    assert_eq!(
        run(&connect, &["ephemerals", "/workers"]).await.ok(),
        format!("/workers/w1\t{:#x}\n", owner as u64)
    );
    let doc = run(&connect, &["--json", "ephemerals"]).await.json();
    assert_eq!(doc["ephemerals"][0]["path"], "/workers/w1");

    // Interrupted, it closes its session: the node goes at once, not after the timeout.
    let (_, gone) = client.exists_and_watch("/workers/w1").await.unwrap();
    holder.signal(libc::SIGTERM);
    assert_eq!(holder.wait().await.code(), Some(0));
    bounded("the ephemeral to go", gone).await;
    assert!(client.exists("/workers/w1").await.unwrap().is_none());
}

#[tokio::test]
async fn acls_identities_and_config() {
    let (connect, client) = chroot("cli_acl").await;
    client
        .create(
            "/secret/inner",
            b"",
            &CreateOptions::persistent().creating_parents(),
        )
        .await
        .unwrap();
    assert_eq!(
        run(&connect, &["getacl", "/secret"]).await.ok(),
        "'world,'anyone\n: cdrwa\n"
    );
    run(&connect, &["setacl", "-R", "/secret", "world:anyone:rw"])
        .await
        .ok();
    for path in ["/secret", "/secret/inner"] {
        let doc = run(&connect, &["--json", "getacl", path]).await.json();
        assert_eq!(
            doc["acl"],
            json!([{ "scheme": "world", "id": "anyone", "perms": "rw" }])
        );
    }
    let bad = run(&connect, &["setacl", "/secret", "world:anyone:xyz"]).await;
    assert_eq!(bad.code, Some(64), "{}", bad.stderr);

    // Digest identities: from ZK_AUTH, and checked by addauth.
    let who = zk(&connect)
        .env("ZK_AUTH", "alice:secret")
        .arg("whoami")
        .output()
        .await
        .unwrap();
    let who = String::from_utf8(who.stdout).unwrap();
    assert!(who.contains("digest: alice\n"), "{who}");
    let added = run(&connect, &["--json", "addauth", "digest", "bob:pw"])
        .await
        .json();
    assert!(added["identities"]
        .as_array()
        .unwrap()
        .contains(&json!({ "scheme": "digest", "user": "bob" })));
    let bad_auth = run(&connect, &["--auth", "nocolon", "whoami"]).await;
    assert_eq!(bad_auth.code, Some(64));

    // The configuration is read at the servers' root whatever the chroot (a standalone
    // server lists no members).
    let doc = run(&connect, &["--chroot", "/elsewhere", "--json", "config"])
        .await
        .json();
    assert!(doc["members"].is_array(), "{doc}");
    assert_eq!(run(&connect, &["config"]).await.ok(), "version=0\n");
}

#[tokio::test]
async fn get_w_prints_the_next_change() {
    let (connect, client) = chroot("cli_get_w").await;
    client
        .create("/n", b"v1\n", &CreateOptions::persistent())
        .await
        .unwrap();
    let mut cmd = zk(&connect);
    cmd.args(["get", "-w", "/n"]);
    let mut watching = Running::start(cmd);
    // The data is printed once the watch is set: a change from then on is reported.
    assert_eq!(watching.line().await, "v1");
    client.set_data("/n", b"v2", None).await.unwrap();
    assert_eq!(watching.line().await, "NodeDataChanged /n");
    assert_eq!(watching.wait().await.code(), Some(0));

    // With nothing changing, --timeout ends it with its own code. The timeout also bounds
    // the read before the watch: long enough for a slow machine to print the data first.
    let waited = run(&connect, &["--timeout", "2s", "get", "-w", "/n"]).await;
    assert_eq!(waited.code, Some(124));
    assert_eq!(waited.stdout, b"v2");
}

#[tokio::test]
async fn get_s_puts_the_stat_on_the_lines_after_the_data() {
    let (connect, client) = chroot("cli_get_s").await;
    client
        .create("/n", b"v1", &CreateOptions::persistent())
        .await
        .unwrap();
    let text = run(&connect, &["get", "-s", "/n"]).await.ok();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("v1"), "{text}");
    assert!(lines.next().unwrap().starts_with("cZxid = 0x"), "{text}");

    // Data that ends its own line gets no blank line after it.
    client.set_data("/n", b"v2\n", None).await.unwrap();
    let text = run(&connect, &["get", "-s", "/n"]).await.ok();
    assert!(text.starts_with("v2\ncZxid = 0x"), "{text}");
    // Without -s the bytes stay as they are.
    assert_eq!(run(&connect, &["get", "/n"]).await.stdout, b"v2\n");
}

#[tokio::test]
async fn errors_are_one_line_with_distinct_codes() {
    let (connect, _client) = chroot("cli_errors").await;
    let missing = run(&connect, &["get", "/nope"]).await;
    assert_eq!(missing.code, Some(65));
    assert_eq!(
        missing.stderr,
        "Error: get_data /nope: node does not exist\n"
    );
    let stat = run(&connect, &["stat", "/nope"]).await;
    assert_eq!(
        (stat.code, stat.stderr.as_str()),
        (Some(65), "Error: /nope: node does not exist\n")
    );
    let bad_path = run(&connect, &["get", "nope"]).await;
    assert_eq!(bad_path.code, Some(64));
    assert_eq!(bad_path.stderr.lines().count(), 1, "{}", bad_path.stderr);

    // Usage errors of the parser get the usage code, help does not.
    for args in [
        &["bogus"][..],
        &["get"],
        &["--session-timeout", "soon", "ls"],
        &["ls", "--nope"],
    ] {
        let r = run(&connect, args).await;
        assert_eq!(r.code, Some(64), "{args:?}: {}", r.stderr);
        assert!(r.stderr.starts_with("Error: "), "{}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    }
    let help = run(&connect, &["lock", "--help"]).await;
    assert_eq!(help.code, Some(0));
    assert!(
        help.text().contains("zk lock /locks/deploy -- ./deploy.sh"),
        "{}",
        help.text()
    );
    let completions = run(&connect, &["completions", "bash"]).await;
    assert!(completions.ok().contains("_zk()"));
}

#[tokio::test]
async fn an_unreachable_server_fails_fast_with_the_connection_code() {
    // A port nothing listens on.
    let port = zookeeper_testkit::free_port().unwrap();
    let started = std::time::Instant::now();
    let r = run(
        &format!("127.0.0.1:{port}"),
        &["--connect-timeout", "1s", "ls", "/"],
    )
    .await;
    assert_eq!(r.code, Some(69), "{}", r.stderr);
    assert!(
        r.stderr.starts_with("Error: could not connect"),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr.lines().count(), 1);
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    // The default is a few seconds, not the session timeout.
    let started = std::time::Instant::now();
    let r = run(&format!("127.0.0.1:{port}"), &["ls", "/"]).await;
    assert_eq!(r.code, Some(69));
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}

#[tokio::test]
async fn a_closed_pipe_ends_the_listing_quietly() {
    let (connect, client) = chroot("cli_pipe").await;
    // More output than a pipe buffers.
    let creates: Vec<_> = (0..4000)
        .map(|i| {
            client.create(
                &format!("/many/node-with-a-long-name-{i:05}"),
                b"",
                &CreateOptions::persistent().creating_parents(),
            )
        })
        .collect();
    for c in creates {
        match c.await {
            Ok(_) => {}
            Err(e) if e == ErrorKind::NodeExists => {}
            Err(e) => panic!("{e}"),
        }
    }
    let mut cmd = zk(&connect);
    cmd.args(["ls", "-R", "/"]);
    let mut listing = Running::start(cmd);
    listing.line().await;
    // Like `| head -1`: read one line, then close the pipe.
    listing.close_stdout();
    let status = listing.wait().await;
    assert_eq!(status.code(), Some(0));
    assert_eq!(listing.stderr().await, "");
}

/// `--timeout` bounds the whole command, connecting included: a server that accepts the
/// connection and never answers ends the command at `--timeout` with its exit code, not at
/// the (longer) connect timeout with the connection's.
#[tokio::test]
async fn the_timeout_counts_the_time_to_connect() {
    let proxy = zookeeper_testkit::Proxy::start(zookeeper_testkit::shared_server().addr())
        .await
        .unwrap();
    proxy.black_hole(true);
    let r = run(
        &proxy.connect_string(),
        &["--timeout", "1s", "--connect-timeout", "60s", "ls", "/"],
    )
    .await;
    assert_eq!(r.code, Some(124), "{}", r.stderr);
    assert_eq!(
        r.stderr,
        "Error: no server accepted a session within --timeout (1s)\n"
    );
}

#[tokio::test]
async fn deleting_the_root_is_a_usage_error_that_says_so() {
    let (connect, _client) = chroot("cli_delete_root").await;
    let r = run(&connect, &["delete", "/"]).await;
    assert_eq!(r.code, Some(64), "{}", r.stderr);
    assert_eq!(
        r.stderr,
        "Error: delete /: the root node cannot be deleted\n"
    );
}

/// Data piped in slowly is read before the session opens: the read used to hold the session's
/// only thread, so that no ping went out, and a write sent after a pause longer than the
/// session timeout failed on an expired session (or after the server had applied it).
#[tokio::test]
async fn data_piped_in_slowly_is_written_on_a_live_session() {
    let (connect, client) = chroot("cli_slow_stdin").await;
    client
        .create("/n", b"old", &CreateOptions::persistent())
        .await
        .unwrap();
    let mut cmd = zk(&connect);
    cmd.args(["--session-timeout", "1s", "set", "/n", "-"])
        .stdin(Stdio::piped());
    let mut running = Running::start(cmd);
    let mut stdin = running.child.stdin.take().unwrap();
    stdin.write_all(b"new").await.unwrap();
    // The pause the scenario needs: past the session timeout, with the input still open.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    drop(stdin);
    let status = running.wait().await;
    let stderr = running.stderr().await;
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(&client.get_data("/n").await.unwrap().0[..], b"new");
}

/// `--timeout` bounds a read of standard input that does not end.
#[tokio::test]
async fn the_timeout_bounds_a_read_of_standard_input() {
    let (connect, client) = chroot("cli_stdin_timeout").await;
    let mut cmd = zk(&connect);
    cmd.args(["--timeout", "1s", "create", "/n", "-"])
        .stdin(Stdio::piped());
    let mut running = Running::start(cmd);
    let _stdin = running.child.stdin.take().unwrap();
    let status = running.wait().await;
    let stderr = running.stderr().await;
    assert_eq!(status.code(), Some(124), "{stderr}");
    assert_eq!(stderr, "Error: timed out reading standard input\n");
    assert_eq!(client.exists("/n").await.unwrap(), None);
}

/// A standard error that cannot be written loses its lines, not the exit code: `eprintln!`
/// panicked there, and the panic's own line aborted the process (134).
#[tokio::test]
async fn an_unwritable_stderr_keeps_the_exit_code() {
    let (connect, _client) = chroot("cli_full_stderr").await;
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let mut cmd = zk(&connect);
    cmd.args(["get", "/nope"]).stderr(Stdio::from(full));
    let status = bounded("zk", cmd.status()).await.unwrap();
    assert_eq!(status.code(), Some(65), "{status:?}");
}
