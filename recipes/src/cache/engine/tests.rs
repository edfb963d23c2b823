//! The engine, step by step: scripted histories, then random ones against a model of the
//! server that delivers events and replies as the client does (every event before the reply
//! that observes it, some later ones early too, reconnects that report missed changes once
//! per node in path order).

use std::sync::Arc;

use bytes::Bytes;
use zookeeper_tokio::Stat;

use super::*;
use crate::cache::events::CacheEvents;
use crate::cache::view::{CacheEvent, CachedNode};
use crate::node::path::{depth, join, parent, within};

fn node(czxid: i64, version: i32, mzxid: i64, children: i32) -> NodeState {
    NodeState::Present(CachedNode {
        data: Some(Bytes::from(format!("{czxid}.{version}"))),
        stat: Stat {
            czxid,
            mzxid,
            pzxid: czxid,
            version,
            num_children: children,
            ..Stat::default()
        },
    })
}

struct Rig {
    engine: Engine,
    shared: Arc<Shared>,
    events: CacheEvents,
}

fn rig(root: &str, recursive: bool) -> Rig {
    let shared = Arc::new(Shared::new(1_000_000));
    let events = shared.subscribe();
    let mut engine = Engine::new(root, recursive, shared.clone(), 1_000_000);
    engine.start_fresh();
    Rig {
        engine,
        shared,
        events,
    }
}

impl Rig {
    fn requests(&mut self) -> Vec<Request> {
        self.engine.requests(true)
    }

    /// The one read request there must be now.
    fn read_of(&mut self, path: &str) -> u64 {
        let requests = self.requests();
        match requests.as_slice() {
            [Request::Read { ticket, path: p }] if p == path => *ticket,
            other => panic!("expected one read of {path}, got {other:?}"),
        }
    }

    fn events(&mut self, list: &[(Kind, &str)]) {
        self.engine
            .on_events(list.iter().map(|(k, p)| (*k, p.to_string())));
    }

    fn read(&mut self, ticket: u64, state: NodeState) {
        self.engine.on_read(ticket, Outcome::Done(state));
        self.engine.step();
    }

    fn seen(&mut self) -> Vec<String> {
        std::iter::from_fn(|| self.events.try_next())
            .map(|e| {
                let e = e.unwrap();
                match &e {
                    CacheEvent::Created { path, .. } => format!("created {path} @{}", e.zxid()),
                    CacheEvent::Changed { path, node, .. } => {
                        format!("changed {path} v{} @{}", node.stat.version, e.zxid())
                    }
                    CacheEvent::Deleted { path, .. } => format!("deleted {path} @{}", e.zxid()),
                    CacheEvent::Initialized { zxid } => format!("initialized @{zxid}"),
                }
            })
            .collect()
    }
}

/// A subtree cache already showing `/r` with children `a` and `b` (czxid 1, 2, 3).
fn with_ab() -> Rig {
    let mut r = rig("/r", true);
    let t = r.read_of("/r");
    r.read(t, node(1, 0, 1, 2));
    let requests = r.requests();
    let Some(Request::List { ticket, .. }) = requests.first() else {
        panic!("{requests:?}")
    };
    r.engine.on_listing(
        *ticket,
        Outcome::Done(Some(vec!["a".to_string(), "b".to_string()])),
    );
    let reads = r.requests();
    assert_eq!(reads.len(), 2);
    for request in reads {
        let Request::Read { ticket, path } = request else {
            panic!()
        };
        let state = if path == "/r/a" {
            node(2, 0, 2, 0)
        } else {
            node(3, 0, 3, 0)
        };
        r.read(ticket, state);
    }
    assert_eq!(
        r.seen(),
        [
            "created /r @3",
            "created /r/a @3",
            "created /r/b @3",
            "initialized @3"
        ]
    );
    r
}

