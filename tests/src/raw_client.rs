//! The smallest ZooKeeper client that can create a chroot node: connect, create, close.
//!
//! The harness needs it to prepare chroots before any client under test connects, and must
//! not depend on the crates it helps test.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::error::{Error, Result};

const OP_CREATE: i32 = 1;
pub(crate) const OP_CLOSE_SESSION: i32 = -11;
const ERR_NODE_EXISTS: i32 = -110;
const PERMS_ALL: i32 = 31;
const TIMEOUT: Duration = Duration::from_secs(10);

/// Creates `path` and its missing parents as empty persistent nodes with an open ACL.
pub(crate) fn create_all(addr: SocketAddr, path: &str) -> Result<()> {
    let what = |step: &str| format!("{step} on {addr} (creating {path})");
    let io = |step: &'static str| move |e| Error::io(what(step), e);
    let mut stream = open(addr, &format!("creating {path}"))?;

    let mut xid = 0;
    let mut prefix = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        prefix.push('/');
        prefix.push_str(part);
        xid += 1;
        let mut request = Vec::new();
        put_i32(&mut request, xid);
        put_i32(&mut request, OP_CREATE);
        put_bytes(&mut request, prefix.as_bytes());
        put_i32(&mut request, 0); // data: empty
        put_i32(&mut request, 1); // one ACL entry: world:anyone, all permissions
        put_i32(&mut request, PERMS_ALL);
        put_bytes(&mut request, b"world");
        put_bytes(&mut request, b"anyone");
        put_i32(&mut request, 0); // persistent
        send(&mut stream, &request).map_err(io("create"))?;
        let code = reply_code(&mut stream, xid).map_err(io("create"))?;
        if code != 0 && code != ERR_NODE_EXISTS {
            return Err(Error::ServerError {
                what: format!("create {prefix} on {addr}"),
                code,
            });
        }
    }

    xid += 1;
    let mut close = Vec::new();
    put_i32(&mut close, xid);
    put_i32(&mut close, OP_CLOSE_SESSION);
    send(&mut stream, &close).map_err(io("close"))?;
    reply_code(&mut stream, xid).map_err(io("close"))?;
    Ok(())
}

/// Connects and opens a session (10 s timeout) with a blocking socket.
pub(crate) fn open(addr: SocketAddr, purpose: &str) -> Result<TcpStream> {
    let what = |step: &str| format!("{step} on {addr} ({purpose})");
    let io = |step: &'static str| move |e| Error::io(what(step), e);
    let mut stream = TcpStream::connect_timeout(&addr, TIMEOUT).map_err(io("connecting"))?;
    stream
        .set_read_timeout(Some(TIMEOUT))
        .map_err(io("connecting"))?;
    stream.set_nodelay(true).map_err(io("connecting"))?;

    let mut connect = Vec::new();
    put_i32(&mut connect, 0); // protocol version
    put_i64(&mut connect, 0); // last zxid seen
    put_i32(&mut connect, 10_000); // session timeout
    put_i64(&mut connect, 0); // session id: new session
    put_i32(&mut connect, 16);
    connect.extend_from_slice(&[0; 16]); // password
    connect.push(0); // read-only: false
    send(&mut stream, &connect).map_err(io("handshake"))?;
    let response = receive(&mut stream).map_err(io("handshake"))?;
    if response.len() < 8 || i32::from_be_bytes(response[4..8].try_into().unwrap_or([0; 4])) <= 0 {
        return Err(Error::ServerError {
            what: what("handshake"),
            code: 0,
        });
    }
    Ok(stream)
}

/// Reads replies until the one for `xid` (skipping notifications) and returns its error code.
pub(crate) fn reply_code(stream: &mut TcpStream, xid: i32) -> std::io::Result<i32> {
    loop {
        let reply = receive(stream)?;
        if reply.len() < 16 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "reply shorter than its header",
            ));
        }
        let got = i32::from_be_bytes([reply[0], reply[1], reply[2], reply[3]]);
        if got == xid {
            return Ok(i32::from_be_bytes([
                reply[12], reply[13], reply[14], reply[15],
            ]));
        }
    }
}

pub(crate) fn send(stream: &mut TcpStream, body: &[u8]) -> std::io::Result<()> {
    let mut frame = Vec::with_capacity(body.len() + 4);
    put_i32(&mut frame, body.len() as i32);
    frame.extend_from_slice(body);
    stream.write_all(&frame)
}

pub(crate) fn receive(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut len = [0; 4];
    stream.read_exact(&mut len)?;
    let len = i32::from_be_bytes(len);
    if !(0..=16 << 20).contains(&len) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("bad frame length {len}"),
        ));
    }
    let mut body = vec![0; len as usize];
    stream.read_exact(&mut body)?;
    Ok(body)
}

pub(crate) fn put_i32(buf: &mut Vec<u8>, v: i32) {
    buf.extend_from_slice(&v.to_be_bytes());
}

pub(crate) fn put_i64(buf: &mut Vec<u8>, v: i64) {
    buf.extend_from_slice(&v.to_be_bytes());
}

pub(crate) fn put_bytes(buf: &mut Vec<u8>, bytes: &[u8]) {
    put_i32(buf, bytes.len() as i32);
    buf.extend_from_slice(bytes);
}
