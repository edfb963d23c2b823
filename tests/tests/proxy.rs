//! Self-tests of the fault proxy, observed from plain TCP clients. The upstream is an echo
//! server that also records what it received: what is under test is the proxy itself. The
//! last tests run against a real ZooKeeper server. Payloads that are not ZooKeeper frames are
//! ASCII words of at least four letters: as a length prefix they are implausibly large, so
//! the proxy passes such streams through raw.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::timeout;

use zookeeper_testkit::{FrameEvent, Proxy, ZkServer};

/// Bound on anything that is expected to happen.
const SOON: Duration = Duration::from_secs(5);
/// How long we watch for something that must not happen.
const QUIET: Duration = Duration::from_millis(300);

/// An echo server; every chunk it receives is also sent to the returned channel.
async fn echo_upstream() -> (SocketAddr, mpsc::UnboundedReceiver<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut buf = vec![0; 4096];
                loop {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            let _ = tx.send(buf[..n].to_vec());
                            if stream.write_all(&buf[..n]).await.is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    (addr, rx)
}

/// A proxy in front of an echo upstream, and a client whose `first` bytes have made the round
/// trip (so the connection is known to be up end to end).
async fn connected_through_proxy(
    first: &[u8],
) -> (Proxy, TcpStream, mpsc::UnboundedReceiver<Vec<u8>>) {
    let (upstream, mut seen) = echo_upstream().await;
    let proxy = Proxy::start(upstream).await.unwrap();
    let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
    round_trip(&mut client, first).await;
    assert_eq!(seen.recv().await.unwrap(), first);
    (proxy, client, seen)
}

async fn read_exactly(stream: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut buf = vec![0; n];
    timeout(SOON, stream.read_exact(&mut buf))
        .await
        .expect("read in time")
        .expect("read succeeds");
    buf
}

async fn round_trip(stream: &mut TcpStream, bytes: &[u8]) {
    stream.write_all(bytes).await.unwrap();
    assert_eq!(read_exactly(stream, bytes.len()).await, bytes);
}

/// Reads until the connection ends; true when it ended (EOF or reset) within `SOON`.
async fn ends(stream: &mut TcpStream) -> bool {
    let mut buf = vec![0; 1024];
    let deadline = Instant::now() + SOON;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match timeout(left, stream.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
        }
    }
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut f = (body.len() as i32).to_be_bytes().to_vec();
    f.extend_from_slice(body);
    f
}

fn request(xid: i32, opcode: i32, payload: &[u8]) -> Vec<u8> {
    let mut body = xid.to_be_bytes().to_vec();
    body.extend_from_slice(&opcode.to_be_bytes());
    body.extend_from_slice(payload);
    frame(&body)
}

#[tokio::test]
async fn forwards_both_ways() {
    let (proxy, _client, _seen) = connected_through_proxy(b"hello").await;
    assert_eq!(proxy.accepted(), 1);
    assert_eq!(proxy.open_connections(), 1);
}

#[tokio::test]
async fn drop_all_closes_open_connections_and_accepts_new_ones() {
    let (upstream, _seen) = echo_upstream().await;
    let proxy = Proxy::start(upstream).await.unwrap();
    let mut first = TcpStream::connect(proxy.addr()).await.unwrap();
    let mut second = TcpStream::connect(proxy.addr()).await.unwrap();
    round_trip(&mut first, b"aaaa").await;
    round_trip(&mut second, b"bbbb").await;

    proxy.drop_all();
    assert!(ends(&mut first).await, "first connection still open");
    assert!(ends(&mut second).await, "second connection still open");
    timeout(SOON, proxy.wait_open(0)).await.unwrap();

    let mut third = TcpStream::connect(proxy.addr()).await.unwrap();
    round_trip(&mut third, b"cccc").await;
}

#[tokio::test]
async fn refuse_resets_new_connections_but_keeps_open_ones() {
    let (upstream, _seen) = echo_upstream().await;
    let proxy = Proxy::start(upstream).await.unwrap();
    let mut open = TcpStream::connect(proxy.addr()).await.unwrap();
    round_trip(&mut open, b"before").await;

    proxy.refuse(true);
    let mut refused = TcpStream::connect(proxy.addr()).await.unwrap();
    let _ = refused.write_all(b"anyone?").await;
    let mut buf = [0; 16];
    let outcome = timeout(SOON, refused.read(&mut buf))
        .await
        .expect("answered in time");
    assert!(
        matches!(outcome, Ok(0)) || outcome.is_err(),
        "refused connection got data: {outcome:?}"
    );
    round_trip(&mut open, b"during").await;

    proxy.refuse(false);
    let mut again = TcpStream::connect(proxy.addr()).await.unwrap();
    round_trip(&mut again, b"after").await;
}

