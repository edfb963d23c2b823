//! [`TlsConfig`]: whom to trust, who we are, and how strictly names are checked.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rustls::pki_types::CertificateDer;

/// Where PEM text comes from: given once, or a file read again for every connection.
#[derive(Clone)]
pub(crate) enum PemSource {
    Inline(Arc<[u8]>),
    File(PathBuf),
}

impl PemSource {
    /// The bytes, reading the file now if it is one.
    pub(crate) fn read(&self) -> std::io::Result<std::borrow::Cow<'_, [u8]>> {
        match self {
            PemSource::Inline(bytes) => Ok(std::borrow::Cow::Borrowed(bytes)),
            PemSource::File(path) => std::fs::read(path).map(std::borrow::Cow::Owned),
        }
    }
}

impl fmt::Display for PemSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PemSource::Inline(bytes) => write!(f, "PEM given inline ({} bytes)", bytes.len()),
            PemSource::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// A client certificate chain and its private key.
#[derive(Clone)]
pub(crate) struct ClientIdentity {
    pub(crate) cert_chain: PemSource,
    pub(crate) key: PemSource,
}

/// The platform's authorities, loaded on first use and kept: they change with system
/// updates, not with certificate rotations.
#[derive(Default)]
pub(crate) struct PlatformRoots(pub(super) OnceLock<Result<Vec<CertificateDer<'static>>, String>>);

/// How the client speaks TLS to every server of the connect string; give it to
/// [`ClientBuilder::tls`](crate::ClientBuilder::tls). Needs the cargo feature `tls`.
///
/// By default the server's certificate chain must lead to an authority of the platform's
/// store (read with `rustls-native-certs`, once per `TlsConfig`), and the certificate must
/// name the host as written in the connect string (a DNS name or an IP address). Give the
/// ensemble's own authority with [`TlsConfig::with_ca_pem`] or [`TlsConfig::with_ca_file`].
///
/// Certificate and key *files* are read again for every connection attempt, so a certificate
/// rotated on disk is used from the next reconnect on, without a restart. Replace such files
/// atomically (write a new file, then rename it over the old one), or an attempt may read a
/// half-written file and fail; the next one reads it whole.
///
/// `Debug` shows where certificates come from, never a key.
///
/// ```no_run
/// # async fn demo() -> Result<(), zookeeper_tokio::Error> {
/// use zookeeper_tokio::{Client, TlsConfig};
///
/// let tls = TlsConfig::with_ca_file("/etc/zookeeper/ca.pem")
///     .client_cert_files("/etc/zookeeper/client.pem", "/etc/zookeeper/client-key.pem");
/// let client = Client::builder("zk1.example.com:2281,zk2.example.com:2281")
///     .tls(tls)
///     .connect()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct TlsConfig {
    pub(crate) roots: Vec<PemSource>,
    pub(crate) platform_roots: bool,
    pub(crate) identity: Option<ClientIdentity>,
    pub(crate) verify_hostname: bool,
    pub(crate) platform_cache: Arc<PlatformRoots>,
}

impl Default for TlsConfig {
    fn default() -> Self {
        TlsConfig::new()
    }
}

impl TlsConfig {
    /// Trust the platform's certificate authorities; verify hostnames; no client certificate.
    pub fn new() -> TlsConfig {
        TlsConfig {
            roots: Vec::new(),
            platform_roots: true,
            identity: None,
            verify_hostname: true,
            platform_cache: Default::default(),
        }
    }

    /// Trust only the authorities in `pem` (one or more `BEGIN CERTIFICATE` sections), not the
    /// platform's.
    pub fn with_ca_pem(pem: impl Into<Vec<u8>>) -> TlsConfig {
        TlsConfig {
            platform_roots: false,
            ..TlsConfig::new()
        }
        .add_ca_pem(pem)
    }

    /// Trust only the authorities in the PEM file at `path` (read for every connection
    /// attempt), not the platform's.
    pub fn with_ca_file(path: impl AsRef<Path>) -> TlsConfig {
        TlsConfig {
            platform_roots: false,
            ..TlsConfig::new()
        }
        .add_ca_file(path)
    }

    /// Trust the authorities in `pem` too.
    pub fn add_ca_pem(mut self, pem: impl Into<Vec<u8>>) -> TlsConfig {
        self.roots.push(PemSource::Inline(pem.into().into()));
        self
    }

