//! The verifier behind [`TlsConfig::danger_disable_hostname_verification`]: the chain must
//! lead to a trusted authority, the name is not looked at.
//!
//! [`TlsConfig::danger_disable_hostname_verification`]:
//!     super::TlsConfig::danger_disable_hostname_verification

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_cert_signed_by_trust_anchor, WebPkiServerVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::provider::provider;
use crate::error::{ErrorKind, TlsCause};

#[derive(Debug)]
pub(crate) struct AnyHostnameVerifier {
    roots: Arc<RootCertStore>,
    /// The standard verifier, for handshake signatures and the schemes offered.
    standard: Arc<WebPkiServerVerifier>,
}

impl AnyHostnameVerifier {
    pub(crate) fn new(roots: RootCertStore) -> Result<AnyHostnameVerifier, ErrorKind> {
        let roots = Arc::new(roots);
        let standard = WebPkiServerVerifier::builder_with_provider(roots.clone(), provider())
            .build()
            .map_err(|e| ErrorKind::Tls {
                cause: TlsCause::Configuration,
                message: format!("cannot build the certificate verifier: {e}"),
            })?;
        Ok(AnyHostnameVerifier { roots, standard })
    }
}

impl ServerCertVerifier for AnyHostnameVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let cert = ParsedCertificate::try_from(end_entity)?;
        verify_server_cert_signed_by_trust_anchor(
            &cert,
            &self.roots,
            intermediates,
            now,
            provider().signature_verification_algorithms.all,
        )?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.standard.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.standard.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.standard.supported_verify_schemes()
    }
}
