//! The TLS flags, and the client's `TlsConfig` they make.
//!
//! TLS is on only with `--tls` (or `ZK_TLS`), and then for every connection: a certificate
//! flag without it is refused rather than ignored, so that a session meant to be encrypted is
//! never opened in plain TCP by a forgotten flag.

use std::path::PathBuf;

use clap::builder::BoolishValueParser;
use clap::{ArgAction, Args};
use zookeeper_tokio::{ClientBuilder, ErrorKind, TlsCause};

use crate::exit::Failure;

/// How to speak TLS to the servers' secure client port.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "TLS")]
pub struct TlsFlags {
    /// Connect with TLS, to the servers' secure client port (`secureClientPort`), for every
    /// connection. Without it no connection is TLS, and the other --tls-* flags are refused.
    #[arg(
        long = "tls",
        global = true,
        env = "ZK_TLS",
        action = ArgAction::SetTrue,
        value_parser = BoolishValueParser::new()
    )]
    pub enabled: bool,

    /// Trust only the certificate authorities in this PEM file, instead of the platform's
    /// store. Repeat it for several files; one file may hold several certificates.
    #[arg(long = "tls-ca", global = true, env = "ZK_TLS_CA", value_name = "FILE")]
    pub ca: Vec<PathBuf>,

    /// Present this client certificate (PEM, then any intermediates) to servers that ask for
    /// one (`ssl.clientAuth=need`); needs --tls-key. With ZooKeeper's x509 provider the
    /// session is authenticated as the certificate's subject.
    #[arg(
        long = "tls-cert",
        global = true,
        env = "ZK_TLS_CERT",
        value_name = "FILE"
    )]
    pub cert: Option<PathBuf>,

    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(
        long = "tls-key",
        global = true,
        env = "ZK_TLS_KEY",
        value_name = "FILE"
    )]
    pub key: Option<PathBuf>,

    /// DANGEROUS: accept a server certificate whatever host it names. The chain is still
    /// checked, but any certificate the trusted authorities ever issued, to any machine, can
    /// then impersonate the servers. Only for an authority that certifies these servers and
    /// nothing else; prefer connecting by a name the certificate carries.
    #[arg(
        long = "tls-no-hostname-verify",
        global = true,
        env = "ZK_TLS_NO_HOSTNAME_VERIFY",
        action = ArgAction::SetTrue,
        value_parser = BoolishValueParser::new()
    )]
    pub no_hostname_verify: bool,
}

impl TlsFlags {
    /// The flags given without `--tls`, as the user would have written them.
    fn without_tls(&self) -> Vec<&'static str> {
        let mut given = Vec::new();
        if !self.ca.is_empty() {
            given.push("--tls-ca (ZK_TLS_CA)");
        }
        if self.cert.is_some() {
            given.push("--tls-cert (ZK_TLS_CERT)");
        }
        if self.key.is_some() {
            given.push("--tls-key (ZK_TLS_KEY)");
        }
        if self.no_hostname_verify {
            given.push("--tls-no-hostname-verify (ZK_TLS_NO_HOSTNAME_VERIFY)");
        }
        given
    }

    /// Checks the flags together; `Ok(false)`: no TLS.
    fn check(&self) -> Result<bool, Failure> {
        if !self.enabled {
            let given = self.without_tls();
            if given.is_empty() {
                return Ok(false);
            }
            return Err(Failure::usage(format!(
                "{} given without --tls (or ZK_TLS=1): add it to connect with TLS, or drop the \
                 TLS settings to connect in plain TCP",
                given.join(", ")
            )));
        }
        match (&self.cert, &self.key) {
            (Some(_), None) => Err(Failure::usage(
                "--tls-cert (ZK_TLS_CERT) needs its key: --tls-key (ZK_TLS_KEY)",
            )),
            (None, Some(_)) => Err(Failure::usage(
                "--tls-key (ZK_TLS_KEY) needs its certificate: --tls-cert (ZK_TLS_CERT)",
            )),
            _ => Ok(true),
        }
    }

    /// `builder`, speaking TLS if the flags say so.
    pub fn apply(&self, builder: ClientBuilder) -> Result<ClientBuilder, Failure> {
        if !self.check()? {
            return Ok(builder);
        }
        self.configure(builder)
    }

    #[cfg(feature = "tls")]
    fn configure(&self, builder: ClientBuilder) -> Result<ClientBuilder, Failure> {
        use zookeeper_tokio::TlsConfig;

        let mut config = match self.ca.split_first() {
            None => TlsConfig::new(),
            Some((first, rest)) => rest
                .iter()
                .fold(TlsConfig::with_ca_file(first), |config, file| {
                    config.add_ca_file(file)
                }),
        };
        if let (Some(cert), Some(key)) = (&self.cert, &self.key) {
            config = config.client_cert_files(cert, key);
        }
        if self.no_hostname_verify {
            config = config.danger_disable_hostname_verification();
        }
        Ok(builder.tls(config))
    }

    #[cfg(not(feature = "tls"))]
    fn configure(&self, _builder: ClientBuilder) -> Result<ClientBuilder, Failure> {
        Err(Failure::usage(
            "this zk was built without TLS: rebuild it with the cargo feature `tls` of \
             zookeeper-cli (on by default)",
        ))
    }
}

