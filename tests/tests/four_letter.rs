//! The four-letter-word parsers against a real server's answers, with a session that holds a
//! watch and an ephemeral node. The session is driven by hand-written frames (a handshake, an
//! `exists` with a watch, an ephemeral `create`) so that this crate needs no client.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use zookeeper_testkit::{Mode, ZkServer};

fn put_i32(buf: &mut Vec<u8>, v: i32) {
    buf.extend_from_slice(&v.to_be_bytes());
}

fn put_str(buf: &mut Vec<u8>, s: &str) {
    put_i32(buf, s.len() as i32);
    buf.extend_from_slice(s.as_bytes());
}

fn send(stream: &mut TcpStream, body: &[u8]) {
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(body);
    stream.write_all(&frame).unwrap();
}

fn receive(stream: &mut TcpStream) -> Vec<u8> {
    let mut len = [0; 4];
    stream.read_exact(&mut len).unwrap();
    let mut body = vec![0; i32::from_be_bytes(len) as usize];
    stream.read_exact(&mut body).unwrap();
    body
}

/// Opens a session with a 30 s timeout; returns the stream and the session id. It sends no
/// pings: the timeout must outlast every exchange the test makes before it looks at the
/// session, however slow the machine.
fn open_session(addr: SocketAddr) -> (TcpStream, u64) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut connect = Vec::new();
    put_i32(&mut connect, 0);
    connect.extend_from_slice(&0i64.to_be_bytes());
    put_i32(&mut connect, 30_000);
    connect.extend_from_slice(&0i64.to_be_bytes());
    put_i32(&mut connect, 16);
    connect.extend_from_slice(&[0; 16]);
    send(&mut stream, &connect);
    let response = receive(&mut stream);
    let session = u64::from_be_bytes(response[8..16].try_into().unwrap());
    (stream, session)
}

/// Sends a request and returns the reply's error code.
fn call(stream: &mut TcpStream, xid: i32, opcode: i32, body: &[u8]) -> i32 {
    let mut request = Vec::new();
    put_i32(&mut request, xid);
    put_i32(&mut request, opcode);
    request.extend_from_slice(body);
    send(stream, &request);
    let reply = receive(stream);
    assert_eq!(i32::from_be_bytes(reply[0..4].try_into().unwrap()), xid);
    i32::from_be_bytes(reply[12..16].try_into().unwrap())
}

#[tokio::test]
async fn parsed_answers_show_a_sessions_watch_and_ephemeral() {
    let server = ZkServer::start().await.unwrap();
    let before = server.mntr().await.unwrap();
    assert_eq!(before.server_state(), Some("standalone"));
    assert_eq!(before.watch_count(), Some(0));
    assert_eq!(before.ephemerals_count(), Some(0));

    let (mut stream, session) = open_session(server.addr());
    // exists("/watched", watch = true) on a missing node: NONODE, but the watch stays.
    let mut exists = Vec::new();
    put_str(&mut exists, "/watched");
    exists.push(1);
    assert_eq!(call(&mut stream, 1, 3, &exists), -101);
    // create("/eph", ephemeral)
    let mut create = Vec::new();
    put_str(&mut create, "/eph");
    put_i32(&mut create, -1);
    put_i32(&mut create, 1);
    put_i32(&mut create, 31);
    put_str(&mut create, "world");
    put_str(&mut create, "anyone");
    put_i32(&mut create, 1);
    assert_eq!(call(&mut stream, 2, 1, &create), 0);

    let srvr = server.srvr().await.unwrap();
    assert_eq!(srvr.mode, Mode::Standalone);
    assert!(srvr.zxid > 0);

    let mntr = server.mntr().await.unwrap();
    assert_eq!(mntr.watch_count(), Some(1));
    assert_eq!(mntr.ephemerals_count(), Some(1));
    assert!(mntr.global_sessions().unwrap() >= 1);

    let wchc = server.wchc().await.unwrap();
    assert_eq!(
        wchc.get(&session),
        Some(&vec!["/watched".to_string()]),
        "{wchc:?}"
    );

    let cons = server.cons().await.unwrap();
    let ours = cons
        .iter()
        .find(|c| c.session_id == Some(session))
        .unwrap_or_else(|| panic!("session {session:#x} not in {cons:?}"));
    assert_eq!(ours.timeout_ms, Some(30_000));

    let ephemerals = server.ephemerals().await.unwrap();
    assert_eq!(
        ephemerals.get(&session),
        Some(&vec!["/eph".to_string()]),
        "{ephemerals:?}"
    );

    // Closing the session removes its ephemeral at once, and its watch when the server
    // closes the connection just after the reply.
    assert_eq!(call(&mut stream, 3, -11, &[]), 0);
    let after = server.mntr().await.unwrap();
    assert_eq!(after.ephemerals_count(), Some(0));
    let mut buf = [0; 1];
    assert_eq!(
        stream.read(&mut buf).unwrap(),
        0,
        "server kept the connection open"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while server.mntr().await.unwrap().watch_count() != Some(0) {
        assert!(std::time::Instant::now() < deadline, "watch still counted");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
