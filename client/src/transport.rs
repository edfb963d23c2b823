//! The byte streams the session runs over: plain TCP, TLS over TCP (feature `tls`), or the
//! stream of a connector the builder was given (see `connector`).
//!
//! The driver holds a [`Reader`] and a [`Writer`] and never looks inside. The TCP variants are
//! the socket's own halves (`into_split`, `try_write`): the plain path costs what it cost before
//! TLS existed. The TCP write half is shared ([`Wire`]) so that the driver can lend it to a
//! caller while the connection is idle (see `queue`). The TLS variants split one `tokio-rustls` stream; a write is complete only once
//! rustls has handed every record to the socket, so [`Writer::has_unflushed`] keeps the driver
//! writing until then.

use std::future::Future;
use std::io;
use std::sync::Arc;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

use crate::connect_string::HostPort;
use crate::connector::{BoxStream, DynConnect};
use crate::dial::tcp_connect;
pub(crate) use crate::dial::ConnectError;
use crate::error::ErrorKind;

/// Opens connections to servers, with TLS when the client was built with it, or through the
/// connector it was given.
#[derive(Clone, Debug, Default)]
pub(crate) struct Connector {
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<std::sync::Arc<crate::tls::TlsConfig>>,
    pub(crate) custom: Option<Arc<dyn DynConnect>>,
}

/// A connected stream, before the driver splits it.
pub(crate) enum Stream {
    Tcp(TcpStream),
    #[cfg(feature = "tls")]
    Tls(Box<crate::tls::TlsSession>),
    Custom(BoxStream),
}

/// The receiving half of a connection.
pub(crate) enum Reader {
    Tcp(OwnedReadHalf),
    #[cfg(feature = "tls")]
    Tls(crate::tls::TlsReader),
    Custom(ReadHalf<BoxStream>),
}

/// The write half of a plain TCP connection, shared by the driver and, while lent, the caller
/// that writes a request itself. Writes through it never wait (`try_write`).
pub(crate) type Wire = Arc<OwnedWriteHalf>;

/// The sending half of a connection.
pub(crate) enum Writer {
    Tcp(Wire),
    #[cfg(feature = "tls")]
    Tls(crate::tls::TlsWriter),
    Custom(WriteHalf<BoxStream>),
}

impl Connector {
    /// Connects to `host`, and completes the TLS handshake when TLS is on.
    pub(crate) fn connect(
        &self,
        host: HostPort,
    ) -> impl Future<Output = Result<Stream, ConnectError>> + Send + 'static {
        #[cfg(feature = "tls")]
        let tls = self.tls.clone();
        let custom = self.custom.as_ref().map(|c| c.connect(&host));
        async move {
            if let Some(connecting) = custom {
                return connecting
                    .await
                    .map(Stream::Custom)
                    .map_err(ConnectError::Io);
            }
            #[cfg(feature = "tls")]
            if let Some(tls) = tls {
                return crate::tls::connect(&tls, host).await.map(Stream::Tls);
            }
            tcp_connect(&host)
                .await
                .map(Stream::Tcp)
                .map_err(ConnectError::Io)
        }
    }

    /// Sends a four-letter word on a new connection and returns everything the server writes
    /// back before closing it.
    pub(crate) fn four_letter(
        &self,
        host: HostPort,
        word: &'static [u8],
    ) -> impl Future<Output = io::Result<Vec<u8>>> + Send + 'static {
        let connect = self.connect(host);
        async move {
            match connect.await {
                Ok(Stream::Tcp(stream)) => exchange(stream, word).await,
                #[cfg(feature = "tls")]
                Ok(Stream::Tls(session)) => exchange(session.into_stream(), word).await,
                Ok(Stream::Custom(stream)) => exchange(stream, word).await,
                Err(ConnectError::Io(e)) => Err(e),
                #[cfg(feature = "tls")]
                Err(ConnectError::Tls(e)) => Err(io::Error::other(e)),
            }
        }
    }
}

async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    word: &[u8],
) -> io::Result<Vec<u8>> {
    stream.write_all(word).await?;
    stream.flush().await?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await?;
    Ok(answer)
}

impl Stream {
    /// Splits the stream for the driver, with Nagle off: requests are written whole.
    pub(crate) fn split(self) -> (Reader, Writer) {
        match self {
            Stream::Tcp(stream) => {
                let _ = stream.set_nodelay(true);
                let (r, w) = stream.into_split();
                (Reader::Tcp(r), Writer::Tcp(Arc::new(w)))
            }
            #[cfg(feature = "tls")]
            Stream::Tls(session) => {
                let (r, w) = session.split();
                (Reader::Tls(r), Writer::Tls(w))
            }
            Stream::Custom(stream) => {
                let (r, w) = tokio::io::split(stream);
                (Reader::Custom(r), Writer::Custom(w))
            }
        }
    }
}