/// What to try when a TLS connection failed for `kind`, if there is a likely fix.
pub fn hint(kind: &ErrorKind, tls: &TlsFlags) -> Option<&'static str> {
    match kind {
        ErrorKind::Tls { cause, .. } => match cause {
            TlsCause::UntrustedServer if tls.ca.is_empty() => {
                Some("give the authority that signed it with --tls-ca")
            }
            TlsCause::UntrustedServer => Some("is --tls-ca the authority that signed it?"),
            TlsCause::HostnameMismatch => {
                Some("connect by a name the server's certificate carries")
            }
            TlsCause::ClientCertificateRequired => Some("give one with --tls-cert and --tls-key"),
            TlsCause::ClientCertificateRefused => {
                Some("is --tls-cert issued by an authority the servers trust?")
            }
            _ => None,
        },
        ErrorKind::Connect(_) if tls.enabled => {
            Some("--tls needs the servers' secureClientPort in --server")
        }
        // A TLS port hangs up on plain TCP, or answers with a TLS record.
        ErrorKind::Connect(text)
            if text.contains("connection closed by the server")
                || text.contains("a TLS server") =>
        {
            Some("if that is the servers' secureClientPort, connect with --tls")
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::USAGE;

    fn flags() -> TlsFlags {
        TlsFlags::default()
    }

    #[test]
    fn certificate_flags_without_tls_are_refused_not_ignored() {
        assert!(!flags().check().unwrap());
        for partial in [
            TlsFlags {
                ca: vec!["ca.pem".into()],
                ..flags()
            },
            TlsFlags {
                cert: Some("c.pem".into()),
                key: Some("k.pem".into()),
                ..flags()
            },
            TlsFlags {
                no_hostname_verify: true,
                ..flags()
            },
        ] {
            let failure = partial.check().unwrap_err();
            assert_eq!(failure.code, USAGE);
            assert!(failure.message.unwrap().contains("without --tls"));
        }
    }

    #[test]
    fn a_certificate_needs_its_key() {
        let cert_only = TlsFlags {
            enabled: true,
            cert: Some("c.pem".into()),
            ..flags()
        };
        assert_eq!(cert_only.check().unwrap_err().code, USAGE);
        let key_only = TlsFlags {
            enabled: true,
            key: Some("k.pem".into()),
            ..flags()
        };
        assert_eq!(key_only.check().unwrap_err().code, USAGE);
        let both = TlsFlags {
            cert: Some("c.pem".into()),
            key: Some("k.pem".into()),
            ..key_only
        };
        assert!(both.check().unwrap());
    }
}
