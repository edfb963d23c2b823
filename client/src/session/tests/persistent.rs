//! Persistent watches across a reconnect: the session reads what they watch when they are set
//! and again after every reconnect, and reports exactly the changes whose events were missed.

use zookeeper_jute::{
    AddWatchRequest, ExistsRequest, ExistsResponse, GetChildren2Request, GetChildren2Response, Stat,
};

use super::*;
use crate::session::watch_memo::tests::stat;

fn exists_body(s: Stat) -> Vec<u8> {
    let mut b = BytesMut::new();
    ExistsResponse { stat: s }.encode(&mut b);
    b.to_vec()
}

fn listing_body(children: &[&str], s: Stat) -> Vec<u8> {
    let mut b = BytesMut::new();
    GetChildren2Response {
        children: children.iter().map(|c| c.to_string()).collect(),
        stat: s,
    }
    .encode(&mut b);
    b.to_vec()
}

fn add_watch(h: &mut Harness, path: &str, recursive: bool) -> (ReplyRx, EventReceiver) {
    add_watch_queueing(h, path, recursive, usize::MAX)
}

/// [`add_watch`] whose stream queues at most `max` events.
fn add_watch_queueing(
    h: &mut Harness,
    path: &str,
    recursive: bool,
    max: usize,
) -> (ReplyRx, EventReceiver) {
    let (tx, rx) = event_queue::channel(max);
    let reply = h.submit(
        Request::AddWatch(AddWatchRequest {
            path: path.into(),
            mode: if recursive { 1 } else { 0 },
        }),
        Some(WatchRegistration::Persistent {
            path: path.into(),
            recursive,
            tx,
        }),
    );
    (reply, rx)
}

/// The one read the machine sent: its xid, checked to be `expected`.
#[track_caller]
fn one_read(h: &mut Harness, expected: Request) -> i32 {
    let sent = h.sent();
    assert_eq!(sent.len(), 1, "{sent:?}");
    let Sent::Request { xid, opcode, body } = &sent[0] else {
        panic!("{sent:?}")
    };
    assert_eq!(*opcode, expected.opcode());
    let decoded = Request::decode(*opcode, &mut body.clone()).unwrap();
    assert_eq!(decoded, expected);
    *xid
}

fn exists(path: &str) -> Request {
    Request::Exists(ExistsRequest {
        path: path.into(),
        watch: false,
    })
}

fn list(path: &str) -> Request {
    Request::GetChildren2(GetChildren2Request {
        path: path.into(),
        watch: false,
    })
}

/// Expects the listing of `path` as the one read sent, and answers it.
#[track_caller]
fn answer_listing(h: &mut Harness, path: &str, children: &[&str], s: Stat) {
    let read = one_read(h, list(path));
    h.reply(read, 0x20, ErrorCode::Ok, &listing_body(children, s));
}

fn ev(t: EventType, p: &str) -> (EventType, String) {
    (t, p.to_string())
}

/// Drops the connection and reconnects; returns the `setWatches2` xid.
fn bounce(h: &mut Harness) -> i32 {
    h.s.on_disconnected(h.now, "eof");
    h.establish(0x42, 3000);
    let sent = h.sent();
    let Some(Sent::Request { xid, opcode, .. }) = sent.first() else {
        panic!("{sent:?}")
    };
    assert_eq!(*opcode, OpCode::SetWatches2);
    // What follows the setWatches2 batch is checked by the caller: put it back.
    for frame in &sent[1..] {
        let Sent::Request { xid, opcode, body } = frame else {
            unreachable!()
        };
        encode_raw(h, *xid, *opcode, body);
    }
    *xid
}

fn encode_raw(h: &mut Harness, xid: i32, opcode: OpCode, body: &Bytes) {
    let out = h.s.output();
    out.put_i32(8 + body.len() as i32);
    out.put_i32(xid);
    out.put_i32(i32::from(opcode));
    out.extend_from_slice(body);
}