impl Reader {
    /// Reads what is available into `buf`; `Ok(0)` at the end of the stream.
    pub(crate) async fn read_buf(&mut self, buf: &mut BytesMut) -> io::Result<usize> {
        match self {
            Reader::Tcp(r) => r.read_buf(buf).await,
            #[cfg(feature = "tls")]
            Reader::Tls(r) => r.read_buf(buf).await,
            Reader::Custom(r) => r.read_buf(buf).await,
        }
    }

    /// The TLS failure behind a read error, if it was one (for example a server refusing the
    /// client certificate after a TLS 1.3 handshake completed on the client's side).
    pub(crate) fn tls_failure(&self, _err: &io::Error) -> Option<ErrorKind> {
        match self {
            Reader::Tcp(_) | Reader::Custom(_) => None,
            #[cfg(feature = "tls")]
            Reader::Tls(r) => r.tls_failure(_err),
        }
    }
}

impl Writer {
    /// Writes some of `out` (advancing it) once the connection can take it.
    pub(crate) async fn write_buf(&mut self, out: &mut BytesMut) -> io::Result<usize> {
        match self {
            Writer::Tcp(w) => loop {
                w.writable().await?;
                match w.try_write(out) {
                    Ok(n) => {
                        out.advance(n);
                        return Ok(n);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    Err(e) => return Err(e),
                }
            },
            #[cfg(feature = "tls")]
            Writer::Tls(w) => w.write_buf(out).await,
            Writer::Custom(w) => {
                let n = w.write_buf(out).await?;
                // A stream of unknown make may buffer: hand the bytes on before reading the
                // reply they ask for.
                w.flush().await?;
                Ok(n)
            }
        }
    }

    /// The half a caller may write to while the driver lends it: plain TCP only, since a TLS
    /// record layer has state of its own.
    pub(crate) fn wire(&self) -> Option<&Wire> {
        match self {
            Writer::Tcp(w) => Some(w),
            #[cfg(feature = "tls")]
            Writer::Tls(_) => None,
            Writer::Custom(_) => None,
        }
    }

    /// Writes what the connection takes right now without waiting; `WouldBlock` if nothing.
    pub(crate) fn try_write(&mut self, out: &[u8]) -> io::Result<usize> {
        match self {
            Writer::Tcp(w) => w.try_write(out),
            #[cfg(feature = "tls")]
            Writer::Tls(w) => w.try_write(out),
            // No way to write without waiting: the driver's next turn writes it.
            Writer::Custom(_) => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    /// Bytes accepted by a write but not yet handed to the socket: the driver must keep
    /// writing even with nothing new to send.
    pub(crate) fn has_unflushed(&self) -> bool {
        match self {
            Writer::Tcp(_) | Writer::Custom(_) => false,
            #[cfg(feature = "tls")]
            Writer::Tls(w) => w.has_unflushed(),
        }
    }
}

#[cfg(all(test, feature = "tls"))]
mod tests {
    use std::sync::Arc;

    use zookeeper_testkit::{ClientAuth, TlsOptions, ZkServer};

    use super::*;
    use crate::tls::TlsConfig;

    /// The read-only probes (`isro`) take the session's transport: over TLS against a secure
    /// port, where plain TCP gets no answer.
    #[tokio::test]
    async fn four_letter_words_go_over_the_sessions_transport() {
        let server = ZkServer::builder()
            .tls(TlsOptions::new().client_auth(ClientAuth::Need))
            .start()
            .await
            .expect("TLS server");
        let tls = server.tls().unwrap();
        let alice = tls.client_identity("alice-probe").unwrap();
        let secure = HostPort {
            host: "localhost".into(),
            port: server.secure_addr().unwrap().port(),
        };
        let over_tls = Connector {
            tls: Some(Arc::new(
                TlsConfig::with_ca_pem(tls.ca_pem())
                    .client_cert_pem(alice.cert_pem(), alice.key_pem()),
            )),
            custom: None,
        };
        let answer = over_tls.four_letter(secure.clone(), b"isro");
        let answer = tokio::time::timeout(std::time::Duration::from_secs(10), answer).await;
        assert_eq!(answer.expect("answered").unwrap(), b"rw");

        // The TLS port waits for a record that never comes: the driver bounds probes the same.
        let plain = Connector::default().four_letter(secure, b"isro");
        let plain = tokio::time::timeout(std::time::Duration::from_secs(1), plain).await;
        assert!(
            !matches!(&plain, Ok(Ok(a)) if a.starts_with(b"rw")),
            "a secure port answered plain TCP: {plain:?}"
        );
    }
}
