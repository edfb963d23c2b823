//! Self-tests of the SASL servers and the KDC. That clients really authenticate is shown by the
//! client crate's suites; here: the servers start with their logins, and the KDC hands out
//! tickets.

use zookeeper_testkit::{Kdc, ZkServer, JAAS_FILE};

#[tokio::test]
async fn digest_server_starts_with_its_jaas_file() {
    let server = ZkServer::builder()
        .sasl_digest(&[("bob", "bob-secret")])
        .require_sasl()
        .start()
        .await
        .unwrap();
    let jaas = std::fs::read_to_string(server.dir().join(JAAS_FILE)).unwrap();
    assert!(jaas.contains("user_bob=\"bob-secret\""), "{jaas}");
    assert!(server.srvr().await.is_ok());
}

#[tokio::test]
async fn kdc_issues_tickets_and_a_kerberos_server_logs_in() {
    let kdc = Kdc::start().await.unwrap();
    let ccache = kdc.kinit_user().unwrap();
    assert!(ccache.is_file(), "no credential cache after kinit");
    assert!(kdc.service_keytab().is_file());
    let server = ZkServer::builder()
        .sasl_kerberos(&kdc)
        .start()
        .await
        .unwrap();
    assert!(server.srvr().await.is_ok());
    // The server logged in with its keytab: the KDC issued it a ticket.
    let log = kdc.log();
    assert!(
        log.contains("zookeeper/localhost@ZKTESTKIT.LOCAL"),
        "the KDC never saw the service principal:\n{log}\n{}",
        server.log_tail(40)
    );
    drop(server);
}

#[tokio::test]
async fn kdc_is_gone_after_drop() {
    let kdc = Kdc::start().await.unwrap();
    let port = kdc.port();
    let dir = kdc.dir().to_path_buf();
    drop(kdc);
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    assert!(!dir.exists());
}
