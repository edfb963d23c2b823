//! TLS against real servers: a session over the secure client port, failover in a TLS
//! ensemble, every certificate failure named and not retried in a storm, and a client
//! certificate rotated on disk.
//!
//! The servers require client certificates and run ZooKeeper's x509 provider, so `whoAmI`
//! and `auth` ACLs show, from the server's side, which certificate a connection presented.
#![cfg(feature = "tls")]

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use common::{next_state, wait_state, within};
use zookeeper_testkit::{
    keep_until_exit, CertificateAuthority, ClientAuth, Ensemble, Identity, Proxy, TlsOptions,
    ZkServer,
};
use zookeeper_tokio::{
    Acl, AddWatchMode, Client, ClientBuilder, ClientInfo, CreateOptions, Error, ErrorKind,
    EventType, MultiOp, ReadOp, ReadResult, SessionState, TlsCause, TlsConfig,
};

/// Bound for waits that include JVM restarts or an election.
const SLOW: Duration = Duration::from_secs(60);

/// The ensemble tests run one at a time: three JVMs each on a shared two-core machine.
static ONE_ENSEMBLE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The server every test here shares: TLS on its secure port, client certificates required.
fn server() -> &'static ZkServer {
    static SERVER: OnceLock<&'static ZkServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        common::init_tracing();
        let server = ZkServer::builder()
            .tls(TlsOptions::new().client_auth(ClientAuth::Need))
            .start_blocking()
            .expect("TLS server starts");
        keep_until_exit(server)
    })
}

fn ca_pem() -> &'static str {
    server().tls().expect("TLS").ca_pem()
}

fn identity(name: &str) -> Identity {
    server()
        .tls()
        .expect("TLS")
        .client_identity(name)
        .expect("client certificate")
}

/// Trusts the server's authority and presents `identity`.
fn tls_as(identity: &Identity) -> TlsConfig {
    TlsConfig::with_ca_pem(ca_pem()).client_cert_pem(identity.cert_pem(), identity.key_pem())
}

fn builder(connect: &str, tls: TlsConfig) -> ClientBuilder {
    common::init_tracing();
    Client::builder(connect)
        .tls(tls)
        .session_timeout(Duration::from_secs(10))
        // Not the default (the session timeout, at most 5 s): a JVM's TLS handshakes on a
        // loaded machine may take longer. Tests of connect failures set their own.
        .connect_timeout(SLOW)
}

fn tls_cause(err: &Error) -> TlsCause {
    match err.kind() {
        ErrorKind::Tls { cause, .. } => *cause,
        other => panic!("expected a TLS failure, got {other:?}"),
    }
}

/// `localhost:PORT` of a proxy in front of the secure port: the name the certificate carries,
/// and a count of the connections the client makes.
async fn proxy() -> (Proxy, String) {
    let proxy = Proxy::start(server().secure_addr().expect("secure port"))
        .await
        .expect("proxy");
    let connect = format!("localhost:{}", proxy.addr().port());
    (proxy, connect)
}

/// Connecting fails with a TLS failure of `cause`, after one attempt (the only server failed
/// on TLS: there is nothing to wait for), long before the connect timeout.
async fn assert_refused(tls: TlsConfig, connect_name: &str, cause: TlsCause) -> String {
    assert_refused_after(tls, connect_name, cause, 1).await
}

async fn assert_refused_after(
    tls: TlsConfig,
    connect_name: &str,
    cause: TlsCause,
    connections: u64,
) -> String {
    let (proxy, connect) = proxy().await;
    let connect = connect.replace("localhost", connect_name);
    let started = tokio::time::Instant::now();
    let err = builder(&connect, tls)
        .connect_timeout(SLOW)
        .connect()
        .await
        .expect_err("connect must fail");
    assert_eq!(tls_cause(&err), cause, "{err}");
    assert!(
        started.elapsed() < SLOW / 2,
        "failed only at the connect timeout: {:?}",
        started.elapsed()
    );
    assert_eq!(
        proxy.accepted(),
        connections,
        "attempts made, and no retry storm: {err}"
    );
    err.to_string()
}