#[tokio::test]
async fn a_black_hole_holds_traffic_without_closing_and_then_lets_it_through() {
    let (proxy, mut client, mut seen) = connected_through_proxy(b"xxxx").await;

    proxy.black_hole(true);
    client.write_all(b"ping").await.unwrap();
    let mut buf = [0; 4];
    assert!(
        timeout(QUIET, client.read(&mut buf)).await.is_err(),
        "data came back through a black hole"
    );
    assert!(
        timeout(QUIET, seen.recv()).await.is_err(),
        "data reached the upstream through a black hole"
    );
    // New connections do not get through either.
    let mut late = TcpStream::connect(proxy.addr()).await.unwrap();
    late.write_all(b"late").await.unwrap();
    assert!(timeout(QUIET, late.read(&mut buf)).await.is_err());

    proxy.black_hole(false);
    assert_eq!(read_exactly(&mut client, 4).await, b"ping");
    assert_eq!(read_exactly(&mut late, 4).await, b"late");
}

#[tokio::test]
async fn bytes_of_a_connection_closed_in_a_black_hole_never_arrive() {
    let (proxy, mut client, mut seen) = connected_through_proxy(b"xxxx").await;

    proxy.black_hole(true);
    client.write_all(b"stale handshake").await.unwrap();
    drop(client);
    timeout(SOON, proxy.wait_open(0))
        .await
        .expect("connection closed");
    proxy.black_hole(false);
    assert!(
        timeout(QUIET, seen.recv())
            .await
            .map_or(true, |chunk| chunk.is_none()),
        "bytes of a closed connection reached the upstream"
    );
}

#[tokio::test]
async fn a_server_close_in_a_black_hole_reaches_the_client_when_it_ends() {
    // An upstream that accepts, then closes the connection when told to.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream = listener.local_addr().unwrap();
    let (close_tx, close_rx) = tokio::sync::oneshot::channel::<()>();
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let _ = close_rx.await;
        drop(stream);
        let _ = closed_tx.send(());
    });
    let proxy = Proxy::start(upstream).await.unwrap();
    let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
    timeout(SOON, proxy.wait_open(1)).await.unwrap();

    proxy.black_hole(true);
    close_tx.send(()).unwrap();
    closed_rx.await.unwrap();
    let mut buf = [0; 4];
    assert!(
        timeout(QUIET, client.read(&mut buf)).await.is_err(),
        "the server's close crossed the black hole"
    );
    proxy.black_hole(false);
    assert!(ends(&mut client).await, "the close never arrived");
}

#[tokio::test]
async fn a_timed_black_hole_ends_by_itself() {
    let (upstream, _seen) = echo_upstream().await;
    let proxy = Proxy::start(upstream).await.unwrap();
    let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
    round_trip(&mut client, b"xxxx").await;

    let hole = Duration::from_millis(500);
    let start = Instant::now();
    proxy.black_hole_for(hole);
    round_trip(&mut client, b"held").await;
    assert!(
        start.elapsed() >= hole,
        "answer came after {:?}",
        start.elapsed()
    );
}

#[tokio::test]
async fn latency_delays_each_direction() {
    let (upstream, _seen) = echo_upstream().await;
    let proxy = Proxy::start(upstream).await.unwrap();
    let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
    round_trip(&mut client, b"warm").await;

    let latency = Duration::from_millis(200);
    proxy.set_latency(latency);
    let start = Instant::now();
    round_trip(&mut client, b"slow").await;
    assert!(
        start.elapsed() >= 2 * latency,
        "round trip took {:?}",
        start.elapsed()
    );

    proxy.set_latency(Duration::ZERO);
    round_trip(&mut client, b"fast").await;
}

#[tokio::test]
async fn cut_after_next_forwards_the_request_and_withholds_its_reply() {
    let (upstream, mut seen) = echo_upstream().await;
    let proxy = Proxy::start(upstream).await.unwrap();
    let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
    let handshake = frame(&[0; 44]);
    round_trip(&mut client, &handshake).await;

    const CREATE: i32 = 1;
    const GET_DATA: i32 = 4;
    let cut = proxy.cut_after_next(CREATE);
    // Other opcodes pass untouched.
    round_trip(&mut client, &request(5, GET_DATA, b"/a")).await;

    let create = request(6, CREATE, b"/node");
    client.write_all(&create).await.unwrap();
    assert_eq!(timeout(SOON, cut.wait()).await.unwrap(), Some(6));
    assert!(ends(&mut client).await, "connection survived the cut");

    // The upstream got the whole create request.
    let mut received = Vec::new();
    while let Ok(chunk) = seen.try_recv() {
        received.extend(chunk);
    }
    assert!(received.ends_with(&create), "upstream saw {received:?}");

    // The cut fires once; the next connection is left alone.
    let mut next = TcpStream::connect(proxy.addr()).await.unwrap();
    round_trip(&mut next, &handshake).await;
    round_trip(&mut next, &request(1, CREATE, b"/again")).await;
}

