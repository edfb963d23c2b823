//! Self-tests of the secure client port: a real ZooKeeper serves TLS with the certificates
//! the harness made, asks for client certificates when told to, and refuses what it must.
//!
//! The client side is a bare rustls connection sending a four-letter word, so that these
//! tests check the harness alone.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use zookeeper_testkit::tls::DEFAULT_SERVER_NAME;
use zookeeper_testkit::{
    CertificateAuthority, ClientAuth, Ensemble, Identity, Mode, ReconfigEnsemble, Role, Srvr,
    TlsOptions, ZkServer,
};

/// Bound on one TLS exchange.
const EXCHANGE: Duration = Duration::from_secs(10);

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Sends `command` over TLS to `addr`, verifying the server as `name` against `ca_pem`,
/// presenting `identity` if given; returns the answer.
async fn tls_four_letter(
    addr: SocketAddr,
    name: &str,
    ca_pem: &str,
    identity: Option<&Identity>,
    command: &str,
) -> io::Result<String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match identity {
        Some(id) => {
            let chain = CertificateDer::pem_slice_iter(id.cert_pem().as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            let key = PrivateKeyDer::from_pem_slice(id.key_pem().as_bytes()).unwrap();
            builder.with_client_auth_cert(chain, key).unwrap()
        }
        None => builder.with_no_client_auth(),
    };
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let name = ServerName::try_from(name.to_owned()).unwrap();
    let exchange = async {
        let tcp = tokio::net::TcpStream::connect(addr).await?;
        let mut tls = connector.connect(name, tcp).await?;
        tls.write_all(command.as_bytes()).await?;
        let mut answer = Vec::new();
        tls.read_to_end(&mut answer).await?;
        Ok(String::from_utf8_lossy(&answer).into_owned())
    };
    tokio::time::timeout(EXCHANGE, exchange)
        .await
        .unwrap_or_else(|_| Err(io::ErrorKind::TimedOut.into()))
}

fn srvr(answer: &str) -> Srvr {
    Srvr::parse(answer).unwrap_or_else(|| panic!("not a srvr answer: {answer:?}"))
}

#[tokio::test]
async fn a_tls_server_serves_its_ca_and_refuses_everything_else() {
    let server = ZkServer::builder()
        .tls(TlsOptions::new().client_auth(ClientAuth::Need))
        .start()
        .await
        .expect("TLS server starts");
    let tls = server.tls().expect("TLS material");
    let addr = server.secure_addr().expect("secure port");
    assert_ne!(addr, server.addr());
    assert_eq!(
        server.secure_connect_string().unwrap(),
        format!("{DEFAULT_SERVER_NAME}:{}", addr.port())
    );
    assert_eq!(
        std::fs::read_to_string(tls.ca_file()).unwrap(),
        tls.ca_pem()
    );
    let alice = tls.client_identity("alice").unwrap();
    assert_eq!(alice.subject(), "CN=alice");

    let answer = tls_four_letter(addr, "localhost", tls.ca_pem(), Some(&alice), "srvr")
        .await
        .expect("a trusted client certificate is served");
    assert_eq!(srvr(&answer).mode, Mode::Standalone);

    // The harness's own checks still use the plain port.
    assert_eq!(server.srvr().await.unwrap().mode, Mode::Standalone);

    let no_certificate = tls_four_letter(addr, "localhost", tls.ca_pem(), None, "srvr").await;
    assert!(
        no_certificate.as_ref().map_or(true, String::is_empty),
        "served without a client certificate: {no_certificate:?}"
    );

    let stranger = CertificateAuthority::new("elsewhere")
        .unwrap()
        .client_identity("mallory")
        .unwrap();
    let foreign = tls_four_letter(addr, "localhost", tls.ca_pem(), Some(&stranger), "srvr").await;
    assert!(
        foreign.as_ref().map_or(true, String::is_empty),
        "served a certificate of another authority: {foreign:?}"
    );

    let other_ca = CertificateAuthority::new("not the server's").unwrap();
    let unknown = tls_four_letter(addr, "localhost", other_ca.cert_pem(), Some(&alice), "srvr")
        .await
        .expect_err("the server's certificate is not from the given authority");
    assert!(unknown.to_string().contains("UnknownIssuer"), "{unknown}");

    let wrong_name = tls_four_letter(addr, "127.0.0.1", tls.ca_pem(), Some(&alice), "srvr")
        .await
        .expect_err("the certificate names localhost only");
    assert!(
        wrong_name.to_string().contains("not valid for name"),
        "{wrong_name}"
    );
}

