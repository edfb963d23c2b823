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

#[test]
fn oversized_frame_is_a_protocol_error() {
    let mut h = connected();
    let mut rx = h.get_data("/a");
    let mut buf = BytesMut::new();
    buf.put_i32(2 << 20);
    h.s.on_bytes(&mut buf, h.now);
    assert_eq!(result(&mut rx), Some(Err(ErrorKind::ConnectionLoss)));
    assert!(buf.is_empty());
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
            opcode,
            kind: PacketKind::Auth {
                scheme: "digest".into(),
                auth: Secret::copy_from(b"u:p"),
            },
            watch: None,
            reply: tx,
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
