//! A peer that is not a ZooKeeper server (an HTTP server, a TLS port dialled in plain TCP) is
//! named as such in the connect error, instead of a frame length made of its first bytes.

use std::time::Duration;

use zookeeper_tokio::{Client, ErrorKind};

use crate::common::within;
use crate::server::{FakeServer, Peer};

/// The connect error against a server that answers the handshake with `answer`.
async fn connect_error(answer: &'static [u8]) -> String {
    let server = FakeServer::start(move |mut peer: Peer| async move {
        peer.read_available().await;
        peer.write_raw(answer).await;
        // Then silence: the client, not the peer, ends the connection.
        let _ = peer.read_frame().await;
    });
    let err = within(
        "connect",
        Client::builder(&server.connect_string())
            .connect_timeout(Duration::from_secs(2))
            .connect(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Connect(_)), "{err:?}");
    err.to_string()
}

#[tokio::test]
async fn an_http_server_is_named() {
    let text = connect_error(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n").await;
    assert!(
        text.contains("the peer is not a ZooKeeper server: it looks like an HTTP server"),
        "{text}"
    );
    assert!(!text.contains("outside 0..="), "{text}");
}

#[tokio::test]
async fn a_tls_port_is_named() {
    // A TLS alert record, as a TLS server answers bytes that are not TLS.
    let text = connect_error(&[0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x32]).await;
    assert!(
        text.contains("it looks like a TLS server (a TLS record header 0x15 0x03"),
        "{text}"
    );
    assert!(text.contains("connect to it with TLS"), "{text}");
}
