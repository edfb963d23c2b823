//! Hand-encoded ZooKeeper frames for the two contestants that must not depend on our codec:
//! the raw socket (the limit) and the instant server. Written straight from the wire format
//! (big-endian, `[len][payload]` frames), so they also cross-check the codec under test.

use bytes::{BufMut, BytesMut};

/// create opcode.
pub const OP_CREATE: i32 = 1;
/// ZNODEEXISTS error code.
pub const ERR_NODE_EXISTS: i32 = -110;
/// getData opcode.
pub const OP_GET_DATA: i32 = 4;
/// getChildren2 opcode.
pub const OP_GET_CHILDREN2: i32 = 12;
/// ping opcode.
pub const OP_PING: i32 = 11;
/// closeSession opcode.
pub const OP_CLOSE_SESSION: i32 = -11;
/// setWatches opcode.
pub const OP_SET_WATCHES: i32 = 101;
/// setWatches2 opcode.
pub const OP_SET_WATCHES2: i32 = 105;
/// ZUNIMPLEMENTED error code.
pub const ERR_UNIMPLEMENTED: i32 = -6;

/// Size of the length prefix of every frame.
pub const LEN_PREFIX: usize = 4;

fn frame(payload: impl FnOnce(&mut BytesMut)) -> Vec<u8> {
    let mut buf = BytesMut::new();
    buf.put_i32(0);
    payload(&mut buf);
    let len = (buf.len() - LEN_PREFIX) as i32;
    buf[..LEN_PREFIX].copy_from_slice(&len.to_be_bytes());
    buf.to_vec()
}

/// ConnectRequest for a new session (protocol 0, no zxid seen, zero password, not read-only).
pub fn connect_request(timeout_ms: i32) -> Vec<u8> {
    frame(|b| {
        b.put_i32(0); // protocolVersion
        b.put_i64(0); // lastZxidSeen
        b.put_i32(timeout_ms);
        b.put_i64(0); // sessionId
        b.put_i32(16); // passwd length
        b.put_bytes(0, 16);
        b.put_u8(0); // readOnly
    })
}

/// ConnectResponse granting `session_id`.
pub fn connect_response(timeout_ms: i32, session_id: i64) -> Vec<u8> {
    frame(|b| {
        b.put_i32(0);
        b.put_i32(timeout_ms);
        b.put_i64(session_id);
        b.put_i32(16);
        b.put_bytes(0x5a, 16);
        b.put_u8(0);
    })
}

/// getData request frame for `path` without a watch.
pub fn get_data_request(xid: i32, path: &str) -> Vec<u8> {
    path_read_request(xid, OP_GET_DATA, path)
}

/// getChildren2 request frame for `path` without a watch.
pub fn get_children2_request(xid: i32, path: &str) -> Vec<u8> {
    path_read_request(xid, OP_GET_CHILDREN2, path)
}

/// A read whose body is a path and a watch flag (false).
fn path_read_request(xid: i32, opcode: i32, path: &str) -> Vec<u8> {
    frame(|b| {
        b.put_i32(xid);
        b.put_i32(opcode);
        b.put_i32(path.len() as i32);
        b.put_slice(path.as_bytes());
        b.put_u8(0);
    })
}

/// Successful getData reply frame carrying `data` and a plausible Stat.
pub fn get_data_reply(xid: i32, zxid: i64, data: &[u8]) -> Vec<u8> {
    frame(|b| {
        b.put_i32(xid);
        b.put_i64(zxid);
        b.put_i32(0); // err
        b.put_i32(data.len() as i32);
        b.put_slice(data);
        // Stat: czxid mzxid ctime mtime version cversion aversion ephemeralOwner
        // dataLength numChildren pzxid
        b.put_i64(2);
        b.put_i64(2);
        b.put_i64(1_700_000_000_000);
        b.put_i64(1_700_000_000_000);
        b.put_i32(0);
        b.put_i32(0);
        b.put_i32(0);
        b.put_i64(0);
        b.put_i32(data.len() as i32);
        b.put_i32(0);
        b.put_i64(2);
    })
}

/// A reply that is only a ReplyHeader (ping, closeSession, setWatches, errors).
pub fn header_reply(xid: i32, zxid: i64, err: i32) -> Vec<u8> {
    frame(|b| {
        b.put_i32(xid);
        b.put_i64(zxid);
        b.put_i32(err);
    })
}

/// create request frame: persistent node, open ACL (world:anyone, all permissions).
pub fn create_request(xid: i32, path: &str, data: &[u8]) -> Vec<u8> {
    frame(|b| {
        b.put_i32(xid);
        b.put_i32(OP_CREATE);
        b.put_i32(path.len() as i32);
        b.put_slice(path.as_bytes());
        b.put_i32(data.len() as i32);
        b.put_slice(data);
        b.put_i32(1); // one ACL entry
        b.put_i32(31); // perms: all
        for s in ["world", "anyone"] {
            b.put_i32(s.len() as i32);
            b.put_slice(s.as_bytes());
        }
        b.put_i32(0); // flags: persistent
    })
}

/// `err` of a reply frame (prefix included).
pub fn reply_err(frame: &[u8]) -> Option<i32> {
    let e = frame.get(LEN_PREFIX + 12..LEN_PREFIX + 16)?;
    Some(i32::from_be_bytes([e[0], e[1], e[2], e[3]]))
}

/// A request that is only a RequestHeader (ping, closeSession).
pub fn header_request(xid: i32, opcode: i32) -> Vec<u8> {
    frame(|b| {
        b.put_i32(xid);
        b.put_i32(opcode);
    })
}

/// Length of the first complete frame in `buf` (prefix included), if it is all there.
pub fn complete_frame_len(buf: &[u8]) -> Option<usize> {
    if buf.len() < LEN_PREFIX {
        return None;
    }
    let len = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    let total = LEN_PREFIX + usize::try_from(len).ok()?;
    (buf.len() >= total).then_some(total)
}

/// `(xid, opcode)` of a request frame (prefix included), if it is long enough to hold them.
pub fn request_header(frame: &[u8]) -> Option<(i32, i32)> {
    let h = frame.get(LEN_PREFIX..LEN_PREFIX + 8)?;
    Some((
        i32::from_be_bytes([h[0], h[1], h[2], h[3]]),
        i32::from_be_bytes([h[4], h[5], h[6], h[7]]),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_data_request_layout() {
        let f = get_data_request(7, "/a");
        assert_eq!(complete_frame_len(&f), Some(f.len()));
        assert_eq!(request_header(&f), Some((7, OP_GET_DATA)));
        assert_eq!(f.len(), 4 + 4 + 4 + 4 + 2 + 1);
    }

    #[test]
    fn reply_sizes() {
        // header 16 + data length 4 + data + Stat 68
        assert_eq!(get_data_reply(1, 1, &[0; 100]).len(), 4 + 16 + 4 + 100 + 68);
        assert_eq!(header_reply(-2, 0, 0).len(), 4 + 16);
    }

    #[test]
    fn partial_frames_are_not_complete() {
        let f = get_data_request(1, "/node");
        assert_eq!(complete_frame_len(&f[..3]), None);
        assert_eq!(complete_frame_len(&f[..f.len() - 1]), None);
    }
}