#[test]
fn a_missing_node_appears_then_changes_and_reads_of_later_states_coalesce() {
    let mut r = rig("/n", false);
    let t = r.read_of("/n");
    r.read(t, NodeState::Absent);
    assert_eq!(r.seen(), ["initialized @0"]);
    r.events(&[(Kind::Created, "/n")]);
    let t = r.read_of("/n");
    r.read(t, node(10, 0, 10, 0));
    assert_eq!(r.seen(), ["created /n @10"]);
    // Two changes; the read sent after the first sees the second (whose event therefore
    // arrived before the reply).
    r.events(&[(Kind::Changed, "/n")]);
    let t = r.read_of("/n");
    r.events(&[(Kind::Changed, "/n")]);
    r.read(t, node(10, 2, 12, 0));
    assert_eq!(r.seen(), ["changed /n v2 @12"]);
    // The second event called for another read: it sees nothing new, and nothing is repeated.
    let t = r.read_of("/n");
    r.read(t, node(10, 2, 12, 0));
    assert_eq!(r.seen(), Vec::<String>::new());
    assert_eq!(r.shared.zxid(), 12);
}

#[test]
fn nodes_changed_in_between_advance_together_at_one_zxid() {
    let mut r = with_ab();
    r.events(&[(Kind::Changed, "/r/a")]);
    let ta = r.read_of("/r/a");
    r.events(&[(Kind::Changed, "/r/b")]);
    let tb = r.read_of("/r/b");
    r.events(&[(Kind::Changed, "/r/a")]);
    // a's read saw its second change (zxid 12); b changed at 11 in between.
    r.read(ta, node(2, 2, 12, 0));
    assert_eq!(
        r.seen(),
        Vec::<String>::new(),
        "b's state at 12 is not known yet"
    );
    r.read(tb, node(3, 1, 11, 0));
    assert_eq!(r.seen(), ["changed /r/b v1 @12", "changed /r/a v2 @12"]);
}

#[test]
fn a_prefix_ends_where_the_next_unknown_begins() {
    let mut r = with_ab();
    r.events(&[(Kind::Changed, "/r/a"), (Kind::Changed, "/r/b")]);
    let requests = r.requests();
    assert_eq!(requests.len(), 2);
    let ticket = |p: &str| {
        requests
            .iter()
            .find_map(|q| match q {
                Request::Read { ticket, path } if path == p => Some(*ticket),
                _ => None,
            })
            .unwrap()
    };
    r.read(ticket("/r/a"), node(2, 1, 11, 0));
    assert_eq!(r.seen(), ["changed /r/a v1 @11"]);
    r.read(ticket("/r/b"), node(3, 1, 12, 0));
    assert_eq!(r.seen(), ["changed /r/b v1 @12"]);
}

#[test]
fn a_trailing_deletion_is_applied_at_the_zxid_a_probe_finds() {
    let mut r = with_ab();
    r.events(&[(Kind::Deleted, "/r/a")]);
    r.engine.step();
    assert_eq!(r.seen(), Vec::<String>::new());
    let requests = r.requests();
    let [Request::Probe { ticket, path }] = requests.as_slice() else {
        panic!("{requests:?}")
    };
    assert_eq!(path, "/r");
    assert!(r
        .engine
        .on_probe(*ticket, Outcome::Done(Some(20)))
        .is_empty());
    r.engine.step();
    assert_eq!(r.seen(), ["deleted /r/a @20"]);
    assert_eq!(r.shared.children("/r").unwrap(), ["b"]);
}

#[test]
fn a_probe_overtaken_by_events_is_void() {
    let mut r = with_ab();
    r.events(&[(Kind::Deleted, "/r/a")]);
    r.engine.step();
    let requests = r.requests();
    let [Request::Probe { ticket, .. }] = requests.as_slice() else {
        panic!("{requests:?}")
    };
    r.events(&[(Kind::Changed, "/r/b")]);
    r.engine.on_probe(*ticket, Outcome::Done(Some(25)));
    r.engine.step();
    assert_eq!(r.seen(), Vec::<String>::new());
    // The change after the deletion tells its zxid instead.
    let t = r.read_of("/r/b");
    r.read(t, node(3, 1, 26, 0));
    assert_eq!(r.seen(), ["deleted /r/a @26", "changed /r/b v1 @26"]);
}