fn whoami_x509(infos: &[ClientInfo]) -> Vec<String> {
    infos
        .iter()
        .filter(|i| i.auth_scheme == "x509")
        .map(|i| i.user.clone())
        .collect()
}

#[tokio::test]
async fn a_session_over_tls_does_every_operation() {
    let alice = identity("alice");
    let chroot = zookeeper_testkit::unique_chroot("tls_every_operation");
    server().create_path(&chroot).unwrap();
    let connect = server().secure_connect_string().unwrap();
    let c = builder(&format!("{connect}{chroot}"), tls_as(&alice))
        .connect()
        .await
        .unwrap();

    assert_eq!(
        whoami_x509(&c.who_am_i().await.unwrap()),
        vec![alice.subject().to_owned()]
    );
    let (path, _) = c
        .create("/a", b"one", &CreateOptions::persistent())
        .await
        .unwrap();
    assert_eq!(path, "/a");
    let (data, stat) = c.get_data("/a").await.unwrap();
    assert_eq!(&data[..], b"one");
    let (_, _, watcher) = c.get_data_and_watch("/a").await.unwrap();
    c.set_data("/a", b"two", Some(stat.version)).await.unwrap();
    let event = within("data watch", watcher).await;
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NodeDataChanged, "/a")
    );
    let mut children = c.add_watch("/a", AddWatchMode::Persistent).await.unwrap();
    c.create("/a/e", b"", &CreateOptions::ephemeral_sequential())
        .await
        .unwrap();
    assert_eq!(
        within("persistent watch", children.next())
            .await
            .unwrap()
            .event_type,
        EventType::NodeChildrenChanged
    );
    assert_eq!(c.get_children("/a").await.unwrap().0.len(), 1);
    assert!(c.exists("/a").await.unwrap().is_some());
    assert_eq!(c.get_ephemerals("/").await.unwrap().len(), 1);
    c.sync("/a").await.unwrap();

    // Larger than a TLS record (16 KiB) many times over, and many requests in one batch.
    let big = vec![7u8; 900 * 1024];
    c.set_data("/a", &big, None).await.unwrap();
    assert_eq!(c.get_data("/a").await.unwrap().0.len(), big.len());
    let reads: Vec<_> = (0..2000).map(|_| c.exists("/a")).collect();
    for read in reads {
        assert!(read.await.unwrap().is_some());
    }
    let results = c
        .multi(vec![
            MultiOp::create("/b", b"", &CreateOptions::persistent()),
            MultiOp::set_data("/b", b"multi", None),
        ])
        .await
        .unwrap();
    assert_eq!(results.len(), 2);
    let read = c.multi_read(vec![ReadOp::get_data("/b")]).await.unwrap();
    assert!(matches!(&read[0], ReadResult::Data { data, .. } if &data[..] == b"multi"));

    // An `auth` ACL becomes the certificate's identity on the server: alice may read, a
    // session presenting bob's certificate may not.
    c.create(
        "/private",
        b"s",
        &CreateOptions::persistent().acl(Acl::creator_all()),
    )
    .await
    .unwrap();
    let (acl, _) = c.get_acl("/private").await.unwrap();
    assert_eq!(acl[0].id.scheme, "x509");
    assert_eq!(acl[0].id.id, alice.subject());
    let bob = builder(&format!("{connect}{chroot}"), tls_as(&identity("bob")))
        .connect()
        .await
        .unwrap();
    assert_eq!(
        bob.get_data("/private").await.unwrap_err(),
        ErrorKind::NoAuth
    );
    bob.close().await;
    assert_eq!(&c.get_data("/private").await.unwrap().0[..], b"s");

    c.delete("/b", None).await.unwrap();
    c.close().await;
}

