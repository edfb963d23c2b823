//! A scripted fake server, for what a real ZooKeeper never does: malformed frames and replies
//! out of order. The client must drop the connection, fail what was in flight with
//! `ConnectionLoss`, reconnect, and never panic or hang.

mod common;

use bytes::{BufMut, BytesMut};
use common::within;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use zookeeper_jute::{ConnectResponse, Encode, ErrorCode, ReplyHeader};
use zookeeper_tokio::{Client, ErrorKind, SessionState};

/// Reads one length-prefixed frame.
async fn read_frame(stream: &mut TcpStream) -> Vec<u8> {
    let len = stream.read_i32().await.expect("frame length") as usize;
    let mut payload = vec![0; len];
    stream
        .read_exact(&mut payload)
        .await
        .expect("frame payload");
    payload
}

async fn write_frame(stream: &mut TcpStream, payload: &[u8]) {
    let mut buf = BytesMut::new();
    buf.put_i32(payload.len() as i32);
    buf.extend_from_slice(payload);
    stream.write_all(&buf).await.unwrap();
}

/// Accepts a connection and completes the handshake for session 0x77.
async fn accept_session(listener: &TcpListener) -> TcpStream {
    let (mut stream, _) = listener.accept().await.unwrap();
    read_frame(&mut stream).await;
    let mut payload = BytesMut::new();
    ConnectResponse {
        protocol_version: 0,
        timeout: 10_000,
        session_id: 0x77,
        passwd: bytes::Bytes::from_static(&[1; 16]),
        read_only: Some(false),
    }
    .encode(&mut payload);
    write_frame(&mut stream, &payload).await;
    stream
}

/// The xid of a request frame.
fn xid_of(frame: &[u8]) -> i32 {
    i32::from_be_bytes(frame[..4].try_into().unwrap())
}

async fn connect(listener: &TcpListener) -> (Client, TcpStream) {
    common::init_tracing();
    let addr = listener.local_addr().unwrap().to_string();
    let (client, stream) = tokio::join!(
        async { Client::builder(&addr).connect().await.unwrap() },
        accept_session(listener)
    );
    (client, stream)
}

#[tokio::test]
async fn reply_with_the_wrong_xid_drops_the_connection_and_the_session_reconnects() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (client, mut stream) = connect(&listener).await;
    let mut changes = client.state_changes();
    let pending = client.get_data("/a");
    let frame = read_frame(&mut stream).await;
    let mut reply = BytesMut::new();
    ReplyHeader {
        xid: xid_of(&frame) + 5,
        zxid: 1,
        err: ErrorCode::Ok,
    }
    .encode(&mut reply);
    write_frame(&mut stream, &reply).await;
    assert_eq!(
        within("failed request", pending)
            .await
            .map(|_| ())
            .unwrap_err(),
        ErrorKind::ConnectionLoss
    );
    // The client dropped that connection and comes back with the same session.
    let mut again = within("reconnect", listener.accept()).await.unwrap().0;
    let connect = read_frame(&mut again).await;
    let session_id = i64::from_be_bytes(connect[16..24].try_into().unwrap());
    assert_eq!(session_id, 0x77);
    within(
        "disconnected",
        changes.wait_for(|s| s == SessionState::Disconnected),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn garbage_frames_never_panic_or_hang() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (client, mut stream) = connect(&listener).await;
    for payload in [
        // Shorter than a reply header.
        vec![0, 0, 0],
        // A notification whose event is cut short.
        vec![
            0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ],
        // A reply for a request never made.
        vec![0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0],
    ] {
        let pending = client.exists("/x");
        read_frame(&mut stream).await;
        write_frame(&mut stream, &payload).await;
        assert_eq!(
            within("failed request", pending).await.unwrap_err(),
            ErrorKind::ConnectionLoss
        );
        stream = within("reconnect", accept_session(&listener)).await;
    }
    // A negative frame length.
    let pending = client.exists("/x");
    read_frame(&mut stream).await;
    stream.write_all(&[0xff, 0xff, 0xff, 0xfb]).await.unwrap();
    assert_eq!(
        within("failed request", pending).await.unwrap_err(),
        ErrorKind::ConnectionLoss
    );
    let mut stream = within("reconnect", accept_session(&listener)).await;
    // And the session still works with a well-behaved peer.
    let pending = client.exists("/x");
    let frame = read_frame(&mut stream).await;
    let mut reply = BytesMut::new();
    ReplyHeader {
        xid: xid_of(&frame),
        zxid: 2,
        err: ErrorCode::NoNode,
    }
    .encode(&mut reply);
    write_frame(&mut stream, &reply).await;
    assert_eq!(within("answer", pending).await, Ok(None));
    drop(client);
    // Dropping the last handle sends closeSession.
    let close = within("close", read_frame(&mut stream)).await;
    assert_eq!(i32::from_be_bytes(close[4..8].try_into().unwrap()), -11);
}
