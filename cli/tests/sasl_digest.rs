//! `zk --sasl-digest` against a real server with JAAS DIGEST-MD5 users: the right password
//! reads a node only `sasl:bob` may read, a wrong one exits with the credentials code and one
//! line, and the password never shows.
#![cfg(feature = "sasl-digest")]

mod common;

use std::sync::OnceLock;
use std::time::Duration;

use common::{finish, scratch, zk};
use tokio::process::Command;
use zookeeper_testkit::{chroot_for, keep_until_exit, ZkServer};
use zookeeper_tokio::{perms, Acl, Client, CreateOptions, Id};

const BOB: (&str, &str) = ("bob", "bob-secret");
const EVE: (&str, &str) = ("eve", "eve-secret");

/// Refused credentials.
const AUTH: i32 = 77;
const ZOOKEEPER: i32 = 65;
const USAGE: i32 = 64;

/// One SASL server for this binary; each test works under its own chroot.
fn server() -> &'static ZkServer {
    static SERVER: OnceLock<&'static ZkServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let server = ZkServer::builder()
            .sasl_digest(&[BOB, EVE])
            .start_blocking()
            .expect("SASL server");
        keep_until_exit(server)
    })
}

/// A chroot holding `/bobs` (data `secret`), which only `sasl:bob` may read; its connect
/// string. Made by the client library, logged in as bob, not by `zk`.
async fn bobs_node(test: &str) -> String {
    let chroot = chroot_for(test);
    server().create_path(&chroot).unwrap();
    let connect = server().connect_string_with_chroot(&chroot);
    let bob = Client::builder(&connect)
        .session_timeout(Duration::from_secs(10))
        .sasl_digest(BOB.0, BOB.1)
        .connect()
        .await
        .unwrap();
    let only_bob = vec![Acl {
        perms: perms::ALL,
        id: Id {
            scheme: "sasl".into(),
            id: "bob".into(),
        },
    }];
    bob.create(
        "/bobs",
        b"secret",
        &CreateOptions::persistent().acl(only_bob),
    )
    .await
    .unwrap();
    connect
}

/// `zk --sasl-digest USER ARGS` with the password in `ZK_SASL_PASSWORD`.
fn as_user(connect: &str, (user, password): (&str, &str), args: &[&str]) -> Command {
    let mut cmd = zk(connect);
    cmd.env("ZK_SASL_PASSWORD", password)
        .args(["--sasl-digest", user])
        .args(args);
    cmd
}

#[tokio::test]
async fn the_right_password_reads_a_sasl_node() {
    let connect = bobs_node("cli_sasl_right").await;
    let read = finish(as_user(&connect, BOB, &["get", "/bobs"])).await;
    assert_eq!(read.ok(), "secret");
    let who = finish(as_user(&connect, BOB, &["whoami"])).await;
    assert!(who.ok().contains("sasl: bob\n"), "{}", who.text());

    // The user from ZK_SASL_USER and the password from a file, with its newline.
    let password_file = scratch("cli_sasl_right").join("password");
    std::fs::write(&password_file, format!("{}\n", BOB.1)).unwrap();
    let mut from_files = zk(&connect);
    from_files
        .env("ZK_SASL_USER", BOB.0)
        .arg("--sasl-password-file")
        .arg(&password_file)
        .args(["get", "/bobs"]);
    assert_eq!(finish(from_files).await.ok(), "secret");

    // The ACL does keep others out: another user, and no login at all.
    let eve = finish(as_user(&connect, EVE, &["get", "/bobs"])).await;
    assert!(eve.failed(ZOOKEEPER).contains("not authorised"), "{eve:?}");
    let mut anonymous = zk(&connect);
    anonymous.args(["get", "/bobs"]);
    finish(anonymous).await.failed(ZOOKEEPER);
}

#[tokio::test]
async fn a_wrong_password_is_the_credentials_code_and_one_line() {
    let connect = bobs_node("cli_sasl_wrong").await;
    for (user, password) in [("bob", "not-bobs-password"), ("mallory", "whatever")] {
        let refused = finish(as_user(&connect, (user, password), &["get", "/bobs"])).await;
        let line = refused.failed(AUTH);
        assert!(line.starts_with("Error: authentication failed"), "{line}");
        assert!(
            line.contains(&format!("{user:?}")),
            "names the login: {line}"
        );
        assert!(!line.contains(password), "the password shows: {line}");
        assert!(refused.stdout.is_empty());
    }

    // No password at all: refused before anything is sent.
    let mut no_password = zk(&connect);
    no_password.args(["--sasl-digest", "bob", "get", "/bobs"]);
    let line = finish(no_password).await;
    assert!(line.failed(USAGE).contains("ZK_SASL_PASSWORD"), "{line:?}");
}