#[tokio::test]
async fn a_server_certificate_from_an_unknown_authority_fails_connect_at_once() {
    let alice = identity("alice-unknown-ca");
    let other = CertificateAuthority::new("not the server's").unwrap();
    let tls =
        TlsConfig::with_ca_pem(other.cert_pem()).client_cert_pem(alice.cert_pem(), alice.key_pem());
    let message = assert_refused(tls, "localhost", TlsCause::UntrustedServer).await;
    assert!(message.contains("UnknownIssuer"), "{message}");
}

#[tokio::test]
async fn a_server_certificate_for_another_name_fails_connect_at_once() {
    // The certificate names `localhost`; the client dials 127.0.0.1.
    let message = assert_refused(
        tls_as(&identity("alice-wrong-name")),
        "127.0.0.1",
        TlsCause::HostnameMismatch,
    )
    .await;
    assert!(message.contains("127.0.0.1"), "{message}");
}

#[tokio::test]
async fn a_missing_client_certificate_fails_connect_at_once() {
    let message = assert_refused(
        TlsConfig::with_ca_pem(ca_pem()),
        "localhost",
        TlsCause::ClientCertificateRequired,
    )
    .await;
    assert!(message.contains("none is configured"), "{message}");
}

#[tokio::test]
async fn a_client_certificate_of_another_authority_fails_connect_at_once() {
    let stranger = CertificateAuthority::new("elsewhere")
        .unwrap()
        .client_identity("mallory")
        .unwrap();
    assert_refused(
        tls_as(&stranger),
        "localhost",
        TlsCause::ClientCertificateRefused,
    )
    .await;
}

#[tokio::test]
async fn unreadable_certificate_files_fail_connect_at_once() {
    let missing = PathBuf::from("/nonexistent/zookeeper-tls/client.pem");
    let tls = TlsConfig::with_ca_pem(ca_pem()).client_cert_files(&missing, &missing);
    // Nothing is sent: the configuration fails before any connection.
    let message = assert_refused_after(tls, "localhost", TlsCause::Configuration, 0).await;
    assert!(
        message.contains("/nonexistent/zookeeper-tls/client.pem"),
        "{message}"
    );
}

#[tokio::test]
async fn tls_to_a_plain_port_is_never_downgraded() {
    // The server's plain port: TLS bytes are not ZooKeeper, the server hangs up, and the
    // client keeps trying TLS until the timeout instead of falling back to plain TCP.
    let plain = format!("localhost:{}", server().port());
    let err = builder(&plain, tls_as(&identity("alice-plain")))
        .connect_timeout(Duration::from_secs(2))
        .connect()
        .await
        .expect_err("a plain port does not speak TLS");
    assert!(matches!(err.kind(), ErrorKind::Connect(_)), "{err:?}");
}

/// A client without TLS on the secure port: the server closes the connection before
/// answering, and the error names a TLS-only port among the causes.
#[tokio::test]
async fn plain_tcp_to_the_secure_port_names_a_tls_only_port_among_the_causes() {
    let secure = server().secure_addr().expect("secure port").to_string();
    let err = Client::builder(&secure)
        .connect_timeout(Duration::from_secs(2))
        .connect()
        .await
        .expect_err("the secure port speaks only TLS");
    assert!(matches!(err.kind(), ErrorKind::Connect(_)), "{err:?}");
    assert!(
        err.to_string().contains("serves only TLS on this port"),
        "{err}"
    );
}

#[tokio::test]
async fn hostname_verification_can_be_turned_off_but_the_chain_is_still_checked() {
    let alice = identity("alice-any-name");
    let (proxy, connect) = proxy().await;
    let by_ip = connect.replace("localhost", "127.0.0.1");
    let c = builder(
        &by_ip,
        tls_as(&alice).danger_disable_hostname_verification(),
    )
    .connect()
    .await
    .expect("the name is not checked");
    assert!(c.exists("/").await.unwrap().is_some());
    c.close().await;
    drop(proxy);

    let other = CertificateAuthority::new("still not the server's").unwrap();
    let tls = TlsConfig::with_ca_pem(other.cert_pem())
        .client_cert_pem(alice.cert_pem(), alice.key_pem())
        .danger_disable_hostname_verification();
    assert_refused(tls, "127.0.0.1", TlsCause::UntrustedServer).await;
}

