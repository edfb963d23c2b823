//! Opening a TCP connection to a server, and why a connection could not be made: what the
//! plain and the TLS transports share.

use std::io;

use tokio::net::TcpStream;

use crate::connect_string::HostPort;
#[cfg(feature = "tls")]
use crate::error::ErrorKind;

/// Why a connection could not be made.
#[derive(Debug)]
pub(crate) enum ConnectError {
    /// The network failed (refused, unreachable, reset...): worth another attempt.
    Io(io::Error),
    /// TLS failed ([`ErrorKind::Tls`]): the certificates must change before a retry can succeed.
    #[cfg(feature = "tls")]
    Tls(ErrorKind),
}

/// A TCP connection to the first address of `host` that accepts one.
pub(crate) async fn tcp_connect(host: &HostPort) -> io::Result<TcpStream> {
    let mut last_err = io::Error::new(io::ErrorKind::NotFound, "host resolved to no address");
    for addr in tokio::net::lookup_host(host.to_addr_string()).await? {
        match TcpStream::connect(addr).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last_err = e,
        }
    }
    Err(last_err)
}
