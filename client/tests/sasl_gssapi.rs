//! SASL GSSAPI (Kerberos) against a real server and a KDC on loopback, both started here
//! (`--features sasl-gssapi`; needs Debian's krb5-kdc, krb5-admin-server, krb5-user).
//!
//! One test, in phases: MIT Kerberos reads `KRB5_CONFIG` and `KRB5CCNAME` from the process
//! environment, which is set once before any client starts and must not change under
//! concurrent tests.
#![cfg(feature = "sasl-gssapi")]

mod common;

use std::time::Duration;

use common::{init_tracing, next_state, within};
use zookeeper_testkit::{Kdc, Proxy, ZkServer};
use zookeeper_tokio::{perms, Acl, Client, CreateOptions, ErrorKind, Id, SessionState};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kerberos_logins_against_a_real_server() {
    init_tracing();
    let kdc = Kdc::start().await.unwrap();
    let ccache = kdc.kinit_user().unwrap();
    for (key, value) in kdc.client_env(&ccache) {
        std::env::set_var(key, value);
    }
    let server = ZkServer::builder()
        .sasl_kerberos(&kdc)
        .start()
        .await
        .unwrap();
    let port = server.port();
    let alice_acl = vec![Acl {
        perms: perms::ALL,
        id: Id {
            scheme: "sasl".into(),
            id: kdc.user_principal(),
        },
    }];

    // The service principal is zookeeper/<host of the connect string>: here `localhost`.
    let alice = Client::builder(&format!("localhost:{port}"))
        .session_timeout(Duration::from_secs(10))
        .sasl_gssapi()
        .connect()
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}\n{}", server.log_tail(30), kdc.log()));
    alice
        .create(
            "/alices",
            b"k",
            &CreateOptions::persistent().acl(alice_acl.clone()),
        )
        .await
        .unwrap();
    let (data, _) = alice.get_data("/alices").await.unwrap();
    assert_eq!(&data[..], b"k");
    let anonymous = Client::connect(&server.connect_string()).await.unwrap();
    assert_eq!(
        anonymous.get_data("/alices").await.unwrap_err(),
        ErrorKind::NoAuth
    );

    // A service the KDC does not know: no ticket, no session.
    let err = Client::builder(&server.connect_string())
        .session_timeout(Duration::from_secs(10))
        .sasl_gssapi_service("zookeeper", Some("no-such-host"))
        .connect()
        .await
        .unwrap_err();
    assert_eq!(err, ErrorKind::AuthFailed);

    // Through a proxy (named explicitly, since the proxy's address is not `localhost`): the
    // session logs in again on every new connection.
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let again = Client::builder(&proxy.connect_string())
        .session_timeout(Duration::from_secs(10))
        .sasl_gssapi_service("zookeeper", Some("localhost"))
        .connect()
        .await
        .unwrap();
    for _ in 0..2 {
        let mut changes = again.state_changes();
        proxy.drop_all();
        next_state(&mut changes, |s| s == SessionState::Disconnected).await;
        next_state(&mut changes, |s| s == SessionState::Connected).await;
        let (data, _) = within("read after reconnect", again.get_data("/alices"))
            .await
            .unwrap();
        assert_eq!(&data[..], b"k");
    }
    drop((alice, anonymous, again, proxy));
    drop(server);
}