/// Rotation: the client's certificate files are replaced on disk; the next connection
/// presents the new certificate, as the server's `whoAmI` shows, in the same session.
#[tokio::test]
async fn a_rotated_client_certificate_is_used_on_the_next_reconnect() {
    let dir = std::env::temp_dir().join(format!("zk-tls-rotation-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("client.pem"), dir.join("client.key"));
    let first = identity("rotation-first");
    let second = identity("rotation-second");
    first.write_files(&cert, &key).unwrap();

    let (proxy, connect) = proxy().await;
    let tls =
        TlsConfig::with_ca_file(server().tls().unwrap().ca_file()).client_cert_files(&cert, &key);
    let c = builder(&connect, tls).connect().await.unwrap();
    let session = c.session_id();
    assert_eq!(
        whoami_x509(&c.who_am_i().await.unwrap()),
        vec![first.subject().to_owned()]
    );

    second.write_files(&cert, &key).unwrap();
    let mut changes = c.state_changes();
    proxy.drop_all();
    next_state(&mut changes, |s| s == SessionState::Disconnected).await;
    next_state(&mut changes, |s| s == SessionState::Connected).await;
    assert_eq!(c.session_id(), session, "the same session, resumed");
    assert_eq!(
        whoami_x509(&c.who_am_i().await.unwrap()),
        vec![second.subject().to_owned()],
        "the server sees the rotated certificate"
    );
    c.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A session whose certificate turns bad keeps trying, paced by the backoff (no storm), and
/// recovers by itself once a good certificate is back on disk.
#[tokio::test]
async fn a_session_whose_certificate_is_refused_backs_off_and_recovers() {
    let dir = std::env::temp_dir().join(format!("zk-tls-backoff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("client.pem"), dir.join("client.key"));
    let good = identity("backoff-good");
    good.write_files(&cert, &key).unwrap();

    let (proxy, connect) = proxy().await;
    let tls = TlsConfig::with_ca_pem(ca_pem()).client_cert_files(&cert, &key);
    let c = builder(&connect, tls)
        .session_timeout(Duration::from_secs(30))
        .connect()
        .await
        .unwrap();
    c.create(
        &format!("/backoff-{}", std::process::id()),
        b"",
        &CreateOptions::ephemeral(),
    )
    .await
    .unwrap();

    let stranger = CertificateAuthority::new("rogue")
        .unwrap()
        .client_identity("backoff-bad")
        .unwrap();
    stranger.write_files(&cert, &key).unwrap();
    let start = tokio::time::Instant::now();
    let before = proxy.accepted();
    proxy.drop_all();
    wait_state(&c, |s| s == SessionState::Disconnected).await;
    // It keeps trying: a second attempt comes once the first one's TLS handshake has failed,
    // however long the server takes over it on a loaded machine.
    tokio::time::timeout(SLOW, proxy.wait_accepted(before + 2))
        .await
        .expect("a second attempt");
    // Paced by the backoff, which doubles from 50 ms (jittered down to half) to 1 s between
    // attempts: over at least three seconds, no more attempts than it allows in the time
    // measured (a slow machine only makes fewer). A loop without backoff would make thousands.
    tokio::time::sleep_until(start + Duration::from_secs(3)).await;
    let attempts = proxy.accepted() - before;
    let elapsed = start.elapsed();
    let most = common::most_attempts_within(elapsed);
    assert!(
        attempts <= most,
        "{attempts} attempts in {elapsed:?}, more than the backoff's {most}"
    );
    assert_eq!(c.state(), SessionState::Disconnected);

    good.write_files(&cert, &key).unwrap();
    wait_state(&c, |s| s == SessionState::Connected).await;
    assert!(c
        .exists(&format!("/backoff-{}", std::process::id()))
        .await
        .unwrap()
        .is_some());
    c.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// Over TLS 1.3 a client learns that its certificate was refused only after its side of the
/// handshake is done, on its first read: the failure must still be named.
#[tokio::test]
async fn a_refusal_after_a_tls13_handshake_is_named_too() {
    let server = ZkServer::builder()
        .tls(TlsOptions::new().client_auth(ClientAuth::Need))
        .config("ssl.protocol", "TLSv1.3")
        .config("ssl.enabledProtocols", "TLSv1.3")
        // 3.8's default cipher list has TLS 1.2 suites only.
        .config(
            "ssl.ciphersuites",
            "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384",
        )
        .start()
        .await
        .expect("TLS 1.3 server");
    let tls = server.tls().unwrap();
    let connect = server.secure_connect_string().unwrap();
    let err = builder(&connect, TlsConfig::with_ca_pem(tls.ca_pem()))
        .connect_timeout(SLOW)
        .connect()
        .await
        .expect_err("no client certificate");
    assert_eq!(
        tls_cause(&err),
        TlsCause::ClientCertificateRequired,
        "{err}"
    );

    let alice = tls.client_identity("alice-13").unwrap();
    let config =
        TlsConfig::with_ca_pem(tls.ca_pem()).client_cert_pem(alice.cert_pem(), alice.key_pem());
    let c = builder(&connect, config).connect().await.unwrap();
    assert_eq!(
        whoami_x509(&c.who_am_i().await.unwrap()),
        vec![alice.subject().to_owned()]
    );
    c.close().await;
}

/// A TLS ensemble: the client follows its session across the loss of the member it is on,
/// and the session keeps its ephemeral node and its watch.
#[tokio::test]
async fn a_tls_session_survives_the_loss_of_its_member() {
    let _serial = ONE_ENSEMBLE_AT_A_TIME.lock().await;
    common::init_tracing();
    let ensemble = Ensemble::builder(3)
        .tls(TlsOptions::new().client_auth(ClientAuth::Need))
        .start()
        .await
        .expect("TLS ensemble");
    let tls = ensemble.tls().unwrap();
    let mut proxies = Vec::new();
    for addr in ensemble.secure_addrs() {
        proxies.push(Proxy::start(*addr).await.expect("proxy"));
    }
    let connect: Vec<String> = proxies
        .iter()
        .map(|p| format!("localhost:{}", p.addr().port()))
        .collect();
    let alice = tls.client_identity("alice-ensemble").unwrap();
    let config =
        TlsConfig::with_ca_pem(tls.ca_pem()).client_cert_pem(alice.cert_pem(), alice.key_pem());
    let c = Client::builder(&connect.join(","))
        .tls(config)
        .session_timeout(Duration::from_secs(20))
        .connect_timeout(SLOW)
        .connect()
        .await
        .expect("connect to the TLS ensemble");
    let session = c.session_id();
    c.create("/eph", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let (_, watcher) = c.exists_and_watch("/watched").await.unwrap();

    let member = proxies
        .iter()
        .position(|p| p.open_connections() > 0)
        .expect("the client's member");
    let mut changes = c.state_changes();
    ensemble.kill(member).unwrap();
    next_state(&mut changes, |s| s == SessionState::Disconnected).await;
    tokio::time::timeout(SLOW, changes.wait_for(|s| s == SessionState::Connected))
        .await
        .expect("reconnected to another member")
        .unwrap();
    assert_eq!(c.session_id(), session);
    assert!(c.exists("/eph").await.unwrap().is_some());
    c.create("/watched", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    assert_eq!(
        within("watch after failover", watcher).await.event_type,
        EventType::NodeCreated
    );
    ensemble.restart(member).await.unwrap();
    c.close().await;
}

/// Read-only mode over TLS: a member without quorum serves the session over TLS, and the
/// session is back on a read-write member once the quorum is. (The `isro` probes themselves
/// going over TLS is checked in the crate's unit tests: here the member closes its read-only
/// connections when it rejoins, which moves the client without any probe.)
#[tokio::test]
async fn read_only_probes_go_over_tls_and_find_the_quorum_again() {
    let _serial = ONE_ENSEMBLE_AT_A_TIME.lock().await;
    common::init_tracing();
    let ensemble = Ensemble::builder(3)
        .tls(TlsOptions::new().client_auth(ClientAuth::Need))
        .read_only_mode()
        .config("localSessionsEnabled", "true")
        .start()
        .await
        .expect("TLS ensemble");
    let tls = ensemble.tls().unwrap();
    let alice = tls.client_identity("alice-read-only").unwrap();
    let config =
        TlsConfig::with_ca_pem(tls.ca_pem()).client_cert_pem(alice.cert_pem(), alice.key_pem());
    let connect = ensemble.secure_connect_string().unwrap();

    let leader = ensemble.leader().await.unwrap();
    let survivor = (0..3).find(|i| *i != leader).unwrap();
    let others: Vec<usize> = (0..3).filter(|i| *i != survivor).collect();
    for i in &others {
        ensemble.kill(*i).unwrap();
    }
    // The survivor notices the lost quorum after its sync limit; its own answer is the event.
    let plain = ensemble.addr(survivor).unwrap();
    tokio::time::timeout(SLOW, async {
        while zookeeper_testkit::four_letter(plain, "isro")
            .await
            .ok()
            .as_deref()
            != Some("ro")
        {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("survivor in read-only mode");

    let c = Client::builder(&connect)
        .tls(config)
        .session_timeout(Duration::from_secs(30))
        .read_only(true)
        .connect_timeout(SLOW)
        .connect()
        .await
        .expect("a read-only session over TLS");
    assert_eq!(c.state(), SessionState::ConnectedReadOnly);
    let mut changes = c.state_changes();
    assert!(c.exists("/").await.unwrap().is_some());

    let (a, b) = tokio::join!(ensemble.restart(others[0]), ensemble.restart(others[1]));
    a.unwrap();
    b.unwrap();
    let state = tokio::time::timeout(
        SLOW,
        changes.wait_for(|s| s == SessionState::Connected || s.is_terminal()),
    )
    .await
    .expect("back to a read-write member");
    assert_eq!(state, Some(SessionState::Connected));
    c.create("/written", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    c.close().await;
}

/// A server that accepts the connection and never answers the TLS handshake costs one
/// attempt's timeout, not a hang.
#[tokio::test]
async fn a_silent_server_during_the_handshake_does_not_hang_connect() {
    let (proxy, connect) = proxy().await;
    proxy.black_hole(true);
    let started = tokio::time::Instant::now();
    let err = builder(&connect, tls_as(&identity("alice-silent")))
        .attempt_timeout(Duration::from_millis(500))
        .connect_timeout(Duration::from_secs(3))
        .connect()
        .await
        .expect_err("no handshake ever completes");
    assert!(matches!(err.kind(), ErrorKind::Connect(_)), "{err:?}");
    // At the 3 s connect timeout, not a hang: 7 s of slack for a loaded machine.
    assert!(started.elapsed() < Duration::from_secs(10));
    // The second attempt was due 550 ms in (the 500 ms attempt timeout and a first pause of
    // at most 50 ms); the proxy may count it late, so wait for its count.
    within(
        "each attempt timed out and the next one started",
        proxy.wait_accepted(2),
    )
    .await;
}

/// Following `/zookeeper/config` would replace the secure ports with the plain client ports it
/// lists: the combination is refused before anything is sent.
#[tokio::test]
async fn following_the_ensemble_config_is_refused_with_tls() {
    let err = builder("localhost:1", tls_as(&identity("alice-follow")))
        .follow_config(true)
        .connect()
        .await
        .expect_err("follow_config and TLS");
    assert!(
        matches!(err.kind(), ErrorKind::InvalidArgument(m) if m.contains("follow_config")),
        "{err:?}"
    );
}
