//! The TLS and SASL guide (`docs/tls-and-sasl.md`) taken at its word: its `openssl` commands
//! make the certificates, its `zoo.cfg` lines and JAAS section configure real servers, and
//! its client code and `zk` commands reach them. A guide line that stops working (a missing
//! `authProvider.x509`, a certificate the client rejects, a wrong flag) fails here.
//!
//! Substitutions, the only ones: the guide's host `zk1.example.com` becomes `localhost` (the
//! name the certificate then carries) and its ports free ones; its `/etc/zookeeper/tls`
//! becomes a scratch directory; the JAAS file sits in the server's own directory.
#![cfg(all(feature = "tls", feature = "sasl-digest"))]

mod common;

use std::path::Path;
use std::process::Stdio;

use common::{bounded, scratch};
use tokio::process::Command;
use zookeeper_testkit::{free_port, ZkServer, JAAS_FILE};
use zookeeper_tokio::{Client, ErrorKind, TlsCause, TlsConfig};

const GUIDE_HOST: &str = "zk1.example.com";
const GUIDE_TLS_DIR: &str = "/etc/zookeeper/tls";

/// One fenced block of the guide: its info string and its text.
struct Block {
    info: String,
    text: String,
}

fn guide_blocks() -> Vec<Block> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/tls-and-sasl.md");
    let guide = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for line in guide.lines() {
        match (line.strip_prefix("```"), open.take()) {
            (Some(info), None) => {
                open = Some(Block {
                    info: info.trim().to_owned(),
                    text: String::new(),
                })
            }
            (Some(_), Some(block)) => blocks.push(block),
            (None, Some(mut block)) => {
                block.text.push_str(line);
                block.text.push('\n');
                open = Some(block);
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "an unclosed block in the guide");
    blocks
}

/// The one block of this kind holding `marker`.
fn block(info: &str, marker: &str) -> String {
    let found: Vec<String> = guide_blocks()
        .into_iter()
        .filter(|b| b.info == info && b.text.contains(marker))
        .map(|b| b.text)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one ```{info} block with {marker:?} in the guide"
    );
    found.into_iter().next().unwrap()
}

/// `key=value` lines of a properties block, comments left out.
fn properties(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (key, value) = l.split_once('=').expect("key=value");
            (key.trim().to_owned(), value.trim().to_owned())
        })
        .collect()
}

/// A shell running guide commands: `zk` (the one built for these tests) on the path, and
/// none of the caller's `ZK_*` settings.
fn shell(script: &str, dir: &Path) -> Command {
    let zk_dir = Path::new(env!("CARGO_BIN_EXE_zk")).parent().unwrap();
    let path = format!(
        "{}:{}",
        zk_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("sh");
    cmd.arg("-eu")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .env_clear()
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

async fn run_shell(what: &str, script: &str, dir: &Path) -> String {
    let output = bounded(what, shell(script, dir).output()).await.unwrap();
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{script}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The one line of a `sh` block holding `marker`, and the output its comment promises (the
/// block's next line, `# ...`).
fn command_and_output(marker: &str) -> (String, Option<String>) {
    let text = block("sh", marker);
    let lines: Vec<&str> = text.lines().collect();
    let at = lines.iter().position(|l| l.contains(marker)).unwrap();
    // A command may go on over `\` continuations.
    let mut end = at;
    while lines[end].trim_end().ends_with('\\') {
        end += 1;
    }
    let command = lines[at..=end].join("\n");
    let promised = lines
        .get(end + 1)
        .and_then(|l| l.strip_prefix("# "))
        .map(str::to_owned);
    (command, promised)
}

/// Waits until something listens on `port` (the secure port binds after the plain one that
/// the harness waits for).
async fn listening(port: u16) {
    bounded(&format!("port {port}"), async {
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await
}

#[tokio::test]
async fn the_guides_tls_server_serves_the_client_and_zk_with_its_certificates() {
    let dir = scratch("guide_tls");

    // The certificates, by the guide's commands.
    let openssl = block("sh", "openssl req -x509").replace(GUIDE_HOST, "localhost");
    run_shell("the guide's openssl commands", &openssl, &dir).await;
    for file in ["ca.pem", "server.pem", "client.pem", "client.key"] {
        assert!(dir.join(file).is_file(), "{file} made by the guide");
    }

    // The server, by the guide's zoo.cfg lines.
    let lines = properties(&block("properties", "secureClientPort"));
    let keys: Vec<&str> = lines.iter().map(|(k, _)| k.as_str()).collect();
    for key in [
        "serverCnxnFactory",
        "secureClientPort",
        "ssl.keyStore.location",
        "ssl.keyStore.type",
        "ssl.trustStore.location",
        "ssl.clientAuth",
        "authProvider.x509",
    ] {
        assert!(keys.contains(&key), "the guide sets {key}");
    }
    let port = free_port().unwrap();
    let tls_dir = dir.display().to_string();
    let mut builder = ZkServer::builder();
    for (key, value) in &lines {
        let value = match key.as_str() {
            "secureClientPort" => port.to_string(),
            _ => value.replace(GUIDE_TLS_DIR, &tls_dir),
        };
        builder = builder.config(key, value);
    }
    let server = builder
        .start()
        .await
        .expect("the guide's TLS server starts");
    listening(port).await;
    let secure = format!("localhost:{port}");

    // The client, as the guide's Rust lines configure it.
    let tls = TlsConfig::with_ca_file(dir.join("ca.pem"))
        .client_cert_files(dir.join("client.pem"), dir.join("client.key"));
    let client = bounded("TLS connect", Client::builder(&secure).tls(tls).connect())
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", server.log_tail(40)));
    let me = client.who_am_i().await.unwrap();
    assert!(
        me.iter()
            .any(|i| i.auth_scheme == "x509" && i.user == "CN=deployer"),
        "{me:?}"
    );
    // ssl.clientAuth=need is in force: no certificate, no session.
    let anonymous = Client::builder(&secure)
        .tls(TlsConfig::with_ca_file(dir.join("ca.pem")))
        .connect();
    let refused = bounded("TLS connect without a certificate", anonymous)
        .await
        .unwrap_err();
    assert!(
        matches!(
            refused.kind(),
            ErrorKind::Tls {
                cause: TlsCause::ClientCertificateRequired,
                ..
            }
        ),
        "{refused}"
    );

    // zk, by the guide's command, printing what the guide says it prints.
    let (command, promised) = command_and_output("--tls --tls-ca");
    let command = command
        .replace(&format!("{GUIDE_HOST}:2281"), &secure)
        .replace(GUIDE_TLS_DIR, &tls_dir);
    let printed = run_shell("the guide's zk command over TLS", &command, &dir).await;
    let promised = promised.expect("the guide shows zk's output");
    assert!(
        printed.lines().any(|l| l == promised),
        "{printed:?} holds {promised:?}"
    );
    client.close().await;
}

#[tokio::test]
async fn the_guides_digest_server_logs_in_the_client_and_zk() {
    let dir = scratch("guide_sasl");
    let jaas = block("text", "DigestLoginModule");
    let mut builder = ZkServer::builder()
        .file(JAAS_FILE, jaas)
        // The server's working directory is its own directory, where the file is.
        .system_property("java.security.auth.login.config", JAAS_FILE);
    for (key, value) in properties(&block("properties", "authProvider.sasl")) {
        builder = builder.config(key, value);
    }
    let server = builder
        .start()
        .await
        .expect("the guide's SASL server starts");
    let connect = server.connect_string();

    let client = bounded(
        "SASL connect",
        Client::builder(&connect)
            .sasl_digest("bob", "bob-secret")
            .connect(),
    )
    .await
    .unwrap();
    let me = client.who_am_i().await.unwrap();
    assert!(
        me.iter()
            .any(|i| i.auth_scheme == "sasl" && i.user == "bob"),
        "{me:?}"
    );
    let wrong = Client::builder(&connect)
        .sasl_digest("bob", "not-bobs")
        .connect();
    assert_eq!(
        bounded("SASL connect, wrong password", wrong)
            .await
            .unwrap_err(),
        ErrorKind::AuthFailed
    );

    let (command, _) = command_and_output("--sasl-digest bob whoami");
    let command = command.replace(&format!("{GUIDE_HOST}:2181"), &connect);
    let printed = run_shell("the guide's zk command with DIGEST-MD5", &command, &dir).await;
    assert!(printed.lines().any(|l| l == "sasl: bob"), "{printed:?}");
    client.close().await;
}
