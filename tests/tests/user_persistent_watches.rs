//! Persistent and recursive watches (`add_watch`) as a service keeps them for hours, across
//! the member serving it killed, the leader killed, and members restarted. The promise
//! (`Client::add_watch`): no change goes unreported; changes made while cut off are
//! reported once per node and kind; a change whose event did arrive is never reported again.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zookeeper_testkit::{bounded, Ensemble};
use zookeeper_tokio::{
    AddWatchMode, Client, CreateOptions, ErrorKind, EventType, PersistentWatcher, SessionState,
};

/// Kills `member`, waits until `client` has lost and found a connection, restarts `member`.
async fn kill_and_restart(ensemble: &Ensemble, member: usize, client: &Client) {
    let mut states = client.state_changes();
    ensemble.kill(member).unwrap();
    bounded(
        "disconnected",
        states.wait_for(|s| s == SessionState::Disconnected),
    )
    .await
    .unwrap();
    bounded(
        "connected",
        states.wait_for(|s| s == SessionState::Connected),
    )
    .await
    .unwrap();
    bounded("restart", ensemble.restart(member)).await.unwrap();
}

/// Events of `watcher`, per path, in order, until `marker` was created; then the watcher.
async fn collect(
    mut watcher: PersistentWatcher,
    marker: &str,
) -> (BTreeMap<String, Vec<EventType>>, PersistentWatcher) {
    let mut seen: BTreeMap<String, Vec<EventType>> = BTreeMap::new();
    loop {
        let event = bounded("event", watcher.next())
            .await
            .expect("the watch ended");
        assert_eq!(event.state, SessionState::Connected, "{event}");
        let done = event.path == marker && event.event_type == EventType::NodeCreated;
        seen.entry(event.path).or_default().push(event.event_type);
        if done {
            return (seen, watcher);
        }
    }
}

