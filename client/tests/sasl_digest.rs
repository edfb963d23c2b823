//! SASL DIGEST-MD5 against a real server with JAAS users (`--features sasl-digest`).
#![cfg(feature = "sasl-digest")]

mod common;

use std::sync::OnceLock;
use std::time::Duration;

use common::{init_tracing, next_state, within};
use zookeeper_testkit::{unique_chroot, Proxy, ZkServer};
use zookeeper_tokio::{perms, Acl, Client, CreateOptions, Error, ErrorKind, Id, SessionState};

const BOB: (&str, &str) = ("bob", "bob-secret");
const EVE: (&str, &str) = ("eve", "eve-secret");

/// One SASL server for this binary; each test works under its own chroot.
fn server() -> &'static ZkServer {
    static SERVER: OnceLock<ZkServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        ZkServer::builder()
            .sasl_digest(&[BOB, EVE])
            .start_blocking()
            .expect("SASL server")
    })
}

fn sasl_acl(user: &str) -> Vec<Acl> {
    vec![Acl {
        perms: perms::ALL,
        id: Id {
            scheme: "sasl".into(),
            id: user.into(),
        },
    }]
}

async fn login(connect: &str, (user, password): (&str, &str)) -> Result<Client, Error> {
    init_tracing();
    Client::builder(connect)
        .session_timeout(Duration::from_secs(10))
        .sasl_digest(user, password)
        .connect()
        .await
}

fn connect_string(test: &str) -> String {
    let chroot = unique_chroot(test);
    server().create_path(&chroot).unwrap();
    server().connect_string_with_chroot(&chroot)
}

#[tokio::test]
async fn a_sasl_acl_admits_its_user_and_refuses_another() {
    let connect = connect_string("sasl_acl");
    let bob = login(&connect, BOB).await.unwrap();
    bob.create(
        "/bobs",
        b"secret",
        &CreateOptions::persistent().acl(sasl_acl("bob")),
    )
    .await
    .unwrap();
    let (data, _) = bob.get_data("/bobs").await.unwrap();
    assert_eq!(&data[..], b"secret");
    let (acl, _) = bob.get_acl("/bobs").await.unwrap();
    assert_eq!(acl, sasl_acl("bob"), "the server keeps the sasl identity");

    let eve = login(&connect, EVE).await.unwrap();
    assert_eq!(eve.get_data("/bobs").await.unwrap_err(), ErrorKind::NoAuth);
    let anonymous = Client::connect(&connect).await.unwrap();
    assert_eq!(
        anonymous.get_data("/bobs").await.unwrap_err(),
        ErrorKind::NoAuth
    );
}

#[tokio::test]
async fn a_wrong_password_fails_connect_with_auth_failed() {
    let connect = connect_string("sasl_wrong_password");
    let err = login(&connect, ("bob", "not-bobs")).await.unwrap_err();
    assert_eq!(err, ErrorKind::AuthFailed);
    let err = login(&connect, ("mallory", "whatever")).await.unwrap_err();
    assert_eq!(err, ErrorKind::AuthFailed);
}

#[tokio::test]
async fn the_session_logs_in_again_after_a_reconnect() {
    let chroot = unique_chroot("sasl_relogin");
    server().create_path(&chroot).unwrap();
    let proxy = Proxy::start(server().addr()).await.unwrap();
    let bob = login(&format!("{}{chroot}", proxy.connect_string()), BOB)
        .await
        .unwrap();
    bob.create(
        "/bobs",
        b"v1",
        &CreateOptions::persistent().acl(sasl_acl("bob")),
    )
    .await
    .unwrap();
    let session = bob.session_id();
    for round in 0..2 {
        let mut changes = bob.state_changes();
        proxy.drop_all();
        next_state(&mut changes, |s| s == SessionState::Disconnected).await;
        next_state(&mut changes, |s| s == SessionState::Connected).await;
        // A connection without the login would get NoAuth here.
        let (data, _) = within("read after reconnect", bob.get_data("/bobs"))
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(&data[..], b"v1");
        assert_eq!(bob.session_id(), session, "the same session");
    }
}

#[tokio::test]
async fn a_server_requiring_sasl_serves_a_client_that_logs_in() {
    init_tracing();
    let server = ZkServer::builder()
        .sasl_digest(&[BOB])
        .require_sasl()
        .start()
        .await
        .unwrap();
    let bob = login(&server.connect_string(), BOB).await.unwrap();
    bob.create("/x", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    assert!(bob.exists("/x").await.unwrap().is_some());
    assert_eq!(
        login(&server.connect_string(), ("bob", "wrong"))
            .await
            .unwrap_err(),
        ErrorKind::AuthFailed
    );
}

#[test]
fn debug_output_never_shows_the_password() {
    let builder = Client::builder("127.0.0.1:1").sasl_digest("bob", "hunter2-secret");
    let text = format!("{builder:?}");
    assert!(text.contains("bob"), "{text}");
    assert!(!text.contains("hunter2-secret"), "{text}");
}