#[test]
fn a_persistent_watch_reports_after_a_reconnect_only_the_changes_it_missed() {
    let mut h = connected();
    let (mut reply, mut rx) = add_watch(&mut h, "/p", false);
    assert_eq!(h.xids(), vec![(1, OpCode::AddWatch)]);
    h.reply(1, 0x10, ErrorCode::Ok, &[]);
    assert_eq!(result(&mut reply), None, "held until the node is read");
    let read = one_read(&mut h, exists("/p"));
    h.reply(read, 0x10, ErrorCode::Ok, &exists_body(stat(5, 1, 0)));
    assert_eq!(result(&mut reply), Some(Ok(())));

    // Seen live, after the last reply: the zxid sent on reconnect predates it.
    h.notify(EventType::NodeDataChanged, "/p");
    assert_eq!(events(&mut rx), vec![ev(EventType::NodeDataChanged, "/p")]);

    let sw = bounce(&mut h);
    h.reply(sw, 0x20, ErrorCode::Ok, &[]);
    let read = one_read(&mut h, exists("/p"));
    // Now version 2 (the change seen live) and one child added while cut off.
    h.reply(read, 0x20, ErrorCode::Ok, &exists_body(stat(5, 2, 1)));
    assert_eq!(
        events(&mut rx),
        vec![ev(EventType::NodeChildrenChanged, "/p")]
    );

    // Deleted while cut off, then created again live before the read: both reported once.
    let sw = bounce(&mut h);
    h.reply(sw, 0x30, ErrorCode::Ok, &[]);
    let read = one_read(&mut h, exists("/p"));
    h.notify(EventType::NodeCreated, "/p");
    h.reply(read, 0x31, ErrorCode::Ok, &exists_body(stat(0x31, 0, 0)));
    assert_eq!(
        events(&mut rx),
        vec![
            ev(EventType::NodeDeleted, "/p"),
            ev(EventType::NodeCreated, "/p")
        ]
    );
}

#[test]
fn a_recursive_watch_walks_its_subtree_and_reports_missed_creations_and_deletions() {
    let mut h = connected();
    let (mut reply, mut rx) = add_watch(&mut h, "/r", true);
    h.xids();
    h.reply(1, 0x10, ErrorCode::Ok, &[]);
    answer_listing(&mut h, "/r", &["a"], stat(1, 0, 1));
    assert_eq!(
        result(&mut reply),
        None,
        "held until the whole subtree is read"
    );
    answer_listing(&mut h, "/r/a", &[], stat(2, 0, 0));
    assert_eq!(result(&mut reply), Some(Ok(())));
    assert_eq!(events(&mut rx), vec![]);

    // While cut off: /r/a deleted, /r/b created, /r changed.
    let sw = bounce(&mut h);
    h.reply(sw, 0x20, ErrorCode::Ok, &[]);
    answer_listing(&mut h, "/r", &["b"], stat(1, 1, 3));
    assert_eq!(
        events(&mut rx),
        vec![
            ev(EventType::NodeDataChanged, "/r"),
            ev(EventType::NodeDeleted, "/r/a"),
            ev(EventType::NodeCreated, "/r/b"),
        ]
    );
    answer_listing(&mut h, "/r/b", &[], stat(0x18, 0, 0));
    assert_eq!(events(&mut rx), vec![]);

    // Nothing changed: the next reconnect reports nothing.
    let sw = bounce(&mut h);
    h.reply(sw, 0x21, ErrorCode::Ok, &[]);
    answer_listing(&mut h, "/r", &["b"], stat(1, 1, 3));
    answer_listing(&mut h, "/r/b", &[], stat(0x18, 0, 0));
    assert_eq!(events(&mut rx), vec![]);
}

#[test]
fn a_connection_lost_during_the_first_walk_still_completes_the_call() {
    let mut h = connected();
    let (mut reply, _rx) = add_watch(&mut h, "/r", true);
    h.xids();
    h.reply(1, 0x10, ErrorCode::Ok, &[]);
    assert_eq!(result(&mut reply), None);
    h.s.on_disconnected(h.now, "eof");
    assert_eq!(result(&mut reply), Some(Ok(())), "the watch is set");
}

/// A listing in the subtree of a new recursive watch is over the incoming limit: `add_watch`
/// fails with `ReplyTooLarge` instead of the connection being dropped (which, reconnecting and
/// walking again, flapped forever), and the walk ends.
#[test]
fn a_walk_that_meets_an_oversized_listing_fails_the_call_and_keeps_the_connection() {
    let mut h = connected();
    let (mut reply, _rx) = add_watch(&mut h, "/r", true);
    h.xids();
    h.reply(1, 0x10, ErrorCode::Ok, &[]);
    answer_listing(&mut h, "/r", &["big"], stat(1, 0, 1));
    let read = one_read(&mut h, list("/r/big"));
    let mut buf = BytesMut::new();
    buf.put_i32(5 << 20);
    ReplyHeader {
        xid: read,
        zxid: 0x11,
        err: ErrorCode::Ok,
    }
    .encode(&mut buf);
    h.s.on_bytes(&mut buf, h.now);
    assert_eq!(
        result(&mut reply),
        Some(Err(ErrorKind::ReplyTooLarge {
            size: 5 << 20,
            max: 1 << 20
        }))
    );
    let mut rest = BytesMut::from(&vec![0u8; (5 << 20) - 16][..]);
    h.s.on_bytes(&mut rest, h.now);
    assert!(h.sent().is_empty(), "the walk ended");
    assert_eq!(h.state(), SessionState::Connected);
    assert!(h.actions().is_empty(), "no reconnect");
    // The session carries on.
    let mut next = h.get_data("/x");
    let xid = h.xids()[0].0;
    h.reply(xid, 0x12, ErrorCode::Ok, &[]);
    assert_eq!(result(&mut next), Some(Ok(())));
}