/// `call` until it succeeds, repeated after a lost connection. A repeat of a write the server
/// applied before the connection was lost fails plainly, with `repeated`; that ends it too.
async fn retried<T, F, Fut>(what: &str, repeated: Option<ErrorKind>, mut call: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = zookeeper_tokio::Result<T>>,
{
    loop {
        match call().await {
            Ok(_) => return,
            Err(e) if repeated.as_ref().is_some_and(|kind| e == *kind) => return,
            Err(e) if e.kind().is_retryable() => continue,
            Err(e) => panic!("{what}: {e}"),
        }
    }
}

/// Returns once the member serving `client` has applied every write acknowledged before the
/// call, and so has sent every event of them: a `sync` on the watch's connection. After a
/// reconnect it also means the watches are set again (they go first on a new connection).
async fn fence(client: &Client) {
    retried("sync /w", None, || bounded("sync", client.sync("/w"))).await;
}

/// Each node `/w/n{i}` is created, changed once, and (all but the last few) deleted, while
/// the member serving the watch and then the leader are killed and restarted. Per node, the
/// events must be a prefix-free subsequence of created, changed, deleted: none twice, none
/// out of order; a node that still exists was reported created and, if changed, changed.
/// A node whose whole life fell outside the faults (after the watch's connection was back,
/// before the next kill) was reported created, changed and deleted, each exactly once. How
/// many nodes fall inside the faults depends on the machine's speed; the verdict does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recursive_watch_reports_each_change_once_across_member_and_leader_restarts() {
    let ensemble = bounded("ensemble", Ensemble::start(3)).await.unwrap();
    let connect = ensemble.connect_string();
    let watching = bounded(
        "connect",
        Client::builder(&connect)
            .session_timeout(Duration::from_secs(30))
            .connect(),
    )
    .await
    .unwrap();
    let writer = bounded("writer", Client::connect(&connect)).await.unwrap();
    writer
        .create("/w", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let recursive = bounded(
        "add_watch",
        watching.add_watch("/w", AddWatchMode::PersistentRecursive),
    )
    .await
    .unwrap();
    let mut single = bounded(
        "add_watch",
        watching.add_watch("/w/n0", AddWatchMode::Persistent),
    )
    .await
    .unwrap();
    // Read as a service reads them, while they come.
    let collecting = tokio::spawn(collect(recursive, "/w/end"));

    // Writes go on until both faults are over: node i is created and changed, and node
    // i - KEPT deleted, so the last KEPT nodes remain.
    const KEPT: usize = 5;
    // `begun`: the node whose writes have begun. The writes stop at `end`, set once the
    // faults are over.
    let (begin, mut begun) = tokio::sync::watch::channel(0);
    let end = Arc::new(AtomicUsize::new(usize::MAX));
    let writes = {
        let writer = writer.clone();
        let end = end.clone();
        tokio::spawn(async move {
            let mut i = 0;
            while i < end.load(Ordering::SeqCst) {
                begin.send_replace(i);
                let path = format!("/w/n{i}");
                retried(
                    &format!("create {path}"),
                    Some(ErrorKind::NodeExists),
                    || writer.create(&path, b"a", &CreateOptions::persistent()),
                )
                .await;
                retried(&format!("set {path}"), Some(ErrorKind::BadVersion), || {
                    writer.set_data(&path, b"b", Some(0))
                })
                .await;
                if i >= KEPT {
                    let old = format!("/w/n{}", i - KEPT);
                    retried(&format!("delete {old}"), Some(ErrorKind::NoNode), || {
                        writer.delete(&old, None)
                    })
                    .await;
                }
                i += 1;
            }
            i
        })
    };

    // The member serving the watch, then the leader (an election: every member drops its
    // clients), each killed and restarted while the writes go on. Each fault spans the nodes
    // from the first one not yet deleted when it began (every event of the nodes before has
    // been sent) to the last one begun when the watch's connection was back. Before, between
    // and after the faults, a stretch of nodes is written whole while the watch is connected.
    const STRETCH: usize = 4 * KEPT;
    let mut faults: Vec<(usize, usize)> = Vec::new();
    let serving = bounded("serving", ensemble.member_serving(watching.session_id().0))
        .await
        .expect("a member serves the session");
    for member in [Some(serving), None] {
        let after = faults.last().map_or(0, |&(_, to)| to + 1);
        bounded(
            "a stretch of writes",
            begun.wait_for(|&i| i >= after + STRETCH + KEPT),
        )
        .await
        .unwrap();
        let before = *begun.borrow();
        fence(&watching).await;
        let member = match member {
            Some(m) => m,
            None => bounded("leader", ensemble.leader()).await.unwrap(),
        };
        kill_and_restart(&ensemble, member, &watching).await;
        fence(&watching).await;
        faults.push((before - KEPT, *begun.borrow()));
    }
    end.store(faults.last().unwrap().1 + 1 + STRETCH, Ordering::SeqCst);
    let nodes = bounded("writes", writes).await.unwrap();
    eprintln!("{nodes} nodes written; the faults spanned {faults:?}");
    retried("create /w/end", None, || {
        writer.create("/w/end", b"", &CreateOptions::persistent())
    })
    .await;

    let (seen, mut recursive) = bounded("collect", collecting).await.unwrap();
    let mut whole = 0;
    for i in 0..nodes {
        let path = format!("/w/n{i}");
        let events = seen.get(&path).cloned().unwrap_or_default();
        let order = [
            EventType::NodeCreated,
            EventType::NodeDataChanged,
            EventType::NodeDeleted,
        ];
        let mut at = 0;
        for e in &events {
            let pos = order
                .iter()
                .position(|o| o == e)
                .unwrap_or_else(|| panic!("{path}: unexpected {e:?} in {events:?}"));
            assert!(pos >= at, "{path}: {events:?} repeats or goes back");
            at = pos + 1;
        }
        let kept = i >= nodes - KEPT;
        if kept {
            assert_eq!(
                events.first(),
                Some(&EventType::NodeCreated),
                "{path} exists: its creation reported"
            );
        }
        if faults.iter().all(|&(from, to)| i < from || i > to) {
            let written = if kept { 2 } else { 3 };
            assert_eq!(
                events,
                &order[..written],
                "{path} was written whole outside the faults {faults:?}"
            );
            whole += 1;
        }
    }
    assert!(
        whole >= 3 * STRETCH,
        "nodes written outside the faults: {whole}"
    );
    assert!(recursive.try_next().is_none(), "nothing after the marker");

    // The non-recursive watch on /w/n0: created, changed, deleted at most once each.
    let mut on_n0 = Vec::new();
    while let Some(e) = single.try_next() {
        on_n0.push(e.event_type);
    }
    let mut dedup = on_n0.clone();
    dedup.dedup();
    assert_eq!(dedup, on_n0, "/w/n0: {on_n0:?}");
}
