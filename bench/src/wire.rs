//! Hand-encoded ZooKeeper frames for the two contestants that must not depend on our codec:
//! the raw socket (the limit) and the instant server. Written straight from the wire format
//! (big-endian, `[len][payload]` frames), so they also cross-check the codec under test.

use bytes::{BufMut, BytesMut};

/// create opcode.
pub const OP_CREATE: i32 = 1;
/// ZNONODE error code.
pub const ERR_NO_NODE: i32 = -101;
/// ZNODEEXISTS error code.
pub const ERR_NODE_EXISTS: i32 = -110;
/// delete opcode.
pub const OP_DELETE: i32 = 2;
/// exists opcode.
pub const OP_EXISTS: i32 = 3;
/// Create flags: an ephemeral node.
pub const EPHEMERAL: i32 = 1;
/// Create flags: an ephemeral sequential node.
pub const EPHEMERAL_SEQUENTIAL: i32 = 3;
/// Create flags: a persistent node.
pub const PERSISTENT: i32 = 0;
/// xid of a watch notification.
pub const XID_NOTIFICATION: i32 = -1;
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
    create_request_with(xid, path, data, PERSISTENT)
}

/// create request frame with `flags` ([`EPHEMERAL`], ...), open ACL, no data.
pub fn create_request_with(xid: i32, path: &str, data: &[u8], flags: i32) -> Vec<u8> {
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
        b.put_i32(flags);
    })
}

/// delete request frame, any version.
pub fn delete_request(xid: i32, path: &str) -> Vec<u8> {
    frame(|b| {
        b.put_i32(xid);
        b.put_i32(OP_DELETE);
        b.put_i32(path.len() as i32);
        b.put_slice(path.as_bytes());
        b.put_i32(-1);
    })
}

/// exists request frame, leaving a watch when `watch`.
pub fn exists_request(xid: i32, path: &str, watch: bool) -> Vec<u8> {
    frame(|b| {
        b.put_i32(xid);
        b.put_i32(OP_EXISTS);
        b.put_i32(path.len() as i32);
        b.put_slice(path.as_bytes());
        b.put_u8(u8::from(watch));
    })
}

/// `xid` of a reply frame (prefix included).
pub fn reply_xid(frame: &[u8]) -> Option<i32> {
    let x = frame.get(LEN_PREFIX..LEN_PREFIX + 4)?;
    Some(i32::from_be_bytes([x[0], x[1], x[2], x[3]]))
}

/// A string at `at` in a frame: the path of a create reply (right after the header) or of a
/// notification (after the event type and state).
fn string_at(frame: &[u8], at: usize) -> Option<&str> {
    let l = frame.get(at..at + 4)?;
    let len = usize::try_from(i32::from_be_bytes([l[0], l[1], l[2], l[3]])).ok()?;
    std::str::from_utf8(frame.get(at + 4..at + 4 + len)?).ok()
}

/// The path a successful create reply frame names.
pub fn created_path(frame: &[u8]) -> Option<&str> {
    string_at(frame, LEN_PREFIX + 16)
}

/// The path of a watch notification frame.
pub fn notification_path(frame: &[u8]) -> Option<&str> {
    string_at(frame, LEN_PREFIX + 16 + 8)
}

/// The event type of a notification frame (prefix included).
pub fn notification_type(frame: &[u8]) -> Option<i32> {
    let t = frame.get(LEN_PREFIX + 16..LEN_PREFIX + 20)?;
    Some(i32::from_be_bytes([t[0], t[1], t[2], t[3]]))
}

/// `NodeCreated` and `NodeDeleted` in a notification.
pub const EVENT_NODE_CREATED: i32 = 1;
pub const EVENT_NODE_DELETED: i32 = 2;

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
    fn paths_of_create_replies_and_notifications() {
        let mut create = header_reply(5, 9, 0);
        create.extend_from_slice(&2i32.to_be_bytes());
        create.extend_from_slice(b"/a");
        let len = create.len() as i32 - 4;
        create[..4].copy_from_slice(&len.to_be_bytes());
        assert_eq!(created_path(&create), Some("/a"));
        assert_eq!(reply_xid(&create), Some(5));
        let mut event = header_reply(XID_NOTIFICATION, -1, 0);
        for v in [2i32, 3, 3] {
            event.extend_from_slice(&v.to_be_bytes());
        }
        event.extend_from_slice(b"/bc");
        let len = event.len() as i32 - 4;
        event[..4].copy_from_slice(&len.to_be_bytes());
        assert_eq!(notification_path(&event), Some("/bc"));
        assert_eq!(created_path(&event[..10]), None);
    }

    #[test]
    fn partial_frames_are_not_complete() {
        let f = get_data_request(1, "/node");
        assert_eq!(complete_frame_len(&f[..3]), None);
        assert_eq!(complete_frame_len(&f[..f.len() - 1]), None);
    }
}
