//! `reconfig` and the read of `/zookeeper/config` on the harness's minimal client, so that
//! ensembles can change their membership without any client crate.

use std::net::{SocketAddr, TcpStream};

use crate::error::{Error, Result};
use crate::raw_client::{
    open, put_bytes, put_i32, put_i64, receive, reply_code, send, OP_CLOSE_SESSION,
};

const OP_GET_DATA: i32 = 4;
const OP_RECONFIG: i32 = 16;
const OP_AUTH: i32 = 100;
const AUTH_XID: i32 = -4;
const CONFIG_NODE: &str = "/zookeeper/config";

/// A membership change: the arguments of `reconfig`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Change<'a> {
    pub joining: Option<&'a str>,
    pub leaving: Option<&'a str>,
    pub new_members: Option<&'a str>,
}

/// Runs `reconfig` as the `digest` user `auth` (`user:password`) and returns the server's
/// error code (0 on success) and the new configuration text.
pub(crate) fn reconfig(addr: SocketAddr, auth: &str, change: &Change) -> Result<(i32, String)> {
    let mut stream = open(addr, "reconfig")?;
    let io = |e| Error::io(format!("reconfig on {addr}"), e);
    let mut request = Vec::new();
    put_i32(&mut request, AUTH_XID);
    put_i32(&mut request, OP_AUTH);
    put_i32(&mut request, 0);
    put_bytes(&mut request, b"digest");
    put_bytes(&mut request, auth.as_bytes());
    send(&mut stream, &request).map_err(io)?;
    let code = reply_code(&mut stream, AUTH_XID).map_err(io)?;
    if code != 0 {
        return Err(Error::ServerError {
            what: format!("digest auth on {addr}"),
            code,
        });
    }
    let mut request = Vec::new();
    put_i32(&mut request, 1);
    put_i32(&mut request, OP_RECONFIG);
    for part in [change.joining, change.leaving, change.new_members] {
        match part {
            Some(text) => put_bytes(&mut request, text.as_bytes()),
            None => put_i32(&mut request, -1),
        }
    }
    put_i64(&mut request, -1); // no version check
    send(&mut stream, &request).map_err(io)?;
    let (code, body) = reply(&mut stream, 1).map_err(io)?;
    let config = if code == 0 {
        data_of(&body)
    } else {
        String::new()
    };
    close(&mut stream, 2);
    Ok((code, config))
}

/// `/zookeeper/config` as the server at `addr` has it.
pub(crate) fn get_config(addr: SocketAddr) -> Result<String> {
    let mut stream = open(addr, "reading /zookeeper/config")?;
    let io = |e| Error::io(format!("reading {CONFIG_NODE} on {addr}"), e);
    let mut request = Vec::new();
    put_i32(&mut request, 1);
    put_i32(&mut request, OP_GET_DATA);
    put_bytes(&mut request, CONFIG_NODE.as_bytes());
    request.push(0);
    send(&mut stream, &request).map_err(io)?;
    let (code, body) = reply(&mut stream, 1).map_err(io)?;
    close(&mut stream, 2);
    if code != 0 {
        return Err(Error::ServerError {
            what: format!("getData {CONFIG_NODE} on {addr}"),
            code,
        });
    }
    Ok(data_of(&body))
}

fn close(stream: &mut TcpStream, xid: i32) {
    let mut request = Vec::new();
    put_i32(&mut request, xid);
    put_i32(&mut request, OP_CLOSE_SESSION);
    let _ = send(stream, &request).and_then(|_| reply_code(stream, xid));
}

/// The error code and body of the reply to `xid`.
fn reply(stream: &mut TcpStream, xid: i32) -> std::io::Result<(i32, Vec<u8>)> {
    loop {
        let reply = receive(stream)?;
        if reply.len() < 16 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "reply shorter than its header",
            ));
        }
        if reply[0..4] == xid.to_be_bytes() {
            let code = i32::from_be_bytes([reply[12], reply[13], reply[14], reply[15]]);
            return Ok((code, reply[16..].to_vec()));
        }
    }
}

/// The data buffer at the start of a `GetDataResponse` body, as text.
fn data_of(body: &[u8]) -> String {
    let Some(len) = body
        .get(..4)
        .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    else {
        return String::new();
    };
    let len = usize::try_from(len).unwrap_or(0);
    body.get(4..4 + len)
        .map(|d| String::from_utf8_lossy(d).into_owned())
        .unwrap_or_default()
}
