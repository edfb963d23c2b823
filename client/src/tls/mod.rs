//! TLS to ZooKeeper's secure client port (cargo feature `tls`): rustls through
//! `tokio-rustls`, with the `ring` provider.
//!
//! [`TlsConfig`] says whom to trust and who we are; each connection attempt loads it afresh
//! (files are read again), connects, verifies, and hands the driver a split stream. Failures
//! that certificates cause are named ([`ErrorKind::Tls`]) so that they are not retried as if the
//! network had failed.

mod config;
mod failure;
mod load;
mod provider;
mod stream;
mod verify;

pub use config::TlsConfig;
pub(crate) use stream::{TlsReader, TlsSession, TlsWriter};

use rustls::pki_types::ServerName;

use crate::connect_string::HostPort;
use crate::dial::{tcp_connect, ConnectError};
use crate::error::{ErrorKind, TlsCause};

/// Loads `tls`, connects to `host` and completes the handshake.
pub(crate) async fn connect(
    tls: &TlsConfig,
    host: HostPort,
) -> Result<Box<TlsSession>, ConnectError> {
    let config = tls.clone();
    // Reading files (and, once, the platform's store) blocks.
    let loaded = tokio::task::spawn_blocking(move || load::load(&config))
        .await
        .map_err(|e| ConnectError::Io(std::io::Error::other(e)))?
        .map_err(ConnectError::Tls)?;
    let name = ServerName::try_from(host.host.clone()).map_err(|e| {
        ConnectError::Tls(ErrorKind::Tls {
            cause: TlsCause::Configuration,
            message: format!(
                "host {:?} is not a name a certificate can carry: {e}",
                host.host
            ),
        })
    })?;
    let tcp = tcp_connect(&host).await.map_err(ConnectError::Io)?;
    let connector = tokio_rustls::TlsConnector::from(loaded.config);
    match connector.connect(name, tcp).await {
        Ok(stream) => Ok(Box::new(TlsSession::new(
            stream,
            host,
            loaded.presents_certificate,
        ))),
        Err(e) => Err(
            match failure::classify(&e, &host, loaded.presents_certificate) {
                Some(tls) => ConnectError::Tls(tls),
                None => ConnectError::Io(e),
            },
        ),
    }
}
