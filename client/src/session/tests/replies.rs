//! Reply routing: order and xid checks, protocol errors, events before replies, auth.

use super::*;

#[test]
fn xid_mismatch_is_a_protocol_error_that_fails_every_pending_request() {
    let mut h = connected();
    let mut a = h.get_data("/a");
    let mut b = h.get_data("/b");
    assert_eq!(h.xids(), vec![(1, OpCode::GetData), (2, OpCode::GetData)]);
    h.reply(2, 10, ErrorCode::Ok, &[]);
    assert_eq!(result(&mut a), Some(Err(ErrorKind::ConnectionLoss)));
    assert_eq!(result(&mut b), Some(Err(ErrorKind::ConnectionLoss)));
    assert_eq!(h.state(), SessionState::Disconnected);
    assert_eq!(
        h.s.last_zxid(),
        0,
        "a reply that broke the protocol is not trusted"
    );
}

#[test]
fn reply_with_nothing_pending_is_a_protocol_error() {
    let mut h = connected();
    h.reply(9, 10, ErrorCode::Ok, &[]);
    assert_eq!(h.state(), SessionState::Disconnected);
}

/// A frame header announcing `len` payload bytes, and the reply header that starts it.
fn oversized_header(len: i32, xid: i32) -> BytesMut {
    let mut buf = BytesMut::new();
    buf.put_i32(len);
    ReplyHeader {
        xid,
        zxid: 9,
        err: ErrorCode::Ok,
    }
    .encode(&mut buf);
    buf
}

/// A reply over the limit is read through in pieces without ever being held: the request it
/// answers fails with `ReplyTooLarge`, and the requests before and after it complete.
#[test]
fn an_oversized_reply_fails_only_its_request_and_is_never_buffered() {
    let mut h = connected();
    let mut before = h.get_data("/before");
    let mut big = h.get_data("/big");
    let mut after = h.get_data("/after");
    assert_eq!(h.xids().len(), 3);
    h.reply(1, 5, ErrorCode::Ok, b"small");
    let len = 3 << 20;
    let mut buf = oversized_header(len, 2);
    // Only part of the header first: nothing happens yet.
    let mut rest = buf.split_off(10);
    h.s.on_bytes(&mut buf, h.now);
    assert_eq!(buf.len(), 10);
    buf.unsplit(rest.split());
    h.s.on_bytes(&mut buf, h.now);
    assert!(buf.is_empty());
    assert_eq!(
        result(&mut big),
        Some(Err(ErrorKind::ReplyTooLarge {
            size: len as usize,
            max: 1 << 20
        }))
    );
    // The body arrives in reads of 64 KiB; each is dropped as it comes.
    let chunk = vec![0xab; 64 * 1024];
    let mut remaining = len as usize - 16;
    while remaining > 0 {
        let n = remaining.min(chunk.len());
        let mut read = BytesMut::from(&chunk[..n]);
        h.s.on_bytes(&mut read, h.now);
        assert!(read.is_empty(), "skipped bytes are never kept");
        remaining -= n;
    }
    assert_eq!(result(&mut after), None);
    h.reply(3, 10, ErrorCode::Ok, b"after");
    assert_eq!(result(&mut before), Some(Ok(())));
    assert_eq!(result(&mut after), Some(Ok(())));
    assert_eq!(h.state(), SessionState::Connected);
    assert_eq!(h.s.last_zxid(), 10);
    assert!(h.actions().is_empty(), "the connection stays");
}

/// The end of an oversized frame and the next frame may share a read.
#[test]
fn the_frame_after_an_oversized_one_may_come_in_the_same_read() {
    let mut h = connected();
    let mut big = h.get_data("/big");
    let mut next = h.get_data("/next");
    h.xids();
    let mut buf = oversized_header((1 << 20) + 100, 1);
    buf.extend_from_slice(&[0; (1 << 20) + 100 - 16]);
    let mut reply = BytesMut::new();
    ReplyHeader {
        xid: 2,
        zxid: 3,
        err: ErrorCode::Ok,
    }
    .encode(&mut reply);
    buf.put_i32(reply.len() as i32);
    buf.extend_from_slice(&reply);
    h.s.on_bytes(&mut buf, h.now);
    assert!(matches!(
        result(&mut big),
        Some(Err(ErrorKind::ReplyTooLarge { .. }))
    ));
    assert_eq!(result(&mut next), Some(Ok(())));
}

