//! The seam under the session: what opens a byte stream to a server.
//!
//! By default the client dials TCP (or TLS over TCP) itself, through the enum in `transport`,
//! so the default path costs what it always did. [`ClientBuilder::connector`] puts any other
//! stream under the session instead: a simulated network (the `turmoil` feature's
//! [`TurmoilConnector`]), an in-process pipe, a tunnel. Such a stream is boxed once per
//! connection; its reads and writes then go through one virtual call each.
//!
//! [`ClientBuilder::connector`]: crate::ClientBuilder::connector

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;

use tokio::io::{AsyncRead, AsyncWrite};

use crate::connect_string::HostPort;

/// Opens a byte stream to a server of the connect string. The session speaks ZooKeeper's
/// protocol over what it returns, exactly as over a TCP connection: the stream must deliver
/// bytes in order, and an error or end of stream counts as a lost connection.
///
/// ```
/// use std::future::Future;
/// use std::io;
/// use zookeeper_tokio::{Connect, HostPort};
///
/// /// Dials every server through one local forwarder, whatever the connect string says.
/// struct ViaForwarder(u16);
///
/// impl Connect for ViaForwarder {
///     type Stream = tokio::net::TcpStream;
///
///     fn connect(
///         &self,
///         _server: &HostPort,
///     ) -> impl Future<Output = io::Result<Self::Stream>> + Send + 'static {
///         tokio::net::TcpStream::connect(("127.0.0.1", self.0))
///     }
/// }
/// ```
pub trait Connect: Send + Sync + 'static {
    /// The connected stream.
    type Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static;

    /// Connects to `server`. The client bounds the attempt with its attempt timeout.
    fn connect(
        &self,
        server: &HostPort,
    ) -> impl Future<Output = io::Result<Self::Stream>> + Send + 'static;
}

/// A stream of any connector, boxed once per connection.
pub(crate) trait ByteStream: AsyncRead + AsyncWrite + Unpin + Send {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send> ByteStream for T {}

pub(crate) type BoxStream = Box<dyn ByteStream>;

pub(crate) type BoxConnect = Pin<Box<dyn Future<Output = io::Result<BoxStream>> + Send>>;

/// [`Connect`] with its types erased, so that the builder stays one type.
pub(crate) trait DynConnect: Send + Sync {
    fn connect(&self, server: &HostPort) -> BoxConnect;
}

impl<C: Connect> DynConnect for C {
    fn connect(&self, server: &HostPort) -> BoxConnect {
        let connecting = Connect::connect(self, server);
        Box::pin(async move { Ok(Box::new(connecting.await?) as BoxStream) })
    }
}

impl fmt::Debug for dyn DynConnect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Connect")
    }
}

/// Connects over turmoil's simulated network (cargo feature `turmoil`): the hosts of the
/// connect string are names of hosts in the running simulation.
#[cfg(feature = "turmoil")]
#[derive(Clone, Copy, Debug, Default)]
pub struct TurmoilConnector;

#[cfg(feature = "turmoil")]
impl Connect for TurmoilConnector {
    type Stream = turmoil::net::TcpStream;

    fn connect(
        &self,
        server: &HostPort,
    ) -> impl Future<Output = io::Result<Self::Stream>> + Send + 'static {
        let (host, port) = (server.host.clone(), server.port);
        async move { turmoil::net::TcpStream::connect((host.as_str(), port)).await }
    }
}
