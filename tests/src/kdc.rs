//! A Kerberos KDC on a free loopback port, for GSSAPI tests: MIT's `krb5kdc` (Debian's
//! `krb5-kdc`, with `kdb5_util` and `kadmin.local` from `krb5-admin-server`) in its own
//! temporary directory, with a throwaway realm, database and keytabs.
//!
//! Nothing touches the machine's own Kerberos setup: every tool runs with `KRB5_CONFIG` and
//! `KRB5_KDC_PROFILE` pointing into the KDC's directory.

use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::ports::free_port;
use crate::process::ChildProcess;
use crate::server::{blocking, BIND_ATTEMPTS};
use crate::tempdir::TempDir;

/// The realm of every KDC the harness starts.
pub(crate) const REALM: &str = "ZKTESTKIT.LOCAL";
/// The host part of the ZooKeeper service principal: clients name the server `localhost`.
pub(crate) const SERVICE_HOST: &str = "localhost";
/// The user principal created with every KDC (without the realm).
pub(crate) const USER: &str = "alice";

const KDB5_UTIL: &str = "/usr/sbin/kdb5_util";
const KADMIN_LOCAL: &str = "/usr/sbin/kadmin.local";
const KRB5KDC: &str = "/usr/sbin/krb5kdc";
const KINIT: &str = "/usr/bin/kinit";

/// How long the KDC may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running KDC with a service principal `zookeeper/localhost` and a user principal
/// `alice`, each with a keytab. Killed, and its directory removed, on drop; servers
/// configured against it must be dropped first.
///
/// ```no_run
/// # async fn demo() -> zookeeper_testkit::Result<()> {
/// let kdc = zookeeper_testkit::Kdc::start().await?;
/// let server = zookeeper_testkit::ZkServer::builder().sasl_kerberos(&kdc).start().await?;
/// // A client gets its ticket with the user keytab into a credential cache of its own:
/// let ccache = kdc.kinit_user()?;
/// // ... run the client with KRB5_CONFIG=kdc.krb5_conf() and KRB5CCNAME=FILE:ccache
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Kdc {
    // Declared before `dir`: the process dies before its directory goes.
    process: ChildProcess,
    port: u16,
    dir: TempDir,
}

impl Kdc {
    /// Creates the realm and its principals and starts the KDC (async: the tools run on
    /// tokio's blocking pool).
    pub async fn start() -> Result<Kdc> {
        blocking(Kdc::start_blocking).await
    }

    /// Blocking form of [`Kdc::start`].
    pub fn start_blocking() -> Result<Kdc> {
        for (program, package) in [
            (KDB5_UTIL, "krb5-kdc"),
            (KADMIN_LOCAL, "krb5-admin-server"),
            (KRB5KDC, "krb5-kdc"),
            (KINIT, "krb5-user"),
        ] {
            if !Path::new(program).is_file() {
                return Err(Error::ProgramNotFound {
                    program: program.into(),
                    package: package.into(),
                });
            }
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            let dir = TempDir::new("kdc")?;
            let port = free_port()?;
            prepare(dir.path(), port)?;
            let mut command = Command::new(KRB5KDC);
            // -n: stay in the foreground, so that the process we hold is the KDC itself.
            command
                .args(["-n", "-r", REALM])
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            tool_env(&mut command, dir.path());
            let process = ChildProcess::spawn(command)
                .map_err(|e| Error::io(format!("starting {KRB5KDC}"), e))?;
            let mut kdc = Kdc { process, port, dir };
            match kdc.wait_listening() {
                Ok(()) => return Ok(kdc),
                Err(_) if attempt < BIND_ATTEMPTS && kdc.log().contains("in use") => continue,
                Err(e) => return Err(e),
            }
        }
    }