/// The session reads frames with the protocol crate's limit, to the byte: a reply of exactly
/// the incoming limit is read whole, one byte more is skipped and fails its request, and
/// `decode_frame` draws the line in the same place.
#[test]
fn the_incoming_limit_is_the_protocol_codecs_to_the_byte() {
    let max = 1 << 20;
    let mut h = connected();
    let mut at_limit = h.get_data("/at-limit");
    let mut over = h.get_data("/over");
    let mut after = h.get_data("/after");
    h.xids();
    let frame = |len: usize, xid: i32| {
        let mut buf = oversized_header(len as i32, xid);
        buf.resize(4 + len, 0);
        buf
    };
    let whole = frame(max, 1);
    let longer = frame(max + 1, 2);
    assert!(zookeeper_jute::codec::decode_frame(&mut whole.clone(), max)
        .unwrap()
        .is_some());
    assert!(matches!(
        zookeeper_jute::codec::decode_frame(&mut longer.clone(), max),
        Err(zookeeper_jute::DecodeError::FrameTooLarge { len, .. }) if len == max + 1
    ));
    let mut buf = whole;
    buf.extend_from_slice(&longer);
    h.s.on_bytes(&mut buf, h.now);
    assert!(buf.is_empty());
    assert_eq!(result(&mut at_limit), Some(Ok(())));
    assert_eq!(
        result(&mut over),
        Some(Err(ErrorKind::ReplyTooLarge { size: max + 1, max }))
    );
    h.reply(3, 10, ErrorCode::Ok, &[]);
    assert_eq!(result(&mut after), Some(Ok(())));
    assert_eq!(h.state(), SessionState::Connected);
}

#[test]
fn an_oversized_reply_for_no_pending_request_is_a_protocol_error() {
    let mut h = connected();
    let mut a = h.get_data("/a");
    h.xids();
    let mut buf = oversized_header(2 << 20, 7);
    h.s.on_bytes(&mut buf, h.now);
    assert_eq!(result(&mut a), Some(Err(ErrorKind::ConnectionLoss)));
    assert_eq!(h.state(), SessionState::Disconnected);
    assert!(buf.is_empty());
}

#[test]
fn a_negative_frame_length_is_a_protocol_error() {
    let mut h = connected();
    let mut rx = h.get_data("/a");
    let mut buf = BytesMut::new();
    buf.put_i32(-5);
    h.s.on_bytes(&mut buf, h.now);
    assert_eq!(result(&mut rx), Some(Err(ErrorKind::ConnectionLoss)));
    assert!(buf.is_empty());
}

#[test]
fn an_oversized_notification_is_dropped_and_the_connection_kept() {
    let mut h = connected();
    let mut rx = h.get_data("/a");
    h.xids();
    let mut buf = oversized_header(2 << 20, -1);
    buf.extend_from_slice(&vec![0; (2 << 20) - 16]);
    h.s.on_bytes(&mut buf, h.now);
    h.reply(1, 2, ErrorCode::Ok, &[]);
    assert_eq!(result(&mut rx), Some(Ok(())));
    assert_eq!(h.state(), SessionState::Connected);
}

#[test]
fn an_oversized_handshake_answer_fails_the_attempt() {
    let mut h = Harness::new(config(1));
    h.actions();
    h.s.on_connected(h.now);
    h.sent();
    let mut buf = BytesMut::new();
    buf.put_i32(2 << 20);
    buf.extend_from_slice(&[0; 64]);
    h.s.on_bytes(&mut buf, h.now);
    assert!(buf.is_empty());
    assert!(matches!(h.s.phase, Phase::Backoff { .. }), "attempt failed");
}

#[test]
fn replies_complete_in_order_and_errors_are_typed() {
    let mut h = connected();
    let mut a = h.get_data("/a");
    let mut b = h.get_data("/b");
    h.xids();
    h.reply(1, 7, ErrorCode::NoNode, &[]);
    assert_eq!(result(&mut a), Some(Err(ErrorKind::NoNode)));
    assert_eq!(result(&mut b), None);
    h.reply(2, 8, ErrorCode::Ok, b"body");
    let reply = b.try_recv().unwrap().unwrap();
    assert_eq!(&reply.body[..], b"body");
    assert_eq!(h.s.last_zxid(), 8);
}