#[test]
fn the_root_deleted_is_probed_above_the_cache() {
    let mut r = with_ab();
    r.events(&[
        (Kind::Deleted, "/r/a"),
        (Kind::Deleted, "/r/b"),
        (Kind::Deleted, "/r"),
    ]);
    r.engine.step();
    let requests = r.requests();
    let [Request::Probe { ticket, path }] = requests.as_slice() else {
        panic!("{requests:?}")
    };
    assert_eq!(path, "/");
    r.engine.on_probe(*ticket, Outcome::Done(Some(30)));
    r.engine.step();
    assert_eq!(
        r.seen(),
        ["deleted /r/a @30", "deleted /r/b @30", "deleted /r @30"]
    );
    assert!(r.shared.snapshot().nodes.is_empty());
}

#[test]
fn a_node_deleted_and_created_again_shows_both() {
    let mut r = with_ab();
    r.events(&[(Kind::Deleted, "/r/a"), (Kind::Created, "/r/a")]);
    let t = r.read_of("/r/a");
    r.read(t, node(40, 0, 40, 0));
    assert_eq!(r.seen(), ["deleted /r/a @40", "created /r/a @40"]);
}

#[test]
fn a_read_that_fits_two_places_is_made_again() {
    let mut r = with_ab();
    // Created, deleted, created while the read was under way: version 0 fits both creations.
    r.events(&[(Kind::Created, "/r/c")]);
    let t = r.read_of("/r/c");
    r.events(&[(Kind::Deleted, "/r/c"), (Kind::Created, "/r/c")]);
    r.read(t, node(50, 0, 50, 0));
    assert_eq!(r.seen(), Vec::<String>::new());
    let t = r.read_of("/r/c");
    r.read(t, node(50, 0, 50, 0));
    // The first incarnation's data was never seen: only the last state is shown.
    assert_eq!(r.seen(), ["created /r/c @50"]);
}

#[test]
fn nothing_inside_a_reconnect_stretch_is_applied_until_it_ends() {
    let mut r = with_ab();
    r.events(&[(Kind::Changed, "/r/a")]);
    let ta = r.read_of("/r/a");
    let from = r.engine.position();
    r.engine.begin_stretch(from);
    // Missed while cut off, reported in path order: b changed (twice, one event), a changed.
    r.events(&[(Kind::Changed, "/r/a"), (Kind::Changed, "/r/b")]);
    // The read fits after the first change, and after the unordered one (which may stand for
    // any number of changes): it is made again.
    r.read(ta, node(2, 1, 11, 0));
    assert_eq!(r.seen(), Vec::<String>::new());
    let requests = r.requests();
    assert_eq!(requests.len(), 2);
    for q in requests {
        let Request::Read { ticket, path } = q else {
            panic!()
        };
        let state = if path == "/r/a" {
            node(2, 2, 14, 0)
        } else {
            node(3, 2, 13, 0)
        };
        r.read(ticket, state);
    }
    assert_eq!(r.seen(), Vec::<String>::new(), "still inside the stretch");
    r.engine.end_stretch();
    // The stretch's events are unordered: the next live event tells the zxid (with nothing
    // after them, the largest mzxid the reads show would).
    r.events(&[(Kind::Changed, "/r/b")]);
    let t = r.read_of("/r/b");
    r.read(t, node(3, 3, 15, 0));
    assert_eq!(
        r.seen(),
        ["changed /r/a v2 @15", "changed /r/b v3 @15"],
        "one step past the stretch"
    );
}

