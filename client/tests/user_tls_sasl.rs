//! TLS and SASL together, as `docs/tls-and-sasl.md` promises ("a server may serve SASL on its
//! secure port, and a client may give both"), set up the documented way against a server the
//! testkit starts: a certificate identity and a DIGEST-MD5 login on one session, across a
//! server restart; a wrong password over TLS fails typed, terminal, and never printed
//! (`--features sasl-digest`).
#![cfg(feature = "sasl-digest")]

use std::time::Duration;

use zookeeper_testkit::{bounded, ClientAuth, TlsOptions, ZkServer};
use zookeeper_tokio::{
    perms, Acl, Client, ClientInfo, CreateOptions, ErrorKind, Id, SessionState, TlsConfig,
};

const PASSWORD: &str = "bob-secret-3f9a";

/// The session's identities by certificate and by login (the server adds `ip` too).
fn identities(infos: &[ClientInfo]) -> Vec<(String, String)> {
    let mut ids: Vec<(String, String)> = infos
        .iter()
        .filter(|i| i.auth_scheme != "ip")
        .map(|i| (i.auth_scheme.clone(), i.user.clone()))
        .collect();
    ids.sort();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_session_over_tls_with_a_certificate_and_a_digest_login_survives_a_restart() {
    let server = ZkServer::builder()
        .tls(TlsOptions::new().client_auth(ClientAuth::Need))
        .sasl_digest(&[("bob", PASSWORD)])
        .require_sasl()
        .start()
        .await
        .unwrap();
    let tls = server.tls().unwrap();
    let dir = server.dir().join("client-tls");
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("client.pem"), dir.join("client.key"));
    tls.client_identity("deployer")
        .unwrap()
        .write_files(&cert, &key)
        .unwrap();
    let connect = server.secure_connect_string().unwrap();
    // The guide's client, with the login added.
    let config = TlsConfig::with_ca_file(tls.ca_file()).client_cert_files(&cert, &key);
    let client = bounded(
        "connect",
        Client::builder(&connect)
            .tls(config.clone())
            .sasl_digest("bob", PASSWORD)
            .session_timeout(Duration::from_secs(30))
            .connect(),
    )
    .await
    .unwrap();
    let both = vec![
        ("sasl".to_string(), "bob".to_string()),
        ("x509".to_string(), "CN=deployer".to_string()),
    ];
    let me = bounded("who_am_i", client.who_am_i()).await.unwrap();
    assert_eq!(identities(&me), both, "{me:?}");
    // A node only bob may touch, and one only the certificate may.
    let only = |scheme: &str, id: &str| {
        vec![Acl {
            perms: perms::ALL,
            id: Id {
                scheme: scheme.into(),
                id: id.into(),
            },
        }]
    };
    client
        .create(
            "/bobs",
            b"",
            &CreateOptions::persistent().acl(only("sasl", "bob")),
        )
        .await
        .unwrap();
    client
        .create(
            "/deployers",
            b"",
            &CreateOptions::persistent().acl(only("x509", "CN=deployer")),
        )
        .await
        .unwrap();

    // Restarted: the session comes back over TLS, logged in again, with both identities.
    let session = client.session_id();
    let mut states = client.state_changes();
    server.kill();
    bounded(
        "disconnected",
        states.wait_for(|s| s == SessionState::Disconnected),
    )
    .await
    .unwrap();
    bounded("restart", server.restart()).await.unwrap();
    bounded(
        "connected",
        states.wait_for(|s| s == SessionState::Connected),
    )
    .await
    .unwrap();
    assert_eq!(client.session_id(), session);
    let me = bounded("who_am_i", client.who_am_i()).await.unwrap();
    assert_eq!(identities(&me), both, "after the restart: {me:?}");
    bounded("bob's", client.set_data("/bobs", b"1", None))
        .await
        .unwrap();
    bounded("the deployer's", client.set_data("/deployers", b"1", None))
        .await
        .unwrap();

    // A wrong password over TLS: refused, typed, and the password is not printed.
    let wrong = "not-bobs-7c1e";
    let e = bounded(
        "wrong password",
        Client::builder(&connect)
            .tls(config.clone())
            .sasl_digest("bob", wrong)
            .connect(),
    )
    .await
    .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::AuthFailed), "{e:?}");
    for shown in [format!("{e}"), format!("{e:?}")] {
        assert!(
            !shown.contains(wrong) && !shown.contains(PASSWORD),
            "{shown}"
        );
    }
    // A client that forgets the login, on a server that requires one: the server refuses its
    // first request and drops the connection, and would do so on every reconnect. The
    // session ends, typed as a refused login, instead of reading `Connected` while
    // nothing works.
    let forgot = bounded(
        "certificate only",
        Client::builder(&connect).tls(config).connect(),
    )
    .await
    .unwrap();
    let e = bounded("a request without the login", forgot.get_data("/bobs"))
        .await
        .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::AuthFailed), "{e:?}");
    assert!(e.kind().is_session_terminal());
    assert_eq!(e.to_string(), "get_data /bobs: authentication failed");
    assert_eq!(forgot.state(), SessionState::AuthFailed);
    let again = bounded("a second request", forgot.exists("/"))
        .await
        .unwrap_err();
    assert!(matches!(again.kind(), ErrorKind::AuthFailed), "{again:?}");
}
