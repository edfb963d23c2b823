//! Replies are slices of the session's read buffer rather than copies (a copy per reply is an
//! allocation freed on the caller's worker), and what a caller keeps of one does not hold that
//! buffer.

use zookeeper_jute::{GetDataResponse, Stat};

use super::*;
use crate::ops::get_data_reply;
use crate::packet::RawReply;

const BUFFER: usize = 64 * 1024;

/// A `getData` reply as it arrives: length prefix, header, data, stat.
fn get_data_frame(buf: &mut BytesMut, xid: i32, data: &[u8]) {
    let mut payload = BytesMut::new();
    ReplyHeader {
        xid,
        zxid: 5,
        err: ErrorCode::Ok,
    }
    .encode(&mut payload);
    GetDataResponse {
        data: Some(Bytes::copy_from_slice(data)),
        stat: Stat::default(),
    }
    .encode(&mut payload);
    buf.put_i32(payload.len() as i32);
    buf.extend_from_slice(&payload);
}

fn within(bytes: &[u8], buffer: std::ops::Range<usize>) -> bool {
    buffer.contains(&(bytes.as_ptr() as usize))
}

fn take(rx: &mut ReplyRx) -> RawReply {
    rx.try_recv()
        .expect("answered")
        .expect("a successful reply")
}

#[test]
fn node_data_kept_by_its_caller_does_not_hold_the_read_buffer() {
    let mut h = connected();
    let mut a = h.get_data("/a");
    let mut b = h.get_data("/b");
    h.xids();
    let mut buf = BytesMut::with_capacity(BUFFER);
    let buffer = buf.as_ptr() as usize..buf.as_ptr() as usize + buf.capacity();
    get_data_frame(&mut buf, 1, b"kept");
    get_data_frame(&mut buf, 2, b"dropped");
    h.s.on_bytes(&mut buf, h.now);
    assert!(buf.is_empty(), "both frames handled");

    let a = take(&mut a);
    assert!(
        within(&a.body, buffer.clone()),
        "a reply is a slice of the read buffer"
    );
    let (kept, _) = get_data_reply(Ok(a)).unwrap();
    assert_eq!(&kept[..], b"kept");
    assert!(
        !within(&kept, buffer.clone()),
        "the data a caller keeps is its own copy"
    );

    let b = take(&mut b);
    assert!(
        !buf.try_reclaim(BUFFER),
        "a reply not yet decoded still holds the buffer"
    );
    drop(b);
    assert!(
        buf.try_reclaim(BUFFER),
        "with every reply decoded or dropped the buffer is reused, though data read from it is kept"
    );
    assert_eq!(&kept[..], b"kept");
}

/// Large data is not copied: it takes most of the buffer it was read into.
#[test]
fn large_node_data_stays_a_slice_of_the_reply() {
    let mut h = connected();
    let mut a = h.get_data("/a");
    h.xids();
    let data = vec![7; 16 * 1024];
    let mut buf = BytesMut::with_capacity(BUFFER);
    let buffer = buf.as_ptr() as usize..buf.as_ptr() as usize + buf.capacity();
    get_data_frame(&mut buf, 1, &data);
    h.s.on_bytes(&mut buf, h.now);
    let (kept, _) = get_data_reply(Ok(take(&mut a))).unwrap();
    assert_eq!(kept, data);
    assert!(within(&kept, buffer));
}