#[test]
fn event_is_delivered_before_the_reply_that_follows_it() {
    let mut h = connected();
    let (_g, mut wrx) = h.get_data_watched("/w");
    h.reply(1, 5, ErrorCode::Ok, &[]);
    let mut set = h.get_data("/w");
    // Server order: the notification, then the reply of the write that caused it.
    let mut buf = BytesMut::new();
    for payload in [
        {
            let mut p = BytesMut::new();
            ReplyHeader {
                xid: -1,
                zxid: -1,
                err: ErrorCode::Ok,
            }
            .encode(&mut p);
            WatcherEvent {
                event_type: EventType::NodeDataChanged,
                state: KeeperState::SyncConnected,
                path: "/w".into(),
            }
            .encode(&mut p);
            p
        },
        {
            let mut p = BytesMut::new();
            ReplyHeader {
                xid: 2,
                zxid: 6,
                err: ErrorCode::Ok,
            }
            .encode(&mut p);
            p
        },
    ] {
        buf.put_i32(payload.len() as i32);
        buf.extend_from_slice(&payload);
    }
    // Feed one byte short of the second frame: the event is out, the reply is not.
    let mut first = buf.split_to(buf.len() - 1);
    h.s.on_bytes(&mut first, h.now);
    assert_eq!(
        wrx.try_recv().unwrap().event_type,
        EventType::NodeDataChanged
    );
    assert_eq!(result(&mut set), None);
    first.extend_from_slice(&buf);
    h.s.on_bytes(&mut first, h.now);
    assert_eq!(result(&mut set), Some(Ok(())));
}

#[test]
fn exists_on_missing_node_leaves_an_exist_watch_but_get_data_does_not() {
    let mut h = connected();
    let (etx, mut erx) = oneshot::channel();
    let _e = h.submit(
        Request::Exists(zookeeper_jute::ExistsRequest {
            path: "/x".into(),
            watch: true,
        }),
        Some(WatchRegistration::Exists("/x".into(), etx)),
    );
    let (_d, mut drx) = h.get_data_watched("/x");
    h.reply(1, 1, ErrorCode::NoNode, &[]);
    h.reply(2, 1, ErrorCode::NoNode, &[]);
    assert!(matches!(
        drx.try_recv(),
        Err(oneshot::error::TryRecvError::Closed)
    ));
    h.notify(EventType::NodeCreated, "/x");
    assert_eq!(erx.try_recv().unwrap().event_type, EventType::NodeCreated);
}

#[test]
fn auth_reply_may_overtake_earlier_replies() {
    let mut h = connected();
    let mut a = h.get_data("/a");
    let (frame, opcode) = Packet::encode(
        &Request::Auth(zookeeper_jute::AuthPacket {
            auth_type: 0,
            scheme: "digest".into(),
            auth: Bytes::from_static(b"u:p"),
        }),
        -4,
        1 << 20,
    )
    .unwrap();
    let (tx, mut auth) = oneshot::channel();
    h.s.submit(
        Packet {
            frame: frame.freeze(),
            kind: PacketKind::Auth {
                scheme: "digest".into(),
                auth: Secret::copy_from(b"u:p"),
            },
            envelope: Envelope::new(opcode, tx),
        },
        h.now,
    );
    assert_eq!(h.xids(), vec![(1, OpCode::GetData), (-4, OpCode::Auth)]);
    h.reply(-4, 0, ErrorCode::Ok, &[]);
    assert!(matches!(auth.try_recv(), Ok(Ok(_))));
    h.reply(1, 3, ErrorCode::Ok, &[]);
    assert!(matches!(a.try_recv(), Ok(Ok(_))));
    // The identity is replayed after a reconnect.
    h.s.on_disconnected(h.now, "eof");
    h.establish(0x42, 3000);
    assert_eq!(h.xids(), vec![(-4, OpCode::Auth)]);
}

#[test]
fn remove_watches_resolves_local_watchers() {
    let mut h = connected();
    let (_r, mut wrx) = h.get_data_watched("/w");
    h.reply(1, 2, ErrorCode::Ok, &[]);
    let _rm = h.submit(
        Request::RemoveWatches(zookeeper_jute::RemoveWatchesRequest {
            path: "/w".into(),
            watcher_type: 2,
        }),
        Some(WatchRegistration::Remove("/w".into(), WatcherType::Data)),
    );
    h.reply(2, 2, ErrorCode::Ok, &[]);
    assert_eq!(
        wrx.try_recv().unwrap().event_type,
        EventType::DataWatchRemoved
    );
}