/// A listing of a walk that was under way when the watch was removed and set again belongs to
/// no current walk: it neither ends the new walk early nor changes what is known.
#[test]
fn a_listing_of_a_removed_watchs_walk_is_ignored() {
    let mut h = connected();
    let (mut first, _rx1) = add_watch(&mut h, "/r", true);
    h.xids();
    h.reply(1, 0x10, ErrorCode::Ok, &[]);
    let root_listing = one_read(&mut h, list("/r"));

    // Removed and set again while the walk is under way.
    let _removed = h.submit(
        Request::RemoveWatches(zookeeper_jute::RemoveWatchesRequest {
            path: "/r".into(),
            watcher_type: i32::from(WatcherType::PersistentRecursive),
        }),
        Some(WatchRegistration::Remove(
            "/r".into(),
            WatcherType::PersistentRecursive,
        )),
    );
    let (mut second, mut rx2) = add_watch(&mut h, "/r", true);
    let sent = h.xids();
    assert_eq!(sent.len(), 2, "{sent:?}");

    // The old walk goes one level deeper before the removal is answered.
    h.reply(
        root_listing,
        0x10,
        ErrorCode::Ok,
        &listing_body(&["a"], stat(1, 0, 1)),
    );
    let old_listing = one_read(&mut h, list("/r/a"));
    h.reply(sent[0].0, 0x11, ErrorCode::Ok, &[]);
    assert_eq!(
        result(&mut first),
        Some(Ok(())),
        "released with the removal"
    );
    h.reply(sent[1].0, 0x11, ErrorCode::Ok, &[]);
    let new_listing = one_read(&mut h, list("/r"));

    h.reply(
        old_listing,
        0x11,
        ErrorCode::Ok,
        &listing_body(&[], stat(2, 0, 0)),
    );
    assert_eq!(result(&mut second), None, "the new walk is still under way");
    assert!(h.sent().is_empty());
    h.reply(
        new_listing,
        0x11,
        ErrorCode::Ok,
        &listing_body(&["b"], stat(1, 0, 2)),
    );
    let last = one_read(&mut h, list("/r/b"));
    h.reply(last, 0x11, ErrorCode::Ok, &listing_body(&[], stat(3, 0, 0)));
    assert_eq!(result(&mut second), Some(Ok(())));
    assert_eq!(
        events(&mut rx2),
        vec![],
        "nothing is reported from a first walk"
    );
}

/// A node created under a recursive watch is read once, to learn its creation zxid (without
/// it, its deletion and creation again while cut off would look like no change), unless the
/// notification carried that zxid.
#[test]
fn a_node_created_live_is_read_once_for_its_creation_zxid() {
    let mut h = connected();
    let (mut reply, mut rx) = add_watch(&mut h, "/r", true);
    h.xids();
    h.reply(1, 0x10, ErrorCode::Ok, &[]);
    answer_listing(&mut h, "/r", &[], stat(1, 0, 0));
    assert_eq!(result(&mut reply), Some(Ok(())));

    h.notify(EventType::NodeCreated, "/r/a");
    let read = one_read(&mut h, exists("/r/a"));
    h.notify(EventType::NodeDataChanged, "/r/a");
    assert!(h.sent().is_empty(), "one read per creation");
    h.reply(read, 0x22, ErrorCode::Ok, &exists_body(stat(0x21, 1, 0)));
    h.notify_at(EventType::NodeCreated, "/r/b", 0x23);
    assert!(h.sent().is_empty(), "the zxid came with the event");
    assert_eq!(
        events(&mut rx),
        vec![
            ev(EventType::NodeCreated, "/r/a"),
            ev(EventType::NodeDataChanged, "/r/a"),
            ev(EventType::NodeCreated, "/r/b"),
        ]
    );

    // Both deleted and created again while cut off, with the same versions: both reported.
    let sw = bounce(&mut h);
    h.reply(sw, 0x30, ErrorCode::Ok, &[]);
    answer_listing(&mut h, "/r", &["a", "b"], stat(1, 0, 6));
    assert_eq!(events(&mut rx), vec![]);
    let reads = h.xids();
    assert_eq!(reads.len(), 2, "{reads:?}");
    let body = listing_body(&[], stat(0x2a, 1, 0));
    h.reply(reads[0].0, 0x30, ErrorCode::Ok, &body);
    let body = listing_body(&[], stat(0x2b, 0, 0));
    h.reply(reads[1].0, 0x30, ErrorCode::Ok, &body);
    assert_eq!(
        events(&mut rx),
        vec![
            ev(EventType::NodeDeleted, "/r/a"),
            ev(EventType::NodeCreated, "/r/a"),
            ev(EventType::NodeDeleted, "/r/b"),
            ev(EventType::NodeCreated, "/r/b"),
        ]
    );
}