#[test]
fn an_event_that_cannot_follow_makes_what_is_pending_unordered() {
    let mut r = with_ab();
    // A data change of a node the view does not have: events were lost.
    r.events(&[(Kind::Changed, "/r/z"), (Kind::Changed, "/r/a")]);
    let requests = r.requests();
    assert_eq!(requests.len(), 2);
    for q in requests {
        let Request::Read { ticket, path } = q else {
            panic!()
        };
        let state = if path == "/r/a" {
            node(2, 1, 21, 0)
        } else {
            node(20, 3, 22, 0)
        };
        r.engine.on_read(ticket, Outcome::Done(state));
    }
    r.engine.step();
    // Unordered, and events the client folded may hide nodes that came and went: every node's
    // stats date the step.
    assert_eq!(r.seen(), Vec::<String>::new());
    let requests = r.requests();
    let mut probed: Vec<&str> = requests
        .iter()
        .map(|q| match q {
            Request::Probe { path, .. } => path.as_str(),
            other => panic!("{other:?}"),
        })
        .collect();
    probed.sort();
    assert_eq!(probed, ["/r", "/r/a", "/r/b", "/r/z"]);
    for q in &requests {
        let Request::Probe { ticket, path } = q else {
            panic!()
        };
        let zxid = if path == "/r" { 23 } else { 3 };
        r.engine.on_probe(*ticket, Outcome::Done(Some(zxid)));
    }
    r.engine.step();
    assert_eq!(r.seen(), ["created /r/z @23", "changed /r/a v1 @23"]);
}

#[test]
fn a_node_never_reported_created_is_read_when_something_below_it_shows_up() {
    let mut r = with_ab();
    let from = r.engine.position();
    r.engine.begin_stretch(from);
    // /r/x was created while cut off; the client, learning of /r/x/y live first, never
    // reports /r/x itself.
    r.events(&[(Kind::Created, "/r/x/y")]);
    let mut read: Vec<String> = r
        .requests()
        .into_iter()
        .map(|q| match q {
            Request::Read { ticket, path } => {
                let state = if path == "/r/x" {
                    node(70, 0, 70, 1)
                } else {
                    node(71, 0, 71, 0)
                };
                r.engine.on_read(ticket, Outcome::Done(state));
                path
            }
            other => panic!("{other:?}"),
        })
        .collect();
    read.sort();
    assert_eq!(read, ["/r/x", "/r/x/y"]);
    r.engine.end_stretch();
    r.engine.step();
    // Changes may be hidden: every node's stats date the step.
    for q in r.requests() {
        let Request::Probe { ticket, .. } = q else {
            panic!("{q:?}")
        };
        r.engine.on_probe(ticket, Outcome::Done(Some(72)));
    }
    r.engine.step();
    assert_eq!(r.seen(), ["created /r/x @72", "created /r/x/y @72"]);
}

#[test]
fn a_read_made_before_a_reconnect_and_answered_after_it_is_made_again() {
    let mut r = with_ab();
    r.events(&[(Kind::Changed, "/r/a")]);
    let t = r.read_of("/r/a");
    // The connection drops before the reply is taken: the reply may show changes made while
    // cut off whose events have not come yet, so it places nothing...
    let from = r.engine.position();
    r.engine.begin_stretch(from);
    r.read(t, node(2, 1, 11, 0));
    assert_eq!(r.seen(), Vec::<String>::new());
    // ... and is made again once the client has reported what it missed.
    assert_eq!(r.requests(), []);
    r.engine.end_stretch();
    let t = r.read_of("/r/a");
    r.read(t, node(2, 1, 11, 0));
    assert_eq!(r.seen(), ["changed /r/a v1 @11"]);
}

#[test]
fn a_rebuild_reports_only_what_differs() {
    let mut r = with_ab();
    r.engine.start_fresh();
    let t = r.read_of("/r");
    r.read(t, node(1, 0, 1, 2));
    let requests = r.requests();
    let [Request::List { ticket, .. }] = requests.as_slice() else {
        panic!("{requests:?}")
    };
    r.engine.on_listing(
        *ticket,
        Outcome::Done(Some(vec!["b".to_string(), "c".to_string()])),
    );
    for q in r.requests() {
        let Request::Read { ticket, path } = q else {
            panic!()
        };
        let state = if path == "/r/b" {
            node(3, 0, 3, 0)
        } else {
            node(60, 0, 60, 0)
        };
        r.read(ticket, state);
    }
    assert_eq!(r.seen(), ["deleted /r/a @60", "created /r/c @60"]);
}

