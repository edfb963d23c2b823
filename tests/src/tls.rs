//! TLS on the servers' secure client port, with certificates made at test time.
//!
//! A server or ensemble built with [`tls`](crate::ServerBuilder::tls) runs ZooKeeper's Netty
//! connection factory with a `secureClientPort` beside the plain `clientPort` (which the
//! harness keeps for its own four-letter checks). Its key and trust stores are PEM files
//! (`ssl.keyStore.type=PEM`) written to a private directory: one certificate authority, one
//! server certificate shared by every member, nothing committed anywhere.
//!
//! The server certificate names [`DEFAULT_SERVER_NAME`] (`localhost`) only, so a client that
//! dials `localhost:PORT` verifies it, while one dialling `127.0.0.1:PORT` meets a hostname
//! mismatch: both cases from one server. With [`ClientAuth::Want`] or [`ClientAuth::Need`]
//! the server asks for client certificates and registers ZooKeeper's x509 authentication
//! provider, so a connection is authenticated as `x509` with its certificate's subject
//! (`whoAmI` shows it).
//!
//! ```no_run
//! use zookeeper_testkit::{tls::{CertificateAuthority, ClientAuth, TlsOptions}, ZkServer};
//!
//! # async fn demo() -> zookeeper_testkit::Result<()> {
//! let server = ZkServer::builder()
//!     .tls(TlsOptions::new().client_auth(ClientAuth::Need))
//!     .start()
//!     .await?;
//! let tls = server.tls().expect("started with TLS");
//! let connect = server.secure_connect_string().expect("started with TLS"); // "localhost:PORT"
//! let trusted = tls.ca_pem(); // what a client verifies the server against
//! let alice = tls.client_identity("alice")?; // accepted; whoAmI says x509 "CN=alice"
//! let stranger = CertificateAuthority::new("elsewhere")?.client_identity("mallory")?; // refused
//! # Ok(()) }
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

use crate::error::{Error, Result};
use crate::options::Options;
use crate::ports::free_port;
use crate::tempdir::TempDir;

/// The one name the server certificate carries unless [`TlsOptions::server_names`] says
/// otherwise.
pub const DEFAULT_SERVER_NAME: &str = "localhost";

/// Whether the server asks clients for a certificate (`ssl.clientAuth`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClientAuth {
    /// No client certificate is asked for (`ssl.clientAuth=none`).
    #[default]
    None,
    /// A client certificate is asked for; a client without one is served unauthenticated, one
    /// with an untrusted certificate is refused (`ssl.clientAuth=want`).
    Want,
    /// A trusted client certificate is required: the handshake fails without one
    /// (`ssl.clientAuth=need`).
    Need,
}

impl ClientAuth {
    fn config_value(self) -> &'static str {
        match self {
            ClientAuth::None => "none",
            ClientAuth::Want => "want",
            ClientAuth::Need => "need",
        }
    }
}

/// How the secure client port is set up; give it to
/// [`ServerBuilder::tls`](crate::ServerBuilder::tls) or
/// [`EnsembleBuilder::tls`](crate::EnsembleBuilder::tls).
#[derive(Clone, Debug)]
pub struct TlsOptions {
    ca: Option<CertificateAuthority>,
    client_auth: ClientAuth,
    server_names: Vec<String>,
}

impl Default for TlsOptions {
    fn default() -> Self {
        TlsOptions {
            ca: None,
            client_auth: ClientAuth::None,
            server_names: vec![DEFAULT_SERVER_NAME.to_owned()],
        }
    }
}

impl TlsOptions {
    /// Server authentication only, by a fresh certificate authority, for `localhost`.
    pub fn new() -> TlsOptions {
        TlsOptions::default()
    }

    /// Whether client certificates are asked for (default [`ClientAuth::None`]).
    pub fn client_auth(mut self, client_auth: ClientAuth) -> TlsOptions {
        self.client_auth = client_auth;
        self
    }