/// The session ending while an `addWatch` waits for its first walk answers the call (the watch
/// was set) and ends the stream with the terminal state, instead of dropping the reply.
#[test]
fn a_session_ending_during_the_first_walk_answers_the_call() {
    let mut h = connected();
    let (mut reply, mut rx) = add_watch(&mut h, "/r", true);
    let mut other = h.get_data("/x");
    h.xids();
    h.reply(1, 0x10, ErrorCode::Ok, &[]);
    let walk = one_read(&mut h, list("/r"));
    assert!(walk > 2, "the walk goes out after the getData");
    h.reply(2, 0x10, ErrorCode::SessionExpired, &[]);
    assert_eq!(result(&mut other), Some(Err(ErrorKind::SessionExpired)));
    assert_eq!(h.state(), SessionState::Expired);
    assert_eq!(result(&mut reply), Some(Ok(())));
    let end = rx.try_recv().unwrap();
    assert_eq!(
        (end.event_type, end.state),
        (EventType::None, SessionState::Expired)
    );
}

/// Notifications no server sends: malformed paths under the chroot (which would reach a
/// watcher stripped as `/x/`, `//x`, `/./x`), paths outside it, and event types only clients
/// make (a `PersistentWatchRemoved` would tell a consumer its live watch has ended). All are
/// dropped; the events around them arrive, and the connection stays.
#[test]
fn notifications_no_server_sends_are_dropped() {
    let mut cfg = config(1);
    cfg.chroot = Chroot::new(Some("/app"));
    let mut h = Harness::new(cfg);
    h.establish(0x42, 3000);
    let (mut reply, mut rx) = add_watch(&mut h, "/app", true);
    h.xids();
    h.reply(1, 0x10, ErrorCode::Ok, &[]);
    answer_listing(&mut h, "/app", &[], stat(1, 0, 0));
    assert_eq!(result(&mut reply), Some(Ok(())));
    let (_d, mut data_watch) = h.get_data_watched("/app/x");
    let xid = h.xids()[0].0;
    h.reply(xid, 0x11, ErrorCode::Ok, &[]);

    for path in [
        "/app/x/",
        "/app//x",
        "/app/./x",
        "/app/../x",
        "/appx",
        "/other/x",
        "",
    ] {
        h.notify(EventType::NodeDeleted, path);
    }
    for event_type in [
        EventType::None,
        EventType::DataWatchRemoved,
        EventType::ChildWatchRemoved,
        EventType::PersistentWatchRemoved,
        EventType::Unknown(99),
    ] {
        h.notify(event_type, "/app/x");
    }
    assert_eq!(events(&mut rx), vec![]);
    assert!(
        data_watch.try_recv().is_err(),
        "the one-shot watch is still set"
    );
    h.notify(EventType::NodeCreated, "/app/x");
    assert_eq!(events(&mut rx), vec![ev(EventType::NodeCreated, "/x")]);
    assert_eq!(
        data_watch.try_recv().unwrap().event_type,
        EventType::NodeCreated
    );
    assert_eq!(h.state(), SessionState::Connected);
    assert!(h.actions().is_empty());
}

/// A consumer that does not read while the server sends a hundred thousand events: its stream
/// holds the bound and one entry per node; when it reads, it gets what was queued, then one
/// event per node and kind of change, missed changes found after a reconnect folded in too.
#[test]
fn a_consumer_that_falls_behind_gets_the_changes_folded_per_node() {
    let mut h = connected();
    let (mut reply, mut rx) = add_watch_queueing(&mut h, "/r", true, 100);
    h.xids();
    h.reply(1, 0x10, ErrorCode::Ok, &[]);
    answer_listing(&mut h, "/r", &["a", "b"], stat(1, 0, 2));
    let reads = h.xids();
    assert_eq!(reads.len(), 2, "{reads:?}");
    h.reply(
        reads[0].0,
        0x10,
        ErrorCode::Ok,
        &listing_body(&[], stat(2, 0, 0)),
    );
    h.reply(
        reads[1].0,
        0x10,
        ErrorCode::Ok,
        &listing_body(&[], stat(3, 0, 0)),
    );
    assert_eq!(result(&mut reply), Some(Ok(())));

    for i in 0..100_000 {
        let path = if i % 2 == 0 { "/r/a" } else { "/r" };
        h.notify(EventType::NodeDataChanged, path);
    }
    assert_eq!(rx.queued(), (100, 2));
    // While it is behind, /r/b goes away unseen (found by the walk after a reconnect).
    let sw = bounce(&mut h);
    h.reply(sw, 0x21, ErrorCode::Ok, &[]);
    answer_listing(&mut h, "/r", &["a"], stat(1, 50_000, 3));
    answer_listing(&mut h, "/r/a", &[], stat(2, 50_000, 0));
    assert_eq!(rx.queued(), (100, 3));

    let got = events(&mut rx);
    assert_eq!(got.len(), 103);
    assert!(got[..100]
        .iter()
        .all(|(t, _)| *t == EventType::NodeDataChanged));
    assert_eq!(
        &got[100..],
        &[
            ev(EventType::NodeDataChanged, "/r"),
            ev(EventType::NodeDataChanged, "/r/a"),
            ev(EventType::NodeDeleted, "/r/b"),
        ]
    );
    // Caught up: live events flow again.
    h.notify(EventType::NodeCreated, "/r/c");
    assert_eq!(events(&mut rx), vec![ev(EventType::NodeCreated, "/r/c")]);
}

