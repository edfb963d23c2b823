//! `zk` over TLS against a real server that requires client certificates: browsing and a
//! lock with a client certificate, each certificate failure with the credentials code and one
//! line, and TLS and plain TCP never mixed.
//!
//! The server keeps its plain client port beside the secure one; the tests prepare and check
//! nodes through it, so that what they check does not depend on `zk`'s TLS.
#![cfg(feature = "tls")]

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;

use common::{finish, scratch, zk};
use tokio::process::Command;
use zookeeper_testkit::{
    chroot_for, keep_until_exit, CertificateAuthority, ClientAuth, TlsOptions, ZkServer,
};
use zookeeper_tokio::{Client, CreateOptions};

/// Refused credentials or certificates.
const AUTH: i32 = 77;
const USAGE: i32 = 64;
const CONNECTION: i32 = 69;

/// The server of every test here: TLS on its secure port, client certificates required.
fn server() -> &'static ZkServer {
    static SERVER: OnceLock<&'static ZkServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let server = ZkServer::builder()
            .tls(TlsOptions::new().client_auth(ClientAuth::Need))
            .start_blocking()
            .expect("TLS server starts");
        keep_until_exit(server)
    })
}

/// The certificate files one test gives `zk`: the server's authority and a client
/// certificate with its key.
#[derive(Clone)]
struct Files {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
    subject: String,
}

fn certificates(test: &str) -> Files {
    let tls = server().tls().expect("TLS");
    let dir = scratch(test);
    let identity = tls.client_identity(test).expect("client certificate");
    let (cert, key) = (dir.join("client.pem"), dir.join("client.key"));
    identity.write_files(&cert, &key).unwrap();
    Files {
        ca: tls.ca_file(),
        cert,
        key,
        subject: identity.subject().to_owned(),
    }
}

/// A fresh chroot, made through the plain port; a client on it there, and the secure
/// connect string (`localhost:PORT/chroot`, the name the certificate carries) to it.
async fn chroot(test: &str) -> (Client, String) {
    let chroot = chroot_for(test);
    server().create_path(&chroot).unwrap();
    let plain = Client::connect(&server().connect_string_with_chroot(&chroot))
        .await
        .unwrap();
    let secure = format!("{}{chroot}", server().secure_connect_string().unwrap());
    (plain, secure)
}

/// `zk ARGS` over TLS configured by flags, with the client certificate.
fn zk_tls(connect: &str, files: &Files, args: &[&str]) -> Command {
    let mut cmd = zk(connect);
    cmd.arg("--tls")
        .arg("--tls-ca")
        .arg(&files.ca)
        .arg("--tls-cert")
        .arg(&files.cert)
        .arg("--tls-key")
        .arg(&files.key)
        .args(args);
    cmd
}

#[tokio::test]
async fn browsing_over_mutual_tls() {
    let files = certificates("cli_tls_browse");
    let (plain, secure) = chroot("cli_tls_browse").await;
    for node in ["/app", "/app/a", "/app/b"] {
        plain
            .create(node, b"", &CreateOptions::persistent())
            .await
            .unwrap();
    }

    let listed = finish(zk_tls(&secure, &files, &["ls", "/app"])).await;
    assert_eq!(listed.ok(), "a\nb\n");
    // The server saw the certificate: the session is authenticated as its subject.
    let who = finish(zk_tls(&secure, &files, &["--json", "whoami"]))
        .await
        .json();
    assert!(
        who["identities"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!({ "scheme": "x509", "user": files.subject })),
        "{who}"
    );
    let written = finish(zk_tls(&secure, &files, &["set", "/app/a", "over tls"])).await;
    written.ok();
    assert_eq!(&plain.get_data("/app/a").await.unwrap().0[..], b"over tls");
}

#[tokio::test]
async fn a_lock_over_tls_set_up_by_the_environment() {
    let files = certificates("cli_tls_lock");
    let (plain, secure) = chroot("cli_tls_lock").await;
    // The command lists the lock's contenders with zk itself, over TLS from the same
    // variables: it sees the node it holds.
    let script = "\"$ZK_BIN\" ls /locks/deploy && echo \"held $ZK_LOCK_NODE\"";
    let mut cmd = zk(&secure);
    cmd.env("ZK_TLS", "1")
        .env("ZK_TLS_CA", &files.ca)
        .env("ZK_TLS_CERT", &files.cert)
        .env("ZK_TLS_KEY", &files.key)
        .env("ZK_BIN", env!("CARGO_BIN_EXE_zk"))
        .args(["lock", "/locks/deploy", "--", "sh", "-c", script]);
    let locked = finish(cmd).await;
    let out = locked.ok();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    let held = lines[1].strip_prefix("held ").expect("the command's line");
    // The node's full path: the chroot, then the lock.
    let root = plain.chroot().unwrap();
    assert_eq!(held, format!("{root}/locks/deploy/{}", lines[0]), "{out}");
    // Released on the way out.
    let (left, _) = plain.get_children("/locks/deploy").await.unwrap();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test]
