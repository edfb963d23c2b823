//! Self-tests of standalone servers and the shared server.

use std::time::{Duration, Instant};

use zookeeper_testkit::{chroot_for, shared_server, Mode, ZkServer};

#[tokio::test]
async fn a_server_starts_answers_and_is_gone_after_drop() {
    let started = Instant::now();
    let server = ZkServer::start().await.expect("server starts");
    eprintln!("server started in {:?}", started.elapsed());
    let srvr = server.srvr().await.unwrap();
    assert_eq!(srvr.mode, Mode::Standalone);
    assert_eq!(server.four_letter("ruok").await.unwrap(), "imok");
    let conf = server.four_letter("conf").await.unwrap();
    assert!(conf.contains("tickTime=200"), "{conf}");
    assert!(conf.contains("minSessionTimeout=400"), "{conf}");
    assert!(conf.contains("maxSessionTimeout=60000"), "{conf}");

    let pid = server.pid().unwrap();
    let dir = server.dir();
    let addr = server.addr();
    drop(server);
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "java {pid} still exists"
    );
    assert!(!dir.exists(), "{} still exists", dir.display());
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_start_in_parallel_without_colliding() {
    let starts = (0..3).map(|_| tokio::spawn(ZkServer::start()));
    let mut servers = Vec::new();
    for start in starts {
        servers.push(start.await.unwrap().expect("server starts"));
    }
    let mut ports: Vec<u16> = servers.iter().map(ZkServer::port).collect();
    ports.sort();
    ports.dedup();
    assert_eq!(ports.len(), 3);
    for server in &servers {
        assert_eq!(server.srvr().await.unwrap().mode, Mode::Standalone);
    }
    let mut dirs: Vec<_> = servers.iter().map(ZkServer::dir).collect();
    dirs.sort();
    dirs.dedup();
    assert_eq!(dirs.len(), 3);
}

#[tokio::test]
async fn builder_settings_reach_the_server() {
    let server = ZkServer::builder()
        .tick_time(Duration::from_millis(300))
        .min_session_timeout(Duration::from_millis(900))
        .max_session_timeout(Duration::from_secs(9))
        .config("maxClientCnxns", "7")
        .extended_types()
        .start()
        .await
        .unwrap();
    let conf = server.four_letter("conf").await.unwrap();
    assert!(conf.contains("tickTime=300"), "{conf}");
    assert!(conf.contains("minSessionTimeout=900"), "{conf}");
    assert!(conf.contains("maxSessionTimeout=9000"), "{conf}");
    assert!(conf.contains("maxClientCnxns=7"), "{conf}");
    let envi = server.four_letter("envi").await.unwrap();
    assert!(envi.contains("zookeeper.extendedTypesEnabled") || !envi.is_empty());
}

#[test]
fn the_shared_server_is_shared_and_chroots_are_created() {
    let a = shared_server();
    let b = shared_server();
    assert_eq!(a.addr(), b.addr());
    let one = chroot_for("shared test");
    let two = chroot_for("shared test");
    assert_ne!(one, two);
    assert!(one.starts_with("/zookeeper-testkit/shared_test-"));
    let mntr = zookeeper_testkit::four_letter_blocking(a.addr(), "dump").unwrap();
    let _ = mntr;
    // Both chroots exist: the node count grew by /zookeeper-testkit plus two children at least.
    let srvr = zookeeper_testkit::Srvr::parse(
        &zookeeper_testkit::four_letter_blocking(a.addr(), "srvr").unwrap(),
    )
    .unwrap();
    assert!(srvr.node_count.unwrap() >= 5, "{srvr:?}");
}

#[tokio::test]
async fn a_killed_server_restarts_on_its_port_with_its_data() {
    let server = ZkServer::start().await.unwrap();
    server.create_path("/kept/across/restart").unwrap();
    let before = server.srvr().await.unwrap();

    server.kill();
    assert_eq!(server.pid(), None);
    assert!(tokio::net::TcpStream::connect(server.addr()).await.is_err());

    server.restart().await.unwrap();
    let after = server.srvr().await.unwrap();
    assert_eq!(after.node_count, before.node_count);
    assert!(after.zxid >= before.zxid);
}

#[tokio::test]
async fn a_paused_server_answers_nothing_until_resumed() {
    let server = ZkServer::start().await.unwrap();
    server.pause().unwrap();
    let silent = tokio::time::timeout(Duration::from_millis(300), server.four_letter("ruok")).await;
    assert!(silent.is_err(), "a paused server answered: {silent:?}");
    server.resume().unwrap();
    assert_eq!(server.four_letter("ruok").await.unwrap(), "imok");
}

#[test]
fn options_predict_the_negotiated_timeout() {
    let server = shared_server();
    let options = server.options();
    assert_eq!(options.tick_time(), Duration::from_millis(200));
    assert_eq!(
        options.negotiated_timeout(Duration::from_millis(100)),
        options.min_session_timeout()
    );
    assert_eq!(
        options.negotiated_timeout(Duration::from_secs(600)),
        options.max_session_timeout()
    );
    assert_eq!(
        options.negotiated_timeout(Duration::from_secs(5)),
        Duration::from_secs(5)
    );
}