/// A watch whose stream is gone is dropped, and a call still held for its first walk is
/// answered all the same (found by fuzzing: the call used to be left without an answer).
#[test]
fn a_call_held_for_a_watch_whose_stream_is_gone_is_answered() {
    for drop_by in ["event", "reconnect"] {
        let mut h = connected();
        let (mut reply, rx) = add_watch(&mut h, "/r", true);
        h.xids();
        h.reply(1, 0x10, ErrorCode::Ok, &[]);
        assert_eq!(result(&mut reply), None, "held for the walk");
        drop(rx);
        match drop_by {
            "event" => h.notify(EventType::NodeCreated, "/r"),
            _ => {
                h.s.on_disconnected(h.now, "eof");
                h.establish(0x42, 3000);
            }
        }
        assert_eq!(result(&mut reply), Some(Ok(())), "{drop_by}");
    }
}

/// A server that reports nodes under a recursive watch without end: what the watch remembers
/// stays within its bound (it folds to its root), every event is still delivered, and after a
/// reconnect the walk reports by zxid what changed after the last reply before the loss.
#[test]
fn a_recursive_watch_told_of_nodes_without_end_folds_and_reports_by_zxid() {
    let mut cfg = config(1);
    cfg.max_subtree_bytes = 64 * 1024;
    let mut h = Harness::new(cfg);
    h.establish(0x42, 3000);
    let (mut reply, mut rx) = add_watch(&mut h, "/r", true);
    h.xids();
    h.reply(1, 0x10, ErrorCode::Ok, &[]);
    answer_listing(&mut h, "/r", &[], stat(1, 0, 0));
    assert_eq!(result(&mut reply), Some(Ok(())));

    for i in 0..100_000 {
        h.notify(EventType::NodeCreated, &format!("/r/n{i}"));
        // Until it folds, the watch reads each new node for its creation zxid.
        for (xid, _) in h.xids() {
            assert!(!h.s.watches.is_folded("/r"), "no such read once folded");
            h.reply(xid, 0x10, ErrorCode::Ok, &exists_body(stat(0x10, 0, 0)));
        }
        assert!(h.s.watches.remembered("/r") <= 64 * 1024 / NODE_COST_FLOOR);
    }
    assert!(h.s.watches.is_folded("/r"));
    assert_eq!(h.s.watches.remembered("/r"), 1, "the root only");
    let got = events(&mut rx);
    assert_eq!(got.len(), 100_000, "every event delivered");

    // The last reply before the loss carried zxid 0x30; after it, /r/n1 changed and /r/m was
    // created, unseen. /r/n0 changed before it, seen live.
    let _read = h.get_data("/r");
    let (xid, _) = h.xids()[0];
    h.reply(xid, 0x30, ErrorCode::Ok, &[]);
    let sw = bounce(&mut h);
    h.reply(sw, 0x40, ErrorCode::Ok, &[]);
    let root = Stat {
        czxid: 1,
        pzxid: 0x31,
        ..Stat::default()
    };
    answer_listing(&mut h, "/r", &["n0", "n1", "m"], root);
    let reads = h.xids();
    assert_eq!(reads.len(), 3, "the walk goes on below the root");
    // Listed in name order: m, n0, n1.
    let kids = [
        Stat {
            czxid: 0x31,
            mzxid: 0x31,
            pzxid: 0x31,
            ..Stat::default()
        },
        Stat {
            czxid: 2,
            mzxid: 0x20,
            pzxid: 2,
            ..Stat::default()
        },
        Stat {
            czxid: 3,
            mzxid: 0x32,
            pzxid: 3,
            ..Stat::default()
        },
    ];
    for ((xid, _), kid) in reads.iter().zip(kids) {
        h.reply(*xid, 0x40, ErrorCode::Ok, &listing_body(&[], kid));
    }
    let mut got = events(&mut rx);
    got.sort_by_key(|(t, p)| (p.clone(), i32::from(*t)));
    assert_eq!(
        got,
        vec![
            ev(EventType::NodeChildrenChanged, "/r"),
            ev(EventType::NodeCreated, "/r/m"),
            ev(EventType::NodeDataChanged, "/r/n1"),
        ]
    );
    assert_eq!(h.s.watches.remembered("/r"), 1);
}