#[tokio::test]
async fn servers_given_one_authority_trust_each_others_clients() {
    let ca = CertificateAuthority::new("shared").unwrap();
    let server = ZkServer::builder()
        .tls(
            TlsOptions::new()
                .ca(ca.clone())
                .client_auth(ClientAuth::Want)
                .server_names(["zk.test", "127.0.0.1"]),
        )
        .start()
        .await
        .expect("TLS server starts");
    let tls = server.tls().unwrap();
    assert_eq!(tls.ca_pem(), ca.cert_pem());
    assert_eq!(tls.host(), "zk.test");
    let addr = server.secure_addr().unwrap();
    let bob = ca.client_identity("bob").unwrap();
    for name in ["zk.test", "127.0.0.1"] {
        let answer = tls_four_letter(addr, name, ca.cert_pem(), Some(&bob), "srvr")
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(srvr(&answer).mode, Mode::Standalone);
    }
    // `want`: a client without a certificate is still served.
    let answer = tls_four_letter(addr, "zk.test", ca.cert_pem(), None, "srvr")
        .await
        .expect("served without a certificate");
    assert_eq!(srvr(&answer).mode, Mode::Standalone);
}

#[tokio::test]
async fn a_tls_ensemble_serves_tls_on_every_member_across_a_restart() {
    let ensemble = Ensemble::builder(3)
        .tls(TlsOptions::new().client_auth(ClientAuth::Need))
        .start()
        .await
        .expect("TLS ensemble starts");
    let tls = ensemble.tls().expect("TLS material");
    let secure = ensemble.secure_addrs().to_vec();
    assert_eq!(secure.len(), 3);
    let connect = ensemble.secure_connect_string().unwrap();
    assert_eq!(connect.split(',').count(), 3);
    assert!(connect.split(',').all(|h| h.starts_with("localhost:")));
    let client = tls.client_identity("member-check").unwrap();

    let leader = ensemble.leader().await.unwrap();
    for addr in &secure {
        let answer = tls_four_letter(*addr, "localhost", tls.ca_pem(), Some(&client), "srvr")
            .await
            .unwrap_or_else(|e| panic!("{addr}: {e}"));
        assert!(srvr(&answer).mode.is_serving(), "{answer}");
    }

    ensemble.kill(leader).unwrap();
    let refused = tls_four_letter(
        secure[leader],
        "localhost",
        tls.ca_pem(),
        Some(&client),
        "srvr",
    )
    .await;
    assert!(refused.is_err(), "a killed member answered: {refused:?}");
    ensemble.restart(leader).await.unwrap();
    ensemble.wait_serving().await.unwrap();
    let answer = tls_four_letter(
        secure[leader],
        "localhost",
        tls.ca_pem(),
        Some(&client),
        "srvr",
    )
    .await
    .expect("the restarted member serves TLS again");
    assert!(srvr(&answer).mode.is_serving(), "{answer}");
}

#[tokio::test]
async fn a_reconfig_ensemble_gives_members_it_starts_later_a_secure_port_too() {
    let ensemble = ReconfigEnsemble::builder(1)
        .tls(TlsOptions::new())
        .start()
        .await
        .expect("TLS reconfig ensemble");
    let two = ensemble.start_member(Role::Participant).await.unwrap();
    ensemble.join(two).await.unwrap();
    let tls = ensemble.tls().expect("TLS material");
    let connect = ensemble.secure_connect_string().unwrap();
    let ports: Vec<u16> = connect
        .split(',')
        .map(|hp| hp.strip_prefix("localhost:").unwrap().parse().unwrap())
        .collect();
    assert_eq!(ports.len(), 2, "{connect}");
    for port in ports {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let answer = tls_four_letter(addr, "localhost", tls.ca_pem(), None, "srvr")
            .await
            .unwrap_or_else(|e| panic!("{addr}: {e}"));
        assert!(srvr(&answer).mode.is_serving(), "{answer}");
    }
}