    /// Issue the server certificate from (and trust client certificates of) this authority
    /// instead of a fresh one, e.g. to have several servers under one authority.
    pub fn ca(mut self, ca: CertificateAuthority) -> TlsOptions {
        self.ca = Some(ca);
        self
    }

    /// The names (DNS names or IP addresses) the server certificate is valid for (default
    /// `["localhost"]`); the first one goes into
    /// [`secure_connect_string`](crate::ZkServer::secure_connect_string).
    pub fn server_names<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.server_names = names.into_iter().map(Into::into).collect();
        self
    }
}

/// A certificate authority made at test time; it signs server and client certificates.
/// Clones share the same key.
#[derive(Clone)]
pub struct CertificateAuthority {
    inner: Arc<CaInner>,
}

struct CaInner {
    name: String,
    cert_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl fmt::Debug for CertificateAuthority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CertificateAuthority")
            .field("name", &self.inner.name)
            .finish_non_exhaustive()
    }
}

fn tls_error(what: &str, e: rcgen::Error) -> Error {
    Error::Certificate {
        what: what.to_owned(),
        reason: e.to_string(),
    }
}

fn subject(common_name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    dn
}

impl CertificateAuthority {
    /// A new self-signed authority with the common name `name`.
    pub fn new(name: &str) -> Result<CertificateAuthority> {
        let what = format!("certificate authority {name:?}");
        let key = KeyPair::generate().map_err(|e| tls_error(&what, e))?;
        let mut params = CertificateParams::default();
        params.distinguished_name = subject(name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).map_err(|e| tls_error(&what, e))?;
        Ok(CertificateAuthority {
            inner: Arc::new(CaInner {
                name: name.to_owned(),
                cert_pem: cert.pem(),
                issuer: Issuer::new(params, key),
            }),
        })
    }

    /// The authority's common name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The authority's certificate (PEM): what a peer trusts to accept its certificates.
    pub fn cert_pem(&self) -> &str {
        &self.inner.cert_pem
    }

    /// A server certificate for `names` (DNS names or IP addresses), with its key.
    pub fn server_identity<S: AsRef<str>>(&self, names: &[S]) -> Result<Identity> {
        let names: Vec<String> = names.iter().map(|n| n.as_ref().to_owned()).collect();
        let what = format!("server certificate for {names:?}");
        let common_name = names.first().cloned().unwrap_or_default();
        let mut params = CertificateParams::new(names).map_err(|e| tls_error(&what, e))?;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.issue(params, &common_name, &what)
    }

    /// A client certificate with the subject `CN=<common_name>` and no subject alternative
    /// names (ZooKeeper does not check client hostnames), with its key.
    pub fn client_identity(&self, common_name: &str) -> Result<Identity> {
        let what = format!("client certificate {common_name:?}");
        let mut params = CertificateParams::default();
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.issue(params, common_name, &what)
    }

    fn issue(
        &self,
        mut params: CertificateParams,
        common_name: &str,
        what: &str,
    ) -> Result<Identity> {
        params.distinguished_name = subject(common_name);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.use_authority_key_identifier_extension = true;
        let key = KeyPair::generate().map_err(|e| tls_error(what, e))?;
        let cert = params
            .signed_by(&key, &self.inner.issuer)
            .map_err(|e| tls_error(what, e))?;
        Ok(Identity {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            subject: format!("CN={common_name}"),
            issuer: self.inner.name.clone(),
        })
    }
}

/// A certificate and its private key (both PEM; the key in PKCS#8). `Debug` shows the subject
/// and issuer, never the key.
#[derive(Clone)]
pub struct Identity {
    cert_pem: String,
    key_pem: String,
    subject: String,
    issuer: String,
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity")
            .field("subject", &self.subject)
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl Identity {
    /// The certificate, PEM.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The private key, PEM (`BEGIN PRIVATE KEY`, PKCS#8).
    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }

    /// The subject as ZooKeeper's x509 provider names the authenticated client, e.g.
    /// `CN=alice`.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The common name of the authority that signed it.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// Writes the certificate and the key to two files, each replaced atomically (written
    /// beside, then renamed), so that a reader sees either the old file or the new one: this
    /// is how a certificate rotation looks to a client that re-reads its files.
    pub fn write_files(&self, cert: &Path, key: &Path) -> Result<()> {
        replace_file(cert, self.cert_pem.as_bytes())?;
        replace_file(key, self.key_pem.as_bytes())
    }
}

fn replace_file(path: &Path, contents: &[u8]) -> Result<()> {
    let mut staging = path.as_os_str().to_owned();
    staging.push(".new");
    let staging = PathBuf::from(staging);
    std::fs::write(&staging, contents)
        .map_err(|e| Error::io(format!("writing {}", staging.display()), e))?;
    std::fs::rename(&staging, path).map_err(|e| {
        Error::io(
            format!("renaming {} to {}", staging.display(), path.display()),
            e,
        )
    })
}

/// Makes what `options.tls` asks for, and puts the `zoo.cfg` lines that serve it before the
/// caller's own `config` lines (which still override them).
pub(crate) fn prepare(options: &mut Options) -> Result<Option<Arc<ServerTls>>> {
    let Some(tls_options) = &options.tls else {
        return Ok(None);
    };
    let tls = ServerTls::create(tls_options)?;
    let mut config = tls.config_lines();
    config.append(&mut options.config);
    options.config = config;
    Ok(Some(Arc::new(tls)))
}

/// A free port for a member's `secureClientPort` when TLS is on.
pub(crate) fn secure_port(tls: Option<&Arc<ServerTls>>) -> Result<Option<u16>> {
    tls.map(|_| free_port()).transpose()
}

/// The TLS side of a running server or ensemble: its authority, its certificate files and the
/// means to mint client certificates it accepts.
pub struct ServerTls {
    ca: CertificateAuthority,
    server: Identity,
    client_auth: ClientAuth,
    server_names: Vec<String>,
    dir: TempDir,
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTls")
            .field("ca", &self.ca)
            .field("client_auth", &self.client_auth)
            .field("server_names", &self.server_names)
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}

impl ServerTls {
    /// Makes the certificates and writes the server's key and trust stores.
    pub(crate) fn create(options: &TlsOptions) -> Result<ServerTls> {
        let ca = match &options.ca {
            Some(ca) => ca.clone(),
            None => CertificateAuthority::new("zookeeper-testkit CA")?,
        };
        let server = ca.server_identity(&options.server_names)?;
        let dir = TempDir::new("tls")?;
        let tls = ServerTls {
            ca,
            server,
            client_auth: options.client_auth,
            server_names: options.server_names.clone(),
            dir,
        };
        // ZooKeeper's PEM key store holds the certificate and the key in one file.
        let key_store = format!("{}{}", tls.server.cert_pem, tls.server.key_pem);
        replace_file(&tls.key_store_file(), key_store.as_bytes())?;
        replace_file(&tls.ca_file(), tls.ca.cert_pem().as_bytes())?;
        Ok(tls)
    }

    /// The `zoo.cfg` lines that serve this on the secure client port (the port itself is a
    /// per-member line).
    pub(crate) fn config_lines(&self) -> Vec<(String, String)> {
        let path = |p: PathBuf| p.display().to_string();
        let mut lines = vec![
            (
                "serverCnxnFactory",
                "org.apache.zookeeper.server.NettyServerCnxnFactory".to_owned(),
            ),
            ("ssl.keyStore.location", path(self.key_store_file())),
            ("ssl.keyStore.type", "PEM".to_owned()),
            ("ssl.trustStore.location", path(self.ca_file())),
            ("ssl.trustStore.type", "PEM".to_owned()),
            ("ssl.clientAuth", self.client_auth.config_value().to_owned()),
        ];
        if self.client_auth != ClientAuth::None {
            // The Netty factory authenticates every client certificate it asked for through
            // the `x509` provider; 3.8 uses `X509AuthenticationProvider` when none is named.
            // Naming it keeps the choice explicit, as the guide's configuration does.
            lines.push((
                "authProvider.x509",
                "org.apache.zookeeper.server.auth.X509AuthenticationProvider".to_owned(),
            ));
        }
        lines.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
    }

    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn key_store_file(&self) -> PathBuf {
        self.dir.path().join("server.pem")
    }