/// The least a cached node is counted for (a path of 6 bytes): a bound on how many fit.
const NODE_COST_FLOOR: usize = 160;

/// A one-shot watch set on the path of a persistent watch takes its place on a 3.8 server
/// (ZOOKEEPER-4466): the session sets the persistent watch again as soon as the one-shot's reply
/// comes, and reads its node, which reports what changed in between. The one-shot then fires
/// from the persistent watch's events, and nothing more is sent.
#[test]
fn a_persistent_watch_displaced_by_a_one_shot_is_set_again_at_once_and_caught_up() {
    let mut h = connected();
    let (mut reply, mut rx) = add_watch(&mut h, "/p", false);
    h.xids();
    h.reply(1, 0x10, ErrorCode::Ok, &[]);
    let read = one_read(&mut h, exists("/p"));
    h.reply(read, 0x10, ErrorCode::Ok, &exists_body(stat(5, 1, 0)));
    assert_eq!(result(&mut reply), Some(Ok(())));
    let (data_reply, mut data) = h.get_data_watched("/p");
    let (xid, _) = h.xids()[0];
    h.reply(xid, 0x11, ErrorCode::Ok, &[]);
    drop(data_reply);

    let sent = h.sent();
    assert_eq!(sent.len(), 2, "{sent:?}");
    let Sent::Request {
        xid: sw,
        opcode,
        body,
    } = &sent[0]
    else {
        panic!("{sent:?}")
    };
    assert_eq!(*opcode, OpCode::SetWatches2);
    let set = SetWatches2::decode(&mut body.clone()).unwrap();
    assert_eq!(set.persistent_watches, vec!["/p".to_string()]);
    assert!(set.data_watches.is_empty() && set.persistent_recursive_watches.is_empty());
    let Sent::Request {
        xid: read, opcode, ..
    } = &sent[1]
    else {
        panic!("{sent:?}")
    };
    assert_eq!(*opcode, OpCode::Exists);
    h.reply(*sw, 0x13, ErrorCode::Ok, &[]);
    // Version 3: changed twice while the one-shot held the place.
    h.reply(*read, 0x13, ErrorCode::Ok, &exists_body(stat(5, 3, 0)));
    assert_eq!(events(&mut rx), vec![ev(EventType::NodeDataChanged, "/p")]);

    h.notify(EventType::NodeDataChanged, "/p");
    assert_eq!(
        data.try_recv().unwrap().event_type,
        EventType::NodeDataChanged
    );
    assert_eq!(events(&mut rx), vec![ev(EventType::NodeDataChanged, "/p")]);
    assert!(h.sent().is_empty());
}

/// Answers every frame the session sent, as a server holding `tree` (path, children, stat)
/// would, until it sends nothing more.
fn serve(h: &mut Harness, zxid: i64, tree: &[(&str, &[&str], Stat)]) {
    loop {
        let sent = h.sent();
        if sent.is_empty() {
            return;
        }
        for frame in sent {
            let Sent::Request { xid, opcode, body } = frame else {
                panic!("{frame:?}")
            };
            let request = Request::decode(opcode, &mut body.clone()).unwrap();
            let node = |path: &str| tree.iter().find(|(p, _, _)| *p == path);
            match request {
                Request::AddWatch(_) | Request::SetWatches(_) | Request::SetWatches2(_) => {
                    h.reply(xid, zxid, ErrorCode::Ok, &[])
                }
                Request::Exists(r) => match node(&r.path) {
                    Some((_, _, s)) => h.reply(xid, zxid, ErrorCode::Ok, &exists_body(*s)),
                    None => h.reply(xid, zxid, ErrorCode::NoNode, &[]),
                },
                Request::GetChildren2(r) => match node(&r.path) {
                    Some((_, children, s)) => {
                        h.reply(xid, zxid, ErrorCode::Ok, &listing_body(children, *s))
                    }
                    None => h.reply(xid, zxid, ErrorCode::NoNode, &[]),
                },
                other => panic!("unexpected {other:?}"),
            }
        }
    }
}