#[test]
fn xids_wrap_to_one() {
    let mut h = connected();
    h.s.next_xid = i32::MAX;
    let _a = h.get_data("/a");
    let _b = h.get_data("/b");
    assert_eq!(
        h.xids(),
        vec![(i32::MAX, OpCode::GetData), (1, OpCode::GetData)]
    );
}

/// Wakers that record, in order, which of the receivers they were given to was woken.
fn recording_waker(
    label: &'static str,
    log: &Arc<std::sync::Mutex<Vec<&'static str>>>,
) -> std::task::Waker {
    struct Record(&'static str, Arc<std::sync::Mutex<Vec<&'static str>>>);
    impl std::task::Wake for Record {
        fn wake(self: Arc<Self>) {
            self.1.lock().unwrap().push(self.0);
        }
    }
    std::task::Waker::from(Arc::new(Record(label, log.clone())))
}

/// The answers of one read are handed out together at its end, but never after something
/// the server sent after them: a reply, then an event, in one read reach their receivers in
/// that order.
#[test]
fn a_reply_then_an_event_in_one_read_are_handed_out_in_that_order() {
    use std::future::Future;
    use std::task::Context;
    let mut h = connected();
    let (mut watched, mut watcher) = h.get_data_watched("/w");
    h.reply(1, 5, ErrorCode::Ok, &[]);
    assert_eq!(result(&mut watched), Some(Ok(())));
    let mut plain = h.get_data("/a");
    assert_eq!(h.xids().len(), 2);

    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let reply_waker = recording_waker("reply", &log);
    let event_waker = recording_waker("event", &log);
    assert!(std::pin::Pin::new(&mut plain)
        .poll(&mut Context::from_waker(&reply_waker))
        .is_pending());
    assert!(std::pin::Pin::new(&mut watcher)
        .poll(&mut Context::from_waker(&event_waker))
        .is_pending());

    let mut read = BytesMut::new();
    for (header, event) in [
        (
            ReplyHeader {
                xid: 2,
                zxid: 6,
                err: ErrorCode::Ok,
            },
            None,
        ),
        (
            ReplyHeader {
                xid: -1,
                zxid: -1,
                err: ErrorCode::Ok,
            },
            Some(WatcherEvent {
                event_type: EventType::NodeDataChanged,
                state: KeeperState::SyncConnected,
                path: "/w".into(),
            }),
        ),
    ] {
        let mut payload = BytesMut::new();
        header.encode(&mut payload);
        if let Some(event) = event {
            event.encode(&mut payload);
        }
        read.put_i32(payload.len() as i32);
        read.extend_from_slice(&payload);
    }
    h.s.on_bytes(&mut read, h.now);
    assert_eq!(*log.lock().unwrap(), ["reply", "event"]);
}

/// A server that enforces authentication answers a session without a login, whatever it
/// sends (a request or a ping), with `SessionClosedRequireSaslAuth`, then drops the
/// connection; every reconnect would be refused the same way.
#[test]
fn a_server_requiring_a_login_ends_the_session_on_a_request_or_a_ping() {
    let mut h = connected();
    let mut refused = h.get_data("/a");
    let mut queued = h.get_data("/b");
    h.reply(1, 0, ErrorCode::SessionClosedRequireSaslAuth, &[]);
    assert_eq!(h.state(), SessionState::AuthFailed);
    assert_eq!(result(&mut refused), Some(Err(ErrorKind::AuthFailed)));
    assert_eq!(result(&mut queued), Some(Err(ErrorKind::AuthFailed)));
    assert!(h.s.is_terminated());
    assert!(
        !h.actions().iter().any(|a| matches!(a, Action::Connect(_))),
        "no reconnect"
    );

    let mut h = connected();
    h.advance(Duration::from_millis(1000));
    assert_eq!(h.xids(), vec![(-2, OpCode::Ping)]);
    h.reply(-2, 0, ErrorCode::SessionClosedRequireSaslAuth, &[]);
    assert_eq!(h.state(), SessionState::AuthFailed);
    assert!(h.s.is_terminated());
}