#[tokio::test]
async fn frames_ahead_of_the_withheld_reply_still_arrive() {
    let (upstream, _seen) = echo_upstream().await;
    let proxy = Proxy::start(upstream).await.unwrap();
    let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
    round_trip(&mut client, &frame(&[0; 44])).await;

    let cut = proxy.cut_after_next(1);
    let earlier = request(7, 4, b"/first");
    let mut both = earlier.clone();
    both.extend(request(8, 1, b"/second"));
    client.write_all(&both).await.unwrap();
    assert_eq!(read_exactly(&mut client, earlier.len()).await, earlier);
    assert_eq!(timeout(SOON, cut.wait()).await.unwrap(), Some(8));
    assert!(ends(&mut client).await, "connection survived the cut");
}

#[tokio::test]
async fn connections_go_to_the_next_upstream_when_one_is_down() {
    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let (alive, _seen) = echo_upstream().await;
    let proxy = Proxy::start([dead, alive]).await.unwrap();
    for _ in 0..3 {
        let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
        round_trip(&mut client, b"anyone").await;
    }
}

/// Against a real server: a create whose reply is cut still creates the node.
#[tokio::test]
async fn a_cut_create_takes_effect_on_a_real_server() {
    let server = ZkServer::start().await.unwrap();
    let proxy = Proxy::start(server.addr()).await.unwrap();
    // Four-letter words are not ZooKeeper frames; they pass through unchanged.
    let srvr = zookeeper_testkit::four_letter(proxy.addr(), "srvr")
        .await
        .unwrap();
    assert!(srvr.contains("Mode: standalone"), "{srvr}");
    let before = server.mntr().await.unwrap().znode_count().unwrap();

    let mut client = zk_session(proxy.addr()).await;

    let cut = proxy.cut_after_next(1);
    let mut create = Vec::new();
    create.extend_from_slice(&8i32.to_be_bytes());
    create.extend_from_slice(b"/unheard");
    create.extend_from_slice(&(-1i32).to_be_bytes()); // no data
    create.extend_from_slice(&1i32.to_be_bytes()); // one ACL: world:anyone, all
    create.extend_from_slice(&31i32.to_be_bytes());
    create.extend_from_slice(&5i32.to_be_bytes());
    create.extend_from_slice(b"world");
    create.extend_from_slice(&6i32.to_be_bytes());
    create.extend_from_slice(b"anyone");
    create.extend_from_slice(&0i32.to_be_bytes()); // persistent
    client.write_all(&request(1, 1, &create)).await.unwrap();

    assert_eq!(timeout(SOON, cut.wait()).await.unwrap(), Some(1));
    assert!(ends(&mut client).await, "connection survived the cut");
    let after = server.mntr().await.unwrap().znode_count().unwrap();
    assert_eq!(after, before + 1, "the create did not take effect");
}

/// A raw connection through `addr` with a new session established.
async fn zk_session(addr: SocketAddr) -> TcpStream {
    let mut client = TcpStream::connect(addr).await.unwrap();
    let mut connect = Vec::new();
    connect.extend_from_slice(&0i32.to_be_bytes()); // protocol version
    connect.extend_from_slice(&0i64.to_be_bytes()); // last zxid seen
    connect.extend_from_slice(&10_000i32.to_be_bytes()); // timeout
    connect.extend_from_slice(&0i64.to_be_bytes()); // session id
    connect.extend_from_slice(&16i32.to_be_bytes());
    connect.extend_from_slice(&[0; 16]); // password
    client.write_all(&frame(&connect)).await.unwrap();
    read_frame(&mut client).await;
    client
}

/// Reads one whole frame; returns its body.
async fn read_frame(stream: &mut TcpStream) -> Vec<u8> {
    let len = i32::from_be_bytes(read_exactly(stream, 4).await.try_into().unwrap());
    read_exactly(stream, len as usize).await
}

/// Reads one reply frame; returns its xid.
async fn read_reply_xid(stream: &mut TcpStream) -> i32 {
    let body = read_frame(stream).await;
    i32::from_be_bytes(body[..4].try_into().unwrap())
}

const EXISTS: i32 = 3;
const GET_CHILDREN: i32 = 8;

/// A request for `opcode` on "/" without a watch (exists and getChildren have this body).
fn on_root(xid: i32, opcode: i32) -> Vec<u8> {
    let mut body = 1i32.to_be_bytes().to_vec();
    body.extend_from_slice(b"/");
    body.push(0); // no watch
    request(xid, opcode, &body)
}