/// A reconnect's `setWatches` reports to a one-shot watch the net change since the last zxid
/// the client saw, before the persistent watches are set again: that event is no change in
/// order, and the reads after the batch report it to the persistent watches. Passed on to
/// them, it made the recursive watch report `/w/a` created, then deleted (as `/w` turned out
/// replaced) and created again; and a persistent watch report a node replaced while cut off
/// as changed (which it was not), then deleted and created.
#[test]
fn a_reconnect_reports_to_persistent_watches_what_the_one_shots_catch_up_on_once() {
    let mut h = connected();
    let (_, mut below) = add_watch(&mut h, "/w", true);
    let (_, mut on_a) = add_watch(&mut h, "/w/a", false);
    let (_, mut on_q) = add_watch(&mut h, "/q", false);
    let before: &[(&str, &[&str], Stat)] =
        &[("/w", &[], stat(9, 0, 0)), ("/q", &[], stat(3, 0, 0))];
    serve(&mut h, 0x10, before);
    let (data_reply, mut on_q_once) = h.get_data_watched("/q");
    let (xid, _) = h.xids()[0];
    h.reply(xid, 0x10, ErrorCode::Ok, &[]);
    drop(data_reply);
    // The one-shot took the persistent watch's place on the server: it is set again.
    serve(&mut h, 0x10, before);
    let (tx, mut once) = oneshot::channel();
    let _exists = h.submit(
        Request::Exists(ExistsRequest {
            path: "/w/a".into(),
            watch: true,
        }),
        Some(WatchRegistration::Exists("/w/a".into(), tx)),
    );
    let (xid, _) = h.xids()[0];
    h.reply(xid, 0x10, ErrorCode::NoNode, &[]);
    serve(&mut h, 0x10, before);
    assert_eq!(events(&mut below), vec![]);
    assert_eq!(events(&mut on_a), vec![]);

    // While cut off: /w deleted and created again, /w/a created, /q deleted and created
    // again (its data is newer than the last zxid the client saw).
    let sw = bounce(&mut h);
    h.notify(EventType::NodeCreated, "/w/a");
    h.notify(EventType::NodeDataChanged, "/q");
    h.reply(sw, 0x1e, ErrorCode::Ok, &[]);
    assert_eq!(once.try_recv().unwrap().event_type, EventType::NodeCreated);
    assert_eq!(
        on_q_once.try_recv().unwrap().event_type,
        EventType::NodeDataChanged
    );
    let after: &[(&str, &[&str], Stat)] = &[
        ("/w", &["a"], stat(0x1b, 0, 1)),
        ("/w/a", &[], stat(0x1e, 0, 0)),
        ("/q", &[], stat(0x1c, 0, 0)),
    ];
    serve(&mut h, 0x1e, after);
    assert_eq!(
        events(&mut below),
        vec![
            ev(EventType::NodeDeleted, "/w"),
            ev(EventType::NodeCreated, "/w"),
            ev(EventType::NodeCreated, "/w/a"),
        ]
    );
    assert_eq!(events(&mut on_a), vec![ev(EventType::NodeCreated, "/w/a")]);
    assert_eq!(
        events(&mut on_q),
        vec![
            ev(EventType::NodeDeleted, "/q"),
            ev(EventType::NodeCreated, "/q")
        ]
    );
}