    fn wait_listening(&mut self) -> Result<()> {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let start = Instant::now();
        loop {
            if let Some(status) = self.process.try_exit() {
                return Err(Error::Exited {
                    status: status.to_string(),
                    dir: self.dir.path().to_path_buf(),
                    log_tail: self.log(),
                });
            }
            if TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok() {
                return Ok(());
            }
            if start.elapsed() > START_TIMEOUT {
                return Err(Error::NotReady {
                    what: format!("KDC on {addr}"),
                    waited: start.elapsed(),
                    last: String::new(),
                    log_tail: self.log(),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The KDC's log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("kdc.log")).unwrap_or_default()
    }

    /// The realm, `ZKTESTKIT.LOCAL`.
    pub fn realm(&self) -> &'static str {
        REALM
    }

    /// The KDC's port on 127.0.0.1 (TCP and UDP).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The KDC's directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The `krb5.conf` that names this KDC for the realm: clients (`KRB5_CONFIG`) and Java
    /// (`java.security.krb5.conf`) use it.
    pub fn krb5_conf(&self) -> PathBuf {
        self.dir.path().join("krb5.conf")
    }

    /// `zookeeper/localhost@REALM`.
    pub fn service_principal(&self) -> String {
        format!("zookeeper/{SERVICE_HOST}@{REALM}")
    }

    /// The keytab holding the service principal's keys.
    pub fn service_keytab(&self) -> PathBuf {
        self.dir.path().join("zookeeper.keytab")
    }

    /// `alice@REALM`: the identity a client authenticated by GSSAPI gets (`sasl` scheme).
    pub fn user_principal(&self) -> String {
        format!("{USER}@{REALM}")
    }

    /// The keytab holding the user principal's keys.
    pub fn user_keytab(&self) -> PathBuf {
        self.dir.path().join(format!("{USER}.keytab"))
    }

    /// Adds the principal `name` (no realm) with a random key and returns its keytab.
    pub fn add_principal(&self, name: &str) -> Result<PathBuf> {
        let keytab = self
            .dir
            .path()
            .join(format!("{}.keytab", name.replace('/', "_")));
        add_principal(self.dir.path(), name, &keytab)?;
        Ok(keytab)
    }

    /// Gets a ticket-granting ticket for the user principal (from its keytab) into a new
    /// credential cache file in the KDC's directory, and returns the cache's path.
    pub fn kinit_user(&self) -> Result<PathBuf> {
        let ccache = self.dir.path().join(format!("{USER}.ccache"));
        let mut command = Command::new(KINIT);
        command
            .arg("-k")
            .arg("-t")
            .arg(self.user_keytab())
            .arg("-c")
            .arg(format!("FILE:{}", ccache.display()))
            .arg(self.user_principal());
        tool_env(&mut command, self.dir.path());
        run(command, "kinit")?;
        Ok(ccache)
    }

    /// The environment a GSSAPI client process needs: `KRB5_CONFIG` and, given a credential
    /// cache from [`Kdc::kinit_user`], `KRB5CCNAME`.
    pub fn client_env(&self, ccache: &Path) -> Vec<(&'static str, String)> {
        vec![
            ("KRB5_CONFIG", self.krb5_conf().display().to_string()),
            ("KRB5CCNAME", format!("FILE:{}", ccache.display())),
        ]
    }
}

/// Writes the configuration, creates the database and the two principals with keytabs.
fn prepare(dir: &Path, port: u16) -> Result<()> {
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| Error::io(format!("writing {}", path.display()), e))
    };
    // No DNS anywhere: the service is named `localhost` and must stay so.
    write(
        "krb5.conf",
        format!(
            "[libdefaults]\n default_realm = {REALM}\n dns_lookup_realm = false\n \
             dns_lookup_kdc = false\n rdns = false\n dns_canonicalize_hostname = false\n \
             ignore_acceptor_hostname = true\n udp_preference_limit = 1\n\
             [realms]\n {REALM} = {{\n  kdc = 127.0.0.1:{port}\n }}\n\
             [domain_realm]\n {SERVICE_HOST} = {REALM}\n"
        ),
    )?;
    write(
        "kdc.conf",
        format!(
            "[kdcdefaults]\n kdc_listen = 127.0.0.1:{port}\n kdc_tcp_listen = 127.0.0.1:{port}\n\
             [realms]\n {REALM} = {{\n  database_name = {db}\n  key_stash_file = {stash}\n  \
             acl_file = {acl}\n  max_life = 1d\n  \
             supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal\n }}\n\
             [logging]\n kdc = FILE:{log}\n",
            db = dir.join("principal").display(),
            stash = dir.join("stash").display(),
            acl = dir.join("kadm5.acl").display(),
            log = dir.join("kdc.log").display(),
        ),
    )?;
    write("kadm5.acl", String::new())?;
    let mut create = Command::new(KDB5_UTIL);
    // The master password only protects this throwaway database.
    create.args(["create", "-s", "-r", REALM, "-P", "zookeeper-testkit"]);
    tool_env(&mut create, dir);
    run(create, "kdb5_util create")?;
    add_principal(
        dir,
        &format!("zookeeper/{SERVICE_HOST}"),
        &dir.join("zookeeper.keytab"),
    )?;
    add_principal(dir, USER, &dir.join(format!("{USER}.keytab")))?;
    Ok(())
}

fn add_principal(dir: &Path, name: &str, keytab: &Path) -> Result<()> {
    let mut command = Command::new(KADMIN_LOCAL);
    command
        .args(["-r", REALM, "-q"])
        .arg(format!("addprinc -randkey {name}@{REALM}"));
    tool_env(&mut command, dir);
    run(command, &format!("adding principal {name}"))?;
    let mut command = Command::new(KADMIN_LOCAL);
    command
        .args(["-r", REALM, "-q"])
        .arg(format!("ktadd -k {} {name}@{REALM}", keytab.display()));
    tool_env(&mut command, dir);
    run(command, &format!("writing the keytab of {name}"))
}

fn tool_env(command: &mut Command, dir: &Path) {
    command
        .env("KRB5_CONFIG", dir.join("krb5.conf"))
        .env("KRB5_KDC_PROFILE", dir.join("kdc.conf"))
        .current_dir(dir);
}

/// Runs a tool to completion; its output goes into the error when it fails. `kadmin.local`
/// reports some failures only in its output, with exit status 0, so that is checked too.
fn run(mut command: Command, what: &str) -> Result<()> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::io(what.to_string(), e))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let failed_quietly = text.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        (l.contains("error") || l.contains("failed")) && !l.contains("no policy specified")
    });
    if !output.status.success() || failed_quietly {
        return Err(Error::CommandFailed {
            what: what.to_string(),
            status: output.status.to_string(),
            output: text,
        });
    }
    Ok(())
}
