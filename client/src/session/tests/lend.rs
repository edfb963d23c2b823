//! Lending the idle connection: when the machine offers it, and how it takes back a request
//! its caller wrote.

use super::*;
use crate::packet::{Envelope, Written};

const MS: Duration = Duration::from_millis(1);

/// What a caller leaves after writing a `getData` under the lend that gave it `xid`.
fn written(xid: i32, sent: Instant, rest: &'static [u8]) -> (Written, ReplyRx) {
    let (reply, rx) = oneshot::channel();
    let written = Written {
        xid,
        sent,
        rest: Bytes::from_static(rest),
        envelope: Envelope::new(OpCode::GetData, reply),
    };
    (written, rx)
}

#[test]
fn the_connection_is_lent_only_while_nothing_is_waiting_to_be_written() {
    let mut h = Harness::new(config(1));
    assert_eq!(h.s.lendable_xid(), None, "no connection");
    h.open_connection();
    assert_eq!(h.s.lendable_xid(), None, "handshake under way");
    h.answer_handshake(0x42, 3000, false);
    assert_eq!(h.s.lendable_xid(), Some(1));
    assert!(!h.s.awaits_replies());

    let mut a = h.get_data("/a");
    assert_eq!(h.s.lendable_xid(), None, "a frame waits to be written");
    h.xids();
    assert_eq!(
        h.s.lendable_xid(),
        Some(2),
        "a reply is awaited: the next request follows it"
    );
    assert!(h.s.awaits_replies());
    h.reply(1, 5, ErrorCode::Ok, &[]);
    assert!(result(&mut a).is_some());
    assert_eq!(h.s.lendable_xid(), Some(2));
    assert!(!h.s.awaits_replies());

    // A ping written but not yet flushed: the connection has output of its own.
    h.advance(T / 3);
    assert_eq!(h.s.lendable_xid(), None);
    h.sent();
    assert_eq!(
        h.s.lendable_xid(),
        Some(2),
        "a ping takes no xid of the sequence"
    );

    h.s.on_disconnected(h.now, "reset");
    assert_eq!(h.s.lendable_xid(), None, "disconnected");
}

#[test]
fn a_request_its_caller_wrote_is_answered_and_the_next_xid_follows_it() {
    let mut h = connected();
    let xid = h.s.lendable_xid().unwrap();
    let sent = h.now;
    let (w, mut rx) = written(xid, sent, b"");
    h.s.submit_written(w);
    assert!(h.sent().is_empty(), "the caller wrote it: nothing to write");
    assert!(h.s.awaits_replies(), "its reply is awaited");
    assert_eq!(h.s.lendable_xid(), Some(xid + 1));

    h.now += 700 * MS;
    h.reply(xid, 9, ErrorCode::Ok, &[]);
    assert_eq!(result(&mut rx), Some(Ok(())));
    assert_eq!(
        h.s.lease_deadline(),
        Some(sent + T),
        "its reply vouches from when the caller wrote it"
    );

    let _b = h.get_data("/b");
    assert_eq!(h.xids(), vec![(xid + 1, OpCode::GetData)]);
}

/// The socket took only the start of the frame: the machine writes the rest before anything
/// else, so the frames that follow stay whole.
#[test]
fn the_rest_of_a_partly_written_frame_goes_out_first() {
    let mut h = connected();
    let xid = h.s.lendable_xid().unwrap();
    let (w, mut rx) = written(xid, h.now, b"tail");
    h.s.submit_written(w);
    let _b = h.get_data("/b");
    let out = h.s.output().split();
    assert_eq!(&out[..4], b"tail");
    h.reply(xid, 9, ErrorCode::Ok, &[]);
    assert_eq!(result(&mut rx), Some(Ok(())));
}

/// A reply the caller no longer waits for still has its place in the order.
#[test]
fn a_written_request_whose_caller_left_still_matches_its_reply() {
    let mut h = connected();
    let xid = h.s.lendable_xid().unwrap();
    let (w, rx) = written(xid, h.now, b"");
    drop(rx);
    h.s.submit_written(w);
    let mut b = h.get_data("/b");
    h.xids();
    h.reply(xid, 9, ErrorCode::Ok, &[]);
    h.reply(xid + 1, 10, ErrorCode::Ok, &[]);
    assert_eq!(result(&mut b), Some(Ok(())));
    assert_eq!(h.state(), SessionState::Connected);
}

/// Requests written under a lend while others await their replies are matched after them, in
/// xid order, whichever way the replies come in.
#[test]
fn a_request_written_while_replies_are_awaited_is_matched_after_them() {
    let mut h = connected();
    let mut a = h.get_data("/a");
    assert_eq!(h.xids(), vec![(1, OpCode::GetData)]);
    let xid = h.s.lendable_xid().unwrap();
    assert_eq!(xid, 2);
    let (w, mut rx) = written(xid, h.now, b"");
    h.s.submit_written(w);
    let (w2, mut rx2) = written(xid + 1, h.now, b"");
    h.s.submit_written(w2);
    assert!(h.sent().is_empty(), "the caller wrote them");
    h.reply(1, 5, ErrorCode::Ok, &[]);
    assert_eq!(result(&mut a), Some(Ok(())));
    assert_eq!(result(&mut rx), None);
    h.reply(2, 6, ErrorCode::NoNode, &[]);
    assert_eq!(result(&mut rx), Some(Err(ErrorKind::NoNode)));
    h.reply(3, 7, ErrorCode::Ok, &[]);
    assert_eq!(result(&mut rx2), Some(Ok(())));
    assert_eq!(h.state(), SessionState::Connected);
    assert_eq!(h.s.take_completed(), 3);
    let _b = h.get_data("/b");
    assert_eq!(h.xids(), vec![(4, OpCode::GetData)]);
}