/// The frame log is off until enabled, records a real session's frames in order with their
/// connection, xid and opcode, empties on take, and stops when disabled.
#[tokio::test]
async fn the_frame_log_records_frames_in_order_while_enabled() {
    let proxy = Proxy::start(zookeeper_testkit::shared_server().addr())
        .await
        .unwrap();
    let mut first = zk_session(proxy.addr()).await;
    first.write_all(&on_root(1, EXISTS)).await.unwrap();
    assert_eq!(read_reply_xid(&mut first).await, 1);
    assert_eq!(proxy.frame_log(), vec![], "recorded while off");

    proxy.record_frames(true);
    first.write_all(&on_root(2, EXISTS)).await.unwrap();
    assert_eq!(read_reply_xid(&mut first).await, 2);
    first.write_all(&on_root(3, GET_CHILDREN)).await.unwrap();
    assert_eq!(read_reply_xid(&mut first).await, 3);
    let _second = zk_session(proxy.addr()).await;
    let expected = vec![
        FrameEvent::ClientToServer {
            conn: 1,
            xid: 2,
            opcode: EXISTS,
        },
        FrameEvent::ServerToClient { conn: 1, xid: 2 },
        FrameEvent::ClientToServer {
            conn: 1,
            xid: 3,
            opcode: GET_CHILDREN,
        },
        FrameEvent::ServerToClient { conn: 1, xid: 3 },
        FrameEvent::ConnectRequest { conn: 2 },
        FrameEvent::ConnectResponse { conn: 2 },
    ];
    assert_eq!(proxy.frame_log(), expected);
    assert_eq!(proxy.take_frame_log(), expected);
    assert_eq!(proxy.frame_log(), vec![], "take empties the log");

    proxy.record_frames(false);
    first.write_all(&on_root(4, EXISTS)).await.unwrap();
    assert_eq!(read_reply_xid(&mut first).await, 4);
    assert_eq!(proxy.frame_log(), vec![], "recorded after being turned off");
}

/// With replies held, pipelined requests still reach a real server and are logged before
/// any reply; the replies follow, in order, once the hold ends.
#[tokio::test]
async fn held_replies_arrive_after_the_hold_and_after_every_request() {
    let proxy = Proxy::start(zookeeper_testkit::shared_server().addr())
        .await
        .unwrap();
    let mut client = zk_session(proxy.addr()).await;
    proxy.record_frames(true);
    proxy.hold_replies(true);
    let mut both = on_root(1, EXISTS);
    both.extend(on_root(2, GET_CHILDREN));
    client.write_all(&both).await.unwrap();
    timeout(
        SOON,
        proxy.wait_for_frames(|log| {
            log.iter()
                .filter(|e| matches!(e, FrameEvent::ClientToServer { .. }))
                .count()
                == 2
        }),
    )
    .await
    .expect("both requests forwarded while replies are held");
    let mut buf = [0; 1];
    assert!(
        timeout(QUIET, client.read(&mut buf)).await.is_err(),
        "a reply crossed the hold"
    );

    proxy.hold_replies(false);
    assert_eq!(read_reply_xid(&mut client).await, 1);
    assert_eq!(read_reply_xid(&mut client).await, 2);
    assert_eq!(
        proxy.take_frame_log(),
        vec![
            FrameEvent::ClientToServer {
                conn: 1,
                xid: 1,
                opcode: EXISTS
            },
            FrameEvent::ClientToServer {
                conn: 1,
                xid: 2,
                opcode: GET_CHILDREN
            },
            FrameEvent::ServerToClient { conn: 1, xid: 1 },
            FrameEvent::ServerToClient { conn: 1, xid: 2 },
        ]
    );
}

/// A reply withheld by a cut was never passed on, so it is not in the log.
#[tokio::test]
async fn the_frame_log_leaves_out_a_withheld_reply() {
    let (upstream, _seen) = echo_upstream().await;
    let proxy = Proxy::start(upstream).await.unwrap();
    proxy.record_frames(true);
    let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
    round_trip(&mut client, &frame(&[0; 44])).await;
    let cut = proxy.cut_after_next(1);
    client.write_all(&request(7, 1, b"/node")).await.unwrap();
    assert_eq!(timeout(SOON, cut.wait()).await.unwrap(), Some(7));
    assert!(ends(&mut client).await, "connection survived the cut");
    assert_eq!(
        proxy.frame_log(),
        vec![
            FrameEvent::ConnectRequest { conn: 1 },
            FrameEvent::ConnectResponse { conn: 1 },
            FrameEvent::ClientToServer {
                conn: 1,
                xid: 7,
                opcode: 1
            },
        ]
    );
}
