//! `zk --sasl-gssapi` against a real server and a KDC on loopback, both started here
//! (`--features sasl-gssapi`; needs Debian's krb5-kdc, krb5-admin-server, krb5-user).
//!
//! The Kerberos settings (`KRB5_CONFIG`, `KRB5CCNAME`) go into each `zk` process's
//! environment only; this process's own stays untouched.
#![cfg(feature = "sasl-gssapi")]

mod common;

use common::{finish, zk};
use tokio::process::Command;
use zookeeper_testkit::{Kdc, ZkServer};

/// Refused credentials.
const AUTH: i32 = 77;
const ZOOKEEPER: i32 = 65;

#[tokio::test]
async fn kerberos_logins_read_a_sasl_node() {
    let kdc = Kdc::start().await.unwrap();
    let ccache = kdc.kinit_user().unwrap();
    let server = ZkServer::builder()
        .sasl_kerberos(&kdc)
        .start()
        .await
        .unwrap();
    // The service principal is zookeeper/<host as written>: `localhost`.
    let connect = format!("localhost:{}", server.port());
    let kerberized = |args: &[&str]| -> Command {
        let mut cmd = zk(&connect);
        cmd.envs(kdc.client_env(&ccache))
            .arg("--sasl-gssapi")
            .args(args);
        cmd
    };

    finish(kerberized(&["create", "/alices", "k"])).await.ok();
    let acl = format!("sasl:{}:cdrwa", kdc.user_principal());
    finish(kerberized(&["setacl", "/alices", &acl])).await.ok();
    let read = finish(kerberized(&["get", "/alices"])).await;
    assert_eq!(read.ok(), "k", "{}\n{}", server.log_tail(30), kdc.log());
    let who = finish(kerberized(&["whoami"])).await.ok();
    assert!(
        who.contains(&format!("sasl: {}", kdc.user_principal())),
        "{who}"
    );

    // Without the login the ACL keeps us out.
    let mut anonymous = zk(&connect);
    anonymous.args(["get", "/alices"]);
    finish(anonymous).await.failed(ZOOKEEPER);

    // A service principal the KDC does not know: no ticket, no session.
    let unknown = finish(kerberized(&[
        "--sasl-host",
        "no-such-host",
        "get",
        "/alices",
    ]))
    .await;
    let line = unknown.failed(AUTH);
    assert!(line.contains("GSSAPI"), "{line}");
}