#[test]
fn pending_events_past_the_bound_are_folded_and_read_again() {
    let shared = Arc::new(Shared::new(1_000_000));
    let mut events = shared.subscribe();
    let mut engine = Engine::new("/r", true, shared.clone(), 16);
    engine.start_fresh();
    let Some(Request::Read { ticket, .. }) = engine.requests(true).pop() else {
        panic!()
    };
    engine.on_read(ticket, Outcome::Done(node(1, 0, 1, 0)));
    engine.step();
    assert!(matches!(
        events.try_next(),
        Some(Ok(CacheEvent::Created { .. }))
    ));
    assert!(matches!(
        events.try_next(),
        Some(Ok(CacheEvent::Initialized { .. }))
    ));
    // 40 creations under /r, 100 changes of each.
    let mut batch = Vec::new();
    for i in 0..40 {
        batch.push((Kind::Created, format!("/r/n{i}")));
        for _ in 0..100 {
            batch.push((Kind::Changed, format!("/r/n{i}")));
        }
    }
    engine.on_events(batch);
    assert!(engine.pending() <= 40, "{} pending", engine.pending());
    for q in engine.requests(true) {
        let Request::Read { ticket, path } = q else {
            continue;
        };
        let i: i64 = path[4..].parse().unwrap();
        engine.on_read(ticket, Outcome::Done(node(100 + i, 100, 1000 + i, 0)));
    }
    engine.step();
    engine.on_events([(Kind::Changed, "/r/n0".to_string())]);
    let Some(Request::Read { ticket, .. }) = engine.requests(true).pop() else {
        panic!()
    };
    engine.on_read(ticket, Outcome::Done(node(100, 101, 2000, 0)));
    engine.step();
    let created = std::iter::from_fn(|| events.try_next())
        .filter(|e| matches!(e, Ok(CacheEvent::Created { .. })))
        .count();
    assert_eq!(created, 40);
    assert_eq!(shared.len(), 41);
    assert_eq!(shared.zxid(), 2000);
    assert_eq!(shared.get("/r/n0").unwrap().stat.version, 101);
}

mod model;

/// The probes `requests` holds, by path.
fn probes(requests: &[Request]) -> Vec<(u64, String)> {
    let mut out: Vec<(u64, String)> = requests
        .iter()
        .filter_map(|q| match q {
            Request::Probe { ticket, path } => Some((*ticket, path.clone())),
            _ => None,
        })
        .collect();
    out.sort_by(|a, b| a.1.cmp(&b.1));
    out
}