/// A node created while the client was cut off and changed after the reconnect, before the
/// read that finds it: the change is never reported ahead of the creation. The recursive
/// watch leaves an event on a node its walk has not read again to that read (which reports it
/// with the creation); the persistent watch, whose node was known absent, reports the
/// creation first.
#[test]
fn a_node_created_while_cut_off_and_changed_before_its_read_is_reported_created_first() {
    let mut h = connected();
    let (_, mut below) = add_watch(&mut h, "/w", true);
    let (_, mut on_p) = add_watch(&mut h, "/p", false);
    let before: &[(&str, &[&str], Stat)] = &[("/w", &[], stat(9, 0, 0))];
    serve(&mut h, 0x10, before);

    // While cut off: /w/a, /w/a/y, /w/b and /p created; after the reconnect /w/a/y and /p
    // change and /w/b is deleted, before the reads.
    let sw = bounce(&mut h);
    h.reply(sw, 0x20, ErrorCode::Ok, &[]);
    h.notify(EventType::NodeDataChanged, "/w/a/y");
    h.notify(EventType::NodeDataChanged, "/p");
    h.notify(EventType::NodeDeleted, "/w/b");
    assert_eq!(
        events(&mut on_p),
        vec![
            ev(EventType::NodeCreated, "/p"),
            ev(EventType::NodeDataChanged, "/p")
        ]
    );
    assert_eq!(events(&mut below), vec![]);
    let after: &[(&str, &[&str], Stat)] = &[
        ("/w", &["a"], stat(9, 0, 3)),
        ("/w/a", &["y"], stat(0x11, 0, 1)),
        ("/w/a/y", &[], stat(0x12, 1, 0)),
        ("/p", &[], stat(0x13, 1, 0)),
    ];
    // The reads of /p and /w: the walk has listed /w, not /w/a yet.
    for frame in h.sent() {
        let Sent::Request { xid, opcode, body } = frame else {
            panic!("{frame:?}")
        };
        let path = match Request::decode(opcode, &mut body.clone()).unwrap() {
            Request::Exists(r) => r.path,
            Request::GetChildren2(r) => r.path,
            other => panic!("{other:?}"),
        };
        let (_, children, s) = after.iter().find(|(p, _, _)| *p == path).unwrap();
        let body = match opcode {
            OpCode::Exists => exists_body(*s),
            _ => listing_body(children, *s),
        };
        h.reply(xid, 0x21, ErrorCode::Ok, &body);
    }
    assert_eq!(events(&mut on_p), vec![], "the read finds nothing more");
    assert_eq!(events(&mut below), vec![ev(EventType::NodeCreated, "/w/a")]);
    h.notify(EventType::NodeDataChanged, "/w/a/y");
    serve(&mut h, 0x22, after);
    assert_eq!(
        events(&mut below),
        vec![ev(EventType::NodeCreated, "/w/a/y")]
    );
    // Read again: changes from now on are live.
    h.notify(EventType::NodeDataChanged, "/w/a/y");
    assert_eq!(
        events(&mut below),
        vec![ev(EventType::NodeDataChanged, "/w/a/y")]
    );
}

/// An oversized frame of `len` bytes whose reply header has `xid`, and the first `body` bytes
/// of what follows it.
fn oversized(len: usize, xid: i32, body: &[u8]) -> BytesMut {
    let mut buf = BytesMut::new();
    buf.put_i32(len as i32);
    ReplyHeader {
        xid,
        zxid: 0x20,
        err: ErrorCode::Ok,
    }
    .encode(&mut buf);
    buf.extend_from_slice(body);
    buf.resize(4 + len, 0);
    buf
}

/// A notification over the incoming limit (a node below a recursive watch named with more
/// bytes than the client reads) cannot be delivered: the recursive watches it may concern end
/// and say so, rather than go on as if nothing had changed; the others and the connection
/// carry on.
#[test]
fn a_notification_over_the_limit_ends_the_recursive_watches_it_may_concern() {
    let mut h = connected();
    let (_, mut below_r) = add_watch(&mut h, "/r", true);
    let (_, mut below_s) = add_watch(&mut h, "/s", true);
    let tree: &[(&str, &[&str], Stat)] = &[("/r", &[], stat(9, 0, 0)), ("/s", &[], stat(8, 0, 0))];
    serve(&mut h, 0x10, tree);

    let mut body = BytesMut::new();
    body.put_i32(i32::from(EventType::NodeCreated));
    body.put_i32(3);
    let name = format!("/r/{}", "n".repeat(2 << 20));
    body.put_i32(name.len() as i32);
    body.extend_from_slice(name.as_bytes());
    let mut buf = oversized(16 + body.len(), -1, &body);
    h.s.on_bytes(&mut buf, h.now);
    assert!(buf.is_empty());
    assert_eq!(
        events(&mut below_r),
        vec![ev(EventType::PersistentWatchRemoved, "/r")]
    );
    h.notify(EventType::NodeCreated, "/s/a");
    assert_eq!(
        events(&mut below_s),
        vec![ev(EventType::NodeCreated, "/s/a")]
    );
    assert_eq!(h.state(), SessionState::Connected);
    assert!(h.actions().is_empty(), "no reconnect");
}

/// A walk after a reconnect that meets a listing over the incoming limit cannot know what
/// changed below it: the watch ends and says so, where it used to go on without it.
#[test]
fn a_walk_after_a_reconnect_that_meets_an_oversized_listing_ends_the_watch() {
    let mut h = connected();
    let (_, mut below) = add_watch(&mut h, "/r", true);
    serve(&mut h, 0x10, &[("/r", &[], stat(9, 0, 0))]);
    let sw = bounce(&mut h);
    h.reply(sw, 0x30, ErrorCode::Ok, &[]);
    let read = one_read(&mut h, list("/r"));
    let mut buf = oversized(3 << 20, read, &[]);
    h.s.on_bytes(&mut buf, h.now);
    assert_eq!(
        events(&mut below),
        vec![ev(EventType::PersistentWatchRemoved, "/r")]
    );
    assert_eq!(h.state(), SessionState::Connected);
    assert!(h.sent().is_empty(), "the walk ended");
}
