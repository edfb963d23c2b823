//! Turning a [`TlsConfig`] into a rustls client configuration, reading its files anew on
//! every call so that rotated certificates take effect at the next connection.

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore};

use super::config::{PemSource, TlsConfig};
use super::provider::provider;
use super::verify::AnyHostnameVerifier;
use crate::error::{ErrorKind, TlsCause};

/// A configuration ready for one connection attempt.
pub(crate) struct Loaded {
    pub(crate) config: Arc<ClientConfig>,
    /// A client certificate is configured (to tell "required" from "refused").
    pub(crate) presents_certificate: bool,
}

fn config_error(message: String) -> ErrorKind {
    ErrorKind::Tls {
        cause: TlsCause::Configuration,
        message,
    }
}

fn read(source: &PemSource, what: &str) -> Result<Vec<u8>, ErrorKind> {
    source
        .read()
        .map(|bytes| bytes.into_owned())
        .map_err(|e| config_error(format!("cannot read the {what} from {source}: {e}")))
}

fn certificates(source: &PemSource, what: &str) -> Result<Vec<CertificateDer<'static>>, ErrorKind> {
    let pem = read(source, what)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| config_error(format!("cannot parse the {what} in {source}: {e}")))?;
    if certs.is_empty() {
        return Err(config_error(format!(
            "no BEGIN CERTIFICATE section in the {what} from {source}"
        )));
    }
    Ok(certs)
}

/// Builds the rustls configuration for one attempt. Blocking: it reads files.
pub(crate) fn load(tls: &TlsConfig) -> Result<Loaded, ErrorKind> {
    let mut roots = RootCertStore::empty();
    for source in &tls.roots {
        for cert in certificates(source, "trusted certificates")? {
            roots.add(cert).map_err(|e| {
                config_error(format!("unusable trusted certificate in {source}: {e}"))
            })?;
        }
    }
    if tls.platform_roots {
        let platform = tls.platform_cache.0.get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            if found.certs.is_empty() {
                let errors: Vec<String> = found.errors.iter().map(ToString::to_string).collect();
                return Err(format!(
                    "the platform's certificate store is empty ({})",
                    errors.join("; ")
                ));
            }
            Ok(found.certs)
        });
        match platform {
            Ok(certs) => {
                roots.add_parsable_certificates(certs.iter().cloned());
            }
            Err(e) if roots.is_empty() => return Err(config_error(e.clone())),
            Err(_) => {}
        }
    }
    if roots.is_empty() {
        return Err(config_error("no trusted certificate authority".into()));
    }

    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| config_error(format!("no usable protocol version: {e}")))?;
    let builder = if tls.verify_hostname {
        builder.with_root_certificates(roots)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyHostnameVerifier::new(roots)?))
    };
    let config = match &tls.identity {
        None => builder.with_no_client_auth(),
        Some(identity) => {
            let chain = certificates(&identity.cert_chain, "client certificate")?;
            let key_pem = read(&identity.key, "client key")?;
            let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
                config_error(format!("no usable private key in {}: {e}", identity.key))
            })?;
            builder.with_client_auth_cert(chain, key).map_err(|e| {
                config_error(format!(
                    "client certificate {} with key {}: {e}",
                    identity.cert_chain, identity.key
                ))
            })?
        }
    };
    Ok(Loaded {
        config: Arc::new(config),
        presents_certificate: tls.identity.is_some(),
    })
}