    /// The authority that signed the server certificate and whose client certificates the
    /// server trusts.
    pub fn ca(&self) -> &CertificateAuthority {
        &self.ca
    }

    /// The authority's certificate (PEM): what clients verify the server against.
    pub fn ca_pem(&self) -> &str {
        self.ca.cert_pem()
    }

    /// A file holding [`ServerTls::ca_pem`], for clients configured with paths.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// The server's certificate and key.
    pub fn server_identity(&self) -> &Identity {
        &self.server
    }

    /// The names the server certificate is valid for.
    pub fn server_names(&self) -> &[String] {
        &self.server_names
    }

    /// The host name clients dial (the certificate's first name).
    pub fn host(&self) -> &str {
        self.server_names
            .first()
            .map(String::as_str)
            .unwrap_or(DEFAULT_SERVER_NAME)
    }

    /// Whether the server asks for client certificates.
    pub fn client_auth(&self) -> ClientAuth {
        self.client_auth
    }

    /// A client certificate the server trusts, subject `CN=<common_name>`.
    pub fn client_identity(&self, common_name: &str) -> Result<Identity> {
        self.ca.client_identity(common_name)
    }

    /// `host:port` for each port, comma-separated, with the certificate's host name.
    pub(crate) fn connect_string(&self, ports: impl IntoIterator<Item = u16>) -> String {
        let host = self.host();
        let host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.to_owned()
        };
        ports
            .into_iter()
            .map(|port| format!("{host}:{port}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_holds_no_key() {
        let ca = CertificateAuthority::new("debug-ca").unwrap();
        let id = ca.client_identity("alice").unwrap();
        for text in [format!("{ca:?}"), format!("{id:?}")] {
            assert!(!text.contains("PRIVATE KEY"), "{text}");
            assert!(!text.contains(id.key_pem()), "{text}");
        }
        assert!(format!("{id:?}").contains("CN=alice"));
        let tls = ServerTls::create(&TlsOptions::new()).unwrap();
        let text = format!("{tls:?}");
        assert!(!text.contains("PRIVATE KEY"), "{text}");
    }

    #[test]
    fn files_hold_the_certificates_and_the_key_store_the_key() {
        let tls = ServerTls::create(&TlsOptions::new().client_auth(ClientAuth::Need)).unwrap();
        let ca = std::fs::read_to_string(tls.ca_file()).unwrap();
        assert_eq!(ca, tls.ca_pem());
        let store = std::fs::read_to_string(tls.key_store_file()).unwrap();
        assert!(store.contains("BEGIN CERTIFICATE") && store.contains("BEGIN PRIVATE KEY"));
        let cfg = tls.config_lines();
        assert!(cfg.contains(&("ssl.clientAuth".into(), "need".into())));
        assert!(cfg.iter().any(|(k, _)| k == "authProvider.x509"));
        assert_eq!(tls.connect_string([1, 2]), "localhost:1,localhost:2");
    }

    #[test]
    fn rotation_replaces_both_files() {
        let ca = CertificateAuthority::new("rotation-ca").unwrap();
        let dir = TempDir::new("tls-rotation").unwrap();
        let (cert, key) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
        let first = ca.client_identity("one").unwrap();
        let second = ca.client_identity("two").unwrap();
        first.write_files(&cert, &key).unwrap();
        second.write_files(&cert, &key).unwrap();
        assert_eq!(std::fs::read_to_string(&cert).unwrap(), second.cert_pem());
        assert_eq!(std::fs::read_to_string(&key).unwrap(), second.key_pem());
        assert_ne!(first.cert_pem(), second.cert_pem());
    }
}