/// A deletion made while cut off and never reported as such (a client past its watch memory
/// reports it as a child change of the parent, or not at all): the probe after the stretch
/// finds a node the view holds absent. The engine reads that node instead of probing again
/// and again, and shows the deletion.
#[test]
fn a_probe_that_finds_a_viewed_node_gone_reads_it_rather_than_probing_again() {
    let mut r = with_ab();
    let from = r.engine.position();
    r.engine.begin_stretch(from);
    r.events(&[(Kind::Changed, "/r/a")]);
    r.engine.end_stretch();
    let t = r.read_of("/r/a");
    r.read(t, node(2, 1, 4, 0));
    let requests = r.requests();
    let found = probes(&requests);
    let paths: Vec<&str> = found.iter().map(|(_, p)| p.as_str()).collect();
    assert_eq!(paths, ["/r", "/r/a", "/r/b"], "{requests:?}");
    let mut next = Vec::new();
    for (ticket, path) in &found {
        let answer = if path == "/r/b" { None } else { Some(5) };
        next.extend(r.engine.on_probe(*ticket, Outcome::Done(answer)));
    }
    assert!(next.is_empty(), "{next:?}");
    r.engine.step();
    // Without a new event, no second probe of the same prefix: a read of the node found gone
    // (and of what is pending, now unordered).
    let mut reads: Vec<(u64, String)> = r
        .requests()
        .into_iter()
        .map(|q| match q {
            Request::Read { ticket, path } => (ticket, path),
            other => panic!("expected reads, got {other:?}"),
        })
        .collect();
    reads.sort_by(|a, b| a.1.cmp(&b.1));
    let paths: Vec<&str> = reads.iter().map(|(_, p)| p.as_str()).collect();
    assert_eq!(paths, ["/r/a", "/r/b"]);
    r.read(reads[0].0, node(2, 1, 4, 0));
    r.read(reads[1].0, NodeState::Absent);
    let mut probes_made = 0;
    for _ in 0..10 {
        let requests = r.requests();
        let found = probes(&requests);
        if found.is_empty() {
            break;
        }
        probes_made += 1;
        for (ticket, _) in found {
            r.engine.on_probe(ticket, Outcome::Done(Some(6)));
        }
        r.engine.step();
    }
    assert!(probes_made <= 1, "probed {probes_made} times");
    let mut seen = r.seen();
    seen.sort();
    assert_eq!(seen, ["changed /r/a v1 @6", "deleted /r/b @6"]);
    assert_eq!(r.shared.children("/r").unwrap(), ["a"]);
}

/// A probe that fails for any other reason is not made again for the same prefix until
/// something new arrives: a cause not foreseen cannot turn into a stream of requests.
#[test]
fn a_failed_probe_is_not_repeated_until_something_new_arrives() {
    let mut r = with_ab();
    r.events(&[(Kind::Deleted, "/r/a")]);
    r.engine.step();
    let requests = r.requests();
    let [Request::Probe { ticket, .. }] = requests.as_slice() else {
        panic!("{requests:?}")
    };
    r.engine.on_probe(*ticket, Outcome::Retry);
    r.engine.step();
    for _ in 0..3 {
        assert_eq!(r.requests(), Vec::new(), "no probe again");
        r.engine.step();
    }
    r.events(&[(Kind::Changed, "/r/b")]);
    let t = r.read_of("/r/b");
    r.read(t, node(3, 1, 26, 0));
    assert_eq!(r.seen(), ["deleted /r/a @26", "changed /r/b v1 @26"]);
}

/// A client past its recursive watch's memory reports a node deleted while cut off as a child
/// change of its parent: every node the cache knows below that parent is read again, and the
/// deleted one (with what was below it) leaves the view.
#[test]
fn a_child_change_reported_after_a_reconnect_reads_what_is_below_again() {
    let mut r = with_ab();
    let from = r.engine.position();
    r.engine.begin_stretch(from);
    r.events(&[(Kind::Children, "/r")]);
    r.engine.end_stretch();
    let mut reads: Vec<(u64, String)> = r
        .requests()
        .into_iter()
        .map(|q| match q {
            Request::Read { ticket, path } => (ticket, path),
            other => panic!("expected reads, got {other:?}"),
        })
        .collect();
    reads.sort_by(|a, b| a.1.cmp(&b.1));
    let paths: Vec<&str> = reads.iter().map(|(_, p)| p.as_str()).collect();
    assert_eq!(paths, ["/r/a", "/r/b"]);
    r.read(reads[0].0, node(2, 0, 2, 0));
    r.read(reads[1].0, NodeState::Absent);
    let requests = r.requests();
    for (ticket, _) in probes(&requests) {
        r.engine.on_probe(ticket, Outcome::Done(Some(7)));
    }
    r.engine.step();
    assert_eq!(r.seen(), ["deleted /r/b @7"]);
    assert_eq!(r.shared.children("/r").unwrap(), ["a"]);
}