async fn an_untrusted_server_certificate_is_one_line_and_the_credentials_code() {
    let mut files = certificates("cli_tls_untrusted");
    let (_plain, secure) = chroot("cli_tls_untrusted").await;
    let elsewhere = CertificateAuthority::new("elsewhere").unwrap();
    files.ca = scratch("cli_tls_untrusted_ca").join("ca.pem");
    std::fs::write(&files.ca, elsewhere.cert_pem()).unwrap();

    let refused = finish(zk_tls(&secure, &files, &["ls", "/"])).await;
    let line = refused.failed(AUTH);
    assert!(
        line.starts_with("Error: TLS failure (server certificate not trusted)"),
        "{line}"
    );
    assert!(line.contains("--tls-ca"), "names the fix: {line}");
    assert!(refused.stdout.is_empty());

    // No --tls-ca: the platform's authorities do not know a test authority either.
    let mut platform = zk(&secure);
    platform
        .args(["--tls", "--tls-cert"])
        .arg(&files.cert)
        .arg("--tls-key")
        .arg(&files.key)
        .args(["ls", "/"]);
    let line = finish(platform).await.failed(AUTH).to_owned();
    assert!(line.contains("not trusted"), "{line}");
}

#[tokio::test]
async fn client_certificates_and_host_names_are_checked() {
    let files = certificates("cli_tls_checks");
    let (_plain, secure) = chroot("cli_tls_checks").await;

    // No client certificate, to a server that requires one.
    let mut anonymous = zk(&secure);
    anonymous
        .args(["--tls", "--tls-ca"])
        .arg(&files.ca)
        .args(["ls", "/"]);
    let anonymous = finish(anonymous).await;
    let line = anonymous.failed(AUTH);
    assert!(line.contains("client certificate required"), "{line}");
    assert!(line.contains("--tls-cert"), "{line}");

    // A certificate from an authority the server does not trust.
    let stranger = CertificateAuthority::new("stranger")
        .unwrap()
        .client_identity("mallory")
        .unwrap();
    let mut strange = certificates("cli_tls_checks_stranger");
    stranger.write_files(&strange.cert, &strange.key).unwrap();
    strange.ca = files.ca.clone();
    let refused = finish(zk_tls(&secure, &strange, &["ls", "/"])).await;
    let line = refused.failed(AUTH);
    assert!(line.contains("client certificate refused"), "{line}");
    assert!(line.contains("--tls-cert"), "{line}");

    // Dialled by address, while the certificate names `localhost`: refused, unless the
    // name check is (dangerously) turned off; the chain is still verified then.
    let by_ip = secure.replace("localhost", "127.0.0.1");
    let mismatch = finish(zk_tls(&by_ip, &files, &["ls", "/"])).await;
    let line = mismatch.failed(AUTH);
    assert!(line.contains("not valid for the host"), "{line}");
    let unchecked = finish(zk_tls(
        &by_ip,
        &files,
        &["--tls-no-hostname-verify", "ls", "/"],
    ))
    .await;
    unchecked.ok();
    let untrusting = Files {
        ca: scratch("cli_tls_checks_elsewhere").join("ca.pem"),
        ..files.clone()
    };
    let elsewhere = CertificateAuthority::new("elsewhere").unwrap();
    std::fs::write(&untrusting.ca, elsewhere.cert_pem()).unwrap();
    let line = finish(zk_tls(
        &by_ip,
        &untrusting,
        &["--tls-no-hostname-verify", "ls", "/"],
    ))
    .await;
    assert!(line.failed(AUTH).contains("not trusted"), "{line:?}");

    // A key file that is not there: a value given wrong.
    let mut missing = certificates("cli_tls_checks_missing");
    missing.key = missing.key.with_extension("gone");
    let line = finish(zk_tls(&secure, &missing, &["ls", "/"])).await;
    assert!(line.failed(USAGE).contains("client.gone"), "{line:?}");
}

#[tokio::test]
async fn tls_and_plain_tcp_are_never_mixed() {
    let files = certificates("cli_tls_never_mixed");
    let (_plain, secure) = chroot("cli_tls_never_mixed").await;

    // Certificate settings without --tls are refused, not ignored.
    let mut forgotten = zk(&secure);
    forgotten
        .env("ZK_TLS_CA", &files.ca)
        .env("ZK_TLS_CERT", &files.cert)
        .env("ZK_TLS_KEY", &files.key)
        .args(["ls", "/"]);
    let line = finish(forgotten).await;
    assert!(line.failed(USAGE).contains("without --tls"), "{line:?}");
    let mut switched_off = zk(&secure);
    switched_off
        .env("ZK_TLS", "false")
        .args(["--tls-ca"])
        .arg(&files.ca)
        .args(["ls", "/"]);
    finish(switched_off).await.failed(USAGE);

    // TLS to the plain port: the server hangs up on it, and zk does not fall back.
    let plain_port = format!("localhost:{}", server().port());
    let to_plain = zk_tls(&plain_port, &files, &["--connect-timeout", "2s", "ls", "/"]);
    let line = finish(to_plain).await;
    assert!(
        line.failed(CONNECTION).contains("secureClientPort"),
        "{line:?}"
    );

    // Plain TCP to the secure port does not get a session either.
    let plain_to_secure = finish({
        let mut cmd = zk(&secure);
        cmd.args(["--connect-timeout", "2s", "ls", "/"]);
        cmd
    })
    .await;
    let line = plain_to_secure.failed(CONNECTION);
    assert!(
        line.ends_with("if that is the servers' secureClientPort, connect with --tls"),
        "{line}"
    );
}
