//! The connector seam: a client built with its own connector opens every connection through
//! it, and is refused with TLS.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zookeeper_tokio::{Client, Connect, CreateOptions, ErrorKind, HostPort};

/// Dials one address whatever host it is asked for, and counts the connections and the hosts
/// it was asked for.
#[derive(Clone)]
struct Redirect {
    to: SocketAddr,
    asked: Arc<std::sync::Mutex<Vec<String>>>,
    dialled: Arc<AtomicUsize>,
}

impl Connect for Redirect {
    type Stream = tokio::net::TcpStream;

    fn connect(
        &self,
        server: &HostPort,
    ) -> impl Future<Output = io::Result<Self::Stream>> + Send + 'static {
        self.asked.lock().unwrap().push(server.to_addr_string());
        self.dialled.fetch_add(1, Ordering::SeqCst);
        tokio::net::TcpStream::connect(self.to)
    }
}

#[tokio::test]
async fn every_connection_goes_through_the_connector() {
    let server = zookeeper_testkit::shared_server();
    let redirect = Redirect {
        to: server.addr(),
        asked: Default::default(),
        dialled: Default::default(),
    };
    // No such host: only the connector can reach the server.
    let client = Client::builder("zk-through-connector.invalid:2181")
        .connector(redirect.clone())
        .connect_timeout(Duration::from_secs(30))
        .connect()
        .await
        .expect("connected through the connector");
    let path = format!("{}-node", zookeeper_testkit::chroot_for("connector_seam"));
    client
        .create(&path, b"through", &CreateOptions::ephemeral())
        .await
        .expect("create");
    assert_eq!(&client.get_data(&path).await.unwrap().0[..], b"through");
    assert_eq!(
        redirect.asked.lock().unwrap()[0],
        "zk-through-connector.invalid:2181"
    );
    assert_eq!(redirect.dialled.load(Ordering::SeqCst), 1);
    client.close().await;
}

#[tokio::test]
async fn a_connector_is_refused_with_tls() {
    let redirect = Redirect {
        to: "127.0.0.1:1".parse().unwrap(),
        asked: Default::default(),
        dialled: Default::default(),
    };
    let err = Client::builder("127.0.0.1:1")
        .connector(redirect.clone())
        .tls(zookeeper_tokio::TlsConfig::with_ca_pem(
            "not read before connecting",
        ))
        .connect()
        .await
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::InvalidArgument(m) if m.contains("tls")),
        "{err}"
    );
    assert_eq!(redirect.dialled.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn one_seed_draws_the_same_and_seeds_differ() {
    let server = zookeeper_testkit::shared_server();
    let connect = |seed| {
        Client::builder(&server.connect_string())
            .rng_seed(seed)
            .connect()
    };
    let (a, b, c) = (
        connect(42).await.unwrap(),
        connect(42).await.unwrap(),
        connect(43).await.unwrap(),
    );
    let draws = |c: &Client| (0..3).map(|_| c.random_u64()).collect::<Vec<_>>();
    let (da, db, dc) = (draws(&a), draws(&b), draws(&c));
    assert_eq!(da, db);
    assert_ne!(da, dc);
}
