//! A TLS connection split for the driver: the halves of one `tokio-rustls` stream.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use crate::connect_string::HostPort;
use crate::error::ErrorKind;

/// Whom a connection is with, to name TLS failures that arrive after the handshake.
#[derive(Debug)]
struct Peer {
    host: HostPort,
    presents_certificate: bool,
}

/// An established TLS connection.
pub(crate) struct TlsSession {
    stream: TlsStream<TcpStream>,
    peer: Arc<Peer>,
}

/// The receiving half.
pub(crate) struct TlsReader {
    half: ReadHalf<TlsStream<TcpStream>>,
    peer: Arc<Peer>,
    /// The end of the stream or an error met while taking more records after some data: the
    /// next read reports it.
    deferred: Option<io::Result<usize>>,
    noop: Waker,
}

/// Plaintext taken from already-received records in one read, at most (bounds the buffer).
const DRAIN_MAX: usize = 256 * 1024;

/// The sending half.
pub(crate) struct TlsWriter {
    half: WriteHalf<TlsStream<TcpStream>>,
    /// A write was accepted by rustls and may still sit in its record buffer.
    unflushed: bool,
    /// For writes that must not wait (see [`TlsWriter::try_write`]).
    noop: Waker,
}

struct NoopWake;

impl Wake for NoopWake {
    fn wake(self: Arc<Self>) {}
}

/// A waker for polls that must not wait: what they leave pending, the driver's next wait
/// registers again with its own waker.
fn noop_waker() -> Waker {
    Waker::from(Arc::new(NoopWake))
}

impl TlsSession {
    pub(crate) fn new(
        stream: TlsStream<TcpStream>,
        host: HostPort,
        presents_certificate: bool,
    ) -> TlsSession {
        TlsSession {
            stream,
            peer: Arc::new(Peer {
                host,
                presents_certificate,
            }),
        }
    }

    pub(crate) fn into_stream(self) -> TlsStream<TcpStream> {
        self.stream
    }

    pub(crate) fn split(self) -> (TlsReader, TlsWriter) {
        let _ = self.stream.get_ref().0.set_nodelay(true);
        let (r, w) = tokio::io::split(self.stream);
        (
            TlsReader {
                half: r,
                peer: self.peer,
                deferred: None,
                noop: noop_waker(),
            },
            TlsWriter {
                half: w,
                unflushed: false,
                noop: noop_waker(),
            },
        )
    }
}

impl TlsReader {
    /// Reads plaintext into `buf`: waits for the first record, then takes every record
    /// already received. rustls hands out one record per read, and the server writes a
    /// record per reply; without this, each reply would cost the driver a turn of its own.
    pub(crate) async fn read_buf(&mut self, buf: &mut BytesMut) -> io::Result<usize> {
        if let Some(deferred) = self.deferred.take() {
            return deferred;
        }
        let mut n = self.half.read_buf(buf).await?;
        if n == 0 {
            return Ok(0);
        }
        let mut cx = Context::from_waker(&self.noop);
        while buf.len() < DRAIN_MAX {
            let more = std::pin::pin!(self.half.read_buf(buf)).poll(&mut cx);
            match more {
                Poll::Ready(Ok(0)) => {
                    self.deferred = Some(Ok(0));
                    break;
                }
                Poll::Ready(Ok(k)) => n += k,
                Poll::Ready(Err(e)) => {
                    self.deferred = Some(Err(e));
                    break;
                }
                Poll::Pending => break,
            }
        }
        Ok(n)
    }

    pub(crate) fn tls_failure(&self, err: &io::Error) -> Option<ErrorKind> {
        super::failure::classify(err, &self.peer.host, self.peer.presents_certificate)
    }
}

impl TlsWriter {
    /// Encrypts some of `out` and waits until rustls has handed every record to the socket.
    /// Cancel-safe: a write dropped while flushing leaves [`TlsWriter::has_unflushed`] set.
    pub(crate) async fn write_buf(&mut self, out: &mut BytesMut) -> io::Result<usize> {
        let n = if out.is_empty() {
            0
        } else {
            self.half.write_buf(out).await?
        };
        self.unflushed = true;
        self.half.flush().await?;
        self.unflushed = false;
        Ok(n)
    }

    /// Encrypts what rustls takes now and sends what the socket takes now, without waiting.
    /// Whatever the socket did not take is left for [`TlsWriter::write_buf`], which the
    /// driver runs while [`TlsWriter::has_unflushed`].
    pub(crate) fn try_write(&mut self, out: &[u8]) -> io::Result<usize> {
        // A waker that does nothing: if the socket is full, the driver's next wait registers
        // its own waker through `write_buf`, since `has_unflushed` is set.
        let mut cx = Context::from_waker(&self.noop);
        match Pin::new(&mut self.half).poll_write(&mut cx, out) {
            Poll::Ready(Ok(n)) => {
                self.unflushed = true;
                match Pin::new(&mut self.half).poll_flush(&mut cx) {
                    Poll::Ready(Ok(())) => self.unflushed = false,
                    Poll::Ready(Err(e)) => return Err(e),
                    Poll::Pending => {}
                }
                Ok(n)
            }
            Poll::Ready(Err(e)) => Err(e),
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    pub(crate) fn has_unflushed(&self) -> bool {
        self.unflushed
    }
}
