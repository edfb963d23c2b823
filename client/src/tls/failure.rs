//! Naming what went wrong when rustls gave up: an [`ErrorKind::Tls`] with a cause a caller can act
//! on and a message that says which server and which certificate.

use std::io;

use rustls::{AlertDescription, CertificateError};

use crate::connect_string::HostPort;
use crate::error::{ErrorKind, TlsCause};

/// The TLS failure behind `err`, or `None` when it is a network error (reset, EOF...).
///
/// `presents_certificate` tells a server that wants a certificate we do not have from one that
/// refuses the one we presented: both answer with a certificate alert.
pub(crate) fn classify(
    err: &io::Error,
    host: &HostPort,
    presents_certificate: bool,
) -> Option<ErrorKind> {
    let tls = err.get_ref()?.downcast_ref::<rustls::Error>()?;
    let server = host.to_addr_string();
    let (cause, message) = match tls {
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => (
            TlsCause::HostnameMismatch,
            format!(
                "the certificate of {server} is not valid for the name {:?}: {tls}",
                host.host
            ),
        ),
        rustls::Error::InvalidCertificate(_)
        | rustls::Error::InvalidCertRevocationList(_)
        | rustls::Error::NoCertificatesPresented => (
            TlsCause::UntrustedServer,
            format!("the certificate of {server} is not trusted: {tls}"),
        ),
        rustls::Error::AlertReceived(alert) if is_about_certificates(*alert) => {
            if presents_certificate {
                (
                    TlsCause::ClientCertificateRefused,
                    format!("{server} refused the client certificate: {tls}"),
                )
            } else {
                (
                    TlsCause::ClientCertificateRequired,
                    format!("{server} requires a client certificate and none is configured: {tls}"),
                )
            }
        }
        _ => (
            TlsCause::Handshake,
            format!("TLS with {server} failed: {tls}"),
        ),
    };
    Some(ErrorKind::Tls { cause, message })
}

/// Alerts a server sends about the client's certificate (or its absence).
fn is_about_certificates(alert: AlertDescription) -> bool {
    matches!(
        alert,
        AlertDescription::NoCertificate
            | AlertDescription::BadCertificate
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::CertificateRevoked
            | AlertDescription::CertificateExpired
            | AlertDescription::CertificateUnknown
            | AlertDescription::UnknownCA
            | AlertDescription::AccessDenied
            | AlertDescription::CertificateRequired
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> HostPort {
        HostPort {
            host: "zk1".into(),
            port: 2281,
        }
    }

    fn io(err: rustls::Error) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, err)
    }

    fn cause(err: &io::Error, presents: bool) -> Option<TlsCause> {
        match classify(err, &host(), presents)? {
            ErrorKind::Tls { cause, message } => {
                assert!(message.contains("zk1:2281"), "{message}");
                Some(cause)
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn certificate_problems_are_named() {
        let unknown = io(rustls::Error::InvalidCertificate(
            CertificateError::UnknownIssuer,
        ));
        assert_eq!(cause(&unknown, true), Some(TlsCause::UntrustedServer));
        let name = io(rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName,
        ));
        assert_eq!(cause(&name, true), Some(TlsCause::HostnameMismatch));
        let alert = io(rustls::Error::AlertReceived(
            AlertDescription::BadCertificate,
        ));
        assert_eq!(
            cause(&alert, false),
            Some(TlsCause::ClientCertificateRequired)
        );
        assert_eq!(
            cause(&alert, true),
            Some(TlsCause::ClientCertificateRefused)
        );
        let other = io(rustls::Error::AlertReceived(
            AlertDescription::ProtocolVersion,
        ));
        assert_eq!(cause(&other, true), Some(TlsCause::Handshake));
    }

    #[test]
    fn network_errors_are_not_tls_failures() {
        for kind in [
            io::ErrorKind::ConnectionReset,
            io::ErrorKind::UnexpectedEof,
            io::ErrorKind::ConnectionRefused,
        ] {
            assert_eq!(cause(&io::Error::from(kind), false), None);
        }
        let wrapped_other = io::Error::new(io::ErrorKind::InvalidData, "not rustls");
        assert_eq!(cause(&wrapped_other, false), None);
    }
}