    /// Trust the authorities in the PEM file at `path` too (read for every connection
    /// attempt).
    pub fn add_ca_file(mut self, path: impl AsRef<Path>) -> TlsConfig {
        self.roots.push(PemSource::File(path.as_ref().to_owned()));
        self
    }

    /// Trust the platform's authorities too (they are trusted by [`TlsConfig::new`], not by
    /// [`TlsConfig::with_ca_pem`] and [`TlsConfig::with_ca_file`]).
    pub fn add_platform_roots(mut self) -> TlsConfig {
        self.platform_roots = true;
        self
    }

    /// Present this client certificate (PEM: the certificate first, then any intermediates)
    /// with its private key (PEM: PKCS#8, PKCS#1 or SEC1), for servers that ask for one
    /// (`ssl.clientAuth=need` or `want`). ZooKeeper's `x509` provider then authenticates the
    /// session as the certificate's subject.
    pub fn client_cert_pem(
        mut self,
        cert_chain_pem: impl Into<Vec<u8>>,
        key_pem: impl Into<Vec<u8>>,
    ) -> TlsConfig {
        self.identity = Some(ClientIdentity {
            cert_chain: PemSource::Inline(cert_chain_pem.into().into()),
            key: PemSource::Inline(key_pem.into().into()),
        });
        self
    }

    /// Like [`TlsConfig::client_cert_pem`], from two files read for every connection attempt:
    /// replace them and the next reconnect presents the new certificate.
    pub fn client_cert_files(
        mut self,
        cert_chain: impl AsRef<Path>,
        key: impl AsRef<Path>,
    ) -> TlsConfig {
        self.identity = Some(ClientIdentity {
            cert_chain: PemSource::File(cert_chain.as_ref().to_owned()),
            key: PemSource::File(key.as_ref().to_owned()),
        });
        self
    }

    /// **Dangerous**: accept a server certificate whatever host it names.
    ///
    /// The chain is still verified against the trusted authorities, but any holder of *any*
    /// certificate from them — another service, any other machine the authority ever issued
    /// a certificate to — can then impersonate every server of the ensemble. Use it only when
    /// the trusted authority issues certificates to this ensemble's servers and nothing else,
    /// and prefer fixing the certificates' names (or the connect string) instead.
    pub fn danger_disable_hostname_verification(mut self) -> TlsConfig {
        self.verify_hostname = false;
        self
    }

    /// Whether server certificates must name the host dialled (true unless
    /// [`TlsConfig::danger_disable_hostname_verification`]).
    pub fn verifies_hostname(&self) -> bool {
        self.verify_hostname
    }
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let roots: Vec<String> = self.roots.iter().map(ToString::to_string).collect();
        let identity = self.identity.as_ref().map(|id| {
            let key = match &id.key {
                PemSource::Inline(_) => "<inline key, not shown>".to_owned(),
                file => file.to_string(),
            };
            format!("certificate: {}, key: {key}", id.cert_chain)
        });
        f.debug_struct("TlsConfig")
            .field("roots", &roots)
            .field("platform_roots", &self.platform_roots)
            .field("client_identity", &identity)
            .field("verify_hostname", &self.verify_hostname)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str =
        "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n-----END PRIVATE KEY-----\n";

    #[test]
    fn debug_shows_sources_never_keys() {
        let inline = TlsConfig::with_ca_pem("-----BEGIN CERTIFICATE-----\nAA==\n")
            .client_cert_pem("-----BEGIN CERTIFICATE-----\nAA==\n", KEY);
        let text = format!("{inline:?}");
        assert!(!text.contains("c2VjcmV0"), "{text}");
        assert!(!text.contains("PRIVATE KEY"), "{text}");
        assert!(text.contains("not shown"), "{text}");

        let files = TlsConfig::with_ca_file("/etc/zk/ca.pem")
            .client_cert_files("/etc/zk/client.pem", "/etc/zk/client.key")
            .danger_disable_hostname_verification();
        let text = format!("{files:?}");
        assert!(text.contains("/etc/zk/client.key"), "{text}");
        assert!(text.contains("verify_hostname: false"), "{text}");
        assert!(!files.verifies_hostname());
    }

    #[test]
    fn custom_authorities_replace_the_platform_unless_added_back() {
        assert!(TlsConfig::new().platform_roots);
        assert!(TlsConfig::new().verifies_hostname());
        assert!(!TlsConfig::with_ca_file("/x").platform_roots);
        assert!(
            TlsConfig::with_ca_file("/x")
                .add_platform_roots()
                .platform_roots
        );
    }
}
