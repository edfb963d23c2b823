//! The frames the session writes by itself: the connect request, auth replays and the
//! `setWatches` batches that restore watches after a reconnect.

use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use zookeeper_jute::{
    encode_request_frame, xid, AuthPacket, ConnectRequest, ConnectResponse, Decode, Encode,
    Request, SetWatches, SetWatches2,
};

use super::watches::WatchSet;
use crate::secret::Secret;

/// Writes the `ConnectRequest` frame: a new session when `session_id` is 0, else a resume
/// carrying the password and the last zxid seen (a server behind it refuses the connection).
pub(crate) fn write_connect_request(
    out: &mut BytesMut,
    last_zxid: i64,
    timeout: Duration,
    session_id: i64,
    passwd: &Secret,
    read_only: bool,
) {
    let passwd = if session_id == 0 || passwd.is_empty() {
        Bytes::from_static(&[0; 16])
    } else {
        passwd.expose().clone()
    };
    let request = ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: last_zxid,
        timeout: timeout.as_millis().min(i32::MAX as u128) as i32,
        session_id,
        passwd,
        read_only: Some(read_only),
    };
    out.put_i32(request.encoded_len() as i32);
    request.encode(out);
}

pub(crate) fn read_connect_response(frame: &mut Bytes) -> zookeeper_jute::Result<ConnectResponse> {
    ConnectResponse::decode(frame)
}

pub(crate) fn write_auth(out: &mut BytesMut, scheme: &str, auth: &Secret) {
    let request = Request::Auth(AuthPacket {
        auth_type: 0,
        scheme: scheme.to_owned(),
        auth: auth.expose().clone(),
    });
    encode_request_frame(out, xid::AUTH, &request);
}

/// Splits the watches to restore into frames holding at most `max_bytes` of paths each, a path
/// counting its length and 4 (only a path longer than that alone exceeds it, in a frame of its
/// own). Paths go in the order data, exist, child, persistent, recursive. A frame with
/// persistent paths is `setWatches2` (3.6+); one without is `setWatches`, which every server
/// version accepts.
pub(crate) fn set_watches_batches(
    set: WatchSet,
    relative_zxid: i64,
    max_bytes: usize,
) -> Vec<Request> {
    #[derive(Default)]
    struct Batch {
        lists: [Vec<String>; 5],
        bytes: usize,
    }
    let mut batches = vec![Batch::default()];
    let lists = [
        set.data,
        set.exist,
        set.child,
        set.persistent,
        set.recursive,
    ];
    for (kind, paths) in lists.into_iter().enumerate() {
        for path in paths {
            let cost = path.len() + 4;
            let batch = batches.last_mut().expect("never empty");
            if batch.bytes > 0 && batch.bytes + cost > max_bytes {
                batches.push(Batch::default());
            }
            let batch = batches.last_mut().expect("never empty");
            batch.bytes += cost;
            batch.lists[kind].push(path);
        }
    }
    batches
        .into_iter()
        .filter(|b| b.bytes > 0)
        .map(|b| {
            let [data, exist, child, persistent, recursive] = b.lists;
            if persistent.is_empty() && recursive.is_empty() {
                Request::SetWatches(SetWatches {
                    relative_zxid,
                    data_watches: data,
                    exist_watches: exist,
                    child_watches: child,
                })
            } else {
                Request::SetWatches2(SetWatches2 {
                    relative_zxid,
                    data_watches: data,
                    exist_watches: exist,
                    child_watches: child,
                    persistent_watches: persistent,
                    persistent_recursive_watches: recursive,
                })
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_request_matches_the_reference_bytes() {
        // Vector A of the protocol notes: new session, 30 s, readOnly false.
        let mut out = BytesMut::new();
        write_connect_request(
            &mut out,
            0,
            Duration::from_secs(30),
            0,
            &Secret::default(),
            false,
        );
        let mut expected = vec![0, 0, 0, 0x2d, 0, 0, 0, 0];
        expected.extend_from_slice(&[0; 8]);
        expected.extend_from_slice(&[0, 0, 0x75, 0x30]);
        expected.extend_from_slice(&[0; 8]);
        expected.extend_from_slice(&[0, 0, 0, 0x10]);
        expected.extend_from_slice(&[0; 16]);
        expected.push(0);
        assert_eq!(&out[..], &expected[..]);
    }

    #[test]
    fn batches_split_by_size_and_pick_the_opcode() {
        let set = WatchSet {
            data: (0..100).map(|i| format!("/data/{i:04}")).collect(),
            exist: vec!["/e".into()],
            child: vec![],
            persistent: vec!["/p".into()],
            recursive: vec![],
        };
        let batches = set_watches_batches(set, 7, 200);
        assert!(batches.len() > 1);
        let mut total = 0;
        for (i, b) in batches.iter().enumerate() {
            match b {
                Request::SetWatches(s) => {
                    assert_eq!(s.relative_zxid, 7);
                    assert!(
                        i + 1 < batches.len(),
                        "only the last holds persistent paths"
                    );
                    total += s.data_watches.len() + s.exist_watches.len();
                }
                Request::SetWatches2(s) => {
                    assert_eq!(s.persistent_watches, vec!["/p".to_string()]);
                    total += s.data_watches.len() + s.exist_watches.len() + 1;
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(total, 102);
    }

    /// Each frame fits the server's limit, so that restoring watches never makes the server
    /// close the connection (it would again on every reconnect).
    #[test]
    fn no_frame_exceeds_the_frame_limit() {
        let max_frame = 2048;
        let set = WatchSet {
            data: (0..300)
                .map(|i| format!("/d/{}", "x".repeat(i % 97)))
                .collect(),
            exist: vec![format!("/{}", "e".repeat(max_frame - 41))],
            child: (0..50).map(|i| format!("/c/{i}")).collect(),
            persistent: vec!["/p".into()],
            recursive: vec![format!("/{}", "r".repeat(1500))],
        };
        let limit = max_frame - crate::limits::SET_WATCHES_OVERHEAD;
        let batches = set_watches_batches(set, 7, limit);
        let mut paths = 0;
        for request in &batches {
            let mut frame = BytesMut::new();
            encode_request_frame(&mut frame, 1, request);
            assert!(frame.len() - 4 <= max_frame, "{}", frame.len() - 4);
            paths += match request {
                Request::SetWatches(s) => {
                    s.data_watches.len() + s.exist_watches.len() + s.child_watches.len()
                }
                Request::SetWatches2(s) => {
                    s.data_watches.len()
                        + s.exist_watches.len()
                        + s.child_watches.len()
                        + s.persistent_watches.len()
                        + s.persistent_recursive_watches.len()
                }
                other => panic!("{other:?}"),
            };
        }
        assert_eq!(paths, 353);
    }

    #[test]
    fn no_watches_no_frames() {
        assert!(set_watches_batches(WatchSet::default(), 1, 100).is_empty());
    }
}
